//! Accounts (docs/configuration.md, "Accounts"): logins, roles, revocation,
//! attribution. How `accounts` parses: src/settings/accounts.rs.

use serde_json::{json, Value};

use crate::support::*;

/// The reader `rita` and the editor `ed` beside the pair, and one book.
fn with_accounts() -> TestContext {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let accounts = json!([entry("rita", "reader", RITA), entry("ed", "editor", ED)]);
    ctx.set(Setting::Accounts, &accounts.to_string());
    ctx
}

/// A token's `fp` claim.
fn fingerprint(token: &str) -> String {
    let claims = b64_decode(token.split('.').nth(1).expect("claims"));
    let claims: Value = serde_json::from_slice(&claims).expect("JSON claims");
    claims["fp"].as_str().expect("fp").to_string()
}

fn denied() -> Outcome {
    ok(403, "Permission denied", Value::Null)
}

/// Each holder on each endpoint: the pair and an editor everything, a reader
/// its reads and 403 for every write; each request's line names its account.
#[test]
fn each_role_may_do_what_it_is_given_and_each_request_names_its_account() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let pair = ctx.login();
    let (ed, rita) = ctx.ed_and_rita();
    assert_eq!(pair, pair_token());
    assert_eq!(rita, login_token("rita", "reader", Some(&fingerprint(&rita))));
    assert_eq!(ed, login_token("ed", "editor", Some(&fingerprint(&ed))));
    for (account, token) in [("admin", &pair), ("ed", &ed), ("rita", &rita)] {
        ctx.request_lines.clear();
        let created = ctx.call("POST", "/book", Some(token), &book_body("T", "A", 1));
        let item = format!("/book/{}", created.1["data"]["id"].as_i64().unwrap_or(1));
        let reads = [
            ctx.call("GET", "/books", Some(token), "").0,
            ctx.call("GET", &item, Some(token), "").0,
        ];
        let put = ctx.call("PUT", &item, Some(token), r#"{"year":2}"#);
        let writes = [created, put, ctx.call("DELETE", &item, Some(token), "")];
        assert_eq!(reads, [200, 200], "{account}");
        match account {
            "rita" => assert_eq!(writes, [denied(), denied(), denied()]),
            _ => assert_eq!(writes.map(|outcome| outcome.0), [201, 200, 200], "{account}"),
        }
        let named = format!(" account={account}");
        assert!(
            ctx.request_lines.iter().all(|line| line.ends_with(&named)),
            "{:?}",
            ctx.request_lines
        );
    }
    assert_eq!(ctx.all_books(), json!([book(1, DUNE.0, DUNE.1, DUNE.2)]));
}

/// A reader's write: 401 and 405 come first; 403 before the book is looked
/// up (404, 412, 428), before its body is read (400, 413) and any store.
#[test]
fn a_readers_write_is_denied_after_authentication_and_method_before_anything_else() {
    let mut ctx = with_accounts();
    ctx.set(Setting::RequireIfMatch, "true");
    let rita = ctx.login_as("rita", RITA).unwrap();
    assert_eq!(ctx.call("PUT", "/book/1", None, "{}"), token_required());
    assert_eq!(ctx.call("PUT", "/book/1", Some("x.y.z"), "{}"), invalid_token());
    assert_eq!(ctx.call("PATCH", "/book/1", Some(&rita), "{}"), not_allowed("GET, PUT, DELETE"));
    assert_eq!(ctx.call("GET", "/book", Some(&rita), ""), not_allowed("POST"));
    let huge = vec![b'x'; 2 * 1024 * 1024];
    ctx.reset_calls();
    for (method, path) in
        [("PUT", "/book/9"), ("PUT", "/book/abc"), ("DELETE", "/book/0"), ("POST", "/book")]
    {
        for body in [&b"not json"[..], &huge[..]] {
            let probe = BodyProbe::default();
            let outcome = ctx.call_with(method, path, Some(rita.as_bytes()), probe.body(body));
            assert_eq!((outcome, probe.read.get()), (denied(), false), "{method} {path}");
        }
    }
    assert_eq!(ctx.opens, 0, "no store opened for a denied write");
}

