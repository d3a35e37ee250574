//! Method + path to endpoint (docs/api.md).
//!
//! Routing answers two questions in the order the contract needs: is the path
//! served at all (404 "Not found" otherwise, before any authentication), and,
//! only once authentication has passed, does the path serve this method (405).

use crate::error::ApiError;
use crate::model::BookId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /health`: whether the configured store answers.
    Health,
    IssueToken,
    CreateBook,
    ListBooks,
    /// `None` when the path segment is not a valid id: such a book never exists.
    GetBook(Option<BookId>),
    UpdateBook(Option<BookId>),
    DeleteBook(Option<BookId>),
}

/// A path the service serves, with the outcome for the request's method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub protected: bool,
    pub endpoint: Result<Endpoint, ApiError>,
}

const BOOK_ITEM_PREFIX: &str = "/book/";

/// The health check's path: public, for load balancers and Kubernetes probes.
pub const HEALTH_PATH: &str = "/health";

/// The login path.
pub const TOKEN_PATH: &str = "/token";

/// The header fields besides `Authorization` that a request's endpoint
/// reads (`RequestHead::headers`), so that an adapter copies only those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadersRead {
    None,
    /// A login: who the client is may be told by several headers, which
    /// ones depending on settings.
    All,
    /// One field, by its lower-case name: `If-Match` on `PUT` and `DELETE`
    /// of a book, `Idempotency-Key` on `POST /book`.
    Only(&'static str),
}

pub fn headers_read(method: &str, path: &str) -> HeadersRead {
    match (method, path) {
        (_, TOKEN_PATH) => HeadersRead::All,
        ("POST", "/book") => HeadersRead::Only(IDEMPOTENCY_KEY),
        ("PUT" | "DELETE", _) if path.starts_with(BOOK_ITEM_PREFIX) => HeadersRead::Only(IF_MATCH),
        _ => HeadersRead::None,
    }
}

pub const IF_MATCH: &str = "if-match";
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The route pattern a path matches, for log lines: never the path itself.
pub fn pattern(path: &str) -> &'static str {
    match path {
        HEALTH_PATH => HEALTH_PATH,
        TOKEN_PATH => TOKEN_PATH,
        "/book" => "/book",
        "/books" => "/books",
        _ if path.starts_with(BOOK_ITEM_PREFIX) => "/book/{id}",
        _ => "unmatched",
    }
}

/// Routes a request; `path` excludes the query string.
pub fn route(method: &str, path: &str) -> Result<Route, ApiError> {
    let (protected, endpoint) = match path {
        HEALTH_PATH => (
            false,
            match method {
                "GET" => Ok(Endpoint::Health),
                _ => Err(ApiError::MethodNotAllowed("GET")),
            },
        ),
        TOKEN_PATH => (
            false,
            match method {
                "POST" => Ok(Endpoint::IssueToken),
                _ => Err(ApiError::MethodNotAllowed("POST")),
            },
        ),
        "/book" => (
            true,
            match method {
                "POST" => Ok(Endpoint::CreateBook),
                _ => Err(ApiError::MethodNotAllowed("POST")),
            },
        ),
        "/books" => (
            true,
            match method {
                "GET" => Ok(Endpoint::ListBooks),
                _ => Err(ApiError::MethodNotAllowed("GET")),
            },
        ),
        _ => {
            let Some(id_text) = path.strip_prefix(BOOK_ITEM_PREFIX) else {
                return Err(ApiError::RouteNotFound);
            };
            let id = BookId::parse(id_text);
            (
                true,
                match method {
                    "GET" => Ok(Endpoint::GetBook(id)),
                    "PUT" => Ok(Endpoint::UpdateBook(id)),
                    "DELETE" => Ok(Endpoint::DeleteBook(id)),
                    _ => Err(ApiError::MethodNotAllowed("GET, PUT, DELETE")),
                },
            )
        }
    };
    Ok(Route {
        protected,
        endpoint,
    })
}

/// The path of a request target, without its query string.
pub fn path_of(target: &str) -> &str {
    target.split_once('?').map_or(target, |(path, _)| path)
}

/// The query string of a request target (after the first `?`), if any.
pub fn query_of(target: &str) -> Option<&str> {
    target.split_once('?').map(|(_, query)| query)
}

#[cfg(test)]
mod tests {
    //! What routing answers is tested through `handle`: core_requests.rs
    //! (404, 405 and `Allow`), core_health.rs, core_books.rs (ids). Here,
    //! only what the tests' harness bypasses: splitting a request target.
    use super::*;

    #[test]
    fn query_strings_are_not_part_of_the_path() {
        assert_eq!(path_of("/books?limit=1"), "/books");
        assert_eq!(path_of("/books"), "/books");
        assert_eq!(path_of("/book/1?"), "/book/1");
        assert_eq!(query_of("/books?limit=1&a=?"), Some("limit=1&a=?"));
        assert_eq!(query_of("/books?"), Some(""));
        assert_eq!(query_of("/books"), None);
    }
}
