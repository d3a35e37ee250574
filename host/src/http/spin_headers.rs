//! The headers Spin gives a component with each request.

use std::net::SocketAddr;

use http::request::Parts;
use http::{HeaderName, HeaderValue};

use crate::manifest::Route;

/// Adds the headers Spin gives a component. Like Spin, after the client's
/// own: a client that sends `spin-client-addr` cannot replace the
/// platform's, which is the last value. Returns the full URL.
pub fn add_spin_headers(
    parts: &mut Parts,
    route: &Route,
    path_info: &str,
    peer: SocketAddr,
    local: Option<SocketAddr>,
) -> String {
    let headers = &mut parts.headers;
    if !headers.contains_key(http::header::HOST) {
        // HTTP/1.0 clients may omit Host; wasi-http needs an authority.
        let host = local.map_or_else(|| "localhost".to_string(), |a| a.to_string());
        if let Ok(v) = HeaderValue::from_str(&host) {
            headers.insert(http::header::HOST, v);
        }
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost")
        .to_string();
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let full_url = format!("http://{host}{path_and_query}");
    let spin_headers = [
        ("spin-path-info", path_info.to_string()),
        ("spin-full-url", full_url.clone()),
        ("spin-matched-route", route.raw.clone()),
        ("spin-base-path", "/".to_string()),
        ("spin-raw-component-route", route.raw.clone()),
        ("spin-component-route", route.base.clone()),
        ("spin-client-addr", peer.to_string()),
    ];
    for (name, value) in spin_headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(HeaderName::from_static(name), value);
        }
    }
    full_url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_headers_come_last_and_host_is_filled_in() {
        let route = Route { raw: "/api/...".into(), base: "/api".into(), wildcard: true };
        let req = http::Request::builder().uri("/api/items?x=1");
        let req = req.header("spin-client-addr", "6.6.6.6:1").body(()).unwrap();
        let (mut parts, ()) = req.into_parts();
        let peer = "10.0.0.1:4000".parse().unwrap();
        add_spin_headers(
            &mut parts,
            &route,
            "/items",
            peer,
            Some("127.0.0.1:8080".parse().unwrap()),
        );
        let h = &parts.headers;
        let values = |name: &str| -> Vec<&str> {
            h.get_all(name).iter().map(|v| v.to_str().unwrap()).collect()
        };
        assert_eq!(values("host"), ["127.0.0.1:8080"]);
        assert_eq!(values("spin-client-addr"), ["6.6.6.6:1", "10.0.0.1:4000"]);
        assert_eq!(values("spin-full-url"), ["http://127.0.0.1:8080/api/items?x=1"]);
        assert_eq!(values("spin-path-info"), ["/items"]);
        assert_eq!(values("spin-component-route"), ["/api"]);
        assert_eq!(values("spin-matched-route"), ["/api/..."]);
    }
}
