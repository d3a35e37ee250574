//! Safe writes (docs/api.md): versions and ETags, `If-Match` on `PUT` and
//! `DELETE` (412, and 428 when `require_if_match` is on) in the contract's
//! order of checks, and `POST /book` with an `Idempotency-Key`, each on the
//! real SQL. Races, cut connections, crashes and replicas are performed
//! against the served component in `faults/safe_writes.py`.


use book_catalog::Response;
use serde_json::json;
use crate::support::*;

/// A request with these header fields besides the context's own; the
/// checked outcome and its ETag.
fn send(
    ctx: &mut TestContext,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (Outcome, Option<String>) {
    let token = ctx.login();
    let own = ctx.request_headers.clone();
    let fields = headers
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()));
    ctx.request_headers.extend(fields);
    let response: Response =
        ctx.respond(method, path, None, Some(token.as_bytes()), body.as_bytes());
    ctx.request_headers = own;
    let etag = response.header("etag").map(str::to_string);
    (ctx.check_response(&response), etag)
}

fn precondition_failed() -> Outcome {
    error(412, "Precondition failed")
}

fn book_count(ctx: &TestContext) -> i64 {
    ctx.db
        .query_row("SELECT count(*) FROM books", [], |row| row.get(0))
        .unwrap()
}

#[test]
fn each_book_response_carries_an_etag_that_every_put_moves_on() {
    let mut ctx = TestContext::new();
    let dune = book_body("Dune", "Frank Herbert", 1965);
    let (outcome, tag) = send(&mut ctx, "POST", "/book", &[], &dune);
    assert_eq!(outcome, created(1, "Dune", "Frank Herbert", 1965));
    assert_eq!(tag.as_deref(), Some("\"1.1\""));
    assert_eq!(send(&mut ctx, "GET", "/book/1", &[], "").1, tag);
    let (outcome, tag) = send(&mut ctx, "PUT", "/book/1", &[], r#"{"year":1966}"#);
    assert_eq!(outcome, updated(1, "Dune", "Frank Herbert", 1966));
    assert_eq!(tag.as_deref(), Some("\"1.2\""));
    // A PUT of no field is a new version too.
    assert_eq!(
        send(&mut ctx, "PUT", "/book/1", &[], "{}").1.as_deref(),
        Some("\"1.3\"")
    );
    assert_eq!(send(&mut ctx, "GET", "/books", &[], "").1, None);
    assert_eq!(
        send(&mut ctx, "DELETE", "/book/1", &[], ""),
        (deleted(), None)
    );
}

#[test]
fn if_match_lets_a_write_through_only_at_a_version_it_names() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.create_book("Emma", "Jane Austen", 1815);
    let put = |ctx: &mut TestContext, if_match: &str, year: i64| {
        let body = json!({ "year": year }).to_string();
        send(ctx, "PUT", "/book/1", &[("If-Match", if_match)], &body)
    };
    // Book 1 is at version 1: its current tag, in a list, or `*`, match.
    assert_eq!(
        put(&mut ctx, "\"1.1\"", 1),
        (
            updated(1, "Dune", "Frank Herbert", 1),
            Some("\"1.2\"".into())
        )
    );
    assert_eq!(
        put(&mut ctx, "\"9.9\", \"1.2\"", 2).1.as_deref(),
        Some("\"1.3\"")
    );
    assert_eq!(put(&mut ctx, " * ", 3).1.as_deref(), Some("\"1.4\""));
    // Stale, weak, another book's, or unreadable: 412, nothing changes.
    for stale in [
        "\"1.1\"",
        "W/\"1.4\"",
        "\"2.4\"",
        "1.4",
        "\"1.04\"",
        "",
        "garbage",
    ] {
        assert_eq!(
            put(&mut ctx, stale, 99),
            (precondition_failed(), None),
            "{stale:?}"
        );
    }
    assert_eq!(
        send(&mut ctx, "GET", "/book/1", &[], ""),
        (
            retrieved(1, "Dune", "Frank Herbert", 3),
            Some("\"1.4\"".into())
        )
    );
    // Two If-Match fields are one list.
    ctx.request_headers
        .push(("If-Match".into(), "\"1.1\"".into()));
    assert_eq!(put(&mut ctx, "\"1.4\"", 4).0 .0, 200);
    ctx.request_headers.clear();

    let delete = |ctx: &mut TestContext, if_match: &str| {
        send(ctx, "DELETE", "/book/2", &[("If-Match", if_match)], "").0
    };
    assert_eq!(delete(&mut ctx, "\"2.2\""), precondition_failed());
    assert_eq!(delete(&mut ctx, "\"2.1\""), deleted());
    assert_eq!(delete(&mut ctx, "*"), book_not_found());
    assert_eq!(book_count(&ctx), 1);
}

