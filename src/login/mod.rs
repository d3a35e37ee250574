//! `POST /token`: credentials in, a signed token out, under the failed-login
//! limit (`limit`): a client past it gets 429 whatever it sends.

pub mod client;
pub mod limit;
pub mod sql;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::envelope::Response;
use crate::error::ApiError;
use crate::log::RequestFields;
use crate::port::{open_store, Context, RequestHead};
use crate::settings::{self, password_hash::HashedPassword, Credentials, ExpectedPassword};
use crate::token;
use limit::PRUNE_BATCH;

/// `POST /token`. `body` is the request body as read (or why it could not
/// be); the store, if the limit needs it, is noted in `fields`.
pub async fn issue_token<C: Context>(
    ctx: &mut C,
    head: &RequestHead<'_>,
    body: Result<Vec<u8>, ApiError>,
    fields: &mut RequestFields,
) -> Result<Response, ApiError> {
    let credentials = settings::credentials(ctx)?;
    let limit = settings::login_limit(ctx)?;
    let login = body.and_then(|body| read_login(&body));
    if !limit.enabled() {
        // No limit: no store call either.
        let (username, password) = login?;
        if !credentials.accept(&username, &password) {
            return Err(ApiError::InvalidCredentials);
        }
        return sign(ctx);
    }
    let client = settings::client_identity(ctx)?.key_of_request(head.headers);
    let now = ctx.now();
    let mut db = open_store(ctx, fields)?;
    let (username, password) = match login {
        Ok(login) => login,
        // No password to check, so nothing to count: a read tells whether
        // the client is blocked (429) or only sent a bad body (400).
        Err(unreadable) => {
            return match limit.blocks(sql::attempts(&mut db, &client).await?, now) {
                Some(retry_after) => Err(ApiError::TooManyLoginAttempts { retry_after }),
                None => Err(unreadable),
            };
        }
    };
    let attempt = sql::count_attempt(&mut db, &client, now, limit.window_seconds).await?;
    if let Some(retry_after) = limit.refuses(attempt, now) {
        return Err(ApiError::TooManyLoginAttempts { retry_after });
    }
    if credentials.accept(&username, &password) {
        sql::clear_attempts(&mut db, &client).await?;
        return sign(ctx);
    }
    if attempt.count == 1 {
        // A new window began: the moment to clear away a bounded batch of
        // ended ones, so rows of old windows never pile up.
        sql::prune_attempts(&mut db, now, PRUNE_BATCH).await?;
    }
    Err(ApiError::InvalidCredentials)
}

/// Signs a token with the signing secret for a login that passed.
fn sign(ctx: &mut impl Context) -> Result<Response, ApiError> {
    let Some(secret) = settings::signing_secret(ctx)? else {
        return Err(ApiError::TokenNotIssued);
    };
    let token = token::issue(secret.as_bytes(), ctx.now()).map_err(|_| ApiError::TokenNotIssued)?;
    Response::ok(200, "Token generated successfully", &json!({ "token": token }))
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

impl Credentials {
    /// Both parts are always checked (`&`, not `&&`), each in time that
    /// does not depend on where a wrong value differs.
    pub fn accept(&self, username: &str, password: &str) -> bool {
        let username_matches = same_text(username, &self.username);
        let password_matches = match &self.password {
            ExpectedPassword::Plain(expected) => same_text(password, expected),
            ExpectedPassword::Hash(phc) => {
                HashedPassword::parse(phc).is_ok_and(|hash| hash.verify(password))
            }
        };
        username_matches & password_matches
    }
}

/// Compares in time independent of where the texts differ and of their
/// lengths: both are hashed to fixed-size digests, which `subtle` compares
/// in constant time.
pub fn same_text(given: &str, expected: &str) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    given.ct_eq(&expected).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_compares_whole_values() {
        assert!(same_text("password", "password"));
        assert!(same_text("", ""));
        assert!(!same_text("password", "passwore"));
        assert!(!same_text("password", "password "));
        assert!(!same_text("", "password"));
    }
}
