//! Every setting of the service (docs/configuration.md), and the only place
//! that names one: its names (`settings!`), sources and their order, default,
//! rule and warning; the handlers get typed values from the readers here and
//! in `login` and `database`. Each is read only when a request needs it.

mod accounts;
mod database;
mod login;
mod origins;
pub mod password_hash;

pub use accounts::{read_accounts, Account, Accounts, Role};
pub use database::{database, redact_password, Database, UnsupportedDbUrl, DEFAULT_SQLITE_LABEL};
pub use login::{
    client_identity, credentials, login_limit, pair_username, previous_signing_secret,
    signing_secret, ClientIdentity, Credentials, ExpectedPassword, LoginLimit,
};
pub use origins::AllowedOrigins;

use std::rc::Rc;

use crate::db::Synchronous;
use crate::error::ApiError;

/// Where settings come from: the host (`port::Context` is one).
pub trait SettingSource {
    /// The non-empty value (`resolve`), or why its source could not give one.
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable>;
    /// A line for the operator's log (`crate::log`). Never given a secret.
    fn log(&mut self, line: &str);
    /// A setting's warning, as its log line.
    fn warn(&mut self, message: &str) {
        self.log(&crate::log::warning(message));
    }
    /// `accounts`, parsed (`read_accounts`): a host that keeps its settings
    /// for a while (the WASI 0.3 instance) keeps them parsed as long.
    fn accounts(&mut self) -> Result<Rc<Accounts>, ApiError>
    where
        Self: Sized,
    {
        read_accounts(self).map(Rc::new)
    }
}

/// Declares the settings once: each one's Spin variable (declared in
/// `spin.toml`) and plain environment name (`spin up -e NAME=...`).
macro_rules! settings {
    ($($setting:ident => $variable:literal, $env:literal;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Setting {
            $($setting,)*
        }

        impl Setting {
            pub const ALL: [Setting; [$($variable),*].len()] = [$(Setting::$setting),*];

            pub fn variable_name(self) -> &'static str {
                match self {
                    $(Setting::$setting => $variable,)*
                }
            }

            pub fn env_name(self) -> &'static str {
                match self {
                    $(Setting::$setting => $env,)*
                }
            }
        }
    };
}

settings! {
    SecretToken => "secret_token", "SECRET_TOKEN";
    DbUrl => "db_url", "DB_URL";
    AuthUsername => "auth_username", "AUTH_USERNAME";
    AuthPassword => "auth_password", "AUTH_PASSWORD";
    AuthPasswordHash => "auth_password_hash", "AUTH_PASSWORD_HASH";
    SecretTokenPrevious => "secret_token_previous", "SECRET_TOKEN_PREVIOUS";
    LoginMaxFailures => "login_max_failures", "LOGIN_MAX_FAILURES";
    LoginWindowSeconds => "login_window_seconds", "LOGIN_WINDOW_SECONDS";
    TrustForwardedFor => "trust_forwarded_for", "TRUST_FORWARDED_FOR";
    ClientIpHeader => "client_ip_header", "CLIENT_IP_HEADER";
    TrustedProxyHops => "trusted_proxy_hops", "TRUSTED_PROXY_HOPS";
    RequireIfMatch => "require_if_match", "REQUIRE_IF_MATCH";
    CorsAllowedOrigins => "cors_allowed_origins", "CORS_ALLOWED_ORIGINS";
    SqliteSynchronous => "sqlite_synchronous", "SQLITE_SYNCHRONOUS";
    Accounts => "accounts", "ACCOUNTS";
    HistoryDays => "history_days", "HISTORY_DAYS";
    ImportMaxBytes => "import_max_bytes", "IMPORT_MAX_BYTES";
}

/// A setting whose source failed (a Spin variables provider's error, not a
/// missing value): never replaced by a fallback or a default, the request
/// answers 500 (docs/configuration.md, "Failing closed"). Never holds the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingUnavailable {
    pub setting: Setting,
    pub reason: String,
}

impl std::fmt::Display for SettingUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the setting {} / {} could not be read, so the request is refused rather than \
             served with a default: {}",
            self.setting.variable_name(),
            self.setting.env_name(),
            self.reason
        )
    }
}

impl From<SettingUnavailable> for ApiError {
    fn from(error: SettingUnavailable) -> Self {
        ApiError::Internal(error.to_string())
    }
}

/// The one reader of a setting with a rule: `None` when unset; the parsed
/// value when `parse` accepts it; otherwise `fallback`, with the warning
/// "`variable / ENV` is `rule`: `otherwise`" (never the value: settings may
/// sit beside secrets).
fn read<T>(
    ctx: &mut (impl SettingSource + ?Sized),
    setting: Setting,
    parse: impl FnOnce(&str) -> Option<T>,
    rule: &str,
    fallback: T,
    otherwise: &str,
) -> Result<Option<T>, SettingUnavailable> {
    let Some(value) = ctx.setting(setting)? else {
        return Ok(None);
    };
    Ok(Some(parse(&value).unwrap_or_else(|| {
        ctx.warn(&format!(
            "{} / {} is {rule}: {otherwise}",
            setting.variable_name(),
            setting.env_name()
        ));
        fallback
    })))
}

