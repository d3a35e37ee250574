//! Safe writes (docs/api.md): versions and ETags, `If-Match`, and
//! `Idempotency-Key`. Races, cuts, crashes and replicas: faults/safe_writes.py.

use book_catalog::books::model::{Book, NewBook};
use book_catalog::books::sql::{self, Keyed, StoredAnswer};
use book_catalog::db::{Column, Row, StoreError};
use serde_json::json;

use crate::support::*;

/// A request with a valid token and these header fields; the outcome and ETag.
fn send(
    ctx: &mut TestContext,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (Outcome, Option<String>) {
    let own = ctx.request_headers.clone();
    let fields = headers.iter().map(|(name, value)| (name.to_string(), value.to_string()));
    ctx.request_headers.extend(fields);
    let response = ctx.respond(method, path, None, Some(ctx.token().as_bytes()), body.as_bytes());
    ctx.request_headers = own;
    (ctx.check_response(&response), response.header("etag").map(str::to_string))
}

fn tag(tag: &str) -> Option<String> {
    Some(tag.to_string())
}

/// Every `PUT` moves a book's version, its ETag, on.
#[test]
fn if_match_lets_a_write_through_only_at_a_version_it_names() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    ctx.create_book("Emma", "Jane Austen", 1815);
    let put = |ctx: &mut TestContext, if_match: &str, year: i64| {
        send(ctx, "PUT", "/book/1", &[("If-Match", if_match)], &json!({ "year": year }).to_string())
    };
    // Book 1 is at version 1: its current tag, in a list, or `*`, match.
    let changed = put(&mut ctx, "\"1.1\"", 1);
    assert_eq!(changed, (updated(1, "Dune", "Frank Herbert", 1), tag("\"1.2\"")));
    assert_eq!(put(&mut ctx, "\"9.9\", \"1.2\"", 2).1, tag("\"1.3\""));
    assert_eq!(put(&mut ctx, " * ", 3).1, tag("\"1.4\""));
    // Stale, weak, another book's, or unreadable: 412, nothing changes.
    let stale =
        ["\"1.1\"", "W/\"1.4\"", "\"2.4\"", "1.4", "\"1.04\"", "\"1.\"", "\"1.-4\"", "\"1.4"];
    for stale in stale.into_iter().chain(["", "garbage"]) {
        assert_eq!(put(&mut ctx, stale, 99), (precondition_failed(), None), "{stale:?}");
    }
    let read = send(&mut ctx, "GET", "/book/1", &[], "");
    assert_eq!(read, (retrieved(1, "Dune", "Frank Herbert", 3), tag("\"1.4\"")));
    // Two If-Match fields are one list.
    ctx.request_headers.push(("If-Match".into(), "\"1.1\"".into()));
    assert_eq!(put(&mut ctx, "\"1.4\"", 4).1, tag("\"1.5\""));
    ctx.request_headers.clear();
    // A PUT of no field is a new version too.
    assert_eq!(send(&mut ctx, "PUT", "/book/1", &[], "{}").1, tag("\"1.6\""));
    let delete = |ctx: &mut TestContext, if_match: &str| {
        send(ctx, "DELETE", "/book/2", &[("If-Match", if_match)], "").0
    };
    assert_eq!(delete(&mut ctx, "\"2.2\""), precondition_failed());
    assert_eq!(delete(&mut ctx, "\"2.1\""), deleted());
    assert_eq!(delete(&mut ctx, "*"), book_not_found());
    assert_eq!(ctx.rows("books"), 1);
}

