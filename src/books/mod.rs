//! The book endpoints: `POST /book`, `GET /books`, `GET /book/{id}`,
//! `PUT /book/{id}`, `DELETE /book/{id}`, each over the configured store
//! (`sql`), with the book's rules (`model`), catalog queries (`query`) and
//! what makes a write safe to race or retry (`safe_writes`).

pub mod model;
pub mod query;
pub mod safe_writes;
pub mod sql;

use model::{Book, BookChanges, BookId, NewBook};
use query::BookQuery;
use safe_writes::{etag, IdempotencyKey, Precondition, Replaceable};
use sql::Keyed;

use crate::db::Connection;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::port::{open_store, Context};

/// A response carrying one book, with its ETag (none on a failed 500).
fn with_book(status: u16, message: &str, book: Book) -> Response {
    let tag = etag(book.id, book.version);
    let response = Response::ok(status, message, Some(book));
    if response.status == status {
        response.with_header("etag", tag)
    } else {
        response
    }
}

fn created(book: Book) -> Response {
    with_book(201, "Book created successfully", book)
}

/// With a key, the book is stored once per key: a repeat of the request
/// answers as the first did, another request with the key is refused.
pub fn create(
    db: &mut dyn Connection,
    body: &[u8],
    key: Option<&IdempotencyKey>,
    now: u64,
) -> Result<Response, ApiError> {
    let book = NewBook::from_json(body)?;
    let Some(key) = key else {
        return Ok(created(sql::create(db, &book)?));
    };
    let fingerprint = book.fingerprint();
    match sql::create_once(db, key.as_str(), &fingerprint, &book, created, now)? {
        Keyed::Created(response) => Ok(response),
        Keyed::Used { fingerprint: used, first } if used == fingerprint => Ok(first),
        Keyed::Used { .. } => Err(ApiError::IdempotencyKeyReused),
    }
}

const LISTED: &str = "Books retrieved successfully";

/// Books read by one statement of the whole list: its memory, and the
/// host's buffer of one result, stay small whatever the catalog's size.
pub const BOOKS_PER_PAGE: u32 = 1000;

/// `GET /books`. Without parameters, every book, as the specification
/// lists them: a catalog of up to a page is answered at once; a larger one
/// is written page by page (`rest_of_list`). Otherwise one page of the
/// catalog query, one statement, with a `Link` to the next page.
pub fn list(db: &mut dyn Connection, query: &BookQuery) -> Result<Response, ApiError> {
    if query.is_everything() {
        let books = sql::list(db, None, BOOKS_PER_PAGE)?;
        let mut response = Response::ok(200, LISTED, Some(&books));
        if let (Some(last), 200) = (books.last(), response.status) {
            if books.len() == BOOKS_PER_PAGE as usize {
                // The envelope without its closing `]}`: the rest follows.
                response.body.truncate(response.body.len() - 2);
                response.continues_after = Some(last.id);
            }
        }
        return Ok(response);
    }
    let found = if query.matches_nothing() {
        Vec::new()
    } else {
        let query = BookQuery {
            // One more than the page: whether a next page exists.
            limit: query.limit.map(|limit| limit + 1),
            ..query.clone()
        };
        sql::page(db, &query)?
    };
    let (books, link) = query.page(found);
    let response = Response::ok(200, LISTED, Some(books));
    Ok(match link {
        Some(link) if response.status == 200 => response.with_header("link", link),
        _ => response,
    })
}

/// The next piece of the whole list after book `after`: the next page's
/// books, each after a comma, and once the catalog ends the closing `]}`;
/// with where the next piece begins (`None`: complete). One autocommit
/// statement a piece: docs/api.md says what a concurrent write does to it.
pub fn rest_of_list(
    ctx: &mut impl Context,
    after: BookId,
) -> Result<(Vec<u8>, Option<BookId>), ApiError> {
    let books = sql::list(&mut *open_store(ctx, &mut None)?, Some(after), BOOKS_PER_PAGE)?;
    let mut piece = Vec::with_capacity(books.len() * 100);
    for book in &books {
        piece.push(b',');
        serde_json::to_writer(&mut piece, book).map_err(ApiError::internal)?;
    }
    match books.last() {
        Some(last) if books.len() == BOOKS_PER_PAGE as usize => Ok((piece, Some(last.id))),
        _ => {
            piece.extend_from_slice(b"]}");
            Ok((piece, None))
        }
    }
}

pub fn get(db: &mut dyn Connection, id: BookId) -> Result<Response, ApiError> {
    let book = sql::get(db, id)?.ok_or(ApiError::BookNotFound)?;
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
    if let Ok(changes) = &changes {
        let updated = match precondition.replaceable() {
            Replaceable::AnyVersion => {
                Some(sql::update(db, id, changes, None)?.ok_or(ApiError::BookNotFound)?)
            }
            Replaceable::Versions(versions) => sql::update(db, id, changes, Some(versions))?,
            Replaceable::Nothing => None,
        };
        if let Some(book) = updated {
            return Ok(with_book(200, "Book updated successfully", book));
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
    let deleted = match precondition.replaceable() {
        Replaceable::AnyVersion => {
            if !sql::delete(db, id, None)? {
                return Err(ApiError::BookNotFound);
            }
            true
        }
        Replaceable::Versions(versions) => sql::delete(db, id, Some(versions))?,
        Replaceable::Nothing => false,
    };
    if deleted {
        return Ok(Response::ok::<()>(200, "Book deleted successfully", None));
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
    let book = sql::get(db, id)?.ok_or(ApiError::BookNotFound)?;
    precondition.check(&book)
}
