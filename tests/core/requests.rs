//! What every request goes through, whatever its endpoint: routing (404 "Not
//! found", 405 with its exact `Allow`), the order of checks (the route, then
//! authentication, then the method, the body and the store), the body limit
//! (413, read only by the endpoints that take a body) and the envelope and
//! headers of every response (`TestContext` checks them on each call; here
//! also byte for byte).


use book_catalog::MAX_BODY_BYTES;
use serde_json::json;
use crate::support::*;

/// `json` padded with trailing spaces to exactly `len` bytes.
fn padded(json: &str, len: usize) -> Vec<u8> {
    assert!(json.len() <= len);
    let mut body = json.as_bytes().to_vec();
    body.resize(len, b' ');
    body
}

// ---- The envelope and headers -------------------------------------------

#[test]
fn responses_are_json_envelopes_with_matching_status() {
    // `call` checks the envelope shape on every response; here the raw body
    // and the header list of a few responses are compared byte for byte.
    let mut ctx = TestContext::new();
    let response = ctx.respond("GET", "/books", None, None, &b""[..]);
    assert_eq!(response.status, 401);
    assert_eq!(
        response.body,
        br#"{"status":401,"message":"Authorization token required","data":null}"#
    );
    let headers: Vec<(&str, &str)> = response.headers().collect();
    assert_eq!(
        headers,
        [
            ("content-type", "application/json"),
            ("cache-control", "no-store")
        ]
    );
    let response = ctx.respond("GET", "/token", None, None, &b""[..]);
    assert_eq!(
        response.body,
        br#"{"status":405,"message":"Method not allowed","data":null}"#
    );
    let headers: Vec<(&str, &str)> = response.headers().collect();
    assert_eq!(
        headers,
        [
            ("content-type", "application/json"),
            ("cache-control", "no-store"),
            ("allow", "POST")
        ]
    );
}

// ---- Routing: 404 and 405 ------------------------------------------------

#[test]
fn unknown_paths_are_not_found_without_authentication() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    ctx.reset_calls();
    for path in [
        "/",
        "",
        "/tokens",
        "/token/",
        "/books/",
        "/books/1",
        "/Book/1",
        "/BOOKS",
        "/bookx",
        "/book1",
        "//book/1",
        "/api/book/1",
        "/books?x=1",
        "/token/1",
    ] {
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            for auth in [None, Some("garbage"), Some(t.as_str())] {
                assert_eq!(
                    ctx.call(method, path, auth, "{}"),
                    route_not_found(),
                    "{method} {path:?} {auth:?}"
                );
            }
        }
    }
    assert_eq!(ctx.opens, 0);
}

#[test]
fn token_answers_405_to_other_methods_without_authentication() {
    let mut ctx = TestContext::new();
    let valid = valid_token();
    for method in [
        "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "post", "Post",
    ] {
        for auth in [None, Some("garbage"), Some(valid.as_str())] {
            assert_eq!(
                ctx.call(
                    method,
                    "/token",
                    auth,
                    r#"{"username":"admin","password":"password"}"#
                ),
                not_allowed("POST"),
                "{method} {auth:?}"
            );
        }
    }
    assert_eq!(ctx.opens, 0);
}

#[test]
fn wrong_methods_on_protected_paths_are_405_after_authentication() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    ctx.reset_calls();
    let cases: [(&str, &str, &'static str); 15] = [
        ("GET", "/book", "POST"),
        ("PUT", "/book", "POST"),
        ("DELETE", "/book", "POST"),
        ("PATCH", "/book", "POST"),
        ("POST", "/books", "GET"),
        ("PUT", "/books", "GET"),
        ("DELETE", "/books", "GET"),
        ("HEAD", "/books", "GET"),
        ("get", "/books", "GET"),
        ("POST", "/book/1", "GET, PUT, DELETE"),
        ("PATCH", "/book/1", "GET, PUT, DELETE"),
        ("OPTIONS", "/book/1", "GET, PUT, DELETE"),
        ("HEAD", "/book/1", "GET, PUT, DELETE"),
        ("PATCH", "/book/abc", "GET, PUT, DELETE"),
        ("POST", "/book/999", "GET, PUT, DELETE"),
    ];
    for (method, path, allow) in cases {
        assert_eq!(
            ctx.call(method, path, Some(&t), "{}"),
            not_allowed(allow),
            "{method} {path}"
        );
    }
    // Without a valid token they are 401 (the order of checks below).
    assert_eq!(ctx.opens, 0, "405 never opens the store");
}

