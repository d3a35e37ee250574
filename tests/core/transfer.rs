//! Import and export (`POST /books`, `GET /books` as CSV): the CSV form,
//! all or nothing with the first bad row named, the size limit, keys, and
//! the round trip of an awkward catalog. The CSV reader's and writer's own
//! cases: `src/books/csv.rs`.

use serde_json::{json, Value};

use crate::support::*;
use book_catalog::books::transfer::{import as import_into, Form, Importing};
use book_catalog::db::{Column, StoreError};
use book_catalog::Response;
use sha2::{Digest, Sha256};

const CSV: &str = "text/csv";
const JSON: &str = "application/json";

/// `POST /books` with `Content-Type` (and an `Idempotency-Key`).
fn import(ctx: &mut TestContext, form: &str, body: &str, key: Option<&str>) -> Outcome {
    let own = ctx.request_headers.clone();
    ctx.request_headers.push(("Content-Type".into(), form.into()));
    ctx.request_headers.extend(key.map(|key| ("Idempotency-Key".into(), key.into())));
    let outcome = ctx.authed("POST", "/books", body);
    ctx.request_headers = own;
    outcome
}

/// `GET /books?query` with `Accept`.
fn export(ctx: &mut TestContext, query: Option<&str>, accept: &str) -> Response {
    ctx.request_headers = vec![("Accept".into(), accept.into())];
    let response = ctx.get_unchecked("/books", query);
    ctx.request_headers.clear();
    response
}

fn text(response: &Response) -> String {
    String::from_utf8(response.bytes().to_vec()).expect("UTF-8")
}

fn imported(ids: &[i64]) -> Outcome {
    ok(201, "Books imported successfully", json!({"imported": ids.len(), "ids": ids}))
}

fn refused(row: u64, field: Option<&str>, reason: &str) -> Outcome {
    ok(400, "Invalid input", json!({"row": row, "field": field, "reason": reason}))
}

#[test]
fn the_list_as_csv_has_the_same_books_order_and_paging_and_json_stays_byte_for_byte() {
    let mut ctx = TestContext::with_books(&[DUNE, ("=SUM(A1)", "Ann, \"the\" Author", -44)]);
    let json = ctx.get_unchecked("/books", None);
    let csv = export(&mut ctx, None, "text/csv");
    assert_eq!(csv.status, 200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(csv.header("content-disposition"), Some("attachment; filename=\"books.csv\""));
    assert_eq!(csv.header("cache-control"), Some("no-store"));
    let expected = "id,title,author,year\r\n1,Dune,Frank Herbert,1965\r\n\
                    2,'=SUM(A1),\"Ann, \"\"the\"\" Author\",-44\r\n";
    assert_eq!(text(&csv), expected);
    for accept in ["application/json, text/csv", "text/csv;q=0.5, */*", "image/png", "text/csv;q=0"]
    {
        let response = export(&mut ctx, None, accept);
        assert_eq!((response.bytes(), response.header("content-type")), (json.bytes(), Some(JSON)));
    }
    let preferred = export(&mut ctx, None, "application/json;q=0.9, text/csv");
    assert_eq!(text(&preferred), expected);
    let page = export(&mut ctx, Some("limit=1&year=-44"), "text/*");
    assert_eq!(
        text(&page),
        "id,title,author,year\r\n2,'=SUM(A1),\"Ann, \"\"the\"\" Author\",-44\r\n"
    );
    let page = export(&mut ctx, Some("limit=1"), "text/csv");
    let (_, link) = ctx.get_books(Some("limit=1"));
    assert_eq!((page.header("link"), text(&page).lines().count()), (link.as_deref(), 2));
}

#[test]
fn imports_store_every_book_in_file_order_from_json_or_csv_headers_in_any_order() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let body = r#" [ {"title":"A","author":"B","year":1,"id":9}, {"year":2,"author":"D","title":"C,]"} ] "#;
    assert_eq!(import(&mut ctx, JSON, body, None), imported(&[2, 3]));
    let csv = "\u{feff}Year,id,AUTHOR,title,notes\n3,77,F,'=E,x\n\n-4,,H,\"G\nG\",\n";
    assert_eq!(import(&mut ctx, "text/csv; charset=utf-8", csv, None), imported(&[4, 5]));
    let all = [(1, "Dune", "Frank Herbert", 1965), (2, "A", "B", 1), (3, "C,]", "D", 2)];
    let mut all: Vec<Value> = all.iter().map(|(id, t, a, y)| book(*id, t, a, *y)).collect();
    all.extend([book(4, "=E", "F", 3), book(5, "G\nG", "H", -4)]);
    assert_eq!(ctx.authed("GET", "/books", ""), listed(json!(all)));
    // Each a `create` change by the importer, in the file's order.
    let feed = ctx.get_unchecked("/changes", Some("limit=1000"));
    let (_, feed, _) = ctx.check_response(&feed);
    let gist = |change: &Value| json!([change["op"], change["book"], change["account"]]);
    let created: Vec<Value> = feed["data"].as_array().unwrap()[1..].iter().map(gist).collect();
    let expected: Vec<Value> = all[1..].iter().map(|b| json!(["create", b, "admin"])).collect();
    assert_eq!(created, expected);
    assert_eq!(import(&mut ctx, JSON, " [ ] ", None), imported(&[]));
    assert_eq!(import(&mut ctx, CSV, "title,author,year\r\n", None), imported(&[]));
    assert_eq!(ctx.rows("books"), 5);
}

