//! CORS (docs/api.md, "Browsers"): whether a request's origin may read the
//! answer (the origins are `settings::cors_origins`), the answer to a
//! preflight, and the headers every answer to a listed origin carries. Off
//! unless configured; never with credentials (the token is a header, not a
//! cookie).

use crate::envelope::Response;
use crate::settings::AllowedOrigins;

/// The request headers the API reads, which a browser may send.
pub const ALLOWED_HEADERS: &str = "Authorization, Content-Type, If-Match, Idempotency-Key";
/// The response headers a page may read besides the simple ones.
pub const EXPOSED_HEADERS: &str = "ETag, Link, Retry-After";
/// How long a browser may keep a preflight's answer, in seconds.
pub const MAX_AGE_SECONDS: &str = "600";

impl AllowedOrigins {
    /// `Access-Control-Allow-Origin` for a request from `origin`, if listed.
    pub fn allow(&self, origin: &[u8]) -> Option<String> {
        match self {
            AllowedOrigins::Off => None,
            AllowedOrigins::Any => Some("*".to_string()),
            AllowedOrigins::Only(origins) => {
                origins.iter().find(|listed| listed.as_bytes() == origin).cloned()
            }
        }
    }
}

/// The answer to a preflight from a listed origin for a path serving
/// `methods`: 204, no body.
pub fn preflight(methods: &str) -> Response {
    Response::new(204, Vec::new())
        .with_header("access-control-allow-methods", methods.to_string())
        .with_header("access-control-allow-headers", ALLOWED_HEADERS.to_string())
        .with_header("access-control-max-age", MAX_AGE_SECONDS.to_string())
}

/// `response` for a listed origin: who may read it, and which headers.
pub fn allowed(response: Response, allow_origin: String) -> Response {
    let response = response.with_header("vary", "Origin".to_string());
    let response = if response.status == 204 {
        response
    } else {
        response.with_header("access-control-expose-headers", EXPOSED_HEADERS.to_string())
    };
    response.with_header("access-control-allow-origin", allow_origin)
}
