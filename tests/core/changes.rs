//! The change log (docs/api.md, "Changes and history"): a change with each
//! write and none with a refused one, the feed and its cursors, history,
//! restore, retention and 410. Many writers on replicas: faults/feed.py.

use book_catalog::books::changes;
use serde_json::{json, Value};

use crate::support::*;

/// `GET /changes?query`: status and `data`.
fn changes(ctx: &mut TestContext, query: &str) -> (u16, Value) {
    let response = ctx.get_unchecked("/changes", Some(query));
    let (status, envelope, _) = ctx.check_response(&response);
    (status, envelope["data"].clone())
}

/// A change without its cursor and time: (op, id, book, account).
fn gist(change: &Value) -> Value {
    json!([change["op"], change["id"], change["book"], change["account"]])
}

fn gists(changes: &Value) -> Vec<Value> {
    changes.as_array().expect("an array").iter().map(gist).collect()
}

#[test]
fn each_write_appends_one_change_by_its_account_and_a_refused_one_none() {
    let mut ctx = TestContext::new();
    let (pair, (ed, rita)) = (ctx.token(), ctx.ed_and_rita());
    let dune = book_body("Dune", "Frank Herbert", 1965);
    assert_eq!(ctx.call("POST", "/book", Some(&pair), &dune).0, 201);
    assert_eq!(ctx.call("PUT", "/book/1", Some(&ed), r#"{"year":1966}"#).0, 200);
    assert_eq!(ctx.call("PUT", "/book/1", Some(&ed), "{}").0, 200);
    // Refused or failed: no change.
    ctx.request_headers = vec![("Idempotency-Key".into(), "k1".into())];
    assert_eq!(ctx.call("POST", "/book", Some(&ed), &book_body("Emma", "Austen", 1815)).0, 201);
    assert_eq!(ctx.call("POST", "/book", Some(&ed), &book_body("Emma", "Austen", 1815)).0, 201);
    ctx.request_headers = vec![("If-Match".into(), "\"1.1\"".into())];
    assert_eq!(ctx.call("PUT", "/book/1", Some(&ed), r#"{"year":1}"#).0, 412);
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&ed), "").0, 412);
    ctx.request_headers.clear();
    let refused = [
        ctx.call("POST", "/book", Some(&ed), r#"{"title":""}"#).0,
        ctx.call("PUT", "/book/9", Some(&ed), r#"{"year":1}"#).0,
        ctx.call("PUT", "/book/1", Some(&ed), r#"{"year":"x"}"#).0,
        ctx.call("DELETE", "/book/1", Some(&rita), "").0,
        ctx.call("POST", "/book/1/restore", Some(&ed), "").0,
        ctx.call("DELETE", "/book/9", Some(&ed), "").0,
    ];
    assert_eq!(refused, [400, 404, 400, 403, 409, 404]);
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&ed), "").0, 200);
    let (status, feed) = changes(&mut ctx, "");
    assert_eq!(status, 200);
    let dune = |year| json!({"id": 1, "title": "Dune", "author": "Frank Herbert", "year": year});
    let emma = json!({"id": 2, "title": "Emma", "author": "Austen", "year": 1815});
    assert_eq!(
        gists(&feed),
        [
            json!(["create", 1, dune(1965), "admin"]),
            json!(["update", 1, dune(1966), "ed"]),
            json!(["update", 1, dune(1966), "ed"]),
            json!(["create", 2, emma, "ed"]),
            json!(["delete", 1, null, "ed"]),
        ]
    );
    let cursors: Vec<&str> =
        feed.as_array().unwrap().iter().map(|c| c["cursor"].as_str().unwrap()).collect();
    assert_eq!(cursors, ["1", "2", "3", "4", "5"]);
    let at = feed[0]["at"].as_str().unwrap();
    let shape = at.len() == 24 && at.ends_with('Z') && &at[10..11] == "T" && &at[19..20] == ".";
    assert!(shape, "{at}");
    // A reader follows too; the envelope is exact.
    let response = ctx.respond("GET", "/changes", Some("after=4"), Some(rita.as_bytes()), &b""[..]);
    let expected = format!(
        r#"{{"status":200,"message":"Changes retrieved successfully","data":[{{"cursor":"5","op":"delete","id":1,"book":null,"account":"ed","at":"{}"}}]}}"#,
        feed[4]["at"].as_str().unwrap()
    );
    assert_eq!(String::from_utf8_lossy(response.bytes()), expected);
}

#[test]
fn a_follower_pages_by_cursor_and_waits_for_a_change_that_does_not_come() {
    let mut ctx = TestContext::new();
    for year in 1..=5 {
        ctx.create_book("T", "A", year);
    }
    let (status, first) = changes(&mut ctx, "limit=2");
    assert_eq!((status, first.as_array().unwrap().len()), (200, 2));
    let (_, next) = changes(&mut ctx, "after=2&limit=1000");
    let ids: Vec<i64> =
        next.as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [3, 4, 5]);
    // At the head: wait polls the store until its time is up, then [].
    ctx.reset_calls();
    assert_eq!(changes(&mut ctx, "after=5&wait=2"), (200, json!([])));
    // One read, then one after each pause that still fits in the time.
    let polls = 1 + (2000 - 200) / changes::POLL_INTERVAL.as_millis() as usize;
    let mut expected = vec!["pruned through"];
    expected.extend(vec!["changes"; polls]);
    assert_eq!(ctx.statements(), expected);
    ctx.reset_calls();
    assert_eq!(changes(&mut ctx, "after=9&wait=0"), (200, json!([])));
    // A PostgreSQL cursor (an xid) is past every change on SQLite.
    assert_eq!(changes(&mut ctx, "after=7.0"), (200, json!([])));
    assert_eq!(ctx.statements(), ["pruned through", "changes", "pruned through", "changes"]);
    // A change found at once ends the wait.
    ctx.reset_calls();
    assert_eq!(changes(&mut ctx, "after=4&wait=30").1.as_array().unwrap().len(), 1);
    assert_eq!(ctx.statements(), ["pruned through", "changes"]);
    let invalid = "after=x after=-1 after=01 after=1. limit=0 limit=1001 limit=x wait=31 wait=-1 \
                   wait=1.5 after=1&after=2 wait=1&wait=1";
    for query in invalid.split(' ') {
        ctx.reset_calls();
        assert_eq!(changes(&mut ctx, query), (400, Value::Null), "{query}");
        assert_eq!(ctx.opens, 0, "{query}");
    }
    let (status, _) = changes(&mut ctx, "unknown=1&limit=1000&wait=0&after=0");
    assert_eq!(status, 200);
    assert_eq!(ctx.authed("POST", "/changes", "").2.as_deref(), Some("GET"));
}

