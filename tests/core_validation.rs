//! What the service accepts as a login and as a book (spec, "Per-endpoint
//! rules"; decisions.md, "API details").

mod support;

use serde_json::{json, Value};
use support::*;

// ---- POST /token ----------------------------------------------------------

#[test]
fn login_with_the_default_credentials() {
    let mut ctx = TestContext::new();
    let (status, envelope, allow) = ctx.call(
        "POST",
        "/token",
        None,
        r#"{"username":"admin","password":"password"}"#,
    );
    assert_eq!((status, allow), (200, None));
    assert_eq!(
        envelope,
        envelope_with_token(&valid_token()),
        "the whole envelope"
    );
}

fn envelope_with_token(token: &str) -> Value {
    envelope(200, "Token generated successfully", json!({"token": token}))
}

#[test]
fn login_payloads_that_are_not_a_login_object() {
    let mut ctx = TestContext::new();
    let deep = "[".repeat(100_000);
    let deep_object = format!(r#"{{"username":{}"#, "[".repeat(100_000));
    let bom = format!(
        "\u{FEFF}{}",
        r#"{"username":"admin","password":"password"}"#
    );
    for body in [
        "",
        " ",
        "not json",
        "username=admin&password=password",
        "{",
        r#"{"username":"admin","password":"password""#,
        r#"{"username":"admin","password":"password"} x"#,
        "[]",
        r#"["admin","password"]"#,
        r#"[{"username":"admin","password":"password"}]"#,
        r#""admin""#,
        "42",
        "null",
        "true",
        "{}",
        r#"{"username":"admin"}"#,
        r#"{"password":"password"}"#,
        r#"{"user":"admin","pass":"password"}"#,
        r#"{"Username":"admin","Password":"password"}"#,
        r#"{"username":1,"password":"password"}"#,
        r#"{"username":"admin","password":12345}"#,
        r#"{"username":null,"password":"password"}"#,
        r#"{"username":"admin","password":null}"#,
        r#"{"username":{"name":"admin"},"password":"password"}"#,
        r#"{"username":"admin","password":["password"]}"#,
        r#"{"username":true,"password":false}"#,
        r#"{"username":"admin","password":"\ud800"}"#,
        &bom,
        &deep,
        &deep_object,
    ] {
        assert_eq!(
            ctx.call("POST", "/token", None, body),
            invalid_payload(),
            "{:?}",
            &body[..body.len().min(60)]
        );
    }
    assert_eq!(
        ctx.call_raw(
            "POST",
            "/token",
            None,
            b"{\"username\":\"adm\xFFin\",\"password\":\"password\"}"
        ),
        invalid_payload(),
        "non-UTF-8 bytes"
    );
    assert_eq!(
        ctx.call_with("POST", "/token", None, BrokenBody),
        invalid_payload(),
        "a body whose stream fails"
    );
}

#[test]
fn payload_is_judged_before_credentials() {
    let mut ctx = TestContext::new();
    assert_eq!(
        ctx.call("POST", "/token", None, r#"{"username":"nobody"}"#),
        invalid_payload()
    );
}

#[test]
fn wrong_credentials_are_refused() {
    let mut ctx = TestContext::new();
    for (index, (username, password)) in [
        ("admin", "wrong-password-1"),
        ("someone-else-99", "password"),
        ("someone-else-99", "wrong-password-2"),
        ("Admin", "password"),
        ("ADMIN", "password"),
        ("admin", "Password"),
        ("admin", "PASSWORD"),
        ("admin ", "password"),
        (" admin", "password"),
        ("admin", "password "),
        ("admin", "password\n"),
        ("admin", "passwor"),
        ("admin", "password1"),
        ("admin", ""),
        ("", "password"),
        ("", ""),
        ("admin\u{0}", "password"),
        ("admin", "pässword"),
    ]
    .into_iter()
    .enumerate()
    {
        // Each from its own address: more than the failed-login limit.
        ctx.client_addr = Some(format!("198.51.100.{index}:5000"));
        let body = json!({"username": username, "password": password}).to_string();
        assert_eq!(
            ctx.call("POST", "/token", None, &body),
            invalid_credentials(),
            "{username:?} / {password:?}"
        );
    }
    for line in &ctx.logs {
        for submitted in ["wrong-password-1", "wrong-password-2", "someone-else-99"] {
            assert!(!line.contains(submitted), "{line:?}");
        }
    }
}

#[test]
fn extra_login_fields_are_ignored() {
    let mut ctx = TestContext::new();
    let body =
        r#"{"username":"admin","password":"password","remember":true,"exp":1,"role":"root"}"#;
    let (status, envelope, _) = ctx.call("POST", "/token", None, body);
    assert_eq!(status, 200);
    assert_eq!(envelope, envelope_with_token(&valid_token()));
    // Key order and whitespace do not matter either.
    let body = "\n { \"password\" : \"password\" ,\t\"username\":\"admin\" } \n";
    assert_eq!(
        ctx.call("POST", "/token", None, body).1,
        envelope_with_token(&valid_token())
    );
    // Escapes are decoded before comparing.
    let body = r#"{"username":"\u0061dmin","password":"p\u0061ssword"}"#;
    assert_eq!(ctx.call("POST", "/token", None, body).0, 200);
}

#[test]
fn configured_credentials_replace_the_defaults() {
    let mut ctx = TestContext::with_credentials("librarian", "Corr3ct-Horse-Battery");
    let good = r#"{"username":"librarian","password":"Corr3ct-Horse-Battery"}"#;
    let (status, envelope, _) = ctx.call("POST", "/token", None, good);
    assert_eq!(status, 200);
    assert_eq!(envelope, envelope_with_token(&valid_token()));
    for body in [
        r#"{"username":"admin","password":"password"}"#,
        r#"{"username":"librarian","password":"password"}"#,
        r#"{"username":"admin","password":"Corr3ct-Horse-Battery"}"#,
        r#"{"username":"librarian","password":"corr3ct-horse-battery"}"#,
    ] {
        assert_eq!(
            ctx.call("POST", "/token", None, body),
            invalid_credentials(),
            "{body}"
        );
    }
    assert!(
        !ctx.logs.iter().any(|l| l.contains("default password")),
        "no default-password warning with a configured password: {:?}",
        ctx.logs
    );
}

#[test]
fn only_one_of_the_credentials_configured() {
    // A configured username keeps the default password, and vice versa.
    let mut ctx = TestContext::new();
    ctx.username = Some("librarian".into());
    assert_eq!(
        ctx.call(
            "POST",
            "/token",
            None,
            r#"{"username":"librarian","password":"password"}"#
        )
        .0,
        200
    );
    assert_eq!(
        ctx.call(
            "POST",
            "/token",
            None,
            r#"{"username":"admin","password":"password"}"#
        ),
        invalid_credentials()
    );
    let mut ctx = TestContext::new();
    ctx.password = Some("Only-The-Password-Set".into());
    assert_eq!(
        ctx.call(
            "POST",
            "/token",
            None,
            r#"{"username":"admin","password":"Only-The-Password-Set"}"#
        )
        .0,
        200
    );
    assert_eq!(
        ctx.call(
            "POST",
            "/token",
            None,
            r#"{"username":"admin","password":"password"}"#
        ),
        invalid_credentials()
    );
}

#[test]
fn the_default_password_is_warned_about_without_being_logged() {
    let mut ctx = TestContext::new();
    ctx.login();
    let warnings: Vec<&String> = ctx
        .logs
        .iter()
        .filter(|l| l.contains("default password"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", ctx.logs);
    let warning = warnings[0];
    assert!(warning.contains("AUTH_PASSWORD"), "{warning}");
    // The value never appears as a value (the word itself is in the message).
    for leak in [
        "\"password\"",
        "'password'",
        "=password",
        ": password\"",
        "password/",
    ] {
        assert!(!warning.contains(leak), "{warning}");
    }
    // A refused attempt warns too, and logs nothing of what was sent.
    ctx.logs.clear();
    ctx.call(
        "POST",
        "/token",
        None,
        r#"{"username":"admin","password":"Sent-Attempt-77"}"#,
    );
    assert!(ctx.logs.iter().any(|l| l.contains("default password")));
    assert!(!ctx.logs.iter().any(|l| l.contains("Sent-Attempt-77")));
}

// ---- Book bodies ----------------------------------------------------------

fn create(ctx: &mut TestContext, body: &str) -> Outcome {
    let token = ctx.login();
    ctx.call("POST", "/book", Some(&token), body)
}

fn created(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(
        201,
        "Book created successfully",
        book(id, title, author, year),
    )
}

/// POST with `body` must be 400 "Invalid input" and store nothing.
fn assert_not_created(ctx: &mut TestContext, bodies: &[&str]) {
    ctx.reset_calls();
    for body in bodies {
        assert_eq!(
            create(ctx, body),
            invalid_input(),
            "{:?}",
            &body[..body.len().min(80)]
        );
    }
    assert_eq!(ctx.calls.create, 0, "nothing was stored");
    assert_eq!(ctx.all_books(), json!([]));
}

#[test]
fn create_needs_all_three_fields() {
    let mut ctx = TestContext::new();
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
        ],
    );
}

#[test]
fn create_body_must_be_a_json_object() {
    let mut ctx = TestContext::new();
    let bom = format!(
        "\u{FEFF}{}",
        r#"{"title":"Dune","author":"Frank Herbert","year":1965}"#
    );
    assert_not_created(
        &mut ctx,
        &[
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
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
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
    ctx.reset_calls();
    for body in &too_long {
        assert_eq!(create(&mut ctx, body), invalid_input());
    }
    assert_eq!(ctx.calls.create, 0);
    assert_eq!(ctx.all_books().as_array().unwrap().len(), 3);
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
    ctx.reset_calls();
    for body in &bodies {
        assert_eq!(create(&mut ctx, body), invalid_input(), "{body}");
    }
    assert_eq!(ctx.calls.create, 0);
    assert_eq!(ctx.all_books().as_array().unwrap().len(), 6);
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
            ok(
                200,
                "Book retrieved successfully",
                book(id, title, author, 2000)
            )
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
        ok(
            200,
            "Book retrieved successfully",
            book(1, "Dune", "Frank Herbert", 1965)
        )
    );
}

// ---- PUT bodies -----------------------------------------------------------

fn updated(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(
        200,
        "Book updated successfully",
        book(id, title, author, year),
    )
}

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
        ok(
            200,
            "Book retrieved successfully",
            book(1, "Dune", "Frank Herbert", 1965)
        ),
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
fn update_with_an_invalid_body_on_a_missing_book_is_not_found() {
    let mut ctx = TestContext::new();
    ctx.create_book("Dune", "Frank Herbert", 1965);
    let token = ctx.login();
    for body in ["not json", "", "[]", r#"{"title":""}"#, r#"{"year":null}"#] {
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
