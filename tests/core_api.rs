//! The endpoints through `book_catalog::handle`: every success and error
//! envelope, routing, the order of checks, body limits, store failures and
//! store round trips.

mod support;

use std::cell::Cell;

use book_catalog::db_url::StoreTarget;
use book_catalog::MAX_BODY_BYTES;
use serde_json::{json, Value};
use support::*;

fn created(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(
        201,
        "Book created successfully",
        book(id, title, author, year),
    )
}
fn retrieved(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(
        200,
        "Book retrieved successfully",
        book(id, title, author, year),
    )
}
fn updated(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(
        200,
        "Book updated successfully",
        book(id, title, author, year),
    )
}
fn listed(books: Value) -> Outcome {
    ok(200, "Books retrieved successfully", books)
}
fn deleted() -> Outcome {
    ok(200, "Book deleted successfully", Value::Null)
}

fn book_body(title: &str, author: &str, year: i64) -> String {
    json!({"title": title, "author": author, "year": year}).to_string()
}

/// `json` padded with trailing spaces to exactly `len` bytes.
fn padded(json: &str, len: usize) -> Vec<u8> {
    assert!(json.len() <= len);
    let mut body = json.as_bytes().to_vec();
    body.resize(len, b' ');
    body
}

#[test]
fn create_read_update_delete_with_exact_envelopes() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    let t = Some(t.as_str());
    assert_eq!(ctx.call("GET", "/books", t, ""), listed(json!([])));
    assert_eq!(
        ctx.call(
            "POST",
            "/book",
            t,
            &book_body("Dune", "Frank Herbert", 1965)
        ),
        created(1, "Dune", "Frank Herbert", 1965)
    );
    assert_eq!(
        ctx.call("GET", "/book/1", t, ""),
        retrieved(1, "Dune", "Frank Herbert", 1965)
    );
    assert_eq!(
        ctx.call("GET", "/books", t, ""),
        listed(json!([book(1, "Dune", "Frank Herbert", 1965)]))
    );
    assert_eq!(
        ctx.call(
            "PUT",
            "/book/1",
            t,
            &book_body("Dune Messiah", "F. Herbert", 1969)
        ),
        updated(1, "Dune Messiah", "F. Herbert", 1969)
    );
    assert_eq!(
        ctx.call("GET", "/book/1", t, ""),
        retrieved(1, "Dune Messiah", "F. Herbert", 1969)
    );
    assert_eq!(ctx.call("DELETE", "/book/1", t, ""), deleted());
    assert_eq!(ctx.call("GET", "/book/1", t, ""), book_not_found());
    assert_eq!(ctx.call("GET", "/books", t, ""), listed(json!([])));
}

#[test]
fn list_is_every_book_in_ascending_id_order() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    let t = Some(t.as_str());
    for (title, year) in [("C", 3), ("A", 1), ("B", 2), ("D", 4)] {
        ctx.call("POST", "/book", t, &book_body(title, "X", year));
    }
    assert_eq!(ctx.call("DELETE", "/book/2", t, ""), deleted());
    ctx.call("POST", "/book", t, &book_body("E", "X", 5));
    // An update does not move a book.
    ctx.call("PUT", "/book/1", t, r#"{"title":"Z"}"#);
    assert_eq!(
        ctx.call("GET", "/books", t, ""),
        listed(json!([
            book(1, "Z", "X", 3),
            book(3, "B", "X", 2),
            book(4, "D", "X", 4),
            book(5, "E", "X", 5),
        ]))
    );
}

#[test]
fn ids_are_never_reused() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    let t = Some(t.as_str());
    ctx.call("POST", "/book", t, &book_body("One", "A", 1));
    ctx.call("POST", "/book", t, &book_body("Two", "A", 2));
    // Deleting the newest book does not free its id.
    assert_eq!(ctx.call("DELETE", "/book/2", t, ""), deleted());
    assert_eq!(
        ctx.call("POST", "/book", t, &book_body("Three", "A", 3)),
        created(3, "Three", "A", 3)
    );
    // Nor does emptying the catalog.
    assert_eq!(ctx.call("DELETE", "/book/1", t, ""), deleted());
    assert_eq!(ctx.call("DELETE", "/book/3", t, ""), deleted());
    assert_eq!(ctx.call("GET", "/books", t, ""), listed(json!([])));
    assert_eq!(
        ctx.call("POST", "/book", t, &book_body("Four", "A", 4)),
        created(4, "Four", "A", 4)
    );
    assert_eq!(ctx.call("GET", "/book/2", t, ""), book_not_found());
}