/// List, then follow from the list's `Changes-Cursor`: nothing missed,
/// nothing the list already holds.
#[test]
fn the_list_names_the_feed_position_before_it_is_read() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let listed = ctx.get_unchecked("/books", None);
    let cursor = listed.header("changes-cursor").expect("Changes-Cursor").to_string();
    assert_eq!(cursor, "1");
    ctx.create_book("Emma", "Austen", 1815);
    let (_, after) = changes(&mut ctx, &format!("after={cursor}"));
    assert_eq!(gists(&after), [json!(["create", 2, book(2, "Emma", "Austen", 1815), "admin"])]);
    let page = ctx.get_unchecked("/books", Some("limit=1"));
    assert_eq!(page.header("changes-cursor"), Some("2"));
}

#[test]
fn history_lists_a_books_changes_and_restore_brings_a_deleted_book_back() {
    let mut ctx = TestContext::new();
    let (pair, (ed, rita)) = (ctx.token(), ctx.ed_and_rita());
    ctx.create_book("Dune", "Frank Herbert", 1965);
    ctx.create_book("Emma", "Austen", 1815);
    ctx.call("PUT", "/book/1", Some(&ed), r#"{"title":"Dune Messiah"}"#);
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&pair), "").0, 200);
    let messiah = book(1, "Dune Messiah", "Frank Herbert", 1965);
    let history = ctx.call("GET", "/book/1/history", Some(&rita), "");
    assert_eq!((history.0, &history.1["message"]), (200, &json!("History retrieved successfully")));
    assert_eq!(
        gists(&history.1["data"]),
        [
            json!(["create", 1, book(1, "Dune", "Frank Herbert", 1965), "admin"]),
            json!(["update", 1, messiah, "ed"]),
            json!(["delete", 1, null, "admin"]),
        ]
    );
    // Paged as the catalog is: a `Link` to the next page while one remains.
    let history = |ctx: &mut TestContext, query| {
        ctx.respond("GET", "/book/1/history", Some(query), Some(ed.as_bytes()), &b""[..])
    };
    let page = history(&mut ctx, "limit=2");
    let link = page.header("link").expect("a Link").to_string();
    assert_eq!(link, "</book/1/history?limit=2&after=3>; rel=\"next\"");
    assert_eq!(ctx.check_response(&page).1["data"].as_array().unwrap().len(), 2);
    let rest = history(&mut ctx, "limit=2&after=3");
    assert_eq!(rest.header("link"), None);
    assert_eq!(gists(&ctx.check_response(&rest).1["data"]), [json!(["delete", 1, null, "admin"])]);
    let past = history(&mut ctx, "after=99");
    assert_eq!(ctx.check_response(&past), ok(200, "History retrieved successfully", json!([])));
    // A reader may not restore; a book with no history, or one that exists, is refused.
    assert_eq!(ctx.call("POST", "/book/1/restore", Some(&rita), "").0, 403);
    assert_eq!(ctx.call("POST", "/book/9/restore", Some(&ed), ""), book_not_found());
    assert_eq!(
        ctx.call("POST", "/book/2/restore", Some(&ed), ""),
        ok(409, "Book already exists", Value::Null)
    );
    assert_eq!(ctx.call("GET", "/book/9/history", Some(&ed), ""), book_not_found());
    // Back under its id with the fields it had, at the version after.
    let response = ctx.respond("POST", "/book/1/restore", None, Some(ed.as_bytes()), &b""[..]);
    assert_eq!(response.header("etag"), Some("\"1.3\""));
    assert_eq!(
        ctx.check_response(&response),
        ok(200, "Book restored successfully", messiah.clone())
    );
    assert_eq!(ctx.authed("GET", "/book/1", "").1["data"], messiah);
    let history = ctx.call("GET", "/book/1/history", Some(&ed), "").1["data"].clone();
    assert_eq!(gist(&history[3]), json!(["restore", 1, messiah, "ed"]));
    // An earlier ETag names an earlier version: it never matches again.
    ctx.request_headers = vec![("If-Match".into(), "\"1.2\"".into())];
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&ed), "").0, 412);
    ctx.request_headers.clear();
    assert_eq!(ctx.call("POST", "/book/1/history", Some(&ed), "").2.as_deref(), Some("GET"));
    assert_eq!(ctx.call("GET", "/book/1/restore", Some(&ed), "").2.as_deref(), Some("POST"));
    assert_eq!(ctx.call("GET", "/book/01/history", Some(&ed), ""), book_not_found());
    assert_eq!(ctx.call("GET", "/book/1/other", Some(&ed), ""), book_not_found());
    // Nothing restores a book the store never logged (written before the log).
    ctx.with_db(|db| db.execute("DELETE FROM changes WHERE book_id = 2", [])).unwrap();
    assert_eq!(ctx.call("DELETE", "/book/2", Some(&ed), "").0, 200);
    ctx.with_db(|db| db.execute("DELETE FROM changes WHERE book_id = 2", [])).unwrap();
    assert_eq!(ctx.call("POST", "/book/2/restore", Some(&ed), ""), book_not_found());
}

