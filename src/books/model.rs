//! The book: its fields, its id, and the rules a client-supplied book must
//! pass (docs/api.md, "Book rules"), each written once here. A text may not
//! hold NUL: PostgreSQL cannot store it in `text`, so neither store accepts it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::ApiError;

/// Longest title or author, in Unicode scalar values (characters).
pub const MAX_TEXT_CHARS: usize = 1000;

/// A stored book, as the API shows it, and its version (shown only as its
/// ETag, `safe_writes`): 1 when created, one more on every `PUT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Book {
    pub id: BookId,
    pub title: String,
    pub author: String,
    pub year: i32,
    #[serde(skip)]
    pub version: i64,
}

/// A book to create: all three fields, each valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewBook {
    pub title: String,
    pub author: String,
    pub year: i32,
}

/// The fields a `PUT` replaces; absent ones keep their stored values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookChanges {
    pub title: Option<String>,
    pub author: Option<String>,
    pub year: Option<i32>,
}

/// A book id: 1 ..= 2^63-1, assigned by the store. Shown as a JSON number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BookId(i64);

impl BookId {
    pub fn new(value: i64) -> Option<BookId> {
        (value >= 1).then_some(BookId(value))
    }

    pub fn get(self) -> i64 {
        self.0
    }

    /// Parses the canonical decimal form only (`positive_decimal`).
    /// Anything else names no book.
    pub fn parse(text: &str) -> Option<BookId> {
        positive_decimal(text).map(BookId)
    }
}

/// A canonical decimal in 1 ..= 2^63-1: digits, no sign, no leading zero.
/// The form of a book id, and of the version in an ETag.
pub fn positive_decimal(text: &str) -> Option<i64> {
    let canonical = !text.is_empty()
        && text.len() <= 19
        && text.bytes().all(|b| b.is_ascii_digit())
        && !text.starts_with('0');
    if !canonical {
        return None;
    }
    text.parse().ok()
}

/// An integer literal as JSON writes one (RFC 8259: `-`? then `0` or a
/// non-zero digit and more digits; no `+`, no leading zero, no fraction or
/// exponent), within 64 bits. `-0` is 0. The rule of `year`, in a body and
/// in a catalog query alike.
pub fn integer_literal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let literal = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if literal {
        text.parse().ok()
    } else {
        None
    }
}

impl BookChanges {
    /// Reads a JSON object's book fields. Every field present must be valid
    /// (`null` is not); `id` and unknown fields are ignored.
    pub fn from_json(body: &[u8]) -> Result<BookChanges, ApiError> {
        BookChanges::judge(body).map_err(|_| ApiError::InvalidBook)
    }

    /// `from_json`, saying which field broke which rule (an import's answer).
    pub fn judge(body: &[u8]) -> Result<BookChanges, Refusal> {
        // Raw values keep each field's JSON text, so `year` is judged by its
        // literal; a repeated key keeps its last value.
        let Ok(mut fields) = serde_json::from_slice::<RawFields>(body) else {
            return Err(Refusal { field: None, reason: "not a JSON object" });
        };
        Ok(BookChanges {
            title: take_text(&mut fields, "title")?,
            author: take_text(&mut fields, "author")?,
            year: take_year(&mut fields)?,
        })
    }
}

/// Why a book was refused: the field (none when the book is not an object)
/// and the rule it broke, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub field: Option<&'static str>,
    pub reason: &'static str,
}

/// The rule of `title` and `author` (`field`): not blank, no NUL, at most
/// `MAX_TEXT_CHARS`.
pub fn judge_text(field: &'static str, text: String) -> Result<String, Refusal> {
    let reason = if text.trim().is_empty() {
        "blank"
    } else if text.contains('\0') {
        "holds a NUL character"
    } else if text.chars().count() > MAX_TEXT_CHARS {
        "longer than 1000 characters"
    } else {
        return Ok(text);
    };
    Err(Refusal { field: Some(field), reason })
}

/// A year's literal (`integer_literal`) within 32 bits.
pub fn judge_year(literal: &str) -> Result<i32, Refusal> {
    let reason = "not an integer within 32 bits";
    let year = integer_literal(literal).and_then(|year| i32::try_from(year).ok());
    year.ok_or(Refusal { field: Some("year"), reason })
}

impl NewBook {
    /// The stored book, once the store has assigned its id: its first
    /// version.
    pub fn with_id(&self, id: BookId) -> Book {
        Book {
            id,
            title: self.title.clone(),
            author: self.author.clone(),
            year: self.year,
            version: 1,
        }
    }

