//! `POST /token`: credentials in, a signed token out, under the failed-login
//! limit (`limit`): a client past it gets 429 whatever it sends.

pub mod client;
pub mod limit;
pub mod password;
pub mod sql;

use serde_json::{json, Map, Value};

use crate::envelope::Response;
use crate::error::ApiError;
use crate::port::{open_store, Context, RequestHead};
use crate::settings::{self, StoreKind};
use crate::token;
use limit::PRUNE_BATCH;

/// `POST /token`. `body` is the request body as read (or why it could not
/// be); the store, if the limit needs it, is noted in `opened`.
pub fn issue_token(
    ctx: &mut impl Context,
    head: &RequestHead,
    body: Result<Vec<u8>, ApiError>,
    opened: &mut Option<StoreKind>,
) -> Result<Response, ApiError> {
    let credentials = settings::credentials(ctx)?;
    let limit = settings::login_limit(ctx)?;
    let login = body.and_then(|body| read_login(&body));
    if !limit.enabled() {
        // No limit: no store call either.
        let (username, password) = login?;
        if !credentials.accept(&username, &password).map_err(ApiError::internal)? {
            return Err(ApiError::InvalidCredentials);
        }
        return sign(ctx);
    }
    let identity = settings::client_identity(ctx)?;
    let client = identity.key_of_request(head.headers);
    let now = ctx.now();

    // The store borrows the context until it is dropped: everything the
    // login needs from the context was read above.
    let mut db = open_store(ctx, opened)?;
    let (username, password) = match login {
        Ok(login) => login,
        // No password to check, so nothing to count: a read tells whether
        // the client is blocked (429) or only sent a bad body (400).
        Err(unreadable) => {
            return match limit.blocks(sql::attempts(&mut *db, &client)?, now) {
                Some(retry_after) => Err(ApiError::TooManyLoginAttempts { retry_after }),
                None => Err(unreadable),
            };
        }
    };
    let attempt = sql::count_attempt(&mut *db, &client, now, limit.window_seconds)?;
    if let Some(retry_after) = limit.refuses(attempt, now) {
        return Err(ApiError::TooManyLoginAttempts { retry_after });
    }
    if credentials.accept(&username, &password).map_err(ApiError::internal)? {
        sql::clear_attempts(&mut *db, &client)?;
        drop(db);
        return sign(ctx);
    }
    if attempt.count == 1 {
        // A new window began: the moment to clear away a bounded batch of
        // ended ones, so rows of old windows never pile up.
        sql::prune_attempts(&mut *db, now, PRUNE_BATCH)?;
    }
    Err(ApiError::InvalidCredentials)
}

/// Signs a token with the signing secret for a login that passed.
fn sign(ctx: &mut impl Context) -> Result<Response, ApiError> {
    let Some(secret) = settings::signing_secret(ctx)? else {
        return Err(ApiError::TokenNotIssued);
    };
    let token = token::issue(secret.as_bytes(), ctx.now()).map_err(|_| ApiError::TokenNotIssued)?;
    Ok(Response::ok(200, "Token generated successfully", Some(json!({ "token": token }))))
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