#[test]
fn the_order_is_not_found_then_the_precondition_then_the_body() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let stale = [("If-Match", "\"1.7\"")];
    let bad_body = r#"{"title":""}"#;
    for (headers, path, body, expected) in [
        (&stale[..], "/book/5", bad_body, book_not_found()),
        (&stale[..], "/book/1", bad_body, precondition_failed()),
        (
            &[("If-Match", "\"1.1\"")][..],
            "/book/1",
            bad_body,
            invalid_input(),
        ),
        (&[][..], "/book/5", r#"{"year":1}"#, book_not_found()),
    ] {
        assert_eq!(
            send(&mut ctx, "PUT", path, headers, body).0,
            expected,
            "{headers:?} {path} {body}"
        );
    }
    // A missing book under If-Match costs the write and one lookup.
    ctx.reset_calls();
    send(&mut ctx, "DELETE", "/book/5", &stale, "");
    assert_eq!(
        ctx.statements,
        ["count attempt", "clear attempts", "delete", "get"]
    );
}

#[test]
fn require_if_match_refuses_writes_without_one_after_the_not_found_check() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let required = error(428, "Precondition required");
    ctx.require_if_match = Some(" TRUE ".into());
    assert_eq!(
        send(&mut ctx, "PUT", "/book/1", &[], r#"{"year":1}"#).0,
        required
    );
    assert_eq!(
        send(&mut ctx, "PUT", "/book/1", &[], r#"{"year":""}"#).0,
        required
    );
    assert_eq!(send(&mut ctx, "DELETE", "/book/1", &[], "").0, required);
    assert_eq!(
        send(&mut ctx, "DELETE", "/book/2", &[], "").0,
        book_not_found()
    );
    assert_eq!(
        send(&mut ctx, "PUT", "/book/1", &[("If-Match", "*")], "{}")
            .0
             .0,
        200
    );
    let warned = |ctx: &TestContext| ctx.logs.iter().any(|l| l.contains("REQUIRE_IF_MATCH"));
    assert!(!warned(&ctx), "{:?}", ctx.logs);
    // Not a flag: a warning, and If-Match stays optional.
    ctx.require_if_match = Some("maybe".into());
    assert_eq!(send(&mut ctx, "DELETE", "/book/1", &[], "").0, deleted());
    assert!(warned(&ctx), "{:?}", ctx.logs);
}

#[test]
fn a_key_stores_its_book_once_and_answers_it_again_as_first_created() {
    let mut ctx = TestContext::new();
    let key = [("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")];
    let first = send(
        &mut ctx,
        "POST",
        "/book",
        &key,
        &book_body("Dune", "Frank Herbert", 1965),
    );
    assert_eq!(
        first,
        (
            created(1, "Dune", "Frank Herbert", 1965),
            Some("\"1.1\"".into())
        )
    );
    // The same book, written differently: the first answer, no new book.
    let same = r#"{ "year": 1965, "author": "Frank Herbert", "title": "Dune", "id": 7 }"#;
    ctx.reset_calls();
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    assert_eq!(
        ctx.statements,
        ["count attempt", "clear attempts", "find key"]
    );
    // Still the first answer after the book changed, and after it is gone.
    send(
        &mut ctx,
        "PUT",
        "/book/1",
        &[],
        r#"{"title":"Dune Messiah"}"#,
    );
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    send(&mut ctx, "DELETE", "/book/1", &[], "");
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    // Another book under the key: refused; without a key: a new book.
    let emma = book_body("Emma", "Jane Austen", 1815);
    let reused = error(422, "Idempotency-Key already used for a different request");
    assert_eq!(send(&mut ctx, "POST", "/book", &key, &emma), (reused, None));
    assert_eq!(
        send(&mut ctx, "POST", "/book", &[], &emma).0,
        created(2, "Emma", "Jane Austen", 1815)
    );
    assert_eq!(book_count(&ctx), 1);
}

#[test]
fn a_bad_key_is_refused_before_the_body_is_judged() {
    let mut ctx = TestContext::new();
    let long = "k".repeat(256);
    for bad in ["", "two words", "caf\u{e9}", long.as_str()] {
        let outcome = send(&mut ctx, "POST", "/book", &[("Idempotency-Key", bad)], "{}").0;
        assert_eq!(outcome, error(400, "Invalid Idempotency-Key"), "{bad:?}");
    }
    // Two fields are joined with ", ": no longer one key.
    ctx.request_headers
        .push(("Idempotency-Key".into(), "a".into()));
    let body = book_body("Dune", "Frank Herbert", 1965);
    let outcome = send(
        &mut ctx,
        "POST",
        "/book",
        &[("Idempotency-Key", "a")],
        &body,
    )
    .0;
    assert_eq!(outcome, error(400, "Invalid Idempotency-Key"));
    ctx.request_headers.clear();
    let longest = "k".repeat(255);
    let outcome = send(
        &mut ctx,
        "POST",
        "/book",
        &[("Idempotency-Key", &longest)],
        "{}",
    )
    .0;
    assert_eq!(outcome, invalid_input());
    assert_eq!(book_count(&ctx), 0);
}

#[test]
fn a_failed_keyed_create_leaves_neither_a_book_nor_its_key() {
    let mut ctx = TestContext::new();
    let key = [("Idempotency-Key", "retry-me")];
    let body = book_body("Dune", "Frank Herbert", 1965);
    for failing in ["create", "remember key", "prune keys"] {
        ctx.fail_on = Some(failing);
        assert_eq!(
            send(&mut ctx, "POST", "/book", &key, &body).0,
            internal_error(),
            "{failing}"
        );
        let keys: i64 = ctx
            .db
            .query_row("SELECT count(*) FROM idempotency_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!((book_count(&ctx), keys), (0, 0), "{failing}");
    }
    ctx.fail_on = None;
    let retried = send(&mut ctx, "POST", "/book", &key, &body);
    assert_eq!(retried.0 .0, 201);
    assert_eq!(send(&mut ctx, "POST", "/book", &key, &body), retried);
    assert_eq!(book_count(&ctx), 1);
}

#[test]
fn keys_are_remembered_for_a_day_then_forgotten() {
    let mut ctx = TestContext::new();
    let body = book_body("Dune", "Frank Herbert", 1965);
    let post = |ctx: &mut TestContext, key| {
        send(ctx, "POST", "/book", &[("Idempotency-Key", key)], &body).0
    };
    post(&mut ctx, "old");
    ctx.now += 24 * 60 * 60 - 1;
    assert_eq!(
        post(&mut ctx, "old"),
        created(1, "Dune", "Frank Herbert", 1965)
    );
    // A day on, the next keyed create prunes it: the key is new again.
    ctx.now += 1;
    post(&mut ctx, "other");
    assert_eq!(
        post(&mut ctx, "old"),
        created(3, "Dune", "Frank Herbert", 1965)
    );
}