/// `history_days`: each write prunes a few changes older than that; a
/// follower behind them gets 410 and lists again.
#[test]
fn retention_prunes_old_changes_a_few_a_write_and_a_follower_behind_gets_410() {
    let mut ctx = TestContext::new();
    for year in 1..=15 {
        ctx.create_book("T", "A", year);
    }
    ctx.with_db(|db| {
        db.execute("UPDATE changes SET at = '2001-01-01T00:00:00.000Z' WHERE seq <= 12", [])
    })
    .unwrap();
    // Unset or unusable: every change is kept.
    ctx.set(Setting::HistoryDays, "0");
    ctx.create_book("T", "A", 16);
    assert!(ctx.logged("level=warn ", "HISTORY_DAYS"), "{:?}", ctx.logs);
    assert_eq!(ctx.rows("changes"), 16);
    ctx.set(Setting::HistoryDays, "30");
    ctx.create_book("T", "A", 17);
    assert_eq!(ctx.rows("changes"), 17 - 10);
    assert_eq!(changes(&mut ctx, "after=9"), (410, Value::Null));
    assert_eq!(ctx.authed("PUT", "/book/17", "{}").0, 200);
    assert_eq!(ctx.authed("DELETE", "/book/17", "").0, 200);
    assert_eq!(ctx.authed("POST", "/book/17/restore", "").0, 200);
    assert_eq!(ctx.rows("changes"), 17 + 3 - 12);
    assert_eq!(changes(&mut ctx, "after=11"), (410, Value::Null));
    assert_eq!(changes(&mut ctx, "after=12").1.as_array().unwrap().len(), 8);
    assert_eq!(changes(&mut ctx, "").1[0]["cursor"], "13");
    // A failing source refuses the write before it is made.
    ctx.failing_setting = Some(Setting::HistoryDays);
    assert_eq!(ctx.authed("POST", "/book", &book_body("T", "A", 1)).0, 500);
    assert_eq!(ctx.rows("books"), 17);
}

