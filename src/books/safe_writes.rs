//! What makes a write safe to race or to retry (docs/api.md, "Safe
//! writes"): a book's version and its ETag, the `If-Match` precondition of
//! `PUT` and `DELETE`, and the `Idempotency-Key` of `POST /book`.

use super::model::{positive_decimal, Book, BookId};
use crate::error::ApiError;

/// The strong ETag of a book's version: `"<id>.<version>"`. The id makes a
/// tag of one book never match another.
pub fn etag(id: BookId, version: i64) -> String {
    format!("\"{}.{version}\"", id.get())
}

/// What an `If-Match` value allows, for one book (RFC 9110 section 13.1.1):
/// `*`, or these versions only (none when it names no strong tag of this book).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    Any,
    Versions(Vec<i64>),
}

impl IfMatch {
    /// Reads the (joined) `If-Match` value for book `id`. Strong comparison:
    /// a weak tag (`W/"..."`) never matches, nor does a tag of another book.
    pub fn parse(value: &[u8], id: BookId) -> IfMatch {
        let Ok(value) = std::str::from_utf8(value) else {
            return IfMatch::Versions(Vec::new());
        };
        if value.trim() == "*" {
            return IfMatch::Any;
        }
        let prefix = format!("\"{}.", id.get());
        let versions = value
            .split(',')
            .filter_map(|tag| tag.trim().strip_prefix(&prefix)?.strip_suffix('"'))
            .filter_map(positive_decimal)
            .collect();
        IfMatch::Versions(versions)
    }
}

/// What a `PUT` or `DELETE` asks of the book's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// No `If-Match`, and none required: the specification's blind write.
    Unconditional,
    /// No `If-Match`, but `require_if_match` is on: 428.
    Missing,
    IfMatch(IfMatch),
}

impl Precondition {
    /// What the write may replace.
    pub fn replaceable(&self) -> Replaceable<'_> {
        match self {
            Precondition::Unconditional | Precondition::IfMatch(IfMatch::Any) => {
                Replaceable::AnyVersion
            }
            Precondition::IfMatch(IfMatch::Versions(versions)) => Replaceable::Versions(versions),
            Precondition::Missing => Replaceable::Nothing,
        }
    }

    /// Whether a write may replace `book` as it is.
    pub fn check(&self, book: &Book) -> Result<(), ApiError> {
        match self.replaceable() {
            Replaceable::Nothing => Err(ApiError::PreconditionRequired),
            Replaceable::Versions(versions) if !versions.contains(&book.version) => {
                Err(ApiError::PreconditionFailed)
            }
            _ => Ok(()),
        }
    }
}

/// What a `PUT` or `DELETE` may replace: the book at any version, only at
/// one of these, or nothing (the write must not be tried: 428).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaceable<'a> {
    AnyVersion,
    Versions(&'a [i64]),
    Nothing,
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
    use super::*;

    #[test]
    fn if_match_keeps_the_strong_tags_of_this_book_only() {
        let id = BookId::new(12).unwrap();
        let parse = |value: &str| IfMatch::parse(value.as_bytes(), id);
        assert_eq!(parse(" * "), IfMatch::Any);
        assert_eq!(parse("\"12.3\""), IfMatch::Versions(vec![3]));
        assert_eq!(parse("\"1.3\", W/\"12.4\", \"12.5\",\"12.6\""), IfMatch::Versions(vec![5, 6]));
        for nothing in ["", "12.3", "\"12.\"", "\"12.03\"", "\"12.-1\"", "\"12.3"] {
            assert_eq!(parse(nothing), IfMatch::Versions(vec![]), "{nothing:?}");
        }
        assert_eq!(IfMatch::parse(b"\"12.3\"\xff", id), IfMatch::Versions(vec![]));
        assert_eq!(etag(id, 3), "\"12.3\"");
    }

    #[test]
    fn idempotency_keys_are_1_to_255_visible_ascii_characters() {
        for good in ["a", "\"quoted-uuid\"", &"k".repeat(255), "!~"] {
            assert_eq!(IdempotencyKey::parse(good.as_bytes()).unwrap().as_str(), good);
        }
        for bad in ["", "a b", "tab\t", &"k".repeat(256), "caf\u{e9}", "a, b"] {
            assert!(IdempotencyKey::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
