//! `cors_allowed_origins`: the web origins whose pages may call the API
//! (docs/api.md, "Browsers"); what a request's origin gets is `cors`.

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

impl AllowedOrigins {
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
