//! What every request goes through, whatever its endpoint (`TestContext`
//! checks every response's envelope and headers).

use book_catalog::MAX_BODY_BYTES;
use proptest::prelude::*;
use serde_json::json;

use crate::support::*;

/// Each request also logs one line, naming its route, status and store, never
/// its path.
#[test]
fn responses_are_json_envelopes_byte_for_byte_and_each_request_logs_one_line() {
    let mut ctx = TestContext::new();
    let response = ctx.respond("GET", "/books", None, None, &b""[..]);
    assert_eq!(response.status, 401);
    let body = br#"{"status":401,"message":"Authorization token required","data":null}"#;
    assert_eq!(response.bytes(), body);
    let headers: Vec<(&str, &str)> = response.headers().collect();
    let common = [("content-type", "application/json"), ("cache-control", "no-store")];
    assert_eq!(headers, common);
    let response = ctx.respond("GET", "/token", None, None, &b""[..]);
    assert_eq!(response.bytes(), br#"{"status":405,"message":"Method not allowed","data":null}"#);
    let headers: Vec<(&str, &str)> = response.headers().collect();
    assert_eq!(headers, [common[0], common[1], ("allow", "POST")]);
    ctx.login();
    ctx.authed("GET", "/book/42", "");
    ctx.call("GET", "/secret-looking/path", None, "");
    let expected = [
        "method=GET route=/books status=401 store=none duration_us=0",
        "method=GET route=/token status=405 store=none duration_us=0",
        "method=POST route=/token status=200 store=sqlite duration_us=0 account=admin",
        "method=GET route=/book/{id} status=404 store=sqlite duration_us=0 account=admin",
        "method=GET route=unmatched status=404 store=none duration_us=0",
    ];
    let expected = expected.map(|fields| format!("level=info msg=request {fields}"));
    assert_eq!(ctx.request_lines, expected);
}

#[test]
fn unknown_paths_are_not_found_before_authentication() {
    let mut ctx = TestContext::new();
    let token = ctx.token();
    let paths = "/ /tokens /token/ /token/1 /books/ /books/1 /Book/1 /BOOKS /bookx /book1 \
                 //book/1 /api/book/1 /books?x=1 /health/ /Health /healthz /health/db /HEALTH";
    for path in paths.split(' ').chain([""]) {
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            for auth in [None, Some("garbage"), Some(token.as_str())] {
                let outcome = ctx.call(method, path, auth, "{}");
                assert_eq!(outcome, route_not_found(), "{method} {path:?} {auth:?}");
            }
        }
    }
    assert_eq!(ctx.opens, 0);
}

/// On the public paths whatever the token, on the protected ones with a
/// valid one (without: the order of checks, below).
#[test]
fn other_methods_are_405_with_the_paths_allow() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    ctx.fail_store = Some("a failing store changes nothing".into());
    ctx.reset_calls();
    let valid = ctx.token();
    let any_token = [None, Some("garbage"), Some(valid.as_str())];
    // path | Allow | the other methods (public paths: `/token`, `/health`)
    let table = "
        /token    | POST             | GET PUT DELETE PATCH HEAD OPTIONS post Post
        /health   | GET              | POST PUT DELETE PATCH HEAD OPTIONS get
        /book     | POST             | GET PUT DELETE PATCH
        /books    | GET, POST        | PUT DELETE HEAD PATCH get post
        /book/1   | GET, PUT, DELETE | POST PATCH OPTIONS HEAD
        /book/abc | GET, PUT, DELETE | PATCH
        /book/999 | GET, PUT, DELETE | POST";
    for row in table.trim().lines() {
        let [path, allow, methods] = cells(row);
        let public = path == "/token" || path == "/health";
        let tokens = if public { &any_token[..] } else { &any_token[2..] };
        for method in methods.split(' ') {
            for auth in tokens {
                let probe = BodyProbe::default();
                let body = probe.body(LOGIN.as_bytes());
                let outcome = ctx.call_with(method, path, auth.map(str::as_bytes), body);
                assert_eq!(outcome, not_allowed(allow), "{method} {path} {auth:?}");
                assert!(!probe.read.get(), "{method} {path}: body read");
            }
        }
    }
    assert_eq!(ctx.opens, 0, "405 never opens the store");
}

