//! The settings of logins and tokens, as the login resource gets them; each
//! reader reads only what its answer needs.

use super::password_hash::HashedPassword;
use super::{
    parse_flag, parse_header_name, parse_proxy_hops, parse_window_seconds, read, whole_number,
    Setting, SettingSource, DEFAULT_LOGIN_MAX_FAILURES, DEFAULT_LOGIN_WINDOW_SECONDS,
    DEFAULT_PASSWORD, DEFAULT_USERNAME, MAX_LOGIN_WINDOW_SECONDS, MAX_TRUSTED_PROXY_HOPS,
    MIN_SECRET_BYTES,
};
use crate::error::ApiError;

/// The configured login name and password (checked by `login`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: ExpectedPassword,
}

/// The password a login must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedPassword {
    Plain(String),
    /// An Argon2id PHC string, already checked to parse.
    Hash(String),
}

/// The failed-login limit in force (docs/configuration.md, "Login
/// protection"): `max_failures` failures per `window_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimit {
    /// 0: no limit, and no store call for it.
    pub max_failures: u32,
    pub window_seconds: u64,
}

/// How a deployment identifies the client of a login (`login::client`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIdentity {
    /// A lower-case header name, or `None`.
    pub ip_header: Option<String>,
    /// Proxies in front of the service that append to `X-Forwarded-For`.
    pub proxy_hops: u32,
}

/// `secret_token`, if fit for HS256 (`fit_secret`); unset is logged too.
pub fn signing_secret(ctx: &mut impl SettingSource) -> Result<Option<String>, ApiError> {
    let secret = ctx.setting(Setting::SecretToken)?;
    if secret.is_none() {
        ctx.warn(
            "no signing secret is configured (secret_token / SECRET_TOKEN): no token \
             is issued or accepted",
        );
    }
    Ok(fit_secret(ctx, Setting::SecretToken, secret))
}

/// `secret_token_previous` (docs/configuration.md, "Rotating the signing
/// secret"), if fit for HS256.
pub fn previous_signing_secret(ctx: &mut impl SettingSource) -> Result<Option<String>, ApiError> {
    let secret = ctx.setting(Setting::SecretTokenPrevious)?;
    Ok(fit_secret(ctx, Setting::SecretTokenPrevious, secret))
}

/// A secret shorter than RFC 7518 allows counts as unset, with a log line
/// (docs/configuration.md, "Failing closed").
fn fit_secret(
    ctx: &mut impl SettingSource,
    setting: Setting,
    secret: Option<String>,
) -> Option<String> {
    let secret = secret?;
    if secret.len() < MIN_SECRET_BYTES {
        ctx.warn(&format!(
            "the signing secret {} / {} is shorter than {MIN_SECRET_BYTES} bytes \
             (RFC 7518 section 3.2) and is not used: no token is issued or accepted with it",
            setting.variable_name(),
            setting.env_name()
        ));
        return None;
    }
    Some(secret)
}

/// `auth_username` and the password: `auth_password_hash`, when set,
/// replaces `auth_password`. A hash that cannot be used makes every login a
/// 500; the reason, never the hash, goes to the log.
pub fn credentials(ctx: &mut impl SettingSource) -> Result<Credentials, ApiError> {
    let username = pair_username(ctx)?;
    let password = match ctx.setting(Setting::AuthPasswordHash)? {
        Some(phc) => match HashedPassword::parse(&phc) {
            Ok(_) => ExpectedPassword::Hash(phc),
            Err(error) => {
                return Err(ApiError::internal(format!(
                    "auth_password_hash / AUTH_PASSWORD_HASH is {error}"
                )))
            }
        },
        None => match ctx.setting(Setting::AuthPassword)? {
            Some(password) => ExpectedPassword::Plain(password),
            None => {
                ctx.warn(
                    "the default password is in use: set auth_password / \
                     AUTH_PASSWORD (or auth_password_hash)",
                );
                ExpectedPassword::Plain(DEFAULT_PASSWORD.to_string())
            }
        },
    };
    Ok(Credentials { username, password })
}

/// `auth_username`, the configured pair's name.
pub fn pair_username(ctx: &mut (impl SettingSource + ?Sized)) -> Result<String, ApiError> {
    Ok(ctx.setting(Setting::AuthUsername)?.unwrap_or_else(|| DEFAULT_USERNAME.to_string()))
}

/// `login_max_failures` and `login_window_seconds` (the window is not read
/// when the limit is off).
pub fn login_limit(ctx: &mut impl SettingSource) -> Result<LoginLimit, ApiError> {
    let default = DEFAULT_LOGIN_MAX_FAILURES;
    let max_failures = read(
        ctx,
        Setting::LoginMaxFailures,
        whole_number,
        "not a whole number from 0 to 4294967295",
        default,
        &format!("using the default, {default}"),
    )?
    .unwrap_or(default);
    let default = DEFAULT_LOGIN_WINDOW_SECONDS;
    let window_seconds = if max_failures == 0 {
        default
    } else {
        read(
            ctx,
            Setting::LoginWindowSeconds,
            parse_window_seconds,
            &format!("not a whole number of seconds from 1 to {MAX_LOGIN_WINDOW_SECONDS}"),
            default,
            &format!("using the default, {default}"),
        )?
        .unwrap_or(default)
    };
    Ok(LoginLimit { max_failures, window_seconds })
}

/// `client_ip_header`, then `trusted_proxy_hops` (or its older form,
/// `trust_forwarded_for=true`, one hop); invalid values are logged and left out.
pub fn client_identity(ctx: &mut impl SettingSource) -> Result<ClientIdentity, ApiError> {
    let ip_header = read(
        ctx,
        Setting::ClientIpHeader,
        |value| parse_header_name(value).map(Some),
        "not a header name",
        None,
        "no header names the client",
    )?
    .flatten();
    let untrusted = "X-Forwarded-For is not trusted";
    let rule = format!("not a whole number from 0 to {MAX_TRUSTED_PROXY_HOPS}");
    let proxy_hops =
        match read(ctx, Setting::TrustedProxyHops, parse_proxy_hops, &rule, 0, untrusted)? {
            Some(hops) => hops,
            None => {
                let rule = "neither true nor false";
                match read(ctx, Setting::TrustForwardedFor, parse_flag, rule, false, untrusted)? {
                    Some(true) => {
                        ctx.warn(
                            "trust_forwarded_for / TRUST_FORWARDED_FOR=true is read as \
                         trusted_proxy_hops=1 (the address the one proxy in front appended to \
                         X-Forwarded-For); set trusted_proxy_hops / TRUSTED_PROXY_HOPS instead",
                        );
                        1
                    }
                    _ => 0,
                }
            }
        };
    Ok(ClientIdentity { ip_header, proxy_hops })
}