/// `require_if_match` makes a write without If-Match 428, after the
/// not-found check; a value that is not a flag leaves If-Match optional.
#[test]
fn the_order_is_not_found_then_the_precondition_then_the_body() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let stale = [("If-Match", "\"1.7\"")];
    // A missing book is 404 whatever its body, with If-Match or not.
    let full = book_body("T", "A", 1);
    for body in ["not json", "", "[]", r#"{"title":""}"#, r#"{"year":null}"#, "{}", &full] {
        for path in ["/book/5", "/book/abc"] {
            for headers in [&[][..], &stale[..]] {
                let outcome = send(&mut ctx, "PUT", path, headers, body).0;
                assert_eq!(outcome, book_not_found(), "{path} {headers:?} {body:?}");
            }
        }
    }
    let bad_body = r#"{"title":""}"#;
    assert_eq!(send(&mut ctx, "PUT", "/book/1", &stale, bad_body).0, precondition_failed());
    let current = [("If-Match", "\"1.1\"")];
    assert_eq!(send(&mut ctx, "PUT", "/book/1", &current, bad_body).0, invalid_input());
    // A missing book under If-Match costs the write and one lookup.
    ctx.reset_calls();
    send(&mut ctx, "DELETE", "/book/5", &stale, "");
    assert_eq!(ctx.statements(), ["delete", "get"]);
    assert!(!ctx.logged("", "REQUIRE_IF_MATCH"), "{:?}", ctx.logs);
    ctx.set(Setting::RequireIfMatch, " TRUE ");
    for (method, body) in [("PUT", r#"{"year":1}"#), ("PUT", r#"{"year":""}"#), ("DELETE", "")] {
        let outcome = send(&mut ctx, method, "/book/1", &[], body).0;
        assert_eq!(outcome, precondition_required(), "{method} {body}");
    }
    assert_eq!(send(&mut ctx, "DELETE", "/book/2", &[], "").0, book_not_found());
    assert_eq!(send(&mut ctx, "PUT", "/book/1", &[("If-Match", "*")], "{}").0 .0, 200);
    // Not a flag: a warning, and If-Match stays optional.
    ctx.set(Setting::RequireIfMatch, "maybe");
    assert_eq!(send(&mut ctx, "DELETE", "/book/1", &[], "").0, deleted());
    assert!(ctx.logged("level=warn ", "REQUIRE_IF_MATCH"), "{:?}", ctx.logs);
}