#[test]
fn get_of_a_missing_book_is_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    for path in ["/book/2", "/book/999", "/book/9223372036854775807"] {
        assert_eq!(
            ctx.call("GET", path, Some(&t), ""),
            book_not_found(),
            "{path}"
        );
    }
}

#[test]
fn ids_that_are_not_canonical_positive_decimals_are_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    for id in [
        "abc",
        "0",
        "00",
        "-1",
        "+1",
        "1.5",
        "1.0",
        "01",
        "001",
        "1e0",
        "0x1",
        " 1",
        "1 ",
        "%31",
        "1a",
        "",
        "1/",
        "1/2",
        "١",
        "99999999999999999999999999999999999999999999",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551617",
    ] {
        let path = format!("/book/{id}");
        assert_eq!(
            ctx.call("GET", &path, Some(&t), ""),
            book_not_found(),
            "GET {path:?}"
        );
        assert_eq!(
            ctx.call("PUT", &path, Some(&t), r#"{"title":"Changed"}"#),
            book_not_found(),
            "PUT {path:?}"
        );
        assert_eq!(
            ctx.call("DELETE", &path, Some(&t), ""),
            book_not_found(),
            "DELETE {path:?}"
        );
    }
    assert_eq!(
        ctx.call("GET", "/book/1", Some(&t), ""),
        retrieved(1, "Dune", "Frank Herbert", 1965),
        "book 1 untouched by the look-alike ids"
    );
}

#[test]
fn partial_updates_keep_the_other_fields() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.create_book("Emma", "Jane Austen", 1815);
    let t = ctx.login();
    let t = Some(t.as_str());
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"year":1966}"#),
        updated(1, "Dune", "Frank Herbert", 1966)
    );
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"title":"Dune (1st ed.)"}"#),
        updated(1, "Dune (1st ed.)", "Frank Herbert", 1966)
    );
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"author":"F. Herbert"}"#),
        updated(1, "Dune (1st ed.)", "F. Herbert", 1966)
    );
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"title":"Dune","year":1965}"#),
        updated(1, "Dune", "F. Herbert", 1965)
    );
    // Unknown fields are ignored, on update too, and not echoed.
    assert_eq!(
        ctx.call(
            "PUT",
            "/book/1",
            t,
            r#"{"isbn":"x","author":"Frank Herbert"}"#
        ),
        updated(1, "Dune", "Frank Herbert", 1965)
    );
    assert_eq!(
        ctx.call("GET", "/book/1", t, ""),
        retrieved(1, "Dune", "Frank Herbert", 1965)
    );
    assert_eq!(
        ctx.call("GET", "/book/2", t, ""),
        retrieved(2, "Emma", "Jane Austen", 1815),
        "the other book is untouched"
    );
}

#[test]
fn empty_update_changes_nothing_and_returns_the_book() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    for body in ["{}", " { } ", r#"{"unknown":1}"#, r#"{"id":7}"#] {
        assert_eq!(
            ctx.call("PUT", "/book/1", Some(&t), body),
            updated(1, "Dune", "Frank Herbert", 1965),
            "{body}"
        );
    }
    assert_eq!(ctx.call("GET", "/book/7", Some(&t), ""), book_not_found());
}

#[test]
fn an_id_in_the_update_body_is_ignored() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.create_book("Emma", "Jane Austen", 1815);
    let t = ctx.login();
    let t = Some(t.as_str());
    assert_eq!(
        ctx.call(
            "PUT",
            "/book/1",
            t,
            r#"{"id":2,"title":"Children of Dune"}"#
        ),
        updated(1, "Children of Dune", "Frank Herbert", 1965)
    );
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"id":"x","year":1976}"#),
        updated(1, "Children of Dune", "Frank Herbert", 1976)
    );
    assert_eq!(
        ctx.call("GET", "/books", t, ""),
        listed(json!([
            book(1, "Children of Dune", "Frank Herbert", 1976),
            book(2, "Emma", "Jane Austen", 1815),
        ]))
    );
}

#[test]
fn update_of_a_missing_book_is_not_found() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    assert_eq!(
        ctx.call("PUT", "/book/1", Some(&t), &book_body("T", "A", 1)),
        book_not_found()
    );
    assert_eq!(ctx.call("PUT", "/book/1", Some(&t), "{}"), book_not_found());
    assert_eq!(ctx.call("GET", "/books", Some(&t), ""), listed(json!([])));
}