pub const DEFAULT_USERNAME: &str = "admin";
pub const DEFAULT_PASSWORD: &str = "password";

/// RFC 7518 section 3.2: an HS256 key should be at least as long as the hash.
pub const MIN_SECRET_BYTES: usize = 32;

/// Failed logins per client and window (docs/configuration.md, "Login protection").
pub const DEFAULT_LOGIN_MAX_FAILURES: u32 = 10;
pub const DEFAULT_LOGIN_WINDOW_SECONDS: u64 = 900;
/// One year.
pub const MAX_LOGIN_WINDOW_SECONDS: u64 = 365 * 24 * 60 * 60;
/// The most proxies `trusted_proxy_hops` may name; real chains have one to
/// three (a CDN, a load balancer, an ingress).
pub const MAX_TRUSTED_PROXY_HOPS: u32 = 32;

/// A decimal integer of type `T` (`login_max_failures`: `u32`), surrounding
/// whitespace ignored; no sign, no other characters.
fn whole_number<T: std::str::FromStr>(value: &str) -> Option<T> {
    let value = value.trim();
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| value.parse().ok())?
}

/// `login_window_seconds`: a decimal integer 1..=`MAX_LOGIN_WINDOW_SECONDS`.
pub fn parse_window_seconds(value: &str) -> Option<u64> {
    whole_number(value).filter(|seconds| (1..=MAX_LOGIN_WINDOW_SECONDS).contains(seconds))
}

/// `trusted_proxy_hops`: a decimal integer 0..=`MAX_TRUSTED_PROXY_HOPS`.
pub fn parse_proxy_hops(value: &str) -> Option<u32> {
    whole_number(value).filter(|hops| *hops <= MAX_TRUSTED_PROXY_HOPS)
}

/// `client_ip_header`: an HTTP field name (RFC 9110 token characters),
/// returned in lower case as hosts hand header names over.
pub fn parse_header_name(value: &str) -> Option<String> {
    let name = value.trim();
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    (!name.is_empty() && name.len() <= 64 && name.bytes().all(token))
        .then(|| name.to_ascii_lowercase())
}

/// A flag: `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), any case,
/// surrounding whitespace ignored.
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `require_if_match`: whether `PUT` and `DELETE` of a book need
/// `If-Match` (428 without). Off by default, as the specification's blind
/// writes.
pub fn require_if_match(ctx: &mut impl SettingSource) -> Result<bool, ApiError> {
    let rule = "neither true nor false";
    let required =
        read(ctx, Setting::RequireIfMatch, parse_flag, rule, false, "If-Match stays optional")?;
    Ok(required.unwrap_or(false))
}

/// `cors_allowed_origins`: the web origins whose pages may call the API
/// (`*`, or a comma-separated list). Off when unset; a value that is not
/// that is warned about and leaves it off, never on for all.
pub fn cors_origins(ctx: &mut impl SettingSource) -> Result<AllowedOrigins, ApiError> {
    let rule = "not * or a comma-separated list of origins (scheme://host[:port])";
    let off = AllowedOrigins::Off;
    let origins =
        read(ctx, Setting::CorsAllowedOrigins, AllowedOrigins::parse, rule, off, "CORS stays off")?;
    Ok(origins.unwrap_or(AllowedOrigins::Off))
}

/// The longest `history_days`: a hundred years.
pub const MAX_HISTORY_DAYS: u32 = 36_500;

/// `history_days`: how many days of changes are kept, 1..=`MAX_HISTORY_DAYS`;
/// unset keeps every change. Anything else is warned about and keeps every
/// change: a mistyped value never deletes history.
pub fn history_days(ctx: &mut impl SettingSource) -> Result<Option<u32>, ApiError> {
    let rule = "not a whole number of days from 1 to 36500";
    let parse =
        |value: &str| whole_number(value).filter(|days| (1..=MAX_HISTORY_DAYS).contains(days));
    let days = read(
        ctx,
        Setting::HistoryDays,
        |value| parse(value).map(Some),
        rule,
        None,
        "every change is kept",
    )?;
    Ok(days.flatten())
}

/// `sqlite_synchronous`: `normal` (the default, as PocketBase, Rails and
/// Litestream run SQLite) or `full`, any case. Anything else is warned about
/// and is `full`: the stricter policy, never silently the weaker one.
pub fn sqlite_synchronous(ctx: &mut impl SettingSource) -> Result<Synchronous, ApiError> {
    let rule = "neither normal nor full";
    let full = Synchronous::Full;
    let otherwise = "using full, every commit synced before its answer";
    let synchronous =
        read(ctx, Setting::SqliteSynchronous, parse_synchronous, rule, full, otherwise)?;
    Ok(synchronous.unwrap_or_default())
}

/// `import_max_bytes`: the largest body `POST /books` reads (16 MiB by
/// default); a value that is not a whole number of at least 1 is warned about
/// and the default is used.
pub fn import_max_bytes(ctx: &mut impl SettingSource) -> Result<u64, ApiError> {
    let parse = |value: &str| whole_number(value).filter(|bytes| *bytes >= 1);
    let rule = "not a whole number of bytes of at least 1";
    let default = DEFAULT_IMPORT_MAX_BYTES;
    let bytes = read(ctx, Setting::ImportMaxBytes, parse, rule, default, "using 16 MiB")?;
    Ok(bytes.unwrap_or(default))
}