/// PostgreSQL's statements, whose races faults/feed.py runs on a real
/// database: each write and its change are one statement (one transaction);
/// the feed reads only below the oldest transaction still running, in
/// cursor order; a restore that lost a race to a concurrent one is 409.
#[test]
fn on_postgresql_a_write_and_its_change_are_one_statement_and_the_feed_waits_for_running_ones() {
    use book_catalog::books::changes::{self, Cursor};
    use book_catalog::books::model::{BookChanges, BookId, NewBook};
    use book_catalog::books::safe_writes::Precondition;
    use book_catalog::books::sql;
    use book_catalog::db::{Column::*, Row, StoreError};
    let dune =
        || vec![Integer(7), Text("Dune".into()), Text("F".into()), Integer(1965), Integer(2)];
    let change = |op: &str, book: bool| {
        let field = |value: book_catalog::db::Column| if book { value } else { Null };
        let (title, author) = (field(Text("Dune".into())), field(Text("F".into())));
        let (op, t) = (Text(op.into()), Text("t".into()));
        vec![Integer(731), Integer(4), op, Integer(7), title, author, field(Integer(1965)), Null, t]
    };
    let scripted =
        |answers: Vec<Result<Vec<Row>, StoreError>>| Scripted { answers, ..Scripted::default() };
    let id = BookId::new(7).unwrap();
    let book = NewBook::from_json(br#"{"title":"Dune","author":"F","year":1965}"#).unwrap();
    let changes = BookChanges::from_json(br#"{"year":1965}"#).unwrap();

    let mut db = scripted(vec![
        Ok(vec![dune()]),
        Ok(vec![dune()]),
        Ok(vec![vec![Integer(7), Integer(1)]]),
        Ok(vec![dune()]),
    ]);
    assert_eq!(block_on(sql::create(&mut db, &book, "ed")).unwrap().id, id);
    let updated = block_on(sql::update(&mut db, id, &changes, &Precondition::Any, "ed")).unwrap();
    assert_eq!(updated.unwrap().version, 2);
    assert!(block_on(sql::delete(&mut db, id, &Precondition::Versions(vec![1]), "ed")).unwrap());
    assert!(block_on(sql::restore(&mut db, id, "ed")).unwrap().is_some());
    let writes = ["INSERT INTO books", "UPDATE books", "DELETE FROM books", "INSERT INTO books"];
    for (statement, write) in db.sent.iter().zip(writes) {
        assert!(statement.starts_with("WITH ") && statement.contains(write), "{statement}");
        assert!(statement.contains("INSERT INTO changes"), "{statement}");
    }

    let mut db = scripted(vec![
        Ok(vec![change("update", true), change("delete", false)]),
        Ok(vec![change("create", true)]),
        Ok(vec![vec![Integer(880), Integer(0)]]),
        Ok(vec![vec![Integer(12)]]),
    ]);
    let after = Some(Cursor { xid: 700, seq: 3 });
    let feed = block_on(sql::changes_after(&mut db, after, 10)).unwrap();
    assert_eq!((feed[0].cursor.to_string(), feed[1].book.clone()), ("731.4".to_string(), None));
    assert_eq!(block_on(sql::history(&mut db, id, None, 10)).unwrap()[0].op, changes::Op::Create);
    assert_eq!(block_on(sql::feed_position(&mut db)).unwrap().to_string(), "880.0");
    block_on(sql::prune_changes(&mut db, 30)).unwrap();
    let feed = &db.sent[0];
    assert!(feed.contains("(xid, seq) > ($2, $1)"), "{feed}");
    assert!(feed.contains("xid < pg_snapshot_xmin(pg_current_snapshot())"), "{feed}");
    assert!(feed.ends_with("ORDER BY c.xid, c.seq"), "{feed}");
    assert!(db.sent[1].contains("book_id = $1"), "{}", db.sent[1]);
    assert!(db.sent[3].contains("UPDATE changes_pruned"), "{}", db.sent[3]);

    // SQLite: each write is one statement too, its change inserted first
    // (the triggers apply it); the feed by `seq` alone.
    let answers =
        vec![Ok(vec![dune()]), Ok(vec![dune()]), Ok(vec![vec![Integer(7)]]), Ok(vec![dune()])];
    let mut db = Scripted { sqlite: true, ..scripted(answers) };
    assert_eq!(block_on(sql::create(&mut db, &book, "ed")).unwrap().id, id);
    assert!(block_on(sql::update(&mut db, id, &changes, &Precondition::Any, "ed"))
        .unwrap()
        .is_some());
    assert!(block_on(sql::delete(&mut db, id, &Precondition::Any, "ed")).unwrap());
    assert!(block_on(sql::restore(&mut db, id, "ed")).unwrap().is_some());
    assert!(
        db.sent.iter().all(|statement| statement.starts_with("INSERT INTO changes")),
        "{:?}",
        db.sent
    );
    let sqlite_change = |op: &str| {
        let mut row = change(op, true);
        row[0] = Integer(0);
        row
    };
    let answers = vec![
        Ok(vec![sqlite_change("update")]),
        Ok(vec![sqlite_change("create")]),
        Ok(vec![vec![Integer(0), Integer(9)]]),
        Ok(vec![]),
        Ok(vec![vec![Integer(0), Integer(3)]]),
    ];
    let mut db = Scripted { sqlite: true, ..scripted(answers) };
    assert_eq!(block_on(sql::changes_after(&mut db, None, 10)).unwrap()[0].cursor.to_string(), "4");
    assert_eq!(block_on(sql::history(&mut db, id, None, 10)).unwrap().len(), 1);
    assert_eq!(block_on(sql::feed_position(&mut db)).unwrap().to_string(), "9");
    block_on(sql::prune_changes(&mut db, 30)).unwrap();
    assert_eq!(block_on(sql::pruned_through(&mut db)).unwrap().to_string(), "3");
    assert!(db.sent[0].contains("seq > ?1") && !db.sent[0].contains("xid"), "{}", db.sent[0]);

    // A restore that lost a race (unique violation): the book exists, 409.
    let lost = Err(StoreError::postgres(Some("23505"), "duplicate key"));
    let mut db = scripted(vec![lost, Ok(vec![dune()])]);
    let answer = block_on(changes::restore(&mut db, id, "ed"));
    assert_eq!(answer.err(), Some(book_catalog::ApiError::BookExists));
    assert_eq!(db.wrapped.len(), 1, "only the look-up of the book: {:?}", db.sent);
    // Rows outside the schema are errors, never values.
    let odd = || Ok(vec![vec![Integer(1), Text("x".into())]]);
    let mut db = scripted(vec![odd(), odd(), Ok(vec![]), Ok(vec![vec![Integer(9), Integer(2)]])]);
    assert!(block_on(sql::changes_after(&mut db, None, 1)).is_err());
    assert!(block_on(sql::pruned_through(&mut db)).is_err());
    assert!(block_on(sql::create(&mut db, &book, "ed")).is_err());
    assert_eq!(block_on(sql::pruned_through(&mut db)).unwrap(), Cursor { xid: 9, seq: 2 });
}
