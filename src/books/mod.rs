//! The book endpoints: `POST /book`, `GET /books`, `GET /book/{id}`,
//! `PUT /book/{id}`, `DELETE /book/{id}`, each over the configured store
//! (`sql`), with the book's rules (`model`), catalog queries (`query`) and
//! what makes a write safe to race or retry (`safe_writes`); `POST /books`
//! and the CSV list in `transfer` (`csv`).

pub mod changes;
pub mod csv;
pub mod model;
pub mod query;
pub mod safe_writes;
pub mod sql;
pub mod transfer;

use futures::StreamExt;
use model::{Book, BookChanges, BookId, NewBook};
use query::BookQuery;
use safe_writes::{etag, IdempotencyKey, Precondition};
use sql::{Keyed, StoredAnswer};
use transfer::Form;

use crate::db::Connection;
use crate::envelope::{Body, Response};
use crate::error::ApiError;

/// A response carrying one book, with its ETag.
fn with_book(status: u16, message: &str, book: &Book) -> Result<Response, ApiError> {
    let response = Response::ok(status, message, book)?;
    Ok(response.with_header("etag", etag(book.id, book.version)))
}

/// The 201 of a created book, as a keyed create stores it: every 201 is
/// built here, so a replay is byte for byte the first answer.
fn created(book: &Book) -> anyhow::Result<StoredAnswer> {
    let response = with_book(201, "Book created successfully", book)?;
    let body = String::from_utf8(response.bytes().to_vec())?;
    Ok(StoredAnswer { status: response.status, etag: etag(book.id, book.version), body })
}

fn answer(stored: StoredAnswer) -> Response {
    Response::new(stored.status, stored.body.into_bytes()).with_header("etag", stored.etag)
}

/// With a key, the book is stored once per key: a repeat of the request
/// answers as the first did, another request with the key is refused.
pub async fn create(
    db: &mut impl Connection,
    body: &[u8],
    key: Option<&IdempotencyKey>,
    now: u64,
    account: &str,
    key_owner: Option<&str>,
) -> Result<Response, ApiError> {
    let book = NewBook::from_json(body)?;
    let Some(key) = key else {
        return Ok(answer(created(&sql::create(db, &book, account).await?)?));
    };
    let fingerprint = book.fingerprint();
    let key = key.scoped_to(key_owner);
    match sql::create_once(db, &key, &fingerprint, &book, created, now, account).await? {
        Keyed::Created(first) | Keyed::Replayed(first) => Ok(answer(first)),
        Keyed::Conflict => Err(ApiError::IdempotencyKeyReused),
    }
}

pub(crate) const LISTED: &str = "Books retrieved successfully";

/// Books read by one statement of the whole list: its memory, and the
/// host's buffer of one result, stay small whatever the catalog's size.
pub const BOOKS_PER_PAGE: u32 = 1000;

/// `GET /books`. Without parameters, every book, as the specification
/// lists them: a catalog of up to a page is answered at once; a larger one
/// is written page by page as it is read (`every_book`). Otherwise one page
/// of the catalog query, one statement, with a `Link` to the next page.
/// Either in the `listing`'s form, JSON or CSV.
pub async fn list(
    mut db: impl Connection + 'static,
    query: &BookQuery,
    listing: Form,
) -> Result<Response, ApiError> {
    // Before the list is read: a mirror that lists, then follows the
    // changes from here, misses none.
    let position = sql::feed_position(&mut db).await?.to_string();
    Ok(list_from(db, query, listing).await?.with_header(CHANGES_CURSOR, position))
}

/// The header of `GET /books` naming the feed's position.
pub const CHANGES_CURSOR: &str = "changes-cursor";

async fn list_from(
    mut db: impl Connection + 'static,
    query: &BookQuery,
    listing: Form,
) -> Result<Response, ApiError> {
    if query.is_everything() {
        return every_book(db, listing).await;
    }
    let found = if query.matches_nothing() {
        Vec::new()
    } else {
        // One more than the page: whether a next page exists.
        let query = BookQuery { limit: query.limit.map(|limit| limit + 1), ..query.clone() };
        sql::page(&mut db, &query).await?
    };
    let (books, link) = query.page(found);
    let response = listing.whole(&books)?;
    Ok(match link {
        Some(link) => response.with_header("link", link),
        None => response,
    })
}

