//! The book endpoints over the configured database: `POST /book`, `GET /books`,
//! `GET /book/{id}`, `PUT /book/{id}`, `DELETE /book/{id}`.

use crate::envelope::Response;
use crate::error::ApiError;
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::safe_writes::{etag, IdempotencyKey, Precondition};
use crate::sql::Connection;
use crate::store;

/// A response carrying one book, with its ETag.
fn with_book(status: u16, message: &str, book: Book) -> Response {
    let tag = etag(book.id, book.version);
    let response = Response::ok(status, message, Some(book));
    if response.status == status {
        response.with_header("etag", tag)
    } else {
        response
    }
}

/// With a key, the book is stored once per key: a repeat of the same book
/// answers the book as first created, a different book is refused.
pub fn create(
    db: &mut dyn Connection,
    body: &[u8],
    key: Option<&IdempotencyKey>,
    now: u64,
) -> Result<Response, ApiError> {
    let new_book = NewBook::from_json(body)?;
    let book = match key {
        None => store::create(db, &new_book)?,
        Some(key) => match store::create_once(db, key.as_str(), &new_book, now)? {
            (first, true) if !new_book.is_stored_as(&first) => {
                return Err(ApiError::IdempotencyKeyReused)
            }
            (book, _) => book,
        },
    };
    Ok(with_book(201, "Book created successfully", book))
}

/// `GET /books`. Without parameters, every book through `store::list`,
/// as before; otherwise one page of the catalog query (`query`), one store
/// call, with a `Link` to the next page.
pub fn list(db: &mut dyn Connection, query: &BookQuery) -> Result<Response, ApiError> {
    if query.is_everything() {
        let books = store::list(db)?;
        return Ok(Response::ok(
            200,
            "Books retrieved successfully",
            Some(books),
        ));
    }
    let found = if query.matches_nothing() {
        Vec::new()
    } else {
        store::list_page(db, query)?
    };
    let (books, link) = query.page(found);
    let response = Response::ok(200, "Books retrieved successfully", Some(books));
    Ok(match link {
        Some(link) if response.status == 200 => response.with_header("link", link),
        _ => response,
    })
}

pub fn get(db: &mut dyn Connection, id: BookId) -> Result<Response, ApiError> {
    let book = store::get(db, id)?.ok_or(ApiError::BookNotFound)?;
    Ok(with_book(200, "Book retrieved successfully", book))
}

/// On the usual path one statement checks the precondition and writes; a
/// `PUT` of no field still makes a new version. When it writes nothing
/// under a precondition, or cannot be tried, the book is looked up to answer
/// in the contract's order: 404, then the precondition (428, 412), then the
/// body (400).
pub fn update(
    db: &mut dyn Connection,
    id: BookId,
    precondition: &Precondition,
    body: &[u8],
) -> Result<Response, ApiError> {
    let changes = BookChanges::from_json(body);
    if let (Ok(changes), Some(versions)) = (&changes, precondition.versions()) {
        if let Some(book) = store::update(db, id, changes, versions)? {
            return Ok(with_book(200, "Book updated successfully", book));
        }
        if versions.is_none() {
            // Any version would have done: there is no such book.
            return Err(ApiError::BookNotFound);
        }
    }
    why_not_written(db, id, precondition)?;
    changes?;
    Err(ApiError::BookNotFound)
}

pub fn delete(
    db: &mut dyn Connection,
    id: BookId,
    precondition: &Precondition,
) -> Result<Response, ApiError> {
    if let Some(versions) = precondition.versions() {
        if store::delete(db, id, versions)? {
            return Ok(Response::ok::<()>(200, "Book deleted successfully", None));
        }
        if versions.is_none() {
            return Err(ApiError::BookNotFound);
        }
    }
    why_not_written(db, id, precondition)?;
    Err(ApiError::BookNotFound)
}

/// Why a write did not happen: no such book, or a precondition it fails.
/// `Ok` only when a book with this id was created after the write looked
/// (ids are never reused), which the write rightly did not see: 404.
fn why_not_written(
    db: &mut dyn Connection,
    id: BookId,
    precondition: &Precondition,
) -> Result<(), ApiError> {
    let book = store::get(db, id)?.ok_or(ApiError::BookNotFound)?;
    precondition.check(&book)
}
