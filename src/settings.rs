//! Configuration: which settings exist, where each is read, and their
//! defaults (decisions.md, "Configuration"). Reading is left to the adapter
//! (Spin variables and the component environment); the precedence is here.

/// A setting of the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    SecretToken,
    DbUrl,
    AuthUsername,
    AuthPassword,
    AuthPasswordHash,
    SecretTokenPrevious,
    LoginMaxFailures,
    LoginWindowSeconds,
    TrustForwardedFor,
}

pub const DEFAULT_USERNAME: &str = "admin";
pub const DEFAULT_PASSWORD: &str = "password";

/// RFC 7518 section 3.2: an HS256 key should be at least as long as the hash.
pub const MIN_SECRET_BYTES: usize = 32;

/// Failed logins one client address may make within a window (decisions.md,
/// "Login protection"); 0 turns the limit off.
pub const DEFAULT_LOGIN_MAX_FAILURES: u32 = 10;
/// The window failed logins are counted in, from the first failure.
pub const DEFAULT_LOGIN_WINDOW_SECONDS: u64 = 900;
/// The longest window accepted: one year.
pub const MAX_LOGIN_WINDOW_SECONDS: u64 = 365 * 24 * 60 * 60;

/// `login_max_failures`: a decimal integer 0..=4294967295, surrounding
/// whitespace ignored. `None` for anything else (the caller warns and uses
/// the default).
pub fn parse_max_failures(value: &str) -> Option<u32> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// `login_window_seconds`: a decimal integer 1..=`MAX_LOGIN_WINDOW_SECONDS`.
pub fn parse_window_seconds(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value
        .parse()
        .ok()
        .filter(|seconds| (1..=MAX_LOGIN_WINDOW_SECONDS).contains(seconds))
}

/// `trust_forwarded_for`: `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`),
/// any case, surrounding whitespace ignored.
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

impl Setting {
    pub const ALL: [Setting; 9] = [
        Setting::SecretToken,
        Setting::DbUrl,
        Setting::AuthUsername,
        Setting::AuthPassword,
        Setting::AuthPasswordHash,
        Setting::SecretTokenPrevious,
        Setting::LoginMaxFailures,
        Setting::LoginWindowSeconds,
        Setting::TrustForwardedFor,
    ];

    /// The Spin variable (declared in `spin.toml`).
    pub fn variable_name(self) -> &'static str {
        match self {
            Setting::SecretToken => "secret_token",
            Setting::DbUrl => "db_url",
            Setting::AuthUsername => "auth_username",
            Setting::AuthPassword => "auth_password",
            Setting::AuthPasswordHash => "auth_password_hash",
            Setting::SecretTokenPrevious => "secret_token_previous",
            Setting::LoginMaxFailures => "login_max_failures",
            Setting::LoginWindowSeconds => "login_window_seconds",
            Setting::TrustForwardedFor => "trust_forwarded_for",
        }
    }

    /// The plain environment name (`spin up -e NAME=...`, or the local host).
    pub fn env_name(self) -> &'static str {
        match self {
            Setting::SecretToken => "SECRET_TOKEN",
            Setting::DbUrl => "DB_URL",
            Setting::AuthUsername => "AUTH_USERNAME",
            Setting::AuthPassword => "AUTH_PASSWORD",
            Setting::AuthPasswordHash => "AUTH_PASSWORD_HASH",
            Setting::SecretTokenPrevious => "SECRET_TOKEN_PREVIOUS",
            Setting::LoginMaxFailures => "LOGIN_MAX_FAILURES",
            Setting::LoginWindowSeconds => "LOGIN_WINDOW_SECONDS",
            Setting::TrustForwardedFor => "TRUST_FORWARDED_FOR",
        }
    }
}

/// A set, non-empty Spin variable wins; otherwise the set, non-empty
/// environment value; otherwise nothing (the caller applies the default).
/// Empty counts as unset so that the manifest's empty defaults fall through,
/// and so that an empty secret can never become a signing key.
/// The environment is read only when the variable gives nothing.
pub fn resolve(
    variable: Option<String>,
    environment: impl FnOnce() -> Option<String>,
) -> Option<String> {
    variable
        .filter(|value| !value.is_empty())
        .or_else(|| environment().filter(|value| !value.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(value: &str) -> Option<String> {
        Some(value.to_string())
    }

    #[test]
    fn variable_wins_over_environment() {
        let unread = || panic!("the environment is not read when the variable is set");
        assert_eq!(resolve(some("from-var"), unread), some("from-var"));
    }

    #[test]
    fn empty_variable_falls_back_to_environment() {
        assert_eq!(resolve(some(""), || some("from-env")), some("from-env"));
        assert_eq!(resolve(None, || some("from-env")), some("from-env"));
    }

    #[test]
    fn empty_everywhere_is_unset() {
        assert_eq!(resolve(some(""), || some("")), None);
        assert_eq!(resolve(None, || None), None);
    }

    #[test]
    fn login_limits_parse_strictly() {
        assert_eq!(parse_max_failures("10"), Some(10));
        assert_eq!(parse_max_failures(" 0 "), Some(0));
        assert_eq!(parse_max_failures("4294967295"), Some(u32::MAX));
        for bad in [
            "",
            " ",
            "-1",
            "+3",
            "1.5",
            "ten",
            "4294967296",
            "1e3",
            "0x10",
        ] {
            assert_eq!(parse_max_failures(bad), None, "{bad:?}");
        }
        assert_eq!(parse_window_seconds("900"), Some(900));
        assert_eq!(parse_window_seconds("1"), Some(1));
        assert_eq!(
            parse_window_seconds("31536000"),
            Some(MAX_LOGIN_WINDOW_SECONDS)
        );
        for bad in ["", "0", "-5", "31536001", "15m", "99999999999999999999999"] {
            assert_eq!(parse_window_seconds(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn flags_parse_as_booleans() {
        for yes in ["true", "TRUE", " True ", "1", "yes", "on"] {
            assert_eq!(parse_flag(yes), Some(true), "{yes:?}");
        }
        for no in ["false", "False", "0", "no", "off"] {
            assert_eq!(parse_flag(no), Some(false), "{no:?}");
        }
        for bad in ["", "2", "y", "truee", "enabled"] {
            assert_eq!(parse_flag(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn login_defaults_are_ten_failures_in_fifteen_minutes() {
        assert_eq!(DEFAULT_LOGIN_MAX_FAILURES, 10);
        assert_eq!(DEFAULT_LOGIN_WINDOW_SECONDS, 900);
    }

    #[test]
    fn each_setting_indexes_its_place_in_all() {
        for (index, setting) in Setting::ALL.into_iter().enumerate() {
            assert_eq!(setting as usize, index, "{setting:?}");
        }
    }

    #[test]
    fn names_match_the_manifest_and_the_environment() {
        let names: Vec<_> = Setting::ALL
            .iter()
            .map(|s| (s.variable_name(), s.env_name()))
            .collect();
        assert_eq!(
            names,
            [
                ("secret_token", "SECRET_TOKEN"),
                ("db_url", "DB_URL"),
                ("auth_username", "AUTH_USERNAME"),
                ("auth_password", "AUTH_PASSWORD"),
                ("auth_password_hash", "AUTH_PASSWORD_HASH"),
                ("secret_token_previous", "SECRET_TOKEN_PREVIOUS"),
                ("login_max_failures", "LOGIN_MAX_FAILURES"),
                ("login_window_seconds", "LOGIN_WINDOW_SECONDS"),
                ("trust_forwarded_for", "TRUST_FORWARDED_FOR"),
            ]
        );
    }
}
