//! The check that guards every protected route.

use crate::error::ApiError;
use crate::port::Context;
use crate::settings;
use crate::token::{self, TokenError};

/// Checks the `Authorization` header of a protected request: the bare token.
/// A token signed with the signing secret is accepted; while a previous
/// secret is set, so is one signed with it (docs/configuration.md, "Rotating
/// the signing secret"), until it expires. New tokens are only ever signed
/// with the current secret.
pub fn authorize(ctx: &mut impl Context, header: Option<&[u8]>) -> Result<(), ApiError> {
    let token = header.map(<[u8]>::trim_ascii).unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::TokenRequired);
    }
    let Some(secret) = settings::signing_secret(ctx)? else {
        return Err(ApiError::InvalidToken);
    };
    let now = ctx.now();
    match token::verify(token, secret.as_bytes(), now) {
        Ok(()) => Ok(()),
        // Only a signature that does not match the current secret can match
        // the previous one; the previous secret is read only then.
        Err(TokenError::BadSignature) => match settings::previous_signing_secret(ctx)? {
            Some(previous) => {
                token::verify(token, previous.as_bytes(), now).map_err(|_| ApiError::InvalidToken)
            }
            None => Err(ApiError::InvalidToken),
        },
        Err(_) => Err(ApiError::InvalidToken),
    }
}
