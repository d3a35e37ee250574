//! `GET /health` (docs/api.md, "Health"). Its 404s, its 405 and that it
//! reads no body: requests.rs.

use serde_json::json;

use crate::support::*;

#[test]
fn healthy_without_authentication_whatever_the_header_or_the_secret() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    ctx.reset_calls();
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
    assert_eq!((ctx.opens, &ctx.statements()[..]), (1, &["ping"][..]), "the store is asked");
    assert_eq!(ctx.opened, [sqlite("default")]);
    let expired = token_with_exp(&(NOW - 10).to_string());
    for auth in ["", "garbage", "Bearer x.y.z", &expired, &ctx.token()] {
        assert_eq!(ctx.call("GET", "/health", Some(auth), ""), healthy(), "{auth:?}");
    }
    // Health is about the store: a missing secret breaks logins, not health.
    ctx.unset(Setting::SecretToken);
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
    assert!(ctx.logs.is_empty(), "{:?}", ctx.logs);
    ctx.set(Setting::SecretToken, SECRET);
    assert_eq!(ctx.all_books(), json!([book(1, "Dune", "Frank Herbert", 1965)]));
}

#[test]
fn an_unusable_store_is_503_with_the_reason_in_the_log_only_until_it_answers() {
    let mut ctx = TestContext::new();
    ctx.fail_store = Some("connection refused (os error 111)".into());
    assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
    let [line] = &ctx.logs[..] else { panic!("{:?}", ctx.logs) };
    assert!(line.starts_with("level=error msg=\"request failed\" method=GET route=/health"));
    assert!(line.contains("connection refused") && line.contains("SQLite database"), "{line}");
    ctx.fail_store = None;
    assert_eq!(ctx.call("GET", "/health", None, ""), healthy(), "recovered");
    // The store DB_URL names is the one checked, and named without its password.
    let url = "postgres://book:pw-not-logged@127.0.0.1:55432/books";
    ctx.set(Setting::DbUrl, url);
    ctx.never_logged.push("pw-not-logged".into());
    ctx.fail_open = Some("access denied to database \"other\"".into());
    ctx.reset_calls();
    assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
    assert_eq!(ctx.opened, [postgres(url)]);
    let named = "PostgreSQL postgres://book:***@127.0.0.1:55432/books";
    assert!(ctx.logged("", named) && ctx.logged("", "access denied"), "{:?}", ctx.logs);
    // A DB_URL that cannot be used, unsupported or unreadable: no store is
    // opened (that no password of it is logged: books.rs, src/settings/database.rs).
    ctx.set(Setting::DbUrl, "mysql://user:pw@db/books");
    for unreadable in [false, true] {
        ctx.failing_setting = unreadable.then_some(Setting::DbUrl);
        ctx.logs.clear();
        ctx.reset_calls();
        assert_eq!(ctx.call("GET", "/health", None, ""), unavailable());
        assert_eq!(ctx.opens, 0, "no store is opened");
        assert!(ctx.logged("", "DB_URL"), "{:?}", ctx.logs);
    }
}
