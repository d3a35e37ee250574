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

/// Whether requests to `path` read header fields besides `Authorization`
/// (`RequestHead::headers`): only a login does, to tell who the client is.
pub fn reads_headers(path: &str) -> bool {
    path == TOKEN_PATH
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