pub const DEFAULT_IMPORT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// `normal` or `full`, any case, surrounding whitespace ignored.
pub fn parse_synchronous(value: &str) -> Option<Synchronous> {
    match value.trim().to_ascii_lowercase().as_str() {
        "normal" => Some(Synchronous::Normal),
        "full" => Some(Synchronous::Full),
        _ => None,
    }
}

/// A non-empty Spin variable wins, else a non-empty environment value (read
/// only then), else nothing. Empty is unset, so that the manifest's empty
/// defaults fall through and an empty secret never becomes a signing key.
/// `variable` is `Ok(None)` for a variable the manifest does not declare,
/// `Err` when its provider failed: then nothing stands in for it.
pub fn resolve(
    setting: Setting,
    variable: Result<Option<String>, String>,
    environment: impl FnOnce() -> Option<String>,
) -> Result<Option<String>, SettingUnavailable> {
    let variable = variable.map_err(|reason| SettingUnavailable { setting, reason })?;
    Ok(variable
        .filter(|value| !value.is_empty())
        .or_else(|| environment().filter(|value| !value.is_empty())))
}
#[cfg(test)]
mod tests {
    use super::*;

    fn some(value: &str) -> Option<String> {
        Some(value.to_string())
    }

    const DB: Setting = Setting::DbUrl;

    #[test]
    fn variable_wins_over_environment() {
        let unread = || panic!("the environment is not read when the variable is set");
        assert_eq!(resolve(DB, Ok(some("from-var")), unread), Ok(some("from-var")));
    }

    #[test]
    fn empty_or_undeclared_variable_falls_back_to_environment() {
        assert_eq!(resolve(DB, Ok(some("")), || some("from-env")), Ok(some("from-env")));
        assert_eq!(resolve(DB, Ok(None), || some("from-env")), Ok(some("from-env")));
    }

    #[test]
    fn empty_everywhere_is_unset() {
        assert_eq!(resolve(DB, Ok(some("")), || some("")), Ok(None));
        assert_eq!(resolve(DB, Ok(None), || None), Ok(None));
    }

    #[test]
    fn a_failed_provider_is_never_replaced() {
        let unread = || panic!("the environment does not stand in for a failed provider");
        let error = resolve(Setting::SecretToken, Err("vault: connection refused".into()), unread)
            .unwrap_err();
        assert_eq!(error.setting, Setting::SecretToken);
        let text = error.to_string();
        assert!(text.contains("secret_token / SECRET_TOKEN"), "{text}");
        assert!(text.contains("vault: connection refused"), "{text}");
    }

    #[test]
    fn proxy_hops_and_header_names_parse_strictly() {
        assert_eq!(parse_proxy_hops("0"), Some(0));
        assert_eq!(parse_proxy_hops(" 2 "), Some(2));
        assert_eq!(parse_proxy_hops("32"), Some(MAX_TRUSTED_PROXY_HOPS));
        for bad in ["", "-1", "33", "one", "1.0"] {
            assert_eq!(parse_proxy_hops(bad), None, "{bad:?}");
        }
        assert_eq!(parse_header_name("True-Client-IP"), Some("true-client-ip".into()));
        assert_eq!(parse_header_name(" cf-connecting-ip "), Some("cf-connecting-ip".into()));
        for bad in ["", "two words", "x:y", "caf\u{e9}", &"a".repeat(65)] {
            assert_eq!(parse_header_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn login_limits_parse_strictly() {
        assert_eq!(whole_number::<u32>("10"), Some(10));
        assert_eq!(whole_number::<u32>(" 0 "), Some(0));
        assert_eq!(whole_number::<u32>("4294967295"), Some(u32::MAX));
        for bad in ["", " ", "-1", "+3", "1.5", "ten", "4294967296", "1e3", "0x10"] {
            assert_eq!(whole_number::<u32>(bad), None, "{bad:?}");
        }
        assert_eq!(parse_window_seconds("900"), Some(900));
        assert_eq!(parse_window_seconds("1"), Some(1));
        assert_eq!(parse_window_seconds("31536000"), Some(MAX_LOGIN_WINDOW_SECONDS));
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
    fn sqlite_synchronous_is_normal_or_full() {
        assert_eq!(parse_synchronous(" NORMAL "), Some(Synchronous::Normal));
        assert_eq!(parse_synchronous("full"), Some(Synchronous::Full));
        for bad in ["", "off", "extra", "1", "fulll"] {
            assert_eq!(parse_synchronous(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn each_setting_indexes_its_place_in_all_and_its_names() {
        for (index, setting) in Setting::ALL.into_iter().enumerate() {
            assert_eq!(setting as usize, index, "{setting:?}");
            let upper = setting.variable_name().to_ascii_uppercase();
            assert_eq!(setting.env_name(), upper, "{setting:?}");
        }
    }
}
