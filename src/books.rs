//! The book resource: its JSON shape, the rules a client-supplied book must
//! pass (decisions.md), and the four book handlers over a `BookStore`.

use serde::Serialize;
use serde_json::{Map, Value};

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
        let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(body) else {
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

/// A non-blank string of at most `MAX_TEXT_CHARS` characters, without NUL
/// (which PostgreSQL cannot store in `text`, so neither store accepts it).
fn take_text(fields: &mut Map<String, Value>, name: &str) -> Result<Option<String>, ApiError> {
    match fields.remove(name) {
        None => Ok(None),
        Some(Value::String(text))
            if !text.trim().is_empty()
                && !text.contains('\0')
                && text.chars().count() <= MAX_TEXT_CHARS =>
        {
            Ok(Some(text))
        }
        Some(_) => Err(ApiError::InvalidBook),
    }
}

/// A JSON integer (no fraction or exponent) that fits in 32 bits.
fn take_year(fields: &mut Map<String, Value>) -> Result<Option<i32>, ApiError> {
    match fields.remove("year") {
        None => Ok(None),
        Some(Value::Number(number)) => number
            .as_i64()
            .and_then(|year| i32::try_from(year).ok())
            .map(Some)
            .ok_or(ApiError::InvalidBook),
        Some(_) => Err(ApiError::InvalidBook),
    }
}

pub fn create(store: &mut dyn BookStore, body: &[u8]) -> Result<Response, ApiError> {
    let new_book = NewBook::from_json(body)?;
    let book = store.create(&new_book)?;
    Ok(Response::ok(201, "Book created successfully", Some(book)))
}

pub fn list(store: &mut dyn BookStore) -> Result<Response, ApiError> {
    let books = store.list()?;
    Ok(Response::ok(
        200,
        "Books retrieved successfully",
        Some(books),
    ))
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
