//! The book resource: its JSON shape, the rules a client-supplied book must
//! pass (decisions.md), and the four book handlers over a `BookStore`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::catalog::BookQuery;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::router::BookId;
use crate::store::BookStore;

/// Longest title or author, in Unicode scalar values (characters).
pub const MAX_TEXT_CHARS: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Book {
    pub id: i64,
    pub title: String,
    pub author: String,
    pub year: i32,
}

/// A book to create: all three fields, each valid.
#[derive(Debug, Clone, PartialEq, Eq)]
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

impl BookChanges {
    /// Reads a JSON object's book fields. Every field present must be valid
    /// (`null` is not); `id` and unknown fields are ignored.
    pub fn from_json(body: &[u8]) -> Result<BookChanges, ApiError> {
        // Raw values keep each field's JSON text, so `year` is judged by its
        // literal; a repeated key keeps its last value.
        let Ok(mut fields) = serde_json::from_slice::<RawFields>(body) else {
            return Err(ApiError::InvalidBook);
        };
        Ok(BookChanges {
            title: take_text(&mut fields, "title")?,
            author: take_text(&mut fields, "author")?,
            year: take_year(&mut fields)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.author.is_none() && self.year.is_none()
    }

    pub fn apply_to(self, book: &mut Book) {
        if let Some(title) = self.title {
            book.title = title;
        }
        if let Some(author) = self.author {
            book.author = author;
        }
        if let Some(year) = self.year {
            book.year = year;
        }
    }
}

impl NewBook {
    /// The stored book, once the store has assigned its id.
    pub fn with_id(&self, id: i64) -> Book {
        Book {
            id,
            title: self.title.clone(),
            author: self.author.clone(),
            year: self.year,
        }
    }

    pub fn from_json(body: &[u8]) -> Result<NewBook, ApiError> {
        let changes = BookChanges::from_json(body)?;
        match changes {
            BookChanges {
                title: Some(title),
                author: Some(author),
                year: Some(year),
            } => Ok(NewBook {
                title,
                author,
                year,
            }),
            _ => Err(ApiError::InvalidBook),
        }
    }
}

/// A JSON object's members as unparsed JSON texts. (A `BTreeMap`, not a
/// `HashMap`: no random hash seed to ask the host for.)
type RawFields = BTreeMap<String, Box<RawValue>>;

/// A non-blank string of at most `MAX_TEXT_CHARS` characters, without NUL
/// (which PostgreSQL cannot store in `text`, so neither store accepts it).
fn take_text(fields: &mut RawFields, name: &str) -> Result<Option<String>, ApiError> {
    let Some(raw) = fields.remove(name) else {
        return Ok(None);
    };
    match serde_json::from_str::<String>(raw.get()) {
        Ok(text)
            if !text.trim().is_empty()
                && !text.contains('\0')
                && text.chars().count() <= MAX_TEXT_CHARS =>
        {
            Ok(Some(text))
        }
        _ => Err(ApiError::InvalidBook),
    }
}

/// A JSON integer literal (RFC 8259: `-`? then `0` or a non-zero digit and
/// more digits; no fraction, no exponent) that fits in 32 bits. `-0` is 0.
fn take_year(fields: &mut RawFields) -> Result<Option<i32>, ApiError> {
    let Some(raw) = fields.remove("year") else {
        return Ok(None);
    };
    let literal = raw.get();
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    let integer_literal = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !integer_literal {
        return Err(ApiError::InvalidBook);
    }
    literal
        .parse::<i32>()
        .map(Some)
        .map_err(|_| ApiError::InvalidBook)
}

pub fn create(store: &mut dyn BookStore, body: &[u8]) -> Result<Response, ApiError> {
    let new_book = NewBook::from_json(body)?;
    let book = store.create(&new_book)?;
    Ok(Response::ok(201, "Book created successfully", Some(book)))
}

/// `GET /books`. Without parameters, every book through `BookStore::list`,
/// as before; otherwise one page of the catalog query (decisions.md,
/// "Catalog queries"), one store call, with a `Link` to the next page.
pub fn list(store: &mut dyn BookStore, query: &BookQuery) -> Result<Response, ApiError> {
    if query.is_everything() {
        let books = store.list()?;
        return Ok(Response::ok(
            200,
            "Books retrieved successfully",
            Some(books),
        ));
    }
    let found = if query.matches_nothing() {
        Vec::new()
    } else {
        store.list_page(query)?
    };
    let (books, link) = query.page(found);
    let response = Response::ok(200, "Books retrieved successfully", Some(books));
    Ok(match link {
        Some(link) if response.status == 200 => response.with_header("link", link),
        _ => response,
    })
}

pub fn get(store: &mut dyn BookStore, id: BookId) -> Result<Response, ApiError> {
    let book = store.get(id)?.ok_or(ApiError::BookNotFound)?;
    Ok(Response::ok(200, "Book retrieved successfully", Some(book)))
}

/// The book is looked up before the body is judged, so a missing book is 404
/// even with a bad body. On the usual path that lookup is the update itself:
/// one store call.
pub fn update(store: &mut dyn BookStore, id: BookId, body: &[u8]) -> Result<Response, ApiError> {
    let changes = match BookChanges::from_json(body) {
        Ok(changes) => changes,
        Err(invalid) => {
            store.get(id)?.ok_or(ApiError::BookNotFound)?;
            return Err(invalid);
        }
    };
    let book = if changes.is_empty() {
        store.get(id)?
    } else {
        store.update(id, &changes)?
    };
    let book = book.ok_or(ApiError::BookNotFound)?;
    Ok(Response::ok(200, "Book updated successfully", Some(book)))
}

pub fn delete(store: &mut dyn BookStore, id: BookId) -> Result<Response, ApiError> {
    if store.delete(id)? {
        Ok(Response::ok::<()>(200, "Book deleted successfully", None))
    } else {
        Err(ApiError::BookNotFound)
    }
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
        for bad in [
            "2147483648",
            "-2147483649",
            "1999.0",
            "-0.0",
            "1e3",
            "0e0",
            "\"1999\"",
            "null",
            "true",
            "[1999]",
            "1e400",
        ] {
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
        assert_eq!(
            year_of(r#"{"year": 5, "year": null}"#),
            Err(ApiError::InvalidBook)
        );
    }

    #[test]
    fn deep_nesting_in_an_ignored_field_costs_no_stack() {
        // Half a million levels: the largest nesting a 1 MiB body can hold.
        let depth = 500_000;
        let body = format!(
            r#"{{"extra":{}{},"year":7}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(year_of(&body), Ok(Some(7)));
        let unclosed = format!(r#"{{"extra":{}"#, "[".repeat(depth));
        assert_eq!(year_of(&unclosed), Err(ApiError::InvalidBook));
    }
}