/// An account removed, or its password changed, has its tokens refused at
/// once, the others' not; a token without `sub` is the pair's, whatever its
/// name; the pair's other tokens end with its name; a token's `role` is
/// never read, and an `fp` never stands for the pair.
#[test]
fn removed_accounts_and_changed_passwords_refuse_their_tokens() {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let (ed, rita) = ctx.ed_and_rita();
    let (pair, legacy) = (ctx.login(), valid_token());
    let get = |ctx: &mut TestContext, token: &str| ctx.call("GET", "/books", Some(token), "").0;
    ctx.set(Setting::Accounts, &json!([entry("ed", "editor", "a new pass")]).to_string());
    assert_eq!(
        [&rita, &ed, &pair, &legacy].map(|token| get(&mut ctx, token)),
        [401, 401, 200, 200]
    );
    assert_eq!(ctx.login_as("ed", ED), Err(invalid_credentials()));
    let new_ed = ctx.login_as("ed", "a new pass").unwrap();
    assert_eq!(get(&mut ctx, &new_ed), 200);
    let fp = fingerprint(&ed);
    let forged = [
        login_token("ed", "reader", Some(&fp)),
        login_token("nobody", "editor", Some(&fp)),
        login_token("ed", "editor", None),
        forge(HS256_HEADER, &format!(r#"{{"exp":{},"fp":"{fp}"}}"#, NOW + 900), SECRET.as_bytes()),
    ];
    assert_eq!(forged.each_ref().map(|token| get(&mut ctx, token)), [401; 4]);
    let demoted = login_token("ed", "reader", Some(&fingerprint(&new_ed)));
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&demoted), "").0, 200, "the account's role");
    ctx.set(Setting::AuthUsername, "root");
    assert_eq!([&pair, &legacy].map(|token| get(&mut ctx, token)), [401, 200]);
}

/// A login is the pair's or an account's: another's password, an unknown
/// or differently cased name are 401, each counted; a success clears them.
#[test]
fn logins_take_the_pair_or_an_account_and_nothing_in_between() {
    let mut ctx = with_accounts();
    ctx.set(Setting::LoginMaxFailures, "100");
    let wrong =
        [("rita", ED), ("ed", RITA), ("rita", "password"), ("admin", RITA), ("nobody", RITA)];
    for (username, password) in wrong.into_iter().chain([("Rita", RITA), ("", "")]) {
        assert_eq!(ctx.login_as(username, password), Err(invalid_credentials()), "{username}");
    }
    assert_eq!(ctx.login_attempts("192.0.2.10").map(|attempts| attempts.count), Some(7));
    ctx.login_as("rita", RITA).unwrap();
    assert_eq!(ctx.login_attempts("192.0.2.10"), None);
}

/// Unusable `accounts` (every form: the unit tests), or a source that fails:
/// every login and protected request answers 500, the log naming the setting
/// and the entry, never a hash; health and a missing token are as before.
#[test]
fn unusable_accounts_fail_closed() {
    let clash = json!([entry("rita", "reader", RITA), entry("admin", "editor", ED)]).to_string();
    for failing in [false, true] {
        let mut ctx = TestContext::new();
        ctx.set(Setting::Accounts, &clash);
        ctx.failing_setting = failing.then_some(Setting::Accounts);
        for (method, path, body) in PROTECTED {
            assert_eq!(ctx.authed(method, path, body), internal_error(), "{method} {path}");
        }
        assert_eq!(ctx.post_token(LOGIN).0, internal_error());
        assert_eq!(ctx.call("GET", "/books", None, ""), token_required());
        assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
        let logged = match failing {
            false => {
                "accounts / ACCOUNTS is unusable: entry 2 of 2: the username is auth_username's"
            }
            true => "accounts / ACCOUNTS could not be read",
        };
        assert!(ctx.logged("level=error", logged), "{:?}", ctx.logs);
    }
}

/// An `Idempotency-Key` is its sender's: another account sending the same
/// key and body makes its own book, and its own replay.
#[test]
fn idempotency_keys_are_scoped_to_the_account_that_sent_them() {
    let mut ctx = with_accounts();
    let other = json!([entry("rita", "editor", RITA), entry("ed", "editor", ED)]);
    ctx.set(Setting::Accounts, &other.to_string());
    let (rita, ed) = (ctx.login_as("rita", RITA).unwrap(), ctx.login_as("ed", ED).unwrap());
    let pair = ctx.login();
    ctx.request_headers = vec![("Idempotency-Key".into(), "order-7".into())];
    let body = book_body("Emma", "Jane Austen", 1815);
    let mut ids = Vec::new();
    for token in [&ed, &rita, &ed, &pair, &rita, &pair] {
        let outcome = ctx.call("POST", "/book", Some(token), &body);
        assert_eq!(outcome.0, 201);
        ids.push(outcome.1["data"]["id"].as_i64().unwrap());
    }
    assert_eq!(ids, [2, 3, 2, 4, 3, 4]);
}

/// Hashes of different Argon2 costs: a warning names each entry's, never a hash.
#[test]
fn accounts_whose_hashes_cost_differently_are_warned_about() {
    let mut ctx = with_accounts();
    let costlier = entry("ed", "editor", ED).to_string().replace("m=64,", "m=128,");
    ctx.set(Setting::Accounts, &format!("[{}, {costlier}]", entry("rita", "reader", RITA)));
    assert!(ctx.login_as("rita", RITA).is_ok());
    let warned = |l: &String| l.contains("level=warn") && l.contains("entry 2 of 2 m=128,");
    assert!(ctx.logs.iter().any(warned), "{:?}", ctx.logs);
}
