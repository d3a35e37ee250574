//! The book endpoints through `book_catalog::handle`: create, read, update,
//! delete and list with their exact envelopes; ids (never reused, only the
//! canonical decimal form names a book); the book body rules on create and
//! update (spec, "Per-endpoint rules"; docs/api.md, "Book rules"); what
//! each request asks of the store; store failures; and which store `DB_URL`
//! opens. Catalog queries on `GET /books` are in core_catalog.rs.


use serde_json::json;
use crate::support::*;

// ---- Create, read, update, delete, list ----------------------------------

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
fn ids_of_no_book_or_not_canonical_positive_decimals_are_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let t = ctx.login();
    for id in [
        "2",
        "999",
        "9223372036854775807",
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
    // An id in the body is ignored: it names neither the book nor a new id.
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
        ])),
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
        ctx.call("GET", "/books", t, ""),
        listed(json!([book(2, "Emma", "Jane Austen", 1815)]))
    );
}

// ---- Book bodies on create ------------------------------------------------

fn create(ctx: &mut TestContext, body: &str) -> Outcome {
    let token = ctx.login();
    ctx.call("POST", "/book", Some(&token), body)
}

/// POST with each of `bodies` must be 400 "Invalid input" and store nothing.
fn assert_not_created(ctx: &mut TestContext, bodies: &[impl AsRef<str>]) {
    let before = ctx.all_books();
    ctx.reset_calls();
    for body in bodies.iter().map(AsRef::as_ref) {
        let shown: String = body.chars().take(80).collect();
        assert_eq!(create(ctx, body), invalid_input(), "{shown:?}");
    }
    assert!(!ctx.statements.contains(&"create"), "nothing was stored");
    assert_eq!(ctx.all_books(), before);
}

#[test]
fn create_bodies_without_the_three_fields_of_one_json_object_are_refused() {
    let mut ctx = TestContext::new();
    let bom = format!(
        "\u{FEFF}{}",
        r#"{"title":"Dune","author":"Frank Herbert","year":1965}"#
    );
    assert_not_created(
        &mut ctx,
        &[
            "{}",
            r#"{"title":"Dune"}"#,
            r#"{"author":"Frank Herbert"}"#,
            r#"{"year":1965}"#,
            r#"{"title":"Dune","author":"Frank Herbert"}"#,
            r#"{"title":"Dune","year":1965}"#,
            r#"{"author":"Frank Herbert","year":1965}"#,
            r#"{"Title":"Dune","Author":"Frank Herbert","Year":1965}"#,
            r#"{"id":1,"name":"Dune","writer":"Frank Herbert","published":1965}"#,
            "",
            "   ",
            "not json",
            "title=Dune&author=Frank+Herbert&year=1965",
            "[]",
            r#"[{"title":"Dune","author":"Frank Herbert","year":1965}]"#,
            r#""Dune""#,
            "1965",
            "null",
            "true",
            r#"{"title":"Dune","author":"Frank Herbert","year":1965"#,
            r#"{"title":"Dune","author":"Frank Herbert","year":1965}}"#,
            r#"{"title":"Dune","author":"Frank Herbert","year":1965} []"#,
            r#"{'title':'Dune','author':'Frank Herbert','year':1965}"#,
            r#"{"title":"Dune","author":"Frank Herbert","year":1965,}"#,
            &bom,
        ],
    );
    let token = ctx.login();
    assert_eq!(
        ctx.call_raw(
            "POST",
            "/book",
            Some(token.as_bytes()),
            b"{\"title\":\"D\xFFune\",\"author\":\"Frank Herbert\",\"year\":1965}"
        ),
        invalid_input(),
        "non-UTF-8 bytes"
    );
    assert_eq!(
        ctx.call_with("POST", "/book", Some(token.as_bytes()), BrokenBody),
        invalid_input(),
        "a body whose stream fails"
    );
}

