//! The check that guards every protected route, and the signing secrets it
//! and the login share.

use crate::error::ApiError;
use crate::port::Context;
use crate::settings::{Setting, MIN_SECRET_BYTES};
use crate::token::{self, TokenError};

/// Checks the `Authorization` header of a protected request: the bare token.
/// A token signed with `secret_token` is accepted; while
/// `secret_token_previous` is set, so is one signed with it (docs/configuration.md,
/// "Rotating the signing secret"), until it expires. New tokens are only ever
/// signed with `secret_token`.
pub fn authorize(ctx: &mut impl Context, header: Option<&[u8]>) -> Result<(), ApiError> {
    let token = header.map(<[u8]>::trim_ascii).unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::TokenRequired);
    }
    let Some(secret) = signing_secret(ctx, Setting::SecretToken)? else {
        return Err(ApiError::InvalidToken);
    };
    let now = ctx.now();
    match token::verify(token, secret.as_bytes(), now) {
        Ok(()) => Ok(()),
        // Only a signature that does not match the current secret can match
        // the previous one; the previous secret is read only then.
        Err(TokenError::BadSignature) => match signing_secret(ctx, Setting::SecretTokenPrevious)? {
            Some(previous) => {
                token::verify(token, previous.as_bytes(), now).map_err(|_| ApiError::InvalidToken)
            }
            None => Err(ApiError::InvalidToken),
        },
        Err(_) => Err(ApiError::InvalidToken),
    }
}

/// A signing secret (`secret_token` or `secret_token_previous`) fit for
/// HS256, or `None`: unset, or shorter than 32 bytes, which RFC 7518
/// section 3.2 forbids and which counts as unset (docs/configuration.md, "Failing
/// closed"). Each case is logged, never the secret.
pub fn signing_secret(
    ctx: &mut impl Context,
    setting: Setting,
) -> Result<Option<String>, ApiError> {
    let name = (setting.variable_name(), setting.env_name());
    match ctx.setting(setting)? {
        None if setting == Setting::SecretToken => {
            ctx.log(&format!(
                "warning: no signing secret is configured ({} / {}): no token is issued or accepted",
                name.0, name.1
            ));
            Ok(None)
        }
        None => Ok(None),
        Some(secret) if secret.len() < MIN_SECRET_BYTES => {
            ctx.log(&format!(
                "warning: the signing secret {} / {} is shorter than {MIN_SECRET_BYTES} bytes \
                 (RFC 7518 section 3.2) and is not used: no token is issued or accepted with it",
                name.0, name.1
            ));
            Ok(None)
        }
        Some(secret) => Ok(Some(secret)),
    }
}
