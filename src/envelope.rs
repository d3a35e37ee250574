//! The response envelope `{"status", "message", "data"}` that every response
//! carries, and the host-independent response the core hands to an adapter.

use serde::Serialize;

use crate::books::model::BookId;
use crate::error::ApiError;

/// The headers of every response: the body is always the JSON envelope, and
/// neither tokens nor catalog data are for shared caches.
pub const COMMON_HEADERS: [(&str, &str); 2] =
    [("content-type", "application/json"), ("cache-control", "no-store")];

/// A response as the core decides it; an adapter writes `headers()` and `body` as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// Besides `COMMON_HEADERS`, lower-case names: `allow` on a 405, `link`
    /// on a page with a next one, `retry-after` on a 429 or a busy store's 503.
    pub extra_headers: Vec<(&'static str, String)>,
    /// The whole catalog's list, too long for one piece: `body` is its
    /// start, and the rest follows page by page from the book after this one
    /// (`books::rest_of_list`), written as it is read.
    pub continues_after: Option<BookId>,
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
        // Failing is unreachable for our plain data types: 500 rather than a panic.
        serde_json::to_vec(&Envelope { status, message, data })
            .map_or_else(|_| Response::internal_error(), |body| Response::new(status, body))
    }

    pub fn error(error: &ApiError) -> Response {
        let response = Response::ok::<()>(error.status(), error.message(), None);
        match error {
            ApiError::MethodNotAllowed(allow) => response.with_header("allow", allow.to_string()),
            ApiError::TooManyLoginAttempts { retry_after } => {
                response.with_header("retry-after", retry_after.to_string())
            }
            // Another writer held the lock for seconds: try again shortly.
            ApiError::StoreBusy(_) => response.with_header("retry-after", "1".to_string()),
            _ => response,
        }
    }

    pub fn internal_error() -> Response {
        Response::new(500, INTERNAL_ERROR_BODY.to_vec())
    }

    /// A response with only `COMMON_HEADERS`.
    pub fn new(status: u16, body: Vec<u8>) -> Response {
        Response { status, body, extra_headers: Vec::new(), continues_after: None }
    }

    /// This response with one more header (`name` in lower case).
    pub fn with_header(mut self, name: &'static str, value: String) -> Response {
        self.extra_headers.push((name, value));
        self
    }

    /// Every header of the response, `COMMON_HEADERS` first (but no
    /// `content-type` on a 204, which has no body).
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let no_content = self.status == 204;
        let common = COMMON_HEADERS
            .into_iter()
            .filter(move |(name, _)| !(no_content && *name == "content-type"));
        common.chain(self.extra_headers.iter().map(|(name, value)| (*name, value.as_str())))
    }

    /// The value of header `name` (lower case), if the response has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers().find(|(candidate, _)| *candidate == name).map(|(_, value)| value)
    }
}
