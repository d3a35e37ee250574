//! CORS (docs/api.md, "Browsers"): which web origins may call the API from a
//! browser (`settings::cors_origins`), the answer to a preflight, and the
//! headers every answer to a listed origin carries. Off unless configured;
//! never with credentials (the token is a header, not a cookie).

use crate::envelope::Response;

/// `cors_allowed_origins` as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// Unset or malformed: no CORS header on any answer.
    Off,
    /// `*`: every origin.
    Any,
    /// Exactly these origins (`scheme://host[:port]`, scheme and host in
    /// lower case, as browsers send them).
    Only(Vec<String>),
}

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

    /// `*`, or a comma-separated list of origins; `None` if any entry is not
    /// an origin (then CORS stays off, never on for all).
    pub fn parse(value: &str) -> Option<AllowedOrigins> {
        let value = value.trim();
        if value == "*" {
            return Some(AllowedOrigins::Any);
        }
        let origins: Option<Vec<String>> = value.split(',').map(|o| origin(o.trim())).collect();
        origins.filter(|origins| !origins.is_empty()).map(AllowedOrigins::Only)
    }
}

/// `http://` or `https://`, a host (name, IPv4, or IPv6 in brackets) and an
/// optional port: nothing else (no path, no trailing `/`, no user), as a
/// browser's `Origin` header names a page's origin.
fn origin(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let (_, rest) = ["http://", "https://"]
        .iter()
        .find_map(|scheme| Some((*scheme, lower.strip_prefix(scheme)?)))?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !port.contains(']') => (host, Some(port)),
        _ => (rest, None),
    };
    let name = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(ipv6) => !ipv6.is_empty() && ipv6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':'),
        None => !host.is_empty() && host.bytes().all(name),
    };
    let port_ok = port.is_none_or(|port| port.parse::<u16>().is_ok_and(|p| p > 0));
    (host_ok && port_ok).then_some(lower)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_scheme_host_and_port_or_a_star() {
        let only = |list: &[&str]| {
            Some(AllowedOrigins::Only(list.iter().map(|o| o.to_string()).collect()))
        };
        assert_eq!(AllowedOrigins::parse(" * "), Some(AllowedOrigins::Any));
        assert_eq!(
            AllowedOrigins::parse("https://App.Example.com"),
            only(&["https://app.example.com"])
        );
        assert_eq!(
            AllowedOrigins::parse("http://localhost:5173, https://[::1]:8443,http://10.0.0.2"),
            only(&["http://localhost:5173", "https://[::1]:8443", "http://10.0.0.2"])
        );
        let bad = "example.com ftp://example.com https://example.com/ https://example.com/app \
                   https://user@example.com https://example.com:0 https://example.com:99999 \
                   https://example.com: https:// null";
        let with_spaces =
            ["", ",", "https://a b", "*, https://example.com", "https://good.example, bad"];
        for bad in bad.split_whitespace().chain(with_spaces) {
            assert_eq!(AllowedOrigins::parse(bad), None, "{bad:?}");
        }
        let listed = only(&["https://app.example.com"]).unwrap();
        assert_eq!(
            listed.allow(b"https://app.example.com").as_deref(),
            Some("https://app.example.com")
        );
        assert_eq!(listed.allow(b"https://app.example.com:443"), None);
        assert_eq!(listed.allow(b"https://evil.example.com"), None);
        assert_eq!(AllowedOrigins::Off.allow(b"https://app.example.com"), None);
    }
}
