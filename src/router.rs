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
    use super::*;

    fn endpoint(method: &str, path: &str) -> Result<Endpoint, ApiError> {
        route(method, path).and_then(|r| r.endpoint)
    }

    #[test]
    fn serves_the_six_endpoints() {
        let one = BookId::new(1);
        assert_eq!(endpoint("POST", "/token"), Ok(Endpoint::IssueToken));
        assert_eq!(endpoint("POST", "/book"), Ok(Endpoint::CreateBook));
        assert_eq!(endpoint("GET", "/books"), Ok(Endpoint::ListBooks));
        assert_eq!(endpoint("GET", "/book/1"), Ok(Endpoint::GetBook(one)));
        assert_eq!(endpoint("PUT", "/book/1"), Ok(Endpoint::UpdateBook(one)));
        assert_eq!(endpoint("DELETE", "/book/1"), Ok(Endpoint::DeleteBook(one)));
    }

    #[test]
    fn health_is_public_and_get_only() {
        let health = route("GET", "/health").unwrap();
        assert!(!health.protected);
        assert_eq!(health.endpoint, Ok(Endpoint::Health));
        for method in ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get"] {
            let other = route(method, "/health").unwrap();
            assert!(!other.protected, "{method}");
            assert_eq!(
                other.endpoint,
                Err(ApiError::MethodNotAllowed("GET")),
                "{method}"
            );
        }
        for path in ["/health/", "/Health", "/healthz", "/health/1"] {
            assert_eq!(route("GET", path), Err(ApiError::RouteNotFound), "{path}");
        }
    }

    #[test]
    fn only_token_and_health_are_public() {
        assert!(!route("POST", "/token").unwrap().protected);
        assert!(!route("GET", "/health").unwrap().protected);
        for path in ["/book", "/books", "/book/1", "/book/abc", "/book/"] {
            assert!(route("GET", path).unwrap().protected, "{path}");
        }
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for path in [
            "/", "", "/tokens", "/books/", "/books/1", "/Book/1", "/token/", "/bookx",
        ] {
            assert_eq!(route("GET", path), Err(ApiError::RouteNotFound), "{path}");
        }
    }

    #[test]
    fn wrong_methods_name_the_allowed_ones() {
        assert_eq!(
            endpoint("GET", "/token"),
            Err(ApiError::MethodNotAllowed("POST"))
        );
        assert_eq!(
            endpoint("PUT", "/book"),
            Err(ApiError::MethodNotAllowed("POST"))
        );
        assert_eq!(
            endpoint("POST", "/books"),
            Err(ApiError::MethodNotAllowed("GET"))
        );
        assert_eq!(
            endpoint("POST", "/book/1"),
            Err(ApiError::MethodNotAllowed("GET, PUT, DELETE"))
        );
        assert_eq!(
            endpoint("PATCH", "/book/abc"),
            Err(ApiError::MethodNotAllowed("GET, PUT, DELETE"))
        );
        // Methods are case-sensitive (RFC 9110 section 9.1).
        assert_eq!(
            endpoint("post", "/token"),
            Err(ApiError::MethodNotAllowed("POST"))
        );
    }

    #[test]
    fn bad_ids_still_route_to_the_item() {
        assert_eq!(endpoint("GET", "/book/abc"), Ok(Endpoint::GetBook(None)));
        assert_eq!(
            endpoint("DELETE", "/book/0"),
            Ok(Endpoint::DeleteBook(None))
        );
        assert_eq!(endpoint("PUT", "/book/"), Ok(Endpoint::UpdateBook(None)));
        assert_eq!(endpoint("GET", "/book/1/2"), Ok(Endpoint::GetBook(None)));
    }

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