/// A missing or bad token is 401 before the method, query, body, `DB_URL` or
/// store; with a valid token each request then gets its own answer.
#[test]
fn authentication_comes_before_everything_on_protected_paths() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let too_big = "{".repeat(MAX_BODY_BYTES + 1);
    let item = "GET, PUT, DELETE";
    // (method, path, query, body, the answer with a valid token)
    let requests = [
        ("GET", "/book/999", None, "", book_not_found()),
        ("GET", "/book/abc", None, "", book_not_found()),
        ("GET", "/book/", None, "", book_not_found()),
        ("PUT", "/book/1", None, "not json", invalid_input()),
        ("PUT", "/book/999", None, "{}", book_not_found()),
        ("DELETE", "/book/999", None, "", book_not_found()),
        ("POST", "/book", None, "not json", invalid_input()),
        ("POST", "/book", None, too_big.as_str(), too_large()),
        ("PUT", "/book/1", None, &too_big, too_large()),
        ("PUT", "/book/abc", None, &too_big, book_not_found()),
        ("GET", "/books", Some("limit=0"), "", invalid_query()),
        ("GET", "/books", Some("limit=1&limit=1"), "", invalid_query()),
        ("PUT", "/books", Some("limit=0"), "", not_allowed("GET, POST")),
        ("DELETE", "/books", None, "", not_allowed("GET, POST")),
        ("GET", "/book", None, "", not_allowed("POST")),
        ("POST", "/book/1", None, "", not_allowed(item)),
        ("PATCH", "/book/1", None, "{}", not_allowed(item)),
        ("DELETE", "/book/1", None, "", deleted()),
    ];
    let expired = forge(HS256_HEADER, r#"{"exp":1}"#, SECRET.as_bytes());
    // No token, a blank one (whitespace is not part of a field's value), not one.
    let mut refusals = vec![(None, token_required())];
    let blanks = ["", " ", "   ", "\t", " \t \t "].map(|blank| Some(blank.as_bytes()));
    refusals.extend(blanks.map(|blank| (blank, token_required())));
    refusals.extend([expired.as_bytes(), b"garbage"].map(|token| (Some(token), invalid_token())));
    let valid = ctx.token();
    for (method, path, query, body, answer) in requests {
        let what = format!("{method} {path} {query:?}");
        ctx.set(Setting::DbUrl, "mysql://u:pw@db/books");
        ctx.reset_calls();
        for (auth, refusal) in refusals.clone() {
            let probe = BodyProbe::default();
            let response = ctx.respond(method, path, query, auth, probe.body(body.as_bytes()));
            assert_eq!(ctx.check_response(&response), refusal, "{what} {auth:?}");
            assert!(!probe.read.get(), "{what} {auth:?}: body read before authentication");
        }
        assert_eq!(ctx.opens, 0, "{what}: the store is never opened");
        ctx.unset(Setting::DbUrl);
        let response = ctx.respond(method, path, query, Some(valid.as_bytes()), body.as_bytes());
        assert_eq!(ctx.check_response(&response), answer, "{what}");
    }
    // The body's size comes before the Idempotency-Key.
    ctx.request_headers.push(("Idempotency-Key".into(), "two words".into()));
    let response = ctx.respond("POST", "/book", None, Some(valid.as_bytes()), too_big.as_bytes());
    assert_eq!(ctx.check_response(&response), too_large());
}

/// The "N MiB" of a sentence saying a body is "over N MiB", in bytes.
fn documented_limit(text: &str, what: &str) -> usize {
    let (_, after) = text.split_once("over ").unwrap_or_else(|| panic!("{what}: {text:?}"));
    let mib = after.split_once(" MiB").and_then(|(number, _)| number.trim().parse::<usize>().ok());
    mib.unwrap_or_else(|| panic!("{what} gives no \"over N MiB\": {text:?}")) * 1024 * 1024
}

