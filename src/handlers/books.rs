//! The book endpoints over a `BookStore`: `POST /book`, `GET /books`,
//! `GET /book/{id}`, `PUT /book/{id}`, `DELETE /book/{id}`.

use crate::envelope::Response;
use crate::error::ApiError;
use crate::model::{BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::store::BookStore;

pub fn create(store: &mut dyn BookStore, body: &[u8]) -> Result<Response, ApiError> {
    let new_book = NewBook::from_json(body)?;
    let book = store.create(&new_book)?;
    Ok(Response::ok(201, "Book created successfully", Some(book)))
}

/// `GET /books`. Without parameters, every book through `BookStore::list`,
/// as before; otherwise one page of the catalog query (`query`), one store
/// call, with a `Link` to the next page.
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