#[test]
fn delete_then_everything_on_that_id_is_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.create_book("Emma", "Jane Austen", 1815);
    let t = ctx.login();
    let t = Some(t.as_str());
    assert_eq!(ctx.call("DELETE", "/book/1", t, ""), deleted());
    assert_eq!(ctx.call("GET", "/book/1", t, ""), book_not_found());
    assert_eq!(ctx.call("DELETE", "/book/1", t, ""), book_not_found());
    assert_eq!(
        ctx.call("PUT", "/book/1", t, r#"{"year":1}"#),
        book_not_found()
    );
    assert_eq!(
        ctx.call("DELETE", "/book/3", t, ""),
        book_not_found(),
        "never existed"
    );
    assert_eq!(ctx.call("DELETE", "/book/999999", t, ""), book_not_found());
    assert_eq!(
        ctx.call("GET", "/books", t, ""),
        listed(json!([book(2, "Emma", "Jane Austen", 1815)]))
    );
}

// ---- Order of checks --------------------------------------------------

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
        let read = Cell::new(false);
        let limit = Cell::new(0);
        let probe = ProbeBody {
            bytes: body,
            read: &read,
            limit: &limit,
        };
        assert_eq!(
            ctx.call_with(method, path, None, probe),
            token_required(),
            "{method} {path} without a token"
        );
        assert!(!read.get(), "{method} {path}: body read before auth");
        for token in [bad_token.as_bytes(), b"garbage"] {
            assert_eq!(
                ctx.call_raw(method, path, Some(token), body),
                invalid_token(),
                "{method} {path} with a bad token"
            );
        }
    }
    assert_eq!(ctx.calls.opens, 0, "the store is never opened");
    assert_eq!(ctx.all_books().as_array().unwrap().len(), 1);
}

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
    assert_eq!(ctx.calls.opens, 0);
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
    assert_eq!(ctx.calls.opens, 0);
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
        assert_eq!(
            ctx.call(method, path, None, "{}"),
            token_required(),
            "{method} {path} without a token"
        );
        assert_eq!(
            ctx.call(method, path, Some("x.y.z"), "{}"),
            invalid_token(),
            "{method} {path} with a bad token"
        );
    }
    assert_eq!(ctx.calls.opens, 0, "405 never opens the store");
}

// ---- Bodies -----------------------------------------------------------

#[test]
fn bodies_over_the_limit_are_413() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    let over = padded(&book_body("Big", "Body", 1), MAX_BODY_BYTES + 1);
    let login_over = padded(
        r#"{"username":"admin","password":"password"}"#,
        MAX_BODY_BYTES + 1,
    );
    ctx.reset_calls();
    assert_eq!(
        ctx.call_raw("POST", "/book", Some(t.as_bytes()), &over),
        too_large()
    );
    assert_eq!(
        ctx.call_raw("PUT", "/book/1", Some(t.as_bytes()), &over),
        too_large()
    );
    assert_eq!(
        ctx.call_raw("POST", "/token", None, &login_over),
        too_large()
    );
    let much_larger = vec![b'x'; 8 * MAX_BODY_BYTES];
    assert_eq!(
        ctx.call_raw("POST", "/book", Some(t.as_bytes()), &much_larger),
        too_large()
    );
    // The login's only store call is the failed-login check, which comes
    // before the body is judged.
    assert_eq!(
        ctx.calls,
        StoreCalls {
            opens: 1,
            login_read: 1,
            ..StoreCalls::default()
        },
        "too-large bodies never reach the books"
    );
    assert_eq!(
        ctx.all_books(),
        json!([book(1, "Dune", "Frank Herbert", 1965)])
    );
}

#[test]
fn a_body_of_exactly_the_limit_is_accepted() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    let t = Some(t.as_bytes());
    assert_eq!(
        ctx.call_raw(
            "POST",
            "/book",
            t,
            &padded(&book_body("Exact", "Size", 2), MAX_BODY_BYTES)
        ),
        created(2, "Exact", "Size", 2)
    );
    assert_eq!(
        ctx.call_raw(
            "PUT",
            "/book/1",
            t,
            &padded(r#"{"year":1966}"#, MAX_BODY_BYTES)
        ),
        updated(1, "Dune", "Frank Herbert", 1966)
    );
    let (status, envelope, _) = ctx.call_raw(
        "POST",
        "/token",
        None,
        &padded(
            r#"{"username":"admin","password":"password"}"#,
            MAX_BODY_BYTES,
        ),
    );
    assert_eq!(status, 200);
    assert_eq!(envelope["message"], "Token generated successfully");
    // Exactly the limit but not JSON is judged as a body, not as a size.
    assert_eq!(
        ctx.call_raw("POST", "/book", t, &vec![b'x'; MAX_BODY_BYTES]),
        invalid_input()
    );
}

