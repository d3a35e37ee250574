//! The settings of logins and tokens: the signing secrets, the
//! credentials, the failed-login limit and who the client is. Each reader
//! reads only what its answer needs.

use super::{
    parse_flag, parse_header_name, parse_max_failures, parse_proxy_hops, parse_window_seconds,
    Setting, SettingSource, DEFAULT_LOGIN_MAX_FAILURES, DEFAULT_LOGIN_WINDOW_SECONDS,
    DEFAULT_PASSWORD, DEFAULT_USERNAME, MAX_LOGIN_WINDOW_SECONDS, MAX_TRUSTED_PROXY_HOPS,
    MIN_SECRET_BYTES,
};
use crate::client::ClientIdentity;
use crate::error::ApiError;
use crate::login_limit::LoginLimit;
use crate::password::{Credentials, ExpectedPassword, HashedPassword};

/// `secret_token`, the key tokens are signed and checked with, if fit for
/// HS256 (`fit_secret`); unset is logged too: no token is issued or
/// accepted.
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

/// `secret_token_previous`, the key tokens signed before a rotation are
/// still checked with (docs/configuration.md, "Rotating the signing
/// secret"), if set and fit for HS256.
pub fn previous_signing_secret(ctx: &mut impl SettingSource) -> Result<Option<String>, ApiError> {
    let secret = ctx.setting(Setting::SecretTokenPrevious)?;
    Ok(fit_secret(ctx, Setting::SecretTokenPrevious, secret))
}

/// A secret shorter than 32 bytes, which RFC 7518 section 3.2 forbids,
/// counts as unset (docs/configuration.md, "Failing closed"), with a log
/// line that never holds the secret.
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

/// `auth_username` (default `admin`) and the password: `auth_password_hash`,
/// when set, replaces `auth_password` (and then no default-password
/// warning). A hash that cannot be used makes every login a 500; the
/// reason, never the hash, goes to the log.
pub fn credentials(ctx: &mut impl SettingSource) -> Result<Credentials, ApiError> {
    let username = ctx
        .setting(Setting::AuthUsername)?
        .unwrap_or_else(|| DEFAULT_USERNAME.to_string());
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

/// `login_max_failures` and `login_window_seconds`. A set value that is
/// not a valid number is logged (never echoed: settings may sit beside
/// secrets) and the default is used; a setting whose source failed fails
/// the login.
pub fn login_limit(ctx: &mut impl SettingSource) -> Result<LoginLimit, ApiError> {
    let max_failures = match ctx.setting(Setting::LoginMaxFailures)? {
        None => DEFAULT_LOGIN_MAX_FAILURES,
        Some(value) => parse_max_failures(&value).unwrap_or_else(|| {
            ctx.warn(&format!(
                "login_max_failures / LOGIN_MAX_FAILURES is not a whole number from \
                 0 to 4294967295: using the default, {DEFAULT_LOGIN_MAX_FAILURES}"
            ));
            DEFAULT_LOGIN_MAX_FAILURES
        }),
    };
    if max_failures == 0 {
        // No limit: its window is never read.
        return Ok(LoginLimit {
            max_failures,
            window_seconds: DEFAULT_LOGIN_WINDOW_SECONDS,
        });
    }
    let window_seconds = match ctx.setting(Setting::LoginWindowSeconds)? {
        None => DEFAULT_LOGIN_WINDOW_SECONDS,
        Some(value) => parse_window_seconds(&value).unwrap_or_else(|| {
            ctx.warn(&format!(
                "login_window_seconds / LOGIN_WINDOW_SECONDS is not a whole number \
                 of seconds from 1 to {MAX_LOGIN_WINDOW_SECONDS}: using the default, \
                 {DEFAULT_LOGIN_WINDOW_SECONDS}"
            ));
            DEFAULT_LOGIN_WINDOW_SECONDS
        }),
    };
    Ok(LoginLimit {
        max_failures,
        window_seconds,
    })
}

/// `client_ip_header`, then `trusted_proxy_hops` (or its older form,
/// `trust_forwarded_for=true`, as one hop). Invalid values are logged and
/// left out: no header, no trusted proxy.
pub fn client_identity(ctx: &mut impl SettingSource) -> Result<ClientIdentity, ApiError> {
    let ip_header = match ctx.setting(Setting::ClientIpHeader)? {
        None => None,
        Some(value) => parse_header_name(&value).or_else(|| {
            ctx.warn(
                "client_ip_header / CLIENT_IP_HEADER is not a header name: no header \
                 names the client",
            );
            None
        }),
    };
    let proxy_hops = match ctx.setting(Setting::TrustedProxyHops)? {
        Some(value) => parse_proxy_hops(&value).unwrap_or_else(|| {
            ctx.warn(&format!(
                "trusted_proxy_hops / TRUSTED_PROXY_HOPS is not a whole number from 0 \
                 to {MAX_TRUSTED_PROXY_HOPS}: X-Forwarded-For is not trusted"
            ));
            0
        }),
        None => legacy_proxy_hops(ctx)?,
    };
    Ok(ClientIdentity {
        ip_header,
        proxy_hops,
    })
}

/// `trust_forwarded_for`, the setting `trusted_proxy_hops` replaced: `true`
/// means one trusted proxy.
fn legacy_proxy_hops(ctx: &mut impl SettingSource) -> Result<u32, ApiError> {
    let Some(value) = ctx.setting(Setting::TrustForwardedFor)? else {
        return Ok(0);
    };
    Ok(match parse_flag(&value) {
        Some(true) => {
            ctx.warn(
                "trust_forwarded_for / TRUST_FORWARDED_FOR=true is read as \
                 trusted_proxy_hops=1 (the address the one proxy in front appended to \
                 X-Forwarded-For); set trusted_proxy_hops / TRUSTED_PROXY_HOPS instead",
            );
            1
        }
        Some(false) => 0,
        None => {
            ctx.warn(
                "trust_forwarded_for / TRUST_FORWARDED_FOR is neither true nor false: \
                 X-Forwarded-For is not trusted",
            );
            0
        }
    })
}
