//! The response envelope `{"status", "message", "data"}` that every response
//! carries, and the host-independent response the core hands to an adapter.

use futures::stream::LocalBoxStream;
use serde::Serialize;

use crate::error::ApiError;

/// The headers of every response: the body is always the JSON envelope, and
/// neither tokens nor catalog data are for shared caches.
pub const COMMON_HEADERS: [(&str, &str); 2] =
    [("content-type", "application/json"), ("cache-control", "no-store")];

/// A response as the core decides it; an adapter writes `headers()` and the
/// body as they are.
pub struct Response {
    pub status: u16,
    /// Besides `COMMON_HEADERS`, lower-case names: `etag` with a book,
    /// `content-type` and `content-disposition` with a CSV list,
    /// `allow` on a 405, `link` on a page with a next one, `retry-after` on
    /// a 429 or a busy store's 503, CORS headers for a listed origin.
    pub extra_headers: Vec<(&'static str, String)>,
    pub body: Body,
}

pub enum Body {
    Bytes(Vec<u8>),
    /// The whole catalog's list, too long for one piece, read as it is
    /// written. A piece that fails ends it: the adapter then leaves the body
    /// unfinished, so the client sees it cut, never a well-formed partial list.
    Pieces(LocalBoxStream<'static, Result<Vec<u8>, ApiError>>),
}

/// The envelope's text up to its data: `{"status":N,"message":"...","data":`.
pub fn envelope_start(status: u16, message: &str) -> Vec<u8> {
    let mut text = format!("{{\"status\":{status},\"message\":").into_bytes();
    // A `str` always serialises, and a `Vec` always takes it.
    let _ = serde_json::to_writer(&mut text, message);
    text.extend_from_slice(b",\"data\":");
    text
}

/// What closes an envelope after its data.
pub const ENVELOPE_END: &[u8] = b"}";

impl Response {
    /// A success response carrying `data` (`&()` is `null`).
    pub fn ok(status: u16, message: &str, data: &impl Serialize) -> Result<Response, ApiError> {
        let mut body = envelope_start(status, message);
        serde_json::to_writer(&mut body, data).map_err(ApiError::internal)?;
        body.extend_from_slice(ENVELOPE_END);
        Ok(Response::new(status, body))
    }

    pub fn error(error: &ApiError) -> Response {
        let mut body = envelope_start(error.status(), error.message());
        match error {
            ApiError::InvalidImport { row, field, reason } => {
                let data = serde_json::json!({"row": row, "field": field, "reason": reason});
                let _ = serde_json::to_writer(&mut body, &data);
            }
            _ => body.extend_from_slice(b"null"),
        }
        body.extend_from_slice(ENVELOPE_END);
        let response = Response::new(error.status(), body);
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

    /// A response with only `COMMON_HEADERS`.
    pub fn new(status: u16, body: Vec<u8>) -> Response {
        Response { status, extra_headers: Vec::new(), body: Body::Bytes(body) }
    }

    /// This response with one more header (`name` in lower case).
    pub fn with_header(mut self, name: &'static str, value: String) -> Response {
        self.extra_headers.push((name, value));
        self
    }

    /// Every header of the response, `COMMON_HEADERS` first unless an extra
    /// one replaces it (a CSV list's `content-type`), and no `content-type`
    /// on a 204, which has no body.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let no_content = self.status == 204;
        let replaced = |name| self.extra_headers.iter().any(|(extra, _)| *extra == name);
        let common = COMMON_HEADERS
            .into_iter()
            .filter(move |(name, _)| !(replaced(*name) || no_content && *name == "content-type"));
        common.chain(self.extra_headers.iter().map(|(name, value)| (*name, value.as_str())))
    }

    /// The value of header `name` (lower case), if the response has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers().find(|(candidate, _)| *candidate == name).map(|(_, value)| value)
    }

    /// The body, when it is whole in memory (empty for a streamed list).
    pub fn bytes(&self) -> &[u8] {
        match &self.body {
            Body::Bytes(bytes) => bytes,
            Body::Pieces(_) => &[],
        }
    }
}
