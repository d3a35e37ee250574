//! `POST /token`: credentials in, a signed token out, under the failed-login
//! limit (`login_limit`): the attempt is counted before its password is
//! checked, and a client past the limit gets 429 whatever it sends.

use serde::Serialize;
use serde_json::{Map, Value};

use super::auth::signing_secret;
use crate::client::{ClientHeaders, ClientIdentity, FORWARDED_FOR_HEADER, PEER_ADDRESS_HEADER};
use crate::envelope::Response;
use crate::error::ApiError;
use crate::login_limit::PRUNE_BATCH;
use crate::password::{same_text, HashedPassword};
use crate::port::{open_configured_store, Context, RequestHead};
use crate::settings::{self, Setting, DEFAULT_PASSWORD, DEFAULT_USERNAME};
use crate::store;
use crate::token;

#[derive(Serialize)]
struct IssuedToken {
    token: String,
}

/// The password a login must match.
enum ExpectedPassword {
    Plain(String),
    /// An Argon2id PHC string, already checked to parse.
    Hash(String),
}

/// The configured login name and password.
struct Credentials {
    username: String,
    password: ExpectedPassword,
}

impl Credentials {
    /// `auth_password_hash`, when set, replaces `auth_password` (and then no
    /// default-password warning). A hash that cannot be used makes every
    /// login a 500; the reason, never the hash, goes to the log.
    fn read(ctx: &mut impl Context) -> Result<Credentials, ApiError> {
        let username = ctx
            .setting(Setting::AuthUsername)?
            .unwrap_or_else(|| DEFAULT_USERNAME.to_string());
        let password = match ctx.setting(Setting::AuthPasswordHash)? {
            Some(phc) => {
                HashedPassword::parse(&phc).map_err(ApiError::internal)?;
                ExpectedPassword::Hash(phc)
            }
            None => match ctx.setting(Setting::AuthPassword)? {
                Some(password) => ExpectedPassword::Plain(password),
                None => {
                    ctx.log("warning: the default password is in use: set auth_password / AUTH_PASSWORD (or auth_password_hash)");
                    ExpectedPassword::Plain(DEFAULT_PASSWORD.to_string())
                }
            },
        };
        Ok(Credentials { username, password })
    }

    /// Both parts are always checked (`&`, not `&&`), each in time that
    /// does not depend on where a wrong value differs.
    fn accept(&self, username: &str, password: &str) -> Result<bool, ApiError> {
        let username_matches = same_text(username, &self.username);
        let password_matches = match &self.password {
            ExpectedPassword::Plain(expected) => same_text(password, expected),
            ExpectedPassword::Hash(phc) => HashedPassword::parse(phc)
                .map_err(ApiError::internal)?
                .verify(password),
        };
        Ok(username_matches & password_matches)
    }
}

/// `POST /token`. `body` is the request body as read (or why it could not be).
pub fn issue_token(
    ctx: &mut impl Context,
    head: &RequestHead,
    body: Result<Vec<u8>, ApiError>,
) -> Result<Response, ApiError> {
    let credentials = Credentials::read(ctx)?;
    let limit = settings::login_limit(ctx)?;
    let login = body.and_then(|body| read_login(&body));
    if !limit.enabled() {
        // No limit: no store call either.
        let (username, password) = login?;
        if !credentials.accept(&username, &password)? {
            return Err(ApiError::InvalidCredentials);
        }
        return sign(ctx);
    }
    let identity = settings::client_identity(ctx)?;
    let client = identity.key(&client_headers(head, &identity));
    let now = ctx.now();

    // The store borrows the context until it is dropped: everything the
    // login needs from the context was read above.
    let mut db = open_configured_store(ctx)?;
    let (username, password) = match login {
        Ok(login) => login,
        // No password to check, so nothing to count: a read tells whether
        // the client is blocked (429) or only sent a bad body (400).
        Err(unreadable) => {
            return match limit.blocks(store::login_attempts(&mut *db, &client)?, now) {
                Some(retry_after) => Err(ApiError::TooManyLoginAttempts { retry_after }),
                None => Err(unreadable),
            };
        }
    };
    let attempt = store::count_login_attempt(&mut *db, &client, now, limit.window_seconds)?;
    if let Some(retry_after) = limit.refuses(attempt, now) {
        return Err(ApiError::TooManyLoginAttempts { retry_after });
    }
    if credentials.accept(&username, &password)? {
        store::clear_login_attempts(&mut *db, &client)?;
        drop(db);
        return sign(ctx);
    }
    if attempt.count == 1 {
        // A new window began: the moment to clear away a bounded batch of
        // ended ones, so rows of old windows never pile up.
        store::prune_login_attempts(&mut *db, now, PRUNE_BATCH)?;
    }
    Err(ApiError::InvalidCredentials)
}

/// The request headers a client is identified by. Spin appends its own
/// `spin-client-addr` after any the client sent, so the platform's value is
/// the last one.
fn client_headers<'a>(head: &RequestHead<'a>, identity: &ClientIdentity) -> ClientHeaders<'a> {
    ClientHeaders {
        peer: head.header_values(PEER_ADDRESS_HEADER).last(),
        forwarded_for: head.header_values(FORWARDED_FOR_HEADER).collect(),
        ip_header: identity
            .ip_header
            .as_deref()
            .and_then(|name| head.header_values(name).last()),
    }
}

/// Signs a token with `secret_token` for a login that passed.
fn sign(ctx: &mut impl Context) -> Result<Response, ApiError> {
    let Some(secret) = signing_secret(ctx, Setting::SecretToken)? else {
        return Err(ApiError::TokenNotIssued);
    };
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
