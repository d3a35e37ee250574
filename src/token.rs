//! HS256 JSON Web Tokens (docs/api.md, "Tokens"): one algorithm; `exp`, and
//! who holds the token (`sub`, `role`, an account's `fp`); anything not fully
//! understood is rejected rather than guessed at.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::error::ApiError;
use crate::port::Context;
use crate::settings::password_hash::same_text;
use crate::settings::{self, pair_username, Accounts, Role, SettingSource};

type HmacSha256 = Hmac<Sha256>;

/// Who holds a token: the configured pair or an account, with its role now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub username: String,
    pub role: Role,
    /// The configured pair, not an account.
    pub pair: bool,
}

/// Checks the `Authorization` header of a protected request, the bare token:
/// signed with the signing secret or, while one is set, the previous one
/// (docs/configuration.md, "Rotating the signing secret"); its holder.
pub fn authorize(ctx: &mut impl Context, header: Option<&[u8]>) -> Result<Holder, ApiError> {
    let token = header.map(<[u8]>::trim_ascii).unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::TokenRequired);
    }
    let accounts = ctx.accounts()?;
    let Some(secret) = settings::signing_secret(ctx)? else {
        return Err(ApiError::InvalidToken);
    };
    let now = ctx.now();
    let claims = match verify(token, secret.as_bytes(), now) {
        Ok(claims) => claims,
        // Only a signature that does not match the current secret can match
        // the previous one; the previous secret is read only then.
        Err(TokenError::BadSignature) => match settings::previous_signing_secret(ctx)? {
            Some(previous) => {
                verify(token, previous.as_bytes(), now).map_err(|_| ApiError::InvalidToken)?
            }
            None => return Err(ApiError::InvalidToken),
        },
        Err(_) => return Err(ApiError::InvalidToken),
    };
    holder(ctx, &accounts, claims)
}

/// The holder `claims` name now: an account whose fingerprint is still `fp`,
/// or the configured pair (no `fp`; no `sub` in tokens before accounts).
fn holder(
    ctx: &mut impl SettingSource,
    accounts: &Accounts,
    claims: Claims,
) -> Result<Holder, ApiError> {
    let holder = match (claims.sub, claims.fp) {
        (Some(username), Some(fp)) => accounts
            .find(&username)
            .filter(|account| same_text(&fp, &account.fingerprint))
            .map(|account| Holder { role: account.role, username, pair: false }),
        (sub, None) => {
            let pair = pair_username(ctx)?;
            let username = sub.unwrap_or_else(|| pair.clone());
            (username == pair).then_some(Holder { username, role: Role::Editor, pair: true })
        }
        (None, Some(_)) => None,
    };
    holder.ok_or(ApiError::InvalidToken)
}

/// Tokens live 15 minutes.
pub const LIFETIME_SECONDS: u64 = 900;

/// Far longer than any token we issue (about 150 bytes); longer input is
/// rejected before any decoding, so a huge header costs nothing.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// `{"alg":"HS256","typ":"JWT"}`, base64url.
const ISSUED_HEADER: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/// Why a token was refused; all of them are "Invalid token" to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    EmptyKey,
    Malformed,
    UnsupportedAlgorithm,
    BadSignature,
    MissingExpiry,
    Expired,
}

/// The claims a token is issued with.
#[derive(Serialize)]
struct Issued<'a> {
    exp: u64,
    sub: &'a str,
    /// For pages that offer only what the holder may do; the service reads
    /// the role of the account, never this.
    role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    fp: Option<&'a str>,
}

/// The claims that say who holds a verified token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    pub sub: Option<String>,
    /// An account's credential fingerprint (`settings::Account`).
    pub fp: Option<String>,
}

/// Signs a token for `holder` (with its account's `fingerprint`; `None` for
/// the configured pair) that expires `LIFETIME_SECONDS` after `now`.
pub fn issue(
    key: &[u8],
    now: u64,
    holder: &Holder,
    fingerprint: Option<&str>,
) -> Result<String, TokenError> {
    let claims = Issued {
        exp: now.saturating_add(LIFETIME_SECONDS),
        sub: &holder.username,
        role: holder.role,
        fp: fingerprint,
    };
    let claims = serde_json::to_vec(&claims).map_err(|_| TokenError::Malformed)?;
    let mut token = String::with_capacity(256);
    token.push_str(ISSUED_HEADER);
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(claims, &mut token);
    let signature = mac(key, token.as_bytes())?.finalize().into_bytes();
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(signature, &mut token);
    Ok(token)
}

/// Accepts exactly: three base64url segments without padding, a header whose
/// `alg` is `HS256` (and no `crit`), a valid signature under `key`, and claims
/// with a numeric `exp` later than `now`, and `sub` and `fp` strings if present.
pub fn verify(token: &[u8], key: &[u8], now: u64) -> Result<Claims, TokenError> {
    if key.is_empty() {
        return Err(TokenError::EmptyKey);
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Malformed);
    }
    let mut segments = token.split(|&b| b == b'.');
    let (Some(header), Some(claims), Some(signature), None) =
        (segments.next(), segments.next(), segments.next(), segments.next())
    else {
        return Err(TokenError::Malformed);
    };

    let header_fields = decode_object(header)?;
    if header_fields.get("alg").and_then(Value::as_str) != Some("HS256") {
        return Err(TokenError::UnsupportedAlgorithm);
    }
    // RFC 7515 section 4.1.11: critical extensions we don't implement must fail.
    if header_fields.contains_key("crit") {
        return Err(TokenError::UnsupportedAlgorithm);
    }

    // The signed input is the header and claims segments with their dot.
    let signed_input = &token[..header.len() + 1 + claims.len()];
    let signature = decode(signature)?;
    mac(key, signed_input)?.verify_slice(&signature).map_err(|_| TokenError::BadSignature)?;

    let mut claims = decode_object(claims)?;
    let expiry = claims.get("exp").ok_or(TokenError::MissingExpiry)?;
    if !is_later_than(expiry, now)? {
        return Err(TokenError::Expired);
    }
    let mut text = |name| match claims.remove(name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(TokenError::Malformed),
    };
    Ok(Claims { sub: text("sub")?, fp: text("fp")? })
}

fn mac(key: &[u8], message: &[u8]) -> Result<HmacSha256, TokenError> {
    if key.is_empty() {
        return Err(TokenError::EmptyKey);
    }
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| TokenError::EmptyKey)?;
    mac.update(message);
    Ok(mac)
}

/// Strict base64url: no padding, no bytes outside the alphabet, no
/// non-canonical trailing bits (the `base64` engine's defaults).
fn decode(segment: &[u8]) -> Result<Vec<u8>, TokenError> {
    URL_SAFE_NO_PAD.decode(segment).map_err(|_| TokenError::Malformed)
}

fn decode_object(segment: &[u8]) -> Result<Map<String, Value>, TokenError> {
    match serde_json::from_slice(&decode(segment)?) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(TokenError::Malformed),
    }
}

/// `exp` must be a JSON number (RFC 7519 NumericDate, fractions allowed)
/// strictly after `now`: no leeway.
fn is_later_than(expiry: &Value, now: u64) -> Result<bool, TokenError> {
    let Value::Number(number) = expiry else {
        return Err(TokenError::MissingExpiry);
    };
    if let Some(whole) = number.as_u64() {
        return Ok(whole > now);
    }
    if number.is_i64() {
        return Ok(false); // negative
    }
    match number.as_f64() {
        Some(seconds) if seconds.is_finite() => Ok(seconds > now as f64),
        _ => Err(TokenError::MissingExpiry),
    }
}