#[test]
fn a_key_stores_its_book_once_and_answers_it_again_as_first_created_for_a_day() {
    let mut ctx = TestContext::new();
    let key = [("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")];
    let first = send(&mut ctx, "POST", "/book", &key, &book_body("Dune", "Frank Herbert", 1965));
    assert_eq!(first, (created(1, "Dune", "Frank Herbert", 1965), tag("\"1.1\"")));
    // The same book, written differently: the first answer, no new book.
    let same = r#"{ "year": 1965, "author": "Frank Herbert", "title": "Dune", "id": 7 }"#;
    ctx.reset_calls();
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    assert_eq!(ctx.statements(), ["find key"]);
    // Still the first answer after the book changed, and after it is gone.
    send(&mut ctx, "PUT", "/book/1", &[], r#"{"title":"Dune Messiah"}"#);
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    send(&mut ctx, "DELETE", "/book/1", &[], "");
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    // Another book under the key: refused; without a key: a new book.
    let emma = book_body("Emma", "Jane Austen", 1815);
    assert_eq!(send(&mut ctx, "POST", "/book", &key, &emma), (key_reused(), None));
    let unkeyed = send(&mut ctx, "POST", "/book", &[], &emma).0;
    assert_eq!(unkeyed, created(2, "Emma", "Jane Austen", 1815));
    assert_eq!(ctx.rows("books"), 1);
    // Remembered for a day; a day on, the next keyed create prunes it: the key is new again.
    ctx.now += 24 * 60 * 60 - 1;
    assert_eq!(send(&mut ctx, "POST", "/book", &key, same), first);
    ctx.now += 1;
    send(&mut ctx, "POST", "/book", &[("Idempotency-Key", "other")], &emma);
    let again = send(&mut ctx, "POST", "/book", &key, same).0;
    assert_eq!(again, created(4, "Dune", "Frank Herbert", 1965));
}

#[test]
fn a_bad_key_is_refused_before_the_body_is_judged() {
    // Which keys are bad: src/books/safe_writes.rs.
    let mut ctx = TestContext::new();
    let outcome = send(&mut ctx, "POST", "/book", &[("Idempotency-Key", "two words")], "{}").0;
    assert_eq!(outcome, invalid_key());
    // Two fields are joined with ", ": no longer one key.
    ctx.request_headers.push(("Idempotency-Key".into(), "a".into()));
    let dune = book_body("Dune", "Frank Herbert", 1965);
    let outcome = send(&mut ctx, "POST", "/book", &[("Idempotency-Key", "a")], &dune).0;
    assert_eq!(outcome, invalid_key());
    ctx.request_headers.clear();
    let outcome = send(&mut ctx, "POST", "/book", &[("Idempotency-Key", &"k".repeat(255))], "{}").0;
    assert_eq!(outcome, invalid_input());
    assert_eq!(ctx.rows("books"), 0);
}

#[test]
fn a_failed_keyed_create_leaves_neither_a_book_nor_its_key() {
    let mut ctx = TestContext::new();
    let key = [("Idempotency-Key", "retry-me")];
    let body = book_body("Dune", "Frank Herbert", 1965);
    for failing in ["create", "remember key"] {
        ctx.fail_on = Some(failing);
        assert_eq!(send(&mut ctx, "POST", "/book", &key, &body).0, internal_error(), "{failing}");
        assert_eq!((ctx.rows("books"), ctx.rows("idempotency_keys")), (0, 0), "{failing}");
    }
    // Pruning old keys comes after the commit: its failure fails nothing.
    ctx.fail_on = Some("prune keys");
    let retried = send(&mut ctx, "POST", "/book", &key, &body);
    assert_eq!(retried.0 .0, 201);
    ctx.fail_on = None;
    assert_eq!(send(&mut ctx, "POST", "/book", &key, &body), retried);
    assert_eq!(ctx.rows("books"), 1);
}

/// The keyed create on PostgreSQL, whose races faults/safe_writes.py runs on
/// a real database: the look-up reserves the book's id; book, key and
/// pruning are one statement; a unique violation (another request stored the
/// key first) looks the key up again, once.
#[test]
fn a_keyed_create_on_postgresql_is_one_statement_and_retries_a_lost_race_once() {
    use Column::{Integer, Null, Text};
    let book = NewBook::from_json(br#"{"title":"Dune","author":"Frank Herbert","year":1965}"#)
        .expect("a valid book");
    let reserved = || Ok(vec![vec![Integer(41), Null, Null, Null, Null]]);
    let used = || {
        Ok(vec![vec![
            Integer(42),
            Text("fp".into()),
            Integer(201),
            Text("\"7.1\"".into()),
            Text("{\"first\":1}".into()),
        ]])
    };
    let lost = || Err(StoreError::postgres(Some("23505"), "db error: ERROR: duplicate key"));
    let run = |answers: Vec<Result<Vec<Row>, StoreError>>| {
        let mut db = Scripted { answers, ..Scripted::default() };
        let answer = |book: &Book| {
            Ok(StoredAnswer { status: 201, etag: "\"e\"".into(), body: book.id.get().to_string() })
        };
        let keyed =
            block_on(sql::create_once(&mut db, "k", "fp", &book, answer, 1_000_000, "admin"));
        assert_eq!(db.wrapped, Vec::<String>::new(), "a statement that may return no row");
        (keyed.map_err(|e| format!("{e:#}")), db.sent)
    };

    let (keyed, sent) = run(vec![reserved(), Ok(vec![vec![Integer(41)]])]);
    let Ok(Keyed::Created(first)) = keyed else { panic!("{keyed:?}") };
    assert_eq!(first.body, "41");
    assert!(sent[0].contains("nextval(") && sent[0].contains("idempotency_keys"), "{sent:?}");
    let parts =
        ["INSERT INTO books", "INSERT INTO idempotency_keys", "DELETE FROM idempotency_keys"];
    assert!(parts.iter().all(|part| sent[1].contains(part)), "{}", sent[1]);
    assert_eq!(sent.len(), 2);

    for answers in [vec![used()], vec![reserved(), lost(), used()]] {
        let count = answers.len();
        let (keyed, sent) = run(answers);
        let stored =
            StoredAnswer { status: 201, etag: "\"7.1\"".into(), body: "{\"first\":1}".into() };
        assert_eq!(keyed, Ok(Keyed::Replayed(stored)));
        assert_eq!(sent.len(), count);
    }

    let (keyed, sent) = run(vec![reserved(), lost(), reserved(), lost()]);
    assert!(matches!(&keyed, Err(e) if e.contains("duplicate key")), "{keyed:?}");
    assert_eq!(sent.len(), 4, "one retry, not more");
}
