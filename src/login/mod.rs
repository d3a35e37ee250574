//! `POST /token`: credentials in, a signed token out, under the failed-login
//! limit (`limit`): a client past it gets 429 whatever it sends.

pub mod client;
pub mod limit;
pub mod sql;

use serde_json::{json, Map, Value};

use crate::envelope::Response;
use crate::error::ApiError;
use crate::log::RequestFields;
use crate::port::{open_store, Context, RequestHead};
use crate::settings::password_hash::{same_text, HashedPassword};
use crate::settings::{self, Accounts, Credentials, ExpectedPassword, Role};
use crate::token::{self, Holder};
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
    let accounts = ctx.accounts()?;
    let limit = settings::login_limit(ctx)?;
    let login = body.and_then(|body| read_login(&body));
    if !limit.enabled() {
        // No limit: no store call either.
        let (username, password) = login?;
        let signed = check(&credentials, &accounts, &username, &password);
        return sign(ctx, signed.ok_or(ApiError::InvalidCredentials)?, fields);
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
    if let Some(signed) = check(&credentials, &accounts, &username, &password) {
        sql::clear_attempts(&mut db, &client).await?;
        return sign(ctx, signed, fields);
    }
    if attempt.count == 1 {
        // A new window began: the moment to clear away a bounded batch of
        // ended ones, so rows of old windows never pile up.
        sql::prune_attempts(&mut db, now, PRUNE_BATCH).await?;
    }
    Err(ApiError::InvalidCredentials)
}

/// A login that passed: who, and its account's credential fingerprint.
struct Signed {
    holder: Holder,
    fingerprint: Option<String>,
}

/// Signs a token with the signing secret for a login that passed.
fn sign(
    ctx: &mut impl Context,
    signed: Signed,
    fields: &mut RequestFields,
) -> Result<Response, ApiError> {
    let Some(secret) = settings::signing_secret(ctx)? else {
        return Err(ApiError::TokenNotIssued);
    };
    let Signed { holder, fingerprint } = signed;
    let token = token::issue(secret.as_bytes(), ctx.now(), &holder, fingerprint.as_deref())
        .map_err(|_| ApiError::TokenNotIssued)?;
    fields.account = Some(holder.username);
    Response::ok(200, "Token generated successfully", &json!({ "token": token }))
}

/// Who `username` and `password` log in as, if anyone. The same work
/// whatever the name: the pair's check, and with accounts one Argon2
/// verification (`Accounts::to_check`), each always done in full.
fn check(
    pair: &Credentials,
    accounts: &Accounts,
    username: &str,
    password: &str,
) -> Option<Signed> {
    let as_pair = pair.accept(username, password);
    let as_account = accounts.to_check(username).filter(|(account, known)| {
        let verified =
            HashedPassword::parse(&account.password_hash).is_ok_and(|hash| hash.verify(password));
        verified & known
    });
    if as_pair {
        let holder = Holder { username: pair.username.clone(), role: Role::Editor, pair: true };
        return Some(Signed { holder, fingerprint: None });
    }
    let (account, _) = as_account?;
    let holder = Holder { username: account.username.clone(), role: account.role, pair: false };
    Some(Signed { holder, fingerprint: Some(account.fingerprint.clone()) })
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
