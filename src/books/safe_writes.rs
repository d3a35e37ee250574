//! What makes a write safe to race or to retry (docs/api.md, "Safe
//! writes"): a book's version and its ETag, the precondition of `PUT` and
//! `DELETE` (`If-Match`), and the `Idempotency-Key` of `POST /book`.

use super::model::{positive_decimal, Book, BookId};
use crate::error::ApiError;

/// The strong ETag of a book's version: `"<id>.<version>"`. The id makes a
/// tag of one book never match another.
pub fn etag(id: BookId, version: i64) -> String {
    format!("\"{}.{version}\"", id.get())
}

/// What a `PUT` or `DELETE` asks of the book's version (RFC 9110 section
/// 13.1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Any version: no `If-Match` and none required (the specification's
    /// blind write), or `If-Match: *`.
    Any,
    /// Only these versions: the strong tags of this book an `If-Match`
    /// names (none when it names none: a weak tag or another book's never
    /// matches).
    Versions(Vec<i64>),
    /// No `If-Match` where `require_if_match` asks for one: the write is
    /// not tried (428).
    Required,
}

impl Precondition {
    /// The request's (joined) `If-Match` value for book `id`; without one,
    /// `required` says whether it is `Required` or `Any`.
    pub fn of(if_match: Option<&[u8]>, id: BookId, required: bool) -> Precondition {
        let Some(value) = if_match else {
            return if required { Precondition::Required } else { Precondition::Any };
        };
        let Ok(value) = std::str::from_utf8(value) else {
            return Precondition::Versions(Vec::new());
        };
        if value.trim() == "*" {
            return Precondition::Any;
        }
        let prefix = format!("\"{}.", id.get());
        let versions = value
            .split(',')
            .filter_map(|tag| tag.trim().strip_prefix(&prefix)?.strip_suffix('"'))
            .filter_map(positive_decimal)
            .collect();
        Precondition::Versions(versions)
    }

    /// Whether a write is to be tried at all.
    pub fn may_write(&self) -> bool {
        *self != Precondition::Required
    }

    /// Whether a write may replace `book` as it is: 428, 412 or fine.
    pub fn check(&self, book: &Book) -> Result<(), ApiError> {
        match self {
            Precondition::Required => Err(ApiError::PreconditionRequired),
            Precondition::Versions(versions) if !versions.contains(&book.version) => {
                Err(ApiError::PreconditionFailed)
            }
            _ => Ok(()),
        }
    }
}

pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;

/// How long a key is remembered at least, in seconds.
pub const IDEMPOTENCY_KEY_SECONDS: u64 = 24 * 60 * 60;

/// Keys past that age forgotten by each keyed create, at most.
pub const KEYS_PRUNED_PER_CREATE: u32 = 10;

/// An `Idempotency-Key` value as sent: 1 to 255 visible ASCII characters
/// (the draft's quoted form is a key whose quotes are part of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key as stored: the owner's own, so one account's key never
    /// answers another's request. `None` is the configured pair, whose keys
    /// are stored as sent, as they were before accounts; an account's are
    /// prefixed with its name and a separator (a control character, in no
    /// key and no username).
    pub fn scoped_to(&self, account: Option<&str>) -> String {
        match account {
            None => self.0.clone(),
            Some(account) => format!("{account}\u{1f}{}", self.0),
        }
    }
}

impl IdempotencyKey {
    pub fn parse(value: &[u8]) -> Result<IdempotencyKey, ApiError> {
        let visible = (1..=MAX_IDEMPOTENCY_KEY_CHARS).contains(&value.len())
            && value.iter().all(|b| (0x21..=0x7e).contains(b));
        match std::str::from_utf8(value) {
            Ok(key) if visible => Ok(IdempotencyKey(key.to_string())),
            _ => Err(ApiError::InvalidIdempotencyKey),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    //! `If-Match` forms are the core's safe-writes tests' (through `handle`).
    use super::*;

    #[test]
    fn idempotency_keys_are_1_to_255_visible_ascii_characters() {
        for good in ["a", "\"quoted-uuid\"", &"k".repeat(255), "!~"] {
            assert_eq!(IdempotencyKey::parse(good.as_bytes()).unwrap().as_str(), good);
        }
        for bad in ["", "a b", "tab\t", &"k".repeat(256), "caf\u{e9}", "a, b"] {
            assert!(IdempotencyKey::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_if_match_that_is_not_text_names_no_version() {
        let id = BookId::new(12).unwrap();
        let unreadable = Precondition::of(Some(b"\"12.3\"\xff"), id, false);
        assert_eq!(unreadable, Precondition::Versions(vec![]));
    }
}
