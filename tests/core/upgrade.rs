//! Old SQLite databases migrated in place (`migrations/`). PostgreSQL's:
//! `bench/native`'s test; a real file under real Spin: `faults/upgrade.py`.

use crate::support::*;
use book_catalog::db::migrations::{self, migrate, statements};
use book_catalog::db::native::rusqlite;
use book_catalog::db::StoreKind;
use serde_json::{json, Value};

/// The SQLite schema before versioning.
const BEFORE_VERSIONING: &str = "\
    CREATE TABLE books (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, \
        author TEXT NOT NULL, year INTEGER NOT NULL); \
    CREATE TABLE login_failures (client TEXT NOT NULL PRIMARY KEY, failures INTEGER NOT NULL, \
        window_end INTEGER NOT NULL) WITHOUT ROWID; \
    CREATE INDEX login_failures_window_end ON login_failures (window_end);";

#[test]
fn a_database_from_before_versioning_is_migrated_in_place_with_its_rows() {
    let old = rusqlite::Connection::open_in_memory().unwrap();
    old.execute_batch(BEFORE_VERSIONING).unwrap();
    old.execute_batch(&format!(
        "INSERT INTO books (title, author, year) VALUES ('Dune', 'Frank Herbert', 1965); \
         INSERT INTO books (title, author, year) VALUES ('Solaris', 'Stanisław Lem', 1961); \
         INSERT INTO login_failures (client, failures, window_end) \
         VALUES ('192.0.2.10', 4, {});",
        NOW + 600
    ))
    .unwrap();
    let mut ctx = TestContext::new();
    ctx.db.replace(old);

    // The first login counts in login_attempts, which does not exist yet.
    let wrong = r#"{"username":"admin","password":"wrong"}"#;
    assert_eq!(ctx.post_token(wrong).0, invalid_credentials());
    let versions = "SELECT group_concat(version ORDER BY version) FROM schema_migrations";
    let versions: String = ctx.with_db(|db| db.query_row(versions, [], |row| row.get(0))).unwrap();
    assert_eq!(versions, "1,2,3,4,5,6,7,8");
    let attempts = ctx.login_attempts("192.0.2.10").unwrap();
    assert_eq!((attempts.count, attempts.window_end), (5, NOW + 600));

    let all =
        json!([book(1, "Dune", "Frank Herbert", 1965), book(2, "Solaris", "Stanisław Lem", 1961)]);
    assert_eq!(ctx.all_books(), all);
    // 0007 indexed the books already there: a filter finds them through it.
    let (solaris, _) = ctx.get_books(Some("title=OLARI&author=lem"));
    assert_eq!(solaris.1["data"], json!([book(2, "Solaris", "Stanisław Lem", 1961)]));
    // 0008: one baseline `create` per book, by no account, before any other.
    let feed = ctx.authed("GET", "/changes", "").1["data"].clone();
    let baseline: Vec<Value> = feed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["op"], c["book"], c["account"]]))
        .collect();
    assert_eq!(
        baseline,
        all.as_array().unwrap().iter().map(|b| json!(["create", b, null])).collect::<Vec<_>>()
    );
    let outcome = ctx.authed("POST", "/book", &book_body("Kindred", "Octavia E. Butler", 1979));
    assert_eq!(outcome, created(3, "Kindred", "Octavia E. Butler", 1979));
    // Books from before versions start at version 1.
    assert_eq!(ctx.get_unchecked("/book/1", None).header("etag"), Some("\"1.1\""));
    // Up to date now: nothing more to apply.
    assert!(ctx.with_db(|db| block_on(migrate(db))).unwrap().is_empty());
}

/// A key stored by the release before 0005 (the book's columns beside the
/// key) is replayed after the upgrade byte for byte as that release answered
/// it, odd characters included, and still refuses another book.
#[test]
fn keys_stored_before_answers_were_kept_replay_the_same_answer() {
    let old = rusqlite::Connection::open_in_memory().unwrap();
    let versions = "CREATE TABLE schema_migrations \
                    (version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL)";
    old.execute_batch(versions).unwrap();
    for migration in &migrations::all(StoreKind::Sqlite)[..4] {
        for statement in statements(migration.sql) {
            old.execute_batch(&statement).unwrap();
        }
        let applied = "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)";
        old.execute(applied, (migration.version, migration.name)).unwrap();
    }
    let title = "Say \"Dune\"\\ \u{e9}t\u{e9}\n\u{1f4d6}";
    let book = "INSERT INTO books (title, author, year) VALUES (?1, 'Frank Herbert', 1965)";
    old.execute(book, [title]).unwrap();
    let key = "INSERT INTO idempotency_keys (key, book_id, title, author, year, created_at) \
               VALUES ('k-1', 1, ?1, 'Frank Herbert', 1965, ?2)";
    old.execute(key, (title, NOW as i64)).unwrap();
    let mut ctx = TestContext::new();
    ctx.db.replace(old);
    let t = ctx.login();
    let body = book_body(title, "Frank Herbert", 1965);
    ctx.request_headers.push(("Idempotency-Key".into(), "k-1".into()));
    let replay = ctx.respond("POST", "/book", None, Some(t.as_bytes()), body.as_bytes());
    // As the release before wrote it: serde_json's compact envelope.
    let (message, title) = ("Book created successfully", json!(title));
    let data = format!(r#"{{"id":1,"title":{title},"author":"Frank Herbert","year":1965}}"#);
    let first = format!(r#"{{"status":201,"message":"{message}","data":{data}}}"#);
    assert_eq!((replay.status, String::from_utf8_lossy(replay.bytes())), (201, first.into()));
    assert_eq!(replay.header("etag"), Some("\"1.1\""));
    let other = book_body("Emma", "Jane Austen", 1815);
    let refused = ctx.respond("POST", "/book", None, Some(t.as_bytes()), other.as_bytes());
    assert_eq!(refused.status, 422);
}