/// The whole catalog: the first page read now; past it, the envelope
/// written piece by piece, one autocommit statement a page (docs/api.md
/// says what a concurrent write does to it), the store moved into the body.
async fn every_book(
    mut db: impl Connection + 'static,
    listing: Form,
) -> Result<Response, ApiError> {
    let first = sql::page(&mut db, &BookQuery::everything_after(None, BOOKS_PER_PAGE)).await?;
    let Some(after) = full_page_end(&first) else {
        return listing.whole(&first);
    };
    let mut piece = listing.start();
    listing.write(&mut piece, &first, false)?;
    let rest = futures::stream::unfold(Some((db, after)), move |state| async move {
        let (mut db, after) = state?;
        let query = BookQuery::everything_after(Some(after), BOOKS_PER_PAGE);
        let page = match sql::page(&mut db, &query).await {
            Ok(page) => page,
            Err(error) => return Some((Err(ApiError::from(error)), None)),
        };
        let mut piece = Vec::with_capacity(page.len() * 100);
        if let Err(error) = listing.write(&mut piece, &page, true) {
            return Some((Err(error), None));
        }
        match full_page_end(&page) {
            Some(last) => Some((Ok(piece), Some((db, last)))),
            None => {
                listing.end(&mut piece);
                Some((Ok(piece), None))
            }
        }
    });
    let pieces = futures::stream::once(async { Ok(piece) }).chain(rest);
    let body = Body::Pieces(Box::pin(pieces));
    Ok(listing.headed(Response { status: 200, extra_headers: Vec::new(), body }))
}

/// The last book of a full page: where the next page begins.
fn full_page_end(page: &[Book]) -> Option<BookId> {
    (page.len() == BOOKS_PER_PAGE as usize).then(|| page.last().map(|book| book.id)).flatten()
}

pub async fn get(db: &mut impl Connection, id: BookId) -> Result<Response, ApiError> {
    let book = sql::get(db, id).await?.ok_or(ApiError::BookNotFound)?;
    with_book(200, "Book retrieved successfully", &book)
}

/// On the usual path one statement checks the precondition and writes; a
/// `PUT` of no field still makes a new version.
pub async fn update(
    db: &mut impl Connection,
    id: BookId,
    precondition: &Precondition,
    body: &[u8],
    account: &str,
) -> Result<Response, ApiError> {
    let changes = BookChanges::from_json(body);
    if let (Ok(changes), true) = (&changes, precondition.may_write()) {
        if let Some(book) = sql::update(db, id, changes, precondition, account).await? {
            return with_book(200, "Book updated successfully", &book);
        }
        if *precondition == Precondition::Any {
            return Err(ApiError::BookNotFound);
        }
    }
    why_not_written(db, id, precondition).await?;
    changes?;
    Err(ApiError::BookNotFound)
}

pub async fn delete(
    db: &mut impl Connection,
    id: BookId,
    precondition: &Precondition,
    account: &str,
) -> Result<Response, ApiError> {
    if precondition.may_write() {
        if sql::delete(db, id, precondition, account).await? {
            return Response::ok(200, "Book deleted successfully", &());
        }
        if *precondition == Precondition::Any {
            return Err(ApiError::BookNotFound);
        }
    }
    why_not_written(db, id, precondition).await?;
    Err(ApiError::BookNotFound)
}

/// A write's answer, after which, with `history_days` set, the changes
/// older than that are pruned a few at a time: housekeeping after the
/// commit, so its failure leaves the answer as it is (the next write
/// prunes what this one left).
pub async fn pruned(
    db: &mut impl Connection,
    history_days: Option<u32>,
    written: Result<Response, ApiError>,
) -> Result<Response, ApiError> {
    if let (Some(days), Ok(_)) = (history_days, &written) {
        let _ = sql::prune_changes(db, days).await;
    }
    written
}

/// Why a write did not happen, in the contract's order: no such book (404),
/// then the precondition (428, 412); the caller then judges the body (400).
/// `Ok` only when the book came after the write looked (ids are never
/// reused), which the write rightly did not see: 404.
async fn why_not_written(
    db: &mut impl Connection,
    id: BookId,
    precondition: &Precondition,
) -> Result<(), ApiError> {
    let book = sql::get(db, id).await?.ok_or(ApiError::BookNotFound)?;
    precondition.check(&book)
}