#[test]
fn one_bad_book_stores_nothing_and_its_row_field_and_reason_are_named() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let good = |n| format!("Title {n},Author,{n}\r\n");
    let mut csv = "title,author,year\r\n".to_string() + &(2..=600).map(good).collect::<String>();
    csv.push_str("Last,Author,1999.0\r\n");
    let cases = [
        (CSV, csv.as_str(), refused(601, Some("year"), "not an integer within 32 bits")),
        (CSV, "title,author,year\nA,B,1\n \t,B,1\n", refused(3, Some("title"), "blank")),
        (CSV, "title,author,year\nA,B\n", refused(2, None, "not as many fields as the header")),
        (CSV, "title,author,year\nA,\"B\nB\",1\nA,,1\n", refused(3, Some("author"), "blank")),
        (CSV, "title,author,year\nA,\"B,1\n", refused(2, None, "a quoted field is not closed")),
        (
            CSV,
            "title,author,year\nA,B\"C,1\n",
            refused(2, None, "a quote inside an unquoted field"),
        ),
        (CSV, "title,year\nA,1\n", refused(1, Some("author"), "no column")),
        (CSV, "title,author,year,Title\n", refused(1, Some("title"), "two columns")),
        (CSV, "", refused(1, None, "no header line")),
        (
            JSON,
            r#"[{"title":"A","author":"B","year":1},{"title":"A","year":1}]"#,
            refused(2, Some("author"), "missing"),
        ),
        (
            JSON,
            r#"[{"title":"A","author":"B","year":"1"}]"#,
            refused(1, Some("year"), "not an integer within 32 bits"),
        ),
        (
            JSON,
            r#"[{"title":"A","author":7,"year":1}]"#,
            refused(1, Some("author"), "not a string"),
        ),
        (JSON, r#"[{"title":"A","author":"B","year":1},5]"#, refused(2, None, "not a JSON object")),
        (JSON, r#"[{"title":"A","author":"B","year":1},]"#, refused(2, None, "a comma before ]")),
        (JSON, r#"{"title":"A","author":"B","year":1}"#, refused(1, None, "not a JSON array")),
        (
            JSON,
            r#"[{"title":"A","author":"B","year":1}"#,
            refused(1, None, "the array is not closed"),
        ),
        (JSON, r#"[] []"#, refused(1, None, "text after the array")),
        (JSON, r#"[{"title":"A","author":"B","year":1}}]"#, refused(1, None, "not a JSON array")),
    ];
    for (form, body, outcome) in cases {
        assert_eq!(import(&mut ctx, form, body, None), outcome, "{body}");
    }
    assert_eq!(ctx.rows("books"), 1, "nothing stored");
    // A body cut short of its declared length: the rows before it were good.
    let token = ctx.token();
    // Undeclared (chunked) past the limit: 413.
    struct Cut<'a>(&'a [u8], Option<u64>);
    impl book_catalog::BodyStream for Cut<'_> {
        fn declared_length(&self) -> Option<u64> {
            self.1
        }
        async fn chunk(&mut self) -> Result<Option<Vec<u8>>, book_catalog::BodyError> {
            Ok((!self.0.is_empty()).then(|| std::mem::take(&mut self.0).to_vec()))
        }
    }
    ctx.request_headers = vec![("Content-Type".into(), CSV.into())];
    let part = &csv.as_bytes()[..csv.len() - 40];
    let cut = Cut(part, Some(part.len() as u64 + 10));
    let outcome = ctx.call_with("POST", "/books", Some(token.as_bytes()), cut);
    assert_eq!(outcome, refused(600, None, "the body ended early"));
    let broken = ctx.call_with("POST", "/books", Some(token.as_bytes()), BrokenBody);
    assert_eq!(broken, refused(1, None, "the body ended early"));
    ctx.set(Setting::ImportMaxBytes, "100");
    let chunked = ctx.call_with("POST", "/books", Some(token.as_bytes()), Cut(part, None));
    assert_eq!(chunked, too_large());
    ctx.unset(Setting::ImportMaxBytes);
    ctx.request_headers.clear();
    let broken = ctx.call_with("POST", "/books", Some(token.as_bytes()), BrokenBody);
    assert_eq!(broken, refused(1, None, "the body ended early"), "a JSON array");
    // A failure of the store while moving the staged books: nothing either.
    ctx.fail_on = Some("move");
    assert_eq!(import(&mut ctx, CSV, &csv[..csv.len() - 20], None), internal_error());
    assert_eq!(ctx.rows("books"), 1);
    ctx.fail_on = None;
    assert_eq!(import(&mut ctx, CSV, "title,author,year\nA,B,1", None), imported(&[2]));
}

#[test]
fn the_setting_bounds_an_import_and_a_reader_may_not_import() {
    let mut ctx = TestContext::new();
    let body = format!("title,author,year\n{}", "A Title,An Author,2000\n".repeat(70_000));
    assert!(body.len() > 1024 * 1024, "past POST /book's limit");
    let (status, envelope, _) = import(&mut ctx, CSV, &body, None);
    assert_eq!((status, envelope["data"]["imported"].clone()), (201, json!(70_000)));
    assert_eq!(ctx.statements().iter().filter(|name| **name == "stage").count(), 140);
    let body = format!("title,author,year\n{}", "T,A,1\n".repeat(14));
    assert_eq!(body.len(), 102);
    ctx.set(Setting::ImportMaxBytes, "101");
    assert_eq!(import(&mut ctx, CSV, &body, None), too_large());
    ctx.set(Setting::ImportMaxBytes, "102");
    assert_eq!(import(&mut ctx, CSV, &body, None).0, 201);
    ctx.set(Setting::ImportMaxBytes, "lots");
    assert_eq!(import(&mut ctx, CSV, &body, None).0, 201);
    assert!(ctx.logged("level=warn", "import_max_bytes / IMPORT_MAX_BYTES is not a whole number"));
    let (_, rita) = ctx.ed_and_rita();
    let before = ctx.rows("books");
    let denied = ctx.call("POST", "/books", Some(&rita), "[]");
    assert_eq!(denied, ok(403, "Permission denied", Value::Null));
    assert_eq!(ctx.rows("books"), before);
}

#[test]
fn a_keyed_import_is_stored_once_and_its_key_is_one_requests() {
    let mut ctx = TestContext::new();
    let body = "title,author,year\nA,B,1\nC,D,2\n";
    assert_eq!(import(&mut ctx, CSV, body, Some("k1")), imported(&[1, 2]));
    assert_eq!(import(&mut ctx, CSV, body, Some("k1")), imported(&[1, 2]));
    assert_eq!(ctx.rows("books"), 2);
    assert_eq!(import(&mut ctx, CSV, "title,author,year\nA,B,1\n", Some("k1")), key_reused());
    let json = r#"[{"title":"A","author":"B","year":1},{"title":"C","author":"D","year":2}]"#;
    assert_eq!(import(&mut ctx, JSON, json, Some("k1")), key_reused());
    ctx.request_headers = vec![("Idempotency-Key".into(), "k1".into())];
    assert_eq!(ctx.authed("POST", "/book", &book_body("A", "B", 1)), key_reused());
    ctx.request_headers = vec![("Idempotency-Key".into(), "k2".into())];
    assert_eq!(ctx.authed("POST", "/book", &book_body("A", "B", 1)), created(3, "A", "B", 1));
    ctx.request_headers.clear();
    assert_eq!(import(&mut ctx, CSV, body, Some("k2")), key_reused());
    assert_eq!(ctx.rows("books"), 3);
}

/// Titles a spreadsheet or a CSV reader would trip on.
fn awkward() -> Vec<(String, String, i64)> {
    let starts = ["=1+1", "+1", "-1", "@SUM(A1)", "\tTab", "\rCR", "'=quoted", "''", "'", "'x"];
    let mut books: Vec<(String, String, i64)> = starts
        .iter()
        .enumerate()
        .map(|(n, start)| (start.to_string(), format!("-{start}"), n as i64 - 5))
        .collect();
    books.push(("a, \"quoted\" title".into(), "line\r\nbreak\nand\rmore".into(), 0));
    books.push(("🙂 ümlaut 漢字".into(), "\"".into(), i64::from(i32::MIN)));
    books.push(("é".repeat(1000), ",".repeat(1000), i64::from(i32::MAX)));
    books.push(("  spaced  ".into(), "x\ty".into(), 1));
    books
}

#[test]
fn an_awkward_catalog_exported_imported_and_exported_again_is_the_same_but_for_ids() {
    let books = awkward();
    let mut from = TestContext::new();
    for (title, author, year) in &books {
        from.create_book(title, author, *year);
    }
    // Past the first page of the whole list: streamed.
    let body: Vec<Value> =
        books.iter().map(|(t, a, y)| json!({"title": t, "author": a, "year": y})).collect();
    let body = json!(body).to_string();
    for _ in 0..90 {
        assert_eq!(import(&mut from, JSON, &body, None).0, 201);
    }
    let first = text(&export(&mut from, None, "text/csv"));
    assert_eq!(from.rows("books"), 91 * books.len() as i64);
    // Into an empty catalog: the same ids, so the very same bytes.
    let mut to = TestContext::new();
    let (status, envelope, _) = import(&mut to, CSV, &first, None);
    assert_eq!((status, envelope["data"]["imported"].clone()), (201, json!(91 * books.len())));
    assert_eq!(text(&export(&mut to, None, "text/csv")), first);
    let json = |ctx: &mut TestContext| {
        let mut all = ctx.all_books();
        all.as_array_mut().unwrap().iter_mut().for_each(|book| book["id"] = json!(0));
        all
    };
    assert_eq!(json(&mut to), json(&mut from), "the same books");
}

/// PostgreSQL (no transaction across statements): the books staged with
/// ids from the sequence, then one statement moves them with their changes
/// and the key; a lost race for the key finds the winner's answer.
#[test]
fn on_postgresql_an_import_is_staged_then_moved_by_one_statement() {
    let body = b"title,author,year\nA,B,1\nC,D,2\n";
    let fingerprint: String =
        Sha256::digest([&b"csv\n"[..], body].concat()).iter().map(|b| format!("{b:02x}")).collect();
    let answer = r#"{"status":201,"message":"Books imported successfully","data":{"imported":2,"ids":[7,8]}}"#;
    use Column::*;
    let row = |columns: Vec<Column>| Ok(vec![columns]);
    let staged = || Ok(vec![vec![Integer(8)], vec![Integer(7)]]);
    let new_key = || row(vec![Integer(99), Null, Null, Null, Null]);
    let fingerprint = || Text(fingerprint.clone());
    let won = || {
        row(vec![Integer(99), fingerprint(), Integer(201), Text("".into()), Text(answer.into())])
    };
    let lost = || Err(StoreError::postgres(Some("23505"), "duplicate key"));
    for (key, answers) in [
        (None, vec![staged(), row(vec![Integer(2)])]),
        (Some("k"), vec![staged(), new_key(), row(vec![Integer(2)])]),
        (Some("k"), vec![staged(), new_key(), lost(), won()]),
    ] {
        let mut db = Scripted { answers, ..Scripted::default() };
        let to = Importing { form: Form::Csv, limit: 100, key, now: NOW, account: "ed" };
        let response = block_on(import_into(&mut db, &body[..], to)).unwrap();
        assert_eq!((response.status, response.bytes()), (201, answer.as_bytes()));
        assert!(db.wrapped.is_empty() && db.answers.is_empty(), "{:?}", db.sent);
        assert!(db.sent[0].starts_with("DROP TABLE IF EXISTS pg_temp.import_books"));
        assert!(db.sent[2].contains("nextval((SELECT pg_get_serial_sequence"), "{}", db.sent[2]);
        let moved = db.sent.iter().filter(|sql| sql.starts_with("WITH moved AS")).count();
        assert_eq!(moved, 1, "{:?}", db.sent);
        let last = db.sent.iter().rev().find(|sql| sql.starts_with("WITH moved")).unwrap();
        assert!(last.contains("'create'") && last.contains("INSERT INTO changes"), "{last}");
        assert_eq!(last.contains("idempotency_keys"), key.is_some(), "{last}");
    }
}