#[test]
fn title_and_author_must_be_non_blank_strings() {
    let mut ctx = TestContext::new();
    let mut bodies = Vec::new();
    for bad in [
        json!(""),
        json!(" "),
        json!("   "),
        json!("\t\n\r"),
        json!("\u{00A0}"),
        json!("\u{3000}\u{2003}"),
        json!(null),
        json!(42),
        json!(1.5),
        json!(true),
        json!(["Dune"]),
        json!({"text": "Dune"}),
        json!("Du\u{0}ne"),
        json!("\u{0}"),
    ] {
        bodies.push(json!({"title": bad, "author": "Frank Herbert", "year": 1965}).to_string());
        bodies.push(json!({"title": "Dune", "author": bad, "year": 1965}).to_string());
    }
    assert_not_created(&mut ctx, &bodies);
}

#[test]
fn text_limit_is_1000_characters_not_bytes() {
    let mut ctx = TestContext::new();
    let accents = "é".repeat(1000); // 2000 bytes
    let emoji = "📚".repeat(1000); // 4000 bytes
    let ascii = "a".repeat(1000);
    let mixed = format!("{}{}", "a".repeat(999), "🐉");
    assert_eq!(accents.len(), 2000);
    assert_eq!(
        create(
            &mut ctx,
            &json!({"title": accents, "author": emoji, "year": 1}).to_string()
        ),
        created(1, &accents, &emoji, 1)
    );
    assert_eq!(
        create(
            &mut ctx,
            &json!({"title": ascii, "author": mixed, "year": 2}).to_string()
        ),
        created(2, &ascii, &mixed, 2)
    );
    // The escaped form counts decoded characters too: 1000 `\u00e9` escapes.
    let escaped = format!(
        r#"{{"title":"{}","author":"x","year":3}}"#,
        "\\u00e9".repeat(1000)
    );
    assert_eq!(create(&mut ctx, &escaped), created(3, &accents, "x", 3));

    let too_long: Vec<String> = [
        "é".repeat(1001),
        "📚".repeat(1001),
        "a".repeat(1001),
        format!("{}{}", "a".repeat(1000), "é"),
        "a".repeat(100_000),
    ]
    .into_iter()
    .flat_map(|long| {
        [
            json!({"title": long, "author": "A", "year": 1}).to_string(),
            json!({"title": "T", "author": long, "year": 1}).to_string(),
        ]
    })
    .collect();
    assert_not_created(&mut ctx, &too_long);
}

