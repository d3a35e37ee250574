//! The catalog page at `/ui/`: its files compiled in, each with its type and
//! a strong ETag hashed from its bytes at compile time, and on every answer
//! the headers that keep the page to its own scripts and the same-origin
//! API. [`answer`] is the whole logic; the WASI adapter only moves bytes.

#[cfg(target_arch = "wasm32")]
mod wasi_http;

pub enum Method {
    Get,
    Head,
    Other,
}

pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: &'static [u8],
}

/// Path, type, bytes, ETag.
type Asset = (&'static str, &'static str, &'static [u8], u64);

macro_rules! asset {
    ($path:literal, $file:literal, $type:literal) => {{
        const BYTES: &[u8] = include_bytes!(concat!("../assets/", $file));
        ($path, $type, BYTES, fnv1a(BYTES))
    }};
}

const ASSETS: [Asset; 4] = [
    asset!("/ui/", "index.html", "text/html; charset=utf-8"),
    asset!("/ui/app.css", "app.css", "text/css; charset=utf-8"),
    asset!("/ui/api.js", "api.js", "text/javascript; charset=utf-8"),
    asset!("/ui/main.js", "main.js", "text/javascript; charset=utf-8"),
];

pub const SECURITY_HEADERS: [(&str, &str); 3] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// The API's answers to a path or method it does not serve, byte for byte.
const NOT_FOUND: &[u8] = br#"{"status":404,"message":"Not found","data":null}"#;
const NOT_ALLOWED: &[u8] = br#"{"status":405,"message":"Method not allowed","data":null}"#;

const fn fnv1a(bytes: &[u8]) -> u64 {
    let (mut hash, mut i) = (0xcbf2_9ce4_8422_2325_u64, 0);
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// RFC 9110's weak comparison, as `If-None-Match` asks.
fn none_match(if_none_match: &str, etag: &str) -> bool {
    let mut tags = if_none_match.split(',').map(str::trim);
    tags.any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
}

fn reply(status: u16, more: &[(&'static str, &str)], body: &'static [u8]) -> Answer {
    let headers = SECURITY_HEADERS.iter().chain(more).map(|(n, v)| (*n, v.to_string())).collect();
    Answer { status, headers, body }
}

/// The answer to `method path` (the path without its query).
pub fn answer(method: Method, path: &str, if_none_match: Option<&str>) -> Answer {
    if path == "/ui" {
        return reply(308, &[("location", "/ui/")], b"");
    }
    let json = [("content-type", "application/json"), ("cache-control", "no-store")];
    let Some((_, content_type, bytes, hash)) = ASSETS.iter().find(|a| a.0 == path) else {
        return reply(404, &json, NOT_FOUND);
    };
    let etag = format!("\"{hash:016x}\"");
    let cached = [("etag", etag.as_str()), ("cache-control", "no-cache")];
    match method {
        Method::Other => reply(405, &[json[0], json[1], ("allow", "GET, HEAD")], NOT_ALLOWED),
        _ if if_none_match.is_some_and(|tags| none_match(tags, &etag)) => reply(304, &cached, b""),
        Method::Head => reply(200, &[("content-type", content_type), cached[0], cached[1]], b""),
        Method::Get => reply(200, &[("content-type", content_type), cached[0], cached[1]], bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
        answer.headers.iter().find(|h| h.0 == name).map(|h| h.1.as_str())
    }

    fn get(path: &str) -> Answer {
        answer(Method::Get, path, None)
    }

    #[test]
    fn each_asset_has_its_type_and_an_etag_and_is_revalidated() {
        let kinds = [("/ui/", "html"), ("/ui/app.css", "css"), ("/ui/main.js", "javascript")];
        for (path, kind) in kinds.into_iter().chain([("/ui/api.js", "javascript")]) {
            let (a, content_type) = (get(path), format!("text/{kind}; charset=utf-8"));
            let got = (a.status, header(&a, "content-type"), header(&a, "cache-control"));
            assert_eq!(got, (200, Some(content_type.as_str()), Some("no-cache")), "{path}");
            assert!(header(&a, "etag").is_some_and(|t| t.len() == 18) && !a.body.is_empty());
        }
        assert_ne!(header(&get("/ui/"), "etag"), header(&get("/ui/app.css"), "etag"));
    }

    #[test]
    fn a_matching_if_none_match_answers_304_without_a_body() {
        let etag = header(&get("/ui/main.js"), "etag").unwrap_or_default().to_string();
        let weak = format!("W/{etag}");
        for tags in [etag.as_str(), "*", &format!("\"x\", {weak}")] {
            let a = answer(Method::Get, "/ui/main.js", Some(tags));
            assert_eq!((a.status, a.body), (304, &b""[..]), "{tags}");
            assert_eq!(header(&a, "etag"), Some(etag.as_str()));
        }
        assert_eq!(answer(Method::Get, "/ui/main.js", Some("\"other\"")).status, 200);
        assert_eq!(answer(Method::Get, "/ui/app.css", Some(&etag)).status, 200);
    }

    #[test]
    fn ui_redirects_other_paths_and_methods_answer_the_apis_envelopes() {
        let a = get("/ui");
        assert_eq!((a.status, header(&a, "location")), (308, Some("/ui/")));
        for path in ["/ui/nope", "/ui/index.html", "/ui/app.css/", "/ui//", "/uix"] {
            let a = get(path);
            assert_eq!((a.status, a.body), (404, NOT_FOUND), "{path}");
            assert_eq!(header(&a, "content-type"), Some("application/json"));
        }
        let a = answer(Method::Other, "/ui/", None);
        assert_eq!((a.status, header(&a, "allow")), (405, Some("GET, HEAD")));
        let head = answer(Method::Head, "/ui/", None);
        assert_eq!((head.status, head.body, head.headers), (200, &b""[..], get("/ui/").headers));
    }

    #[test]
    fn every_answer_carries_the_security_headers() {
        for a in [get("/ui"), get("/ui/"), get("/ui/x"), answer(Method::Other, "/ui/", None)] {
            for (name, value) in SECURITY_HEADERS {
                assert_eq!(header(&a, name), Some(value));
            }
        }
    }

    /// What the page loads is served, and nothing in it runs inline: no
    /// `<script>` without `src`, no `on...=` handler, no `style=`.
    #[test]
    fn the_page_loads_only_served_files_and_holds_no_inline_code() {
        let page = String::from_utf8_lossy(get("/ui/").body).into_owned();
        let scripts: String = ASSETS.iter().map(|a| String::from_utf8_lossy(a.2)).collect();
        let quoted = |after: &str| -> Vec<String> {
            let pieces = scripts.split(after).skip(1).chain(page.split(after).skip(1));
            pieces.filter_map(|p| p.split('"').next().map(String::from)).collect()
        };
        let links = [quoted("href=\""), quoted("src=\""), quoted("from \"")].concat();
        assert!(links.len() >= 3, "{links:?}");
        for link in links {
            let path = format!("/ui/{}", link.trim_start_matches("./"));
            assert_eq!(get(&path).status, 200, "{link}");
        }
        assert_eq!(
            page.matches("<script").count(),
            page.matches("<script type=\"module\" src=").count()
        );
        let handler = |w: &str| w.starts_with("on") && w.contains('=');
        assert!(!page.split_whitespace().any(handler) && !page.contains("style="), "inline code");
    }
}