#[test]
fn bodies_are_read_with_the_1_mib_limit() {
    assert_eq!(MAX_BODY_BYTES, 1024 * 1024);
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
        let read = Cell::new(false);
        let limit = Cell::new(0);
        let probe = ProbeBody {
            bytes: body.as_bytes(),
            read: &read,
            limit: &limit,
        };
        let (status, _, _) = ctx.call_with(method, path, auth, probe);
        assert!(status < 300, "{method} {path}: {status}");
        assert!(read.get(), "{method} {path} reads its body");
        assert_eq!(limit.get(), MAX_BODY_BYTES, "{method} {path}");
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
        let read = Cell::new(false);
        let limit = Cell::new(0);
        let probe = ProbeBody {
            bytes: &huge,
            read: &read,
            limit: &limit,
        };
        assert_eq!(
            ctx.call_with(method, path, Some(t.as_bytes()), probe),
            expected,
            "{method} {path}"
        );
        assert!(!read.get(), "{method} {path} does not read its body");
    }
    assert_eq!(
        ctx.call("GET", "/books", Some(&t), "not json at all"),
        listed(json!([]))
    );
}

// ---- Store failures and store round trips ------------------------------

#[test]
fn store_errors_are_500_with_the_detail_only_in_the_log() {
    let detail = "disk I/O error at page 4711 (detail-ZQX)";
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    ctx.fail_store = Some(detail.to_string());
    let requests = [
        ("GET", "/books", ""),
        ("GET", "/book/1", ""),
        ("GET", "/book/2", ""),
        ("POST", "/book", r#"{"title":"T","author":"A","year":1}"#),
        ("PUT", "/book/1", r#"{"year":1966}"#),
        ("PUT", "/book/1", "{}"),
        ("PUT", "/book/1", "not json"),
        ("DELETE", "/book/1", ""),
    ];
    for (method, path, body) in requests {
        ctx.logs.clear();
        assert_eq!(
            ctx.call(method, path, Some(&t), body),
            internal_error(),
            "{method} {path} {body}"
        );
        assert!(
            ctx.logs
                .iter()
                .any(|l| l.contains("detail-ZQX") && l.contains(method) && l.contains(path)),
            "{method} {path}: {:?}",
            ctx.logs
        );
    }
    // Login needs the store too (its failed-login check), and fails closed.
    ctx.logs.clear();
    assert_eq!(
        ctx.call(
            "POST",
            "/token",
            None,
            r#"{"username":"admin","password":"password"}"#
        ),
        internal_error()
    );
    assert!(
        ctx.logs
            .iter()
            .any(|l| l.contains("detail-ZQX") && l.contains("POST /token")),
        "{:?}",
        ctx.logs
    );
    ctx.fail_store = None;
    assert_eq!(
        ctx.call("GET", "/books", Some(&t), ""),
        listed(json!([book(1, "Dune", "Frank Herbert", 1965)])),
        "nothing changed while the store failed"
    );
}

#[test]
fn a_store_that_cannot_be_opened_is_500() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    ctx.fail_open = Some("connection refused by db-host-7 (detail-OPEN)".to_string());
    for (method, path, body) in PROTECTED {
        ctx.logs.clear();
        assert_eq!(
            ctx.call(method, path, Some(&t), body),
            internal_error(),
            "{method} {path}"
        );
        assert!(
            ctx.logs.iter().any(|l| l.contains("detail-OPEN")),
            "{:?}",
            ctx.logs
        );
    }
}

#[test]
fn an_unsupported_db_url_is_500_naming_the_setting_without_its_password() {
    for db_url in [
        "mysql://u:hunter2@x/db",
        "mssql://sa:hunter2@x:1433/db",
        "file.db",
        "sqlite://a/b",
    ] {
        let mut ctx = TestContext::new();
        ctx.db_url = Some(db_url.to_string());
        ctx.never_logged.push("hunter2".to_string());
        // A login needs the store (the failed-login check): 500 as well.
        ctx.logs.clear();
        assert_eq!(
            ctx.call(
                "POST",
                "/token",
                None,
                r#"{"username":"admin","password":"password"}"#
            ),
            internal_error(),
            "{db_url}: POST /token"
        );
        assert!(
            ctx.logs.iter().any(|l| l.contains("DB_URL")),
            "{:?}",
            ctx.logs
        );
        let t = valid_token();
        for (method, path, body) in PROTECTED {
            ctx.logs.clear();
            assert_eq!(
                ctx.call(method, path, Some(&t), body),
                internal_error(),
                "{db_url}: {method} {path}"
            );
            assert!(
                ctx.logs.iter().any(|l| l.contains("DB_URL")),
                "{db_url}: {:?}",
                ctx.logs
            );
            assert!(!ctx.logs.iter().any(|l| l.contains("hunter2")));
        }
        assert_eq!(ctx.calls.opens, 0, "{db_url}: no store opened");
        // Unauthenticated requests are still 401 first.
        assert_eq!(ctx.call("GET", "/books", None, ""), token_required());
    }
}

#[test]
fn db_url_names_the_store_to_open() {
    let pg = "postgres://user:pw@db.internal:5432/books";
    for (db_url, target) in [
        (None, StoreTarget::Sqlite("default".into())),
        (Some("sqlite:"), StoreTarget::Sqlite("default".into())),
        (
            Some("sqlite://default"),
            StoreTarget::Sqlite("default".into()),
        ),
        (
            Some("sqlite://books_2"),
            StoreTarget::Sqlite("books_2".into()),
        ),
        (Some(pg), StoreTarget::Postgres(pg.into())),
        (
            Some("postgresql://db/books"),
            StoreTarget::Postgres("postgresql://db/books".into()),
        ),
    ] {
        let mut ctx = TestContext::new();
        ctx.db_url = db_url.map(str::to_string);
        let t = ctx.login();
        assert_eq!(ctx.call("GET", "/books", Some(&t), ""), listed(json!([])));
        // The login's failed-login check, then the list.
        assert_eq!(ctx.opened, [target.clone(), target], "{db_url:?}");
    }
}

#[test]
fn each_single_book_request_is_one_store_call() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    let t = Some(t.as_str());
    // What a login costs is in core_throttle.rs.
    ctx.reset_calls();
    let one = |calls: StoreCalls| StoreCalls { opens: 1, ..calls };
    let cases: [(&str, &str, &str, StoreCalls, u16); 12] = [
        (
            "POST",
            "/book",
            r#"{"title":"T","author":"A","year":1}"#,
            one(StoreCalls {
                create: 1,
                ..Default::default()
            }),
            201,
        ),
        (
            "GET",
            "/book/1",
            "",
            one(StoreCalls {
                get: 1,
                ..Default::default()
            }),
            200,
        ),
        (
            "GET",
            "/books",
            "",
            one(StoreCalls {
                list: 1,
                ..Default::default()
            }),
            200,
        ),
        (
            "PUT",
            "/book/1",
            r#"{"title":"U","year":2}"#,
            one(StoreCalls {
                update: 1,
                ..Default::default()
            }),
            200,
        ),
        (
            "PUT",
            "/book/1",
            "{}",
            one(StoreCalls {
                get: 1,
                ..Default::default()
            }),
            200,
        ),
        (
            "PUT",
            "/book/1",
            r#"{"title":""}"#,
            one(StoreCalls {
                get: 1,
                ..Default::default()
            }),
            400,
        ),
        (
            "PUT",
            "/book/9",
            r#"{"title":"U"}"#,
            one(StoreCalls {
                update: 1,
                ..Default::default()
            }),
            404,
        ),
        (
            "PUT",
            "/book/9",
            r#"{"title":""}"#,
            one(StoreCalls {
                get: 1,
                ..Default::default()
            }),
            404,
        ),
        (
            "GET",
            "/book/9",
            "",
            one(StoreCalls {
                get: 1,
                ..Default::default()
            }),
            404,
        ),
        (
            "DELETE",
            "/book/1",
            "",
            one(StoreCalls {
                delete: 1,
                ..Default::default()
            }),
            200,
        ),
        (
            "DELETE",
            "/book/1",
            "",
            one(StoreCalls {
                delete: 1,
                ..Default::default()
            }),
            404,
        ),
        (
            "POST",
            "/book",
            r#"{"title":""}"#,
            StoreCalls::default(),
            400,
        ),
    ];
    for (method, path, body, calls, status) in cases {
        ctx.reset_calls();
        assert_eq!(
            ctx.call(method, path, t, body).0,
            status,
            "{method} {path} {body}"
        );
        // Opening may be deferred connecting (see `Context::open_store`), so
        // an invalid body may open the store as long as it makes no call.
        let seen = ctx.calls;
        assert_eq!(
            StoreCalls { opens: 0, ..seen },
            StoreCalls { opens: 0, ..calls },
            "{method} {path} {body}"
        );
        assert!(
            seen.opens <= 1,
            "{method} {path}: opened {} times",
            seen.opens
        );
        assert!(seen.total() <= 1);
    }
}