// ---- Order of checks ----------------------------------------------------

#[test]
fn authentication_comes_before_everything_on_protected_paths() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.reset_calls();
    let too_big = vec![b'{'; MAX_BODY_BYTES + 1];
    let requests: [(&str, &str, &[u8]); 14] = [
        ("GET", "/book/999", b""),
        ("GET", "/book/abc", b""),
        ("PUT", "/book/1", b"not json"),
        ("PUT", "/book/999", b"{}"),
        ("DELETE", "/book/999", b""),
        ("DELETE", "/book/1", b""),
        ("POST", "/book", b"not json"),
        ("POST", "/book", &too_big),
        ("PUT", "/book/1", &too_big),
        ("POST", "/book/1", b""),
        ("PATCH", "/book/1", b"{}"),
        ("DELETE", "/books", b""),
        ("GET", "/book", b""),
        ("GET", "/book/", b""),
    ];
    let bad_token = forge(HS256_HEADER, r#"{"exp":1}"#, SECRET.as_bytes());
    for (method, path, body) in requests {
        let probe = BodyProbe::default();
        assert_eq!(
            ctx.call_with(method, path, None, probe.body(body)),
            token_required(),
            "{method} {path} without a token"
        );
        assert!(!probe.read.get(), "{method} {path}: body read before auth");
        for token in [bad_token.as_bytes(), b"garbage"] {
            assert_eq!(
                ctx.call_raw(method, path, Some(token), body),
                invalid_token(),
                "{method} {path} with a bad token"
            );
        }
    }
    assert_eq!(ctx.opens, 0, "the store is never opened");
    assert_eq!(ctx.all_books().as_array().unwrap().len(), 1);
}

// ---- Bodies -------------------------------------------------------------

#[test]
fn bodies_are_413_over_the_limit_and_judged_as_bodies_at_it() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    let login = r#"{"username":"admin","password":"password"}"#;
    // (method, path, with the token, the body, the answer at exactly the limit)
    let cases = [
        (
            "POST",
            "/book",
            true,
            book_body("Exact", "Size", 2),
            created(2, "Exact", "Size", 2),
        ),
        (
            "PUT",
            "/book/1",
            true,
            r#"{"year":1966}"#.into(),
            updated(1, "Dune", "Frank Herbert", 1966),
        ),
        (
            "POST",
            "/token",
            false,
            login.into(),
            issued(&valid_token()),
        ),
    ];
    for (method, path, with_token, body, at_limit) in cases {
        let auth = with_token.then_some(t.as_bytes());
        ctx.reset_calls();
        let over = padded(&body, MAX_BODY_BYTES + 1);
        assert_eq!(
            ctx.call_raw(method, path, auth, &over),
            too_large(),
            "{method} {path}"
        );
        // The login's only store call is the failed-login check, which comes
        // before the body is judged: too-large bodies never reach the books.
        let calls = &ctx.statements;
        assert!(
            calls.iter().all(|c| *c == "read attempts"),
            "{method} {path}: {calls:?}"
        );
        let exact = padded(&body, MAX_BODY_BYTES);
        assert_eq!(
            ctx.call_raw(method, path, auth, &exact),
            at_limit,
            "{method} {path}"
        );
    }
    let t = Some(t.as_bytes());
    let much_larger = vec![b'x'; 8 * MAX_BODY_BYTES];
    assert_eq!(ctx.call_raw("POST", "/book", t, &much_larger), too_large());
    // Exactly the limit but not JSON is judged as a body, not as a size.
    assert_eq!(
        ctx.call_raw("POST", "/book", t, &vec![b'x'; MAX_BODY_BYTES]),
        invalid_input()
    );
}