    /// The book as canonical JSON (its fields in order, no spaces): equal
    /// for two requests with the same book however each was written. An
    /// `Idempotency-Key` is stored with it.
    pub fn fingerprint(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(body: &[u8]) -> Result<NewBook, ApiError> {
        NewBook::judge(body).map_err(|_| ApiError::InvalidBook)
    }

    /// `from_json`, saying which field broke which rule.
    pub fn judge(body: &[u8]) -> Result<NewBook, Refusal> {
        let missing = |field| Refusal { field: Some(field), reason: "missing" };
        let changes = BookChanges::judge(body)?;
        Ok(NewBook {
            title: changes.title.ok_or(missing("title"))?,
            author: changes.author.ok_or(missing("author"))?,
            year: changes.year.ok_or(missing("year"))?,
        })
    }
}

/// A JSON object's members as unparsed JSON texts. (A `BTreeMap`, not a
/// `HashMap`: no random hash seed to ask the host for.)
type RawFields = BTreeMap<String, Box<RawValue>>;

fn take_text(fields: &mut RawFields, name: &'static str) -> Result<Option<String>, Refusal> {
    let Some(raw) = fields.remove(name) else {
        return Ok(None);
    };
    match serde_json::from_str::<String>(raw.get()) {
        Ok(text) => judge_text(name, text).map(Some),
        Err(_) => Err(Refusal { field: Some(name), reason: "not a string" }),
    }
}

fn take_year(fields: &mut RawFields) -> Result<Option<i32>, Refusal> {
    fields.remove("year").map(|raw| judge_year(raw.get())).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn year_of(body: &str) -> Result<Option<i32>, ApiError> {
        BookChanges::from_json(body.as_bytes()).map(|changes| changes.year)
    }

    #[test]
    fn years_are_integer_literals_within_32_bits() {
        assert_eq!(year_of(r#"{"year": 1999}"#), Ok(Some(1999)));
        assert_eq!(year_of(r#"{"year": -0}"#), Ok(Some(0)));
        assert_eq!(year_of(r#"{"year":-2147483648}"#), Ok(Some(i32::MIN)));
        assert_eq!(year_of(r#"{"year": 2147483647 }"#), Ok(Some(i32::MAX)));
        let bad =
            r#"2147483648 -2147483649 1999.0 -0.0 1e3 0e0 "1999" null true [1999] 1e400 01 +1"#;
        for bad in bad.split(' ') {
            assert_eq!(
                year_of(&format!(r#"{{"year": {bad}}}"#)),
                Err(ApiError::InvalidBook),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_last_of_repeated_keys_counts() {
        assert_eq!(year_of(r#"{"year": "x", "year": 5}"#), Ok(Some(5)));
        assert_eq!(year_of(r#"{"year": 5, "year": null}"#), Err(ApiError::InvalidBook));
    }

    #[test]
    fn deep_nesting_in_an_ignored_field_costs_no_stack() {
        // Half a million levels: the largest nesting a 1 MiB body can hold.
        let depth = 500_000;
        let body = format!(r#"{{"extra":{}{},"year":7}}"#, "[".repeat(depth), "]".repeat(depth));
        assert_eq!(year_of(&body), Ok(Some(7)));
        let unclosed = format!(r#"{{"extra":{}"#, "[".repeat(depth));
        assert_eq!(year_of(&unclosed), Err(ApiError::InvalidBook));
    }

    #[test]
    fn texts_are_non_blank_without_nul_and_at_most_1000_characters() {
        for good in ["a", " Dune ", &"é".repeat(MAX_TEXT_CHARS)] {
            assert!(judge_text("title", good.to_string()).is_ok(), "{good:?}");
        }
        for bad in ["", " \t\n", "a\0b", &"a".repeat(MAX_TEXT_CHARS + 1)] {
            assert!(judge_text("author", bad.to_string()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_are_canonical_decimals_in_range() {
        assert_eq!(BookId::parse("1").map(BookId::get), Some(1));
        assert_eq!(BookId::parse("9223372036854775807").map(BookId::get), Some(i64::MAX));
        let bad = "0 -1 +1 01 1.5 abc 1e3 %31 9223372036854775808 99999999999999999999 1/2 ١ １";
        for bad in bad.split(' ').chain(["", " 1", "1 ", "-9223372036854775808"]) {
            assert_eq!(BookId::parse(bad), None, "{bad:?}");
        }
    }
}