#[test]
fn responses_are_json_envelopes_with_matching_status() {
    // `call` checks the envelope shape on every response; here the raw body
    // of a few responses is compared byte for byte as well.
    let mut ctx = TestContext::new();
    let head = book_catalog::RequestHead {
        method: "GET",
        path: "/books",
        query: None,
        authorization: None,
        headers: &[],
    };
    let response = book_catalog::handle(&mut ctx, &head, &b""[..]);
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
    let head = book_catalog::RequestHead {
        method: "GET",
        path: "/token",
        query: None,
        authorization: None,
        headers: &[],
    };
    let response = book_catalog::handle(&mut ctx, &head, &b""[..]);
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

#[test]
fn an_unsupported_db_url_never_echoes_a_password_with_reserved_characters() {
    // Users write passwords into URLs without percent-encoding them; the log
    // line about the bad setting must not echo them anyway (decisions.md:
    // "never echoing passwords").
    let urls = [
        "mysql://u:hunter/2@x/db",
        "mysql://u:hunter#2@x/db",
        "mysql://u:hunter?2@x/db",
        "mysql://u:p@ss/hunter2@x/db",
        "mysql://u:hunter2@x/db?password=hunter2",
    ];
    let mut leaks = Vec::new();
    for db_url in urls {
        let mut ctx = TestContext::new();
        ctx.db_url = Some(db_url.to_string());
        let t = valid_token();
        assert_eq!(
            ctx.call(
                "POST",
                "/token",
                None,
                r#"{"username":"admin","password":"password"}"#
            ),
            internal_error(),
            "{db_url}: POST /token"
        );
        assert_eq!(
            ctx.call("GET", "/books", Some(&t), ""),
            internal_error(),
            "{db_url}"
        );
        assert!(
            ctx.logs.iter().any(|l| l.contains("DB_URL")),
            "{db_url}: {:?}",
            ctx.logs
        );
        leaks.extend(ctx.logs.iter().filter(|l| l.contains("hunter")).cloned());
    }
    assert_eq!(leaks, Vec::<String>::new(), "log lines echoing a password");
}

#[test]
fn login_failures_never_log_the_password_the_hash_or_the_previous_secret() {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::from_b64("bG9nc2VjcmVjeXNhbHQ").unwrap();
    let params = argon2::Params::new(64, 1, 1, None).unwrap();
    let hash = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
        .hash_password(b"Right-Pass-For-Logs", &salt)
        .unwrap()
        .to_string();
    let submitted = [
        "Right-Pass-For-Logs",
        "Wrong-Pass-For-Logs",
        "Another-Wrong-One",
    ];
    // A working hash, a failing store, then an unusable hash (its text marked).
    for (phc, fail_store) in [
        (hash.clone(), None),
        (hash.clone(), Some("disk I/O error (detail-LOGSTORE)")),
        (format!("{hash}-UNUSABLE-MARK"), None),
    ] {
        let mut ctx = TestContext::new();
        ctx.password_hash = Some(phc.clone());
        ctx.previous_secret = Some("previous-secret-for-logs-0123456789abcdef".into());
        ctx.fail_store = fail_store.map(str::to_string);
        ctx.never_logged.extend(submitted.map(String::from));
        ctx.never_logged.push("UNUSABLE-MARK".to_string());
        for _ in 0..12 {
            for password in submitted {
                let body = json!({"username": "admin", "password": password}).to_string();
                let status = ctx.call("POST", "/token", None, &body).0;
                assert!([200, 401, 429, 500].contains(&status), "{status}");
            }
        }
        if fail_store.is_some() || phc.ends_with("MARK") {
            assert!(
                ctx.logs.iter().any(|l| l.starts_with("error: POST /token")),
                "{:?}",
                ctx.logs
            );
        }
        // Dropping `ctx` checks every line against the secret, both
        // secrets' values, the hash and its salt and digest, and every
        // submitted password.
    }
}
