//! Authentication: the login endpoint that issues tokens (with its
//! failed-login limit), and the check that guards every protected route.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::app::{self, Context};
use crate::envelope::Response;
use crate::error::ApiError;
use crate::login_throttle::{self, LoginLimit, PRUNE_BATCH};
use crate::password::{same_text, HashedPassword};
use crate::settings::{Setting, DEFAULT_PASSWORD, DEFAULT_USERNAME, MIN_SECRET_BYTES};
use crate::token::{self, TokenError};

/// Checks the `Authorization` header of a protected request: the bare token.
/// A token signed with `secret_token` is accepted; while
/// `secret_token_previous` is set, so is one signed with it (decisions.md,
/// "Credentials and keys"), until it expires. New tokens are only ever
/// signed with `secret_token`.
pub fn authorize(ctx: &mut impl Context, header: Option<&[u8]>) -> Result<(), ApiError> {
    let token = header.map(<[u8]>::trim_ascii).unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::TokenRequired);
    }
    let Some(secret) = ctx.setting(Setting::SecretToken) else {
        ctx.log("warning: no signing secret is configured (secret_token / SECRET_TOKEN): every token is refused");
        return Err(ApiError::InvalidToken);
    };
    let now = ctx.now();
    match token::verify(token, secret.as_bytes(), now) {
        Ok(()) => Ok(()),
        // Only a signature that does not match the current secret can match
        // the previous one; the previous secret is read only then.
        Err(TokenError::BadSignature) => match ctx.setting(Setting::SecretTokenPrevious) {
            Some(previous) => {
                token::verify(token, previous.as_bytes(), now).map_err(|_| ApiError::InvalidToken)
            }
            None => Err(ApiError::InvalidToken),
        },
        Err(_) => Err(ApiError::InvalidToken),
    }
}

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
            .setting(Setting::AuthUsername)
            .unwrap_or_else(|| DEFAULT_USERNAME.to_string());
        let password = match ctx.setting(Setting::AuthPasswordHash) {
            Some(phc) => {
                HashedPassword::parse(&phc).map_err(ApiError::internal)?;
                ExpectedPassword::Hash(phc)
            }
            None => ExpectedPassword::Plain(ctx.setting(Setting::AuthPassword).unwrap_or_else(
                || {
                    ctx.log("warning: the default password is in use: set auth_password / AUTH_PASSWORD (or auth_password_hash)");
                    DEFAULT_PASSWORD.to_string()
                },
            )),
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

/// `POST /token`: credentials in, a signed token out. `body` is the request
/// body as read (or why it could not be), judged only after the
/// failed-login limit: a blocked address gets 429 whatever it sends.
pub fn issue_token(
    ctx: &mut impl Context,
    body: Result<Vec<u8>, ApiError>,
) -> Result<Response, ApiError> {
    let credentials = Credentials::read(ctx)?;
    let max_failures = login_throttle::max_failures(ctx);
    if max_failures == 0 {
        // No limit: no store call either.
        let (username, password) = read_login(&body?)?;
        if !credentials.accept(&username, &password)? {
            return Err(ApiError::InvalidCredentials);
        }
        return sign(ctx);
    }
    let limit = LoginLimit {
        max_failures,
        window_seconds: login_throttle::window_seconds(ctx),
    };
    let trust = login_throttle::trust_forwarded_for(ctx);
    let client = login_throttle::client_key(ctx.client_addr(), ctx.forwarded_for(), trust);
    let now = ctx.now();

    // The store borrows the context until it is dropped: everything the
    // login needs from the context was read above.
    let mut store = app::store(ctx)?;
    let known = store.login_failures(&client)?;
    if let Some(retry_after) = limit.blocks(known, now) {
        return Err(ApiError::TooManyLoginAttempts { retry_after });
    }
    let (username, password) = read_login(&body?)?;
    if credentials.accept(&username, &password)? {
        if known.is_some() {
            store.clear_login_failures(&client)?;
        }
        drop(store);
        return sign(ctx);
    }
    let counted = store.record_login_failure(&client, now, limit.window_seconds)?;
    if counted.count == 1 {
        // A new window began: the moment to clear away a bounded batch of
        // ended ones, so rows of old windows never pile up.
        store.prune_login_failures(now, PRUNE_BATCH)?;
    }
    drop(store);
    match limit.exceeded_by(counted, now) {
        Some(retry_after) => Err(ApiError::TooManyLoginAttempts { retry_after }),
        None => Err(ApiError::InvalidCredentials),
    }
}

/// Signs a token with `secret_token` for a login that passed.
fn sign(ctx: &mut impl Context) -> Result<Response, ApiError> {
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