/// The "N MiB" of a sentence saying a body is "over N MiB", in bytes.
fn documented_limit(text: &str, what: &str) -> usize {
    let (_, after) = text
        .split_once("over ")
        .unwrap_or_else(|| panic!("{what} says no limit: {text:?}"));
    let mib: usize = after
        .split_once(" MiB")
        .and_then(|(number, _)| number.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what} gives no \"over N MiB\": {text:?}"));
    mib * 1024 * 1024
}

#[test]
fn bodies_are_read_with_the_documented_1_mib_limit() {
    // The limit docs/api.md's error table and openapi.yaml's 413 response
    // state is the one the core reads with.
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |file: &str| {
        std::fs::read_to_string(format!("{root}/{file}")).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let api = read("docs/api.md");
    let row = api
        .lines()
        .find(|line| line.starts_with("| 413 |"))
        .expect("docs/api.md: a 413 row in the error table");
    assert_eq!(documented_limit(row, "docs/api.md"), MAX_BODY_BYTES);
    let openapi: serde_yaml::Value =
        serde_yaml::from_str(&read("openapi.yaml")).expect("openapi.yaml is YAML");
    let description = openapi["components"]["responses"]["BodyTooLarge"]["description"]
        .as_str()
        .expect("openapi.yaml: components.responses.BodyTooLarge.description");
    assert_eq!(
        documented_limit(description, "openapi.yaml"),
        MAX_BODY_BYTES
    );

    let mut ctx = TestContext::new();
    let t = ctx.login();
    for (method, path, auth, body) in [
        (
            "POST",
            "/token",
            None,
            r#"{"username":"admin","password":"password"}"#,
        ),
        (
            "POST",
            "/book",
            Some(t.as_bytes()),
            r#"{"title":"T","author":"A","year":1}"#,
        ),
        ("PUT", "/book/1", Some(t.as_bytes()), r#"{"year":2}"#),
    ] {
        let probe = BodyProbe::default();
        let (status, _, _) = ctx.call_with(method, path, auth, probe.body(body.as_bytes()));
        assert!(status < 300, "{method} {path}: {status}");
        assert!(probe.read.get(), "{method} {path} reads its body");
        assert_eq!(probe.limit.get(), MAX_BODY_BYTES, "{method} {path}");
    }
}

#[test]
fn get_and_delete_ignore_any_body() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    let huge = vec![b'x'; MAX_BODY_BYTES * 2];
    let outcomes = [
        (
            "GET",
            "/books",
            listed(json!([book(1, "Dune", "Frank Herbert", 1965)])),
        ),
        (
            "GET",
            "/book/1",
            retrieved(1, "Dune", "Frank Herbert", 1965),
        ),
        ("GET", "/book/2", book_not_found()),
        ("DELETE", "/book/1", deleted()),
    ];
    for (method, path, expected) in outcomes {
        let probe = BodyProbe::default();
        assert_eq!(
            ctx.call_with(method, path, Some(t.as_bytes()), probe.body(&huge)),
            expected,
            "{method} {path}"
        );
        assert!(!probe.read.get(), "{method} {path} does not read its body");
    }
    assert_eq!(
        ctx.call("GET", "/books", Some(&t), "not json at all"),
        listed(json!([]))
    );
}

// ---- The request log line ---------------------------------------------

#[test]
fn each_request_line_names_its_route_status_and_store_never_its_path() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    ctx.call("GET", "/book/42", Some(&t), "");
    ctx.call("GET", "/books", None, "");
    ctx.call("GET", "/secret-looking/path", None, "");
    let [login, get, unauthorized, unmatched] = &ctx.request_lines[..] else {
        panic!("{:?}", ctx.request_lines);
    };
    let expected = [
        (login, "method=POST route=/token status=200 store=sqlite"),
        (get, "method=GET route=/book/{id} status=404 store=sqlite"),
        (
            unauthorized,
            "method=GET route=/books status=401 store=none",
        ),
        (
            unmatched,
            "method=GET route=unmatched status=404 store=none",
        ),
    ];
    for (line, fields) in expected {
        assert_eq!(
            *line,
            format!("level=info msg=request {fields} duration_us=0")
        );
    }
}
