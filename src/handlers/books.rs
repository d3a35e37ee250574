//! The book endpoints over the configured database: `POST /book`, `GET /books`,
//! `GET /book/{id}`, `PUT /book/{id}`, `DELETE /book/{id}`.

use crate::envelope::Response;
use crate::error::ApiError;
use crate::model::{BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::sql::Connection;
use crate::store;

pub fn create(db: &mut dyn Connection, body: &[u8]) -> Result<Response, ApiError> {
    let new_book = NewBook::from_json(body)?;
    let book = store::create(db, &new_book)?;
    Ok(Response::ok(201, "Book created successfully", Some(book)))
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
    Ok(Response::ok(200, "Book retrieved successfully", Some(book)))
}

/// The book is looked up before the body is judged, so a missing book is 404
/// even with a bad body. On the usual path that lookup is the update itself:
/// one store call.
pub fn update(db: &mut dyn Connection, id: BookId, body: &[u8]) -> Result<Response, ApiError> {
    let changes = match BookChanges::from_json(body) {
        Ok(changes) => changes,
        Err(invalid) => {
            store::get(db, id)?.ok_or(ApiError::BookNotFound)?;
            return Err(invalid);
        }
    };
    let book = if changes.is_empty() {
        store::get(db, id)?
    } else {
        store::update(db, id, &changes)?
    };
    let book = book.ok_or(ApiError::BookNotFound)?;
    Ok(Response::ok(200, "Book updated successfully", Some(book)))
}

pub fn delete(db: &mut dyn Connection, id: BookId) -> Result<Response, ApiError> {
    if store::delete(db, id)? {
        Ok(Response::ok::<()>(200, "Book deleted successfully", None))
    } else {
        Err(ApiError::BookNotFound)
    }
}
