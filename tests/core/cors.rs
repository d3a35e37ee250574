//! CORS (`cors_allowed_origins`, docs/api.md "Browsers"). Origin parsing:
//! src/cors.rs.

use crate::support::*;
use book_catalog::Response;

const APP: &str = "https://app.example.com";

/// `method path` from `origin` as a browser sends it (`preflight` or not).
fn from(
    ctx: &mut TestContext,
    origin: &str,
    method: &str,
    path: &str,
    preflight: bool,
    token: Option<&str>,
    body: &str,
) -> Response {
    ctx.request_headers = vec![("Origin".into(), origin.into())];
    if preflight {
        ctx.request_headers.push(("Access-Control-Request-Method".into(), "PUT".into()));
        ctx.request_headers
            .push(("Access-Control-Request-Headers".into(), "authorization,if-match".into()));
    }
    let response = ctx.respond(method, path, None, token.map(str::as_bytes), body.as_bytes());
    ctx.check_response(&response);
    response
}

fn cors_headers(response: &Response) -> Vec<(&str, &str)> {
    response
        .headers()
        .filter(|(name, _)| name.starts_with("access-control-") || *name == "vary")
        .collect()
}

/// Unset, or malformed (then warned about), CORS is off: a preflight is
/// refused as any request without a token, and no answer carries CORS headers.
#[test]
fn unset_or_malformed_it_is_off_and_a_preflight_is_refused_as_any_request_without_a_token() {
    let warning = "cors_allowed_origins / CORS_ALLOWED_ORIGINS is not * or a comma-separated list \
                   of origins (scheme://host[:port]): CORS stays off";
    let malformed = ["https://app.example.com/", "app.example.com", "*, https://app.example.com"];
    for value in [None].into_iter().chain(malformed.map(Some)) {
        let mut ctx = TestContext::new();
        value.inspect(|value| ctx.set(Setting::CorsAllowedOrigins, value));
        let preflight = from(&mut ctx, APP, "OPTIONS", "/book/1", true, None, "");
        assert_eq!((preflight.status, cors_headers(&preflight)), (401, vec![]), "{value:?}");
        let health = from(&mut ctx, APP, "OPTIONS", "/health", true, None, "");
        assert_eq!((health.status, health.header("allow")), (405, Some("GET")), "{value:?}");
        let token = ctx.token();
        let dune = book_body("Dune", "F", 1965);
        let created = from(&mut ctx, APP, "POST", "/book", false, Some(&token), &dune);
        assert_eq!((created.status, cors_headers(&created)), (201, vec![]), "{value:?}");
        assert_eq!(ctx.logged("level=warn", warning), value.is_some(), "{value:?}");
    }
}

#[test]
fn a_listed_origin_gets_its_preflights_answered_before_authentication_and_every_answer() {
    let mut ctx = TestContext::new();
    ctx.set(Setting::CorsAllowedOrigins, "https://other.example, https://APP.example.com");
    for (path, methods) in [
        ("/book/1", "GET, PUT, DELETE"),
        ("/book", "POST"),
        ("/books", "GET, POST"),
        ("/token", "POST"),
        ("/health", "GET"),
    ] {
        ctx.reset_calls();
        let answer = from(&mut ctx, APP, "OPTIONS", path, true, None, "");
        let headers = "Authorization, Content-Type, If-Match, Idempotency-Key";
        let expected = vec![
            ("access-control-allow-methods", methods),
            ("access-control-allow-headers", headers),
            ("access-control-max-age", "600"),
            ("vary", "Origin"),
            ("access-control-allow-origin", APP),
        ];
        assert_eq!((answer.status, cors_headers(&answer)), (204, expected), "{path}");
        assert_eq!(ctx.opens, 0, "{path}: no store");
    }
    // A path the service does not serve is 404, readable by the page.
    let unknown = from(&mut ctx, APP, "OPTIONS", "/nowhere", true, None, "");
    assert_eq!((unknown.status, unknown.header("access-control-allow-origin")), (404, Some(APP)));
    // An OPTIONS that is no preflight, and a preflight from an unlisted origin, as before.
    assert_eq!(from(&mut ctx, APP, "OPTIONS", "/book/1", false, None, "").status, 401);
    let stranger = from(&mut ctx, "https://evil.example", "OPTIONS", "/book/1", true, None, "");
    assert_eq!((stranger.status, cors_headers(&stranger)), (401, vec![]));
    // Every answer to a listed origin is readable by its page, none to another.
    let token = ctx.token();
    let too_big = "x".repeat(book_catalog::MAX_BODY_BYTES + 1);
    let answers = [
        from(&mut ctx, APP, "POST", "/book", false, Some(&token), &book_body("Dune", "F", 1965)),
        from(&mut ctx, APP, "GET", "/book/1", false, None, ""),
        from(&mut ctx, APP, "GET", "/book/9", false, Some(&token), ""),
        from(&mut ctx, APP, "POST", "/book", false, Some(&token), &too_big),
        from(&mut ctx, APP, "GET", "/books", false, Some(&token), ""),
    ];
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [201, 401, 404, 413, 200]);
    for answer in &answers {
        assert_eq!(answer.header("access-control-allow-origin"), Some(APP));
        assert_eq!(answer.header("access-control-expose-headers"), Some("ETag, Link, Retry-After"));
    }
    let other = from(&mut ctx, "https://evil.example", "GET", "/book/1", false, Some(&token), "");
    assert_eq!((other.status, cors_headers(&other)), (200, vec![]));
    // `*`: any origin, by name of none.
    ctx.set(Setting::CorsAllowedOrigins, "*");
    let any = from(&mut ctx, "https://anyone.example", "GET", "/health", false, None, "");
    assert_eq!(any.header("access-control-allow-origin"), Some("*"));
}