#[test]
fn year_must_be_a_json_integer_within_32_bits() {
    let mut ctx = TestContext::new();
    let mut id = 0;
    for year in ["2147483647", "-2147483648", "0", "-500", "1965", "1965 "] {
        id += 1;
        let body = format!(r#"{{"title":"T","author":"A","year":{year}}}"#);
        let expected: i64 = year.trim().parse().unwrap();
        assert_eq!(
            create(&mut ctx, &body),
            created(id, "T", "A", expected),
            "{year}"
        );
    }
    let bad_years = [
        "2147483648",
        "-2147483649",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551616",
        "99999999999999999999999",
        "-99999999999999999999999",
        "1999.0",
        "1999.5",
        "1e3",
        "1E3",
        "1.965e3",
        "1e400",
        "-1e400",
        "\"1999\"",
        "\"\"",
        "null",
        "true",
        "false",
        "[1999]",
        "{\"value\":1999}",
        "01999",
        "+1999",
        "0x7CF",
        "NaN",
        "Infinity",
    ];
    let bodies: Vec<String> = bad_years
        .iter()
        .map(|year| format!(r#"{{"title":"T","author":"A","year":{year}}}"#))
        .collect();
    assert_not_created(&mut ctx, &bodies);
}

#[test]
fn deeply_nested_json_is_refused_without_a_panic() {
    let mut ctx = TestContext::new();
    let token = ctx.login();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let deep = "[".repeat(100_000);
    let deep_closed = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_objects = "{\"a\":".repeat(50_000);
    let deep_in_field = format!(
        r#"{{"title":"T","author":"A","year":1,"extra":{}{}}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    for body in [&deep, &deep_closed, &deep_objects] {
        assert_eq!(
            ctx.call("POST", "/book", Some(&token), body),
            invalid_input()
        );
        assert_eq!(
            ctx.call("PUT", "/book/1", Some(&token), body),
            invalid_input()
        );
    }
    assert_eq!(
        ctx.all_books(),
        json!([book(1, "Dune", "Frank Herbert", 1965)])
    );
    // Deep nesting inside an ignored field is still valid JSON: skipped
    // without recursion, the book is accepted and the field not echoed.
    let created = ctx.call("POST", "/book", Some(&token), &deep_in_field);
    assert_eq!(created.0, 201);
    assert_eq!(created.1["data"], book(2, "T", "A", 1));
}

#[test]
fn unicode_round_trips_exactly() {
    let mut ctx = TestContext::new();
    let token = ctx.login();
    let cases = [
        ("📚🐉 Dragons & Books", "Zoë Ünicode"),
        ("三体", "刘慈欣"),
        ("كتاب الرمل", "خورخي لويس بورخيس"),
        ("שלום", "עגנון"),
        ("e\u{301}te\u{301}", "Ａｕｔｈｏｒ"),
        ("👩‍👩‍👧‍👦 family", "🇫🇷 flag"),
        (" padded title ", "\tTabbed author\n"),
        ("quotes \" and \\ backslash", "</script><b>&amp;</b>"),
        ("\u{1}\u{1f} controls", "\u{7f}\u{80}\u{ffff}"),
    ];
    for (index, (title, author)) in cases.iter().enumerate() {
        let id = index as i64 + 1;
        let body = json!({"title": title, "author": author, "year": 2000}).to_string();
        assert_eq!(
            ctx.call("POST", "/book", Some(&token), &body),
            created(id, title, author, 2000)
        );
        assert_eq!(
            ctx.call("GET", &format!("/book/{id}"), Some(&token), ""),
            retrieved(id, title, author, 2000)
        );
    }
    // JSON escapes, including a surrogate pair, decode to the characters.
    let escaped =
        r#"{"title":"\u00e9t\u00e9 \ud83d\udcda","author":"\u4e09\u4f53 \/ \"q\"","year":1}"#;
    let id = cases.len() as i64 + 1;
    assert_eq!(
        ctx.call("POST", "/book", Some(&token), escaped),
        created(id, "été 📚", "三体 / \"q\"", 1)
    );
    // A lone surrogate is not a string.
    assert_eq!(
        ctx.call(
            "POST",
            "/book",
            Some(&token),
            r#"{"title":"\ud800","author":"A","year":1}"#
        ),
        invalid_input()
    );
    let all = ctx.all_books();
    assert_eq!(all.as_array().unwrap().len(), cases.len() + 1);
    assert_eq!(all[0], book(1, cases[0].0, cases[0].1, 2000));
}

#[test]
fn client_id_and_unknown_fields_are_ignored_and_not_echoed() {
    let mut ctx = TestContext::new();
    let token = ctx.login();
    let body = r#"{"id":999,"title":"Dune","author":"Frank Herbert","year":1965,"isbn":"978-0441013593","tags":["sf"],"secret":{"x":1}}"#;
    assert_eq!(
        ctx.call("POST", "/book", Some(&token), body),
        created(1, "Dune", "Frank Herbert", 1965)
    );
    for id in ["-5", "\"abc\"", "null", "1.5", "0", "1"] {
        let body = format!(r#"{{"id":{id},"title":"T","author":"A","year":1}}"#);
        let (status, envelope, _) = ctx.call("POST", "/book", Some(&token), &body);
        assert_eq!(status, 201, "id {id}");
        assert_ne!(envelope["data"]["id"], json!(1), "a new id despite id {id}");
    }
    assert_eq!(
        ctx.call("GET", "/book/999", Some(&token), ""),
        book_not_found()
    );
    assert_eq!(
        ctx.call("GET", "/book/1", Some(&token), ""),
        retrieved(1, "Dune", "Frank Herbert", 1965)
    );
}

// ---- Book bodies on update ------------------------------------------------

#[test]
fn update_fields_follow_the_same_rules() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let token = ctx.login();
    let long = "é".repeat(1001);
    let bad_bodies = [
        r#"{"title":""}"#.to_string(),
        r#"{"title":"   "}"#.to_string(),
        r#"{"author":"\t"}"#.to_string(),
        r#"{"title":null}"#.to_string(),
        r#"{"author":null}"#.to_string(),
        r#"{"year":null}"#.to_string(),
        r#"{"title":42}"#.to_string(),
        r#"{"author":["A"]}"#.to_string(),
        r#"{"title":"a\u0000b"}"#.to_string(),
        json!({ "title": long }).to_string(),
        json!({ "author": long }).to_string(),
        r#"{"year":"1966"}"#.to_string(),
        r#"{"year":1966.0}"#.to_string(),
        r#"{"year":1e3}"#.to_string(),
        r#"{"year":2147483648}"#.to_string(),
        r#"{"year":-2147483649}"#.to_string(),
        r#"{"year":1e400}"#.to_string(),
        r#"{"year":true}"#.to_string(),
        // One bad field spoils an otherwise good body: nothing is applied.
        r#"{"title":"Dune Messiah","year":"1969"}"#.to_string(),
        r#"{"title":"Dune Messiah","author":""}"#.to_string(),
        "[]".to_string(),
        "null".to_string(),
        r#""title""#.to_string(),
        "1966".to_string(),
        String::new(),
        "not json".to_string(),
        "{".to_string(),
    ];
    for body in &bad_bodies {
        assert_eq!(
            ctx.call("PUT", "/book/1", Some(&token), body),
            invalid_input(),
            "{:?}",
            &body[..body.len().min(60)]
        );
    }
    assert_eq!(
        ctx.call_with("PUT", "/book/1", Some(token.as_bytes()), BrokenBody),
        invalid_input()
    );
    assert_eq!(
        ctx.call("GET", "/book/1", Some(&token), ""),
        retrieved(1, "Dune", "Frank Herbert", 1965),
        "unchanged after every refused update"
    );
    // The limits that pass on create pass on update.
    let max = "é".repeat(1000);
    assert_eq!(
        ctx.call(
            "PUT",
            "/book/1",
            Some(&token),
            &json!({"title": max, "year": i32::MIN}).to_string()
        ),
        updated(1, &max, "Frank Herbert", i32::MIN as i64)
    );
    assert_eq!(
        ctx.call("PUT", "/book/1", Some(&token), r#"{"year":2147483647}"#),
        updated(1, &max, "Frank Herbert", i32::MAX as i64)
    );
}

#[test]
fn any_update_body_on_a_missing_book_is_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let token = ctx.login();
    let full = book_body("T", "A", 1);
    for body in [
        "not json",
        "",
        "[]",
        r#"{"title":""}"#,
        r#"{"year":null}"#,
        "{}",
        &full,
    ] {
        assert_eq!(
            ctx.call("PUT", "/book/2", Some(&token), body),
            book_not_found(),
            "{body:?}"
        );
        assert_eq!(
            ctx.call("PUT", "/book/abc", Some(&token), body),
            book_not_found(),
            "{body:?}"
        );
    }
    ctx.call("DELETE", "/book/1", Some(&token), "");
    assert_eq!(
        ctx.call("PUT", "/book/1", Some(&token), "not json"),
        book_not_found(),
        "a deleted book"
    );
}

// ---- The store: calls per request, failures, which store ----------------

#[test]
fn each_single_book_request_is_one_store_call() {
    let mut ctx = TestContext::new();
    let t = ctx.login();
    let t = Some(t.as_str());
    // What a login costs is in core_login.rs.
    let cases: [(&str, &str, &str, &[&str], u16); 12] = [
        (
            "POST",
            "/book",
            r#"{"title":"T","author":"A","year":1}"#,
            &["create"],
            201,
        ),
        ("GET", "/book/1", "", &["get"], 200),
        ("GET", "/books", "", &["list"], 200),
        (
            "PUT",
            "/book/1",
            r#"{"title":"U","year":2}"#,
            &["update"],
            200,
        ),
        ("PUT", "/book/1", "{}", &["update"], 200),
        ("PUT", "/book/1", r#"{"title":""}"#, &["get"], 400),
        ("PUT", "/book/9", r#"{"title":"U"}"#, &["update"], 404),
        ("PUT", "/book/9", r#"{"title":""}"#, &["get"], 404),
        ("GET", "/book/9", "", &["get"], 404),
        ("DELETE", "/book/1", "", &["delete"], 200),
        ("DELETE", "/book/1", "", &["delete"], 404),
        ("POST", "/book", r#"{"title":""}"#, &[], 400),
    ];
    for (method, path, body, statements, status) in cases {
        ctx.reset_calls();
        let what = format!("{method} {path} {body}");
        assert_eq!(ctx.call(method, path, t, body).0, status, "{what}");
        assert_eq!(ctx.statements, statements, "{what}");
        // Opening may be deferred connecting (see `Context::open_store`), so
        // an invalid body may open the store as long as it runs nothing.
        assert!(ctx.opens <= 1, "{what}: opened {} times", ctx.opens);
    }
}

#[test]
fn store_errors_are_500_with_the_detail_only_in_the_log() {
    // A login's store failure: core_login.rs (it fails closed).
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
    for fails_to_open in [false, true] {
        let mut ctx = TestContext::new();
        ctx.create_book("Dune", "Frank Herbert", 1965);
        let t = ctx.login();
        let detail = "disk I/O error at db-host-7 (detail-ZQX)".to_string();
        match fails_to_open {
            true => ctx.fail_open = Some(detail),
            false => ctx.fail_store = Some(detail),
        }
        for (method, path, body) in requests {
            ctx.logs.clear();
            let what = format!("open fails: {fails_to_open}: {method} {path} {body}");
            assert_eq!(
                ctx.call(method, path, Some(&t), body),
                internal_error(),
                "{what}"
            );
            let request = format!(
                "method={method} route={} store=sqlite",
                book_catalog::router::pattern(path)
            );
            assert!(
                ctx.logs
                    .iter()
                    .any(|l| l.contains("detail-ZQX") && l.contains(&request)),
                "{what}: {:?}",
                ctx.logs
            );
        }
        (ctx.fail_store, ctx.fail_open) = (None, None);
        assert_eq!(
            ctx.call("GET", "/books", Some(&t), ""),
            listed(json!([book(1, "Dune", "Frank Herbert", 1965)])),
            "nothing changed while the store failed"
        );
    }
}

#[test]
fn db_url_names_the_store_to_open() {
    let pg = "postgres://user:pw@db.internal:5432/books";
    for (db_url, target) in [
        (None, sqlite("default")),
        (Some("sqlite:"), sqlite("default")),
        (Some("sqlite://default"), sqlite("default")),
        (Some("sqlite://books_2"), sqlite("books_2")),
        (Some(pg), postgres(pg)),
        (
            Some("postgresql://db/books"),
            postgres("postgresql://db/books"),
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
fn an_unsupported_db_url_is_500_naming_the_setting_without_its_password() {
    // The pipeline: a login and every protected request answer 500, the log
    // names DB_URL and never the password, no store is opened, and a request
    // without a token is still 401 first. How the value is described (only
    // its scheme, whatever it holds) is src/db_url.rs's unit tests.
    for db_url in [
        "mysql://u:hunter2@x/db",
        "mssql://sa:hunter2@x:1433/db",
        "file.db",
        "sqlite://a/b",
        // Passwords with reserved characters, as users write them.
        "mysql://u:hunter/2@x/db",
        "mysql://u:hunter#2@x/db",
        "mysql://u:hunter?2@x/db",
        "mysql://u:p@ss/hunter2@x/db",
        "mysql://u:hunter2@x/db?password=hunter2",
    ] {
        let mut ctx = TestContext::new();
        ctx.db_url = Some(db_url.to_string());
        // A login needs the store (the failed-login check): 500 as well.
        let login = r#"{"username":"admin","password":"password"}"#;
        let t = valid_token();
        let requests = [("POST", "/token", None, login)]
            .into_iter()
            .chain(PROTECTED.map(|(method, path, body)| (method, path, Some(t.as_str()), body)));
        let mut lines = Vec::new();
        for (method, path, auth, body) in requests {
            ctx.logs.clear();
            assert_eq!(
                ctx.call(method, path, auth, body),
                internal_error(),
                "{db_url}: {method} {path}"
            );
            assert!(
                ctx.logs.iter().any(|l| l.contains("DB_URL")),
                "{db_url}: {method} {path}: {:?}",
                ctx.logs
            );
            lines.append(&mut ctx.logs);
        }
        let leaks: Vec<&String> = lines.iter().filter(|l| l.contains("hunter")).collect();
        assert!(
            leaks.is_empty(),
            "{db_url}: log lines echoing a password: {leaks:?}"
        );
        assert_eq!(ctx.opens, 0, "{db_url}: no store opened");
        // Unauthenticated requests are still 401 first.
        assert_eq!(ctx.call("GET", "/books", None, ""), token_required());
    }
}
