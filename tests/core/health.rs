//! `GET /health` through `book_catalog::handle` (docs/api.md, "Health"): no
//! authentication, 200 "Service healthy" when the configured store answers a
//! trivial query, 503 "Service unavailable" otherwise with the reason in the
//! log only, and 405 with `Allow: GET` for every other method.


use book_catalog::settings::Setting;
use serde_json::Value;
use crate::support::*;

fn healthy() -> Outcome {
    ok(200, "Service healthy", Value::Null)
}

fn unavailable() -> Outcome {
    error(503, "Service unavailable")
}

#[test]
fn healthy_store_answers_200_without_authentication() {
    let mut ctx = TestContext::new();
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
    assert_eq!(ctx.opens, 1, "the store is asked");
    assert_eq!(ctx.opened, [sqlite("default")]);
    assert!(ctx.logs.is_empty(), "{:?}", ctx.logs);
}

#[test]
fn any_authorization_header_is_ignored() {
    let mut ctx = TestContext::new();
    let expired = token_with_exp(&(NOW - 10).to_string());
    for auth in ["", "garbage", "Bearer x.y.z", expired.as_str()] {
        assert_eq!(
            ctx.call("GET", "/health", Some(auth), ""),
            healthy(),
            "{auth:?}"
        );
    }
    let good = ctx.login();
    assert_eq!(ctx.call("GET", "/health", Some(&good), ""), healthy());
}

#[test]
fn healthy_without_a_signing_secret() {
    // Health is about the store: a missing secret breaks logins, not health.
    let mut ctx = TestContext::without_secret();
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
}

#[test]
fn a_body_is_ignored() {
    let mut ctx = TestContext::new();
    assert_eq!(
        ctx.call("GET", "/health", None, "{not json"),
        healthy(),
        "a GET body is never read"
    );
}

#[test]
fn a_failing_store_answers_503_with_the_reason_in_the_log_only() {
    let mut ctx = TestContext::new();
    ctx.fail_store = Some("connection refused (os error 111)".into());
    let outcome = ctx.call("GET", "/health", None, "");
    assert_eq!(outcome, unavailable());
    assert!(!outcome.1.to_string().contains("refused"), "{}", outcome.1);
    assert_eq!(ctx.logs.len(), 1, "{:?}", ctx.logs);
    assert!(
        ctx.logs[0].starts_with("level=error msg=\"request failed\" method=GET route=/health"),
        "{:?}",
        ctx.logs
    );
    assert!(ctx.logs[0].contains("connection refused"), "{:?}", ctx.logs);
    assert!(ctx.logs[0].contains("SQLite database"), "{:?}", ctx.logs);
}

#[test]
fn a_store_that_cannot_be_opened_answers_503() {
    let mut ctx = TestContext::new();
    ctx.fail_open = Some("access denied to database \"other\"".into());
    assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
    assert!(
        ctx.logs.iter().any(|line| line.contains("access denied")),
        "{:?}",
        ctx.logs
    );
}

#[test]
fn recovers_as_soon_as_the_store_answers_again() {
    let mut ctx = TestContext::new();
    ctx.fail_store = Some("server closed the connection".into());
    assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
    ctx.fail_store = None;
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
}

#[test]
fn a_db_url_that_cannot_be_used_answers_503() {
    // That no password of it is logged: core_books.rs and src/settings/db_url.rs.
    let unsupported = |ctx: &mut TestContext| ctx.db_url = Some("mysql://user:pw@db/books".into());
    let unreadable = |ctx: &mut TestContext| ctx.failing_setting = Some(Setting::DbUrl);
    for make_unusable in [unsupported, unreadable] {
        let mut ctx = TestContext::new();
        make_unusable(&mut ctx);
        assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
        assert_eq!(ctx.opens, 0, "no store is opened");
        assert!(
            ctx.logs.iter().any(|line| line.contains("DB_URL")),
            "{:?}",
            ctx.logs
        );
    }
}

#[test]
fn the_configured_store_is_the_one_checked() {
    let mut ctx = TestContext::new();
    let url = "postgres://book:pw-not-logged@127.0.0.1:55432/books";
    ctx.db_url = Some(url.into());
    ctx.fail_store = Some("timed out connecting".into());
    ctx.never_logged.push("pw-not-logged".into());
    assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
    assert_eq!(ctx.opened, [postgres(url)]);
    assert!(
        ctx.logs
            .iter()
            .any(|line| line.contains("PostgreSQL postgres://book:***@127.0.0.1:55432/books")),
        "{:?}",
        ctx.logs
    );
}

#[test]
fn other_methods_answer_405_allow_get_without_authentication_or_store() {
    let mut ctx = TestContext::new();
    for method in ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get"] {
        assert_eq!(
            ctx.call(method, "/health", None, "{}"),
            not_allowed("GET"),
            "{method}"
        );
    }
    // A failing store changes nothing: the method is refused first.
    ctx.fail_store = Some("down".into());
    assert_eq!(ctx.call("POST", "/health", None, ""), not_allowed("GET"));
    assert_eq!(ctx.opens, 0);
}

#[test]
fn only_the_exact_path_is_health() {
    let mut ctx = TestContext::new();
    for path in ["/health/", "/Health", "/healthz", "/health/db", "/HEALTH"] {
        assert_eq!(ctx.call("GET", path, None, ""), route_not_found(), "{path}");
    }
}

#[test]
fn health_leaves_the_books_alone() {
    let mut ctx = TestContext::new();
    let before = ctx.create_book("Dune", "Frank Herbert", 1965);
    for _ in 0..3 {
        assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
    }
    assert_eq!(ctx.all_books(), Value::Array(vec![before]));
}
