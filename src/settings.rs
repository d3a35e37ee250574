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
}

pub const DEFAULT_USERNAME: &str = "admin";
pub const DEFAULT_PASSWORD: &str = "password";

/// RFC 7518 section 3.2: an HS256 key should be at least as long as the hash.
pub const MIN_SECRET_BYTES: usize = 32;

impl Setting {
    pub const ALL: [Setting; 4] = [
        Setting::SecretToken,
        Setting::DbUrl,
        Setting::AuthUsername,
        Setting::AuthPassword,
    ];

    /// The Spin variable (declared in `spin.toml`).
    pub fn variable_name(self) -> &'static str {
        match self {
            Setting::SecretToken => "secret_token",
            Setting::DbUrl => "db_url",
            Setting::AuthUsername => "auth_username",
            Setting::AuthPassword => "auth_password",
        }
    }

    /// The plain environment name (`spin up -e NAME=...`, or the local host).
    pub fn env_name(self) -> &'static str {
        match self {
            Setting::SecretToken => "SECRET_TOKEN",
            Setting::DbUrl => "DB_URL",
            Setting::AuthUsername => "AUTH_USERNAME",
            Setting::AuthPassword => "AUTH_PASSWORD",
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
            ]
        );
    }
}