/// The limit docs/api.md and openapi.yaml state: exactly the limit is judged
/// as a body, a byte more is 413 (a login's failed-login check comes first);
/// GET and DELETE read none.
#[test]
fn bodies_are_read_up_to_the_documented_limit_and_413_past_it_and_never_by_get_or_delete() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |file: &str| std::fs::read_to_string(format!("{root}/{file}")).expect(file);
    let api = read("docs/api.md");
    let row = api.lines().find(|line| line.starts_with("| 413 |"));
    let row = row.expect("docs/api.md: a 413 row in the error table");
    assert_eq!(documented_limit(row, "docs/api.md"), MAX_BODY_BYTES);
    let openapi: serde_yaml::Value = serde_yaml::from_str(&read("openapi.yaml")).unwrap();
    let too_large_response = &openapi["components"]["responses"]["BodyTooLarge"];
    let description = too_large_response["description"].as_str().expect("BodyTooLarge");
    assert_eq!(documented_limit(description, "openapi.yaml"), MAX_BODY_BYTES);
    let mut ctx = TestContext::with_books(&[DUNE]);
    let token = ctx.token();
    let exact = book_body("Exact", "Size", 2);
    // (method, path, with the token, a body, the answer at exactly the limit)
    let cases = [
        ("POST", "/book", true, exact.as_str(), created(2, "Exact", "Size", 2)),
        ("PUT", "/book/1", true, r#"{"year":1966}"#, updated(1, "Dune", "Frank Herbert", 1966)),
        ("POST", "/token", false, LOGIN, issued(&pair_token())),
    ];
    for (method, path, with_token, body, at_limit) in cases {
        let auth = with_token.then_some(token.as_bytes());
        ctx.reset_calls();
        // `body` padded with trailing spaces to exactly `len` bytes.
        let padded = |len: usize| [body.as_bytes(), &vec![b' '; len - body.len()]].concat();
        let over = padded(MAX_BODY_BYTES + 1);
        assert_eq!(ctx.call_with(method, path, auth, &over[..]), too_large(), "{method} {path}");
        let calls = &ctx.statements();
        assert!(calls.iter().all(|c| *c == "read attempts"), "{method} {path}: {calls:?}");
        let probe = BodyProbe::default();
        let outcome = ctx.call_with(method, path, auth, probe.body(&padded(MAX_BODY_BYTES)));
        assert_eq!(outcome, at_limit, "{method} {path}");
    }
    let auth = Some(token.as_bytes());
    let much_larger = vec![b'x'; 8 * MAX_BODY_BYTES];
    assert_eq!(ctx.call_with("POST", "/book", auth, &much_larger[..]), too_large());
    // Exactly the limit but not JSON is judged as a body, not as a size.
    let not_json = vec![b'x'; MAX_BODY_BYTES];
    assert_eq!(ctx.call_with("POST", "/book", auth, &not_json[..]), invalid_input());
    // GET and DELETE never read a body, however large.
    let all = [book(1, "Dune", "Frank Herbert", 1966), book(2, "Exact", "Size", 2)];
    let outcomes = [
        ("GET", "/books", listed(json!(all))),
        ("GET", "/book/1", retrieved(1, "Dune", "Frank Herbert", 1966)),
        ("GET", "/book/9", book_not_found()),
        ("GET", "/health", healthy()),
        ("DELETE", "/book/2", deleted()),
    ];
    for (method, path, expected) in outcomes {
        let probe = BodyProbe::default();
        let outcome = ctx.call_with(method, path, auth, probe.body(&much_larger));
        assert_eq!(outcome, expected, "{method} {path}");
        assert!(!probe.read.get(), "{method} {path} reads its body");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_request_gets_a_consistent_envelope(
        method in prop_oneof![
            Just("GET".to_string()), Just("POST".to_string()), Just("PUT".to_string()),
            Just("DELETE".to_string()), "[A-Z]{1,8}",
        ],
        path in prop_oneof![
            Just("/token".to_string()), Just("/book".to_string()), Just("/books".to_string()),
            "/book/[0-9a-z%.-]{0,22}", "/[a-z/]{0,12}",
        ],
        authorized in any::<bool>(),
        body in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            crate::books::book_object().prop_map(|o| serde_json::to_vec(&o).unwrap()),
        ],
    ) {
        // `check_response` checks the envelope and headers, the drop the log.
        let mut ctx = TestContext::new();
        let token = ctx.token();
        let auth = authorized.then_some(token.as_bytes());
        let (status, _, _) = ctx.call_with(&method, &path, auth, &body[..]);
        prop_assert!(status < 500, "{} {} gave {}", method, path, status);
    }
}
