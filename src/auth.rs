//! Authentication: the login endpoint that issues tokens, and the check that
//! guards every protected route.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::app::Context;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::settings::{Setting, DEFAULT_PASSWORD, DEFAULT_USERNAME, MIN_SECRET_BYTES};
use crate::token;

/// Checks the `Authorization` header of a protected request: the bare token.
pub fn authorize(ctx: &mut impl Context, header: Option<&[u8]>) -> Result<(), ApiError> {
    let token = header.map(<[u8]>::trim_ascii).unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::TokenRequired);
    }
    let Some(secret) = ctx.setting(Setting::SecretToken) else {
        ctx.log("warning: no signing secret is configured (secret_token / SECRET_TOKEN): every token is refused");
        return Err(ApiError::InvalidToken);
    };
    token::verify(token, secret.as_bytes(), ctx.now()).map_err(|_| ApiError::InvalidToken)
}

#[derive(Serialize)]
struct IssuedToken {
    token: String,
}

/// `POST /token`: credentials in, a signed token out.
pub fn issue_token(ctx: &mut impl Context, body: &[u8]) -> Result<Response, ApiError> {
    let (username, password) = read_login(body)?;

    let expected_username = ctx
        .setting(Setting::AuthUsername)
        .unwrap_or_else(|| DEFAULT_USERNAME.to_string());
    let expected_password = ctx.setting(Setting::AuthPassword).unwrap_or_else(|| {
        ctx.log("warning: the default password is in use: set auth_password / AUTH_PASSWORD");
        DEFAULT_PASSWORD.to_string()
    });
    // `&`, not `&&`: both comparisons always run.
    let matches =
        same_text(&username, &expected_username) & same_text(&password, &expected_password);
    if !matches {
        return Err(ApiError::InvalidCredentials);
    }

    let Some(secret) = ctx.setting(Setting::SecretToken) else {
        ctx.log("warning: no signing secret is configured (secret_token / SECRET_TOKEN): no token can be issued");
        return Err(ApiError::TokenNotIssued);
    };
    if secret.len() < MIN_SECRET_BYTES {
        ctx.log("warning: the signing secret is shorter than 32 bytes (RFC 7518 section 3.2)");
    }
    let token = token::issue(secret.as_bytes(), ctx.now()).map_err(|_| ApiError::TokenNotIssued)?;
    Ok(Response::ok(
        200,
        "Token generated successfully",
        Some(IssuedToken { token }),
    ))
}

/// A JSON object with string `username` and `password`; other fields ignored.
fn read_login(body: &[u8]) -> Result<(String, String), ApiError> {
    let Ok(mut fields) = serde_json::from_slice::<Map<String, Value>>(body) else {
        return Err(ApiError::InvalidLoginPayload);
    };
    match (fields.remove("username"), fields.remove("password")) {
        (Some(Value::String(username)), Some(Value::String(password))) => Ok((username, password)),
        _ => Err(ApiError::InvalidLoginPayload),
    }
}

/// Compares in time independent of where the texts differ and of their
/// lengths: both are hashed to fixed-size digests, compared without an early exit.
fn same_text(given: &str, expected: &str) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    let difference = given
        .iter()
        .zip(expected.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::same_text;

    #[test]
    fn same_text_compares_whole_values() {
        assert!(same_text("password", "password"));
        assert!(same_text("", ""));
        assert!(!same_text("password", "passwore"));
        assert!(!same_text("password", "password "));
        assert!(!same_text("", "password"));
    }
}
