//! The response envelope `{"status", "message", "data"}` that every response
//! carries, and the host-independent response the core hands to an adapter.

use serde::Serialize;

use crate::error::ApiError;

/// Every response body is JSON.
pub const CONTENT_TYPE: &str = "application/json";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// The `Allow` header of a 405.
    pub allow: Option<&'static str>,
    /// The `Link` header of a `GET /books` page that has a next one.
    pub link: Option<String>,
    /// The `Retry-After` header (seconds) of a 429.
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Envelope<'a, T> {
    status: u16,
    message: &'a str,
    data: T,
}

/// The 500 body, written out so that it exists even if serialising failed.
const INTERNAL_ERROR_BODY: &[u8] =
    br#"{"status":500,"message":"Internal server error","data":null}"#;

impl Response {
    /// A success response; `data` of `None` serialises as `null`.
    pub fn ok<T: Serialize>(status: u16, message: &str, data: Option<T>) -> Response {
        match serde_json::to_vec(&Envelope {
            status,
            message,
            data,
        }) {
            Ok(body) => Response {
                status,
                body,
                allow: None,
                link: None,
                retry_after: None,
            },
            // Unreachable for our plain data types; answer 500 rather than panic.
            Err(_) => Response::internal_error(),
        }
    }

    pub fn error(error: &ApiError) -> Response {
        let status = error.status();
        let mut response = Response::ok::<()>(status, error.message(), None);
        match error {
            ApiError::MethodNotAllowed(allow) => response.allow = Some(allow),
            ApiError::TooManyLoginAttempts { retry_after } => {
                response.retry_after = Some(*retry_after);
            }
            _ => {}
        }
        response
    }

    pub fn internal_error() -> Response {
        Response {
            status: 500,
            body: INTERNAL_ERROR_BODY.to_vec(),
            allow: None,
            link: None,
            retry_after: None,
        }
    }
}
