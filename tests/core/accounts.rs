//! Accounts (docs/configuration.md, "Accounts"): logins, roles, revocation,
//! attribution. How `accounts` parses: src/settings/accounts.rs.

use serde_json::{json, Value};

use crate::support::*;

const RITA: &str = "Rita's reading pass";
const ED: &str = "Ed's editing pass";

fn entry(username: &str, role: &str, password: &str) -> Value {
    json!({"username": username, "role": role, "password_hash": cheap_hash(password)})
}

/// A context with the reader `rita` and the editor `ed`, and one book.
fn with_accounts() -> TestContext {
    let mut ctx = TestContext::with_books(&[DUNE]);
    let accounts = json!([entry("rita", "reader", RITA), entry("ed", "editor", ED)]);
    ctx.set(Setting::Accounts, &accounts.to_string());
    ctx
}

fn login_as(ctx: &mut TestContext, username: &str, password: &str) -> String {
    let body = json!({"username": username, "password": password}).to_string();
    let (outcome, _) = ctx.post_token(&body);
    assert_eq!(outcome.0, 200, "{username}: {outcome:?}");
    outcome.1["data"]["token"].as_str().expect("a token").to_string()
}

/// The claims of a token, decoded.
fn claims(token: &str) -> Value {
    let claims = token.split('.').nth(1).expect("claims");
    serde_json::from_slice(&base64_decode(claims)).expect("JSON claims")
}

fn base64_decode(segment: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(segment).expect("base64url")
}

/// Each holder on each endpoint: the pair and an editor everything, a reader
/// its reads and 403 "Permission denied" for every write; each request's
/// line names its account.
#[test]
fn each_role_may_do_what_it_is_given_and_each_request_names_its_account() {
    let mut ctx = with_accounts();
    let pair = ctx.login();
    let rita = login_as(&mut ctx, "rita", RITA);
    let ed = login_as(&mut ctx, "ed", ED);
    let fp = |token: &str| claims(token)["fp"].as_str().expect("fp").to_string();
    assert_eq!(pair, pair_token());
    assert_eq!(rita, login_token("rita", "reader", Some(&fp(&rita))));
    assert_eq!(ed, login_token("ed", "editor", Some(&fp(&ed))));
    let denied = ok(403, "Permission denied", Value::Null);
    for (account, token, writes) in
        [("admin", &pair, true), ("ed", &ed, true), ("rita", &rita, false)]
    {
        ctx.request_lines.clear();
        let (status, envelope, _) = ctx.call("POST", "/book", Some(token), &book_body("T", "A", 1));
        let id = envelope["data"]["id"].as_i64().unwrap_or(1);
        let item = format!("/book/{id}");
        let outcomes = [
            (status, envelope, None),
            ctx.call("GET", "/books", Some(token), ""),
            ctx.call("GET", &item, Some(token), ""),
            ctx.call("PUT", &item, Some(token), r#"{"year":2}"#),
            ctx.call("DELETE", &item, Some(token), ""),
        ];
        let expected = [201, 200, 200, 200, 200];
        for (outcome, (expected, (method, _, _))) in
            outcomes.iter().zip(expected.iter().zip(PROTECTED))
        {
            match (writes, method) {
                (false, "POST" | "PUT" | "DELETE") => assert_eq!(outcome, &denied, "{account}"),
                _ => assert_eq!(outcome.0, *expected, "{account} {method}: {outcome:?}"),
            }
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
/// up (404, 412, 428) and before its body is read (400, 413).
#[test]
fn a_readers_write_is_denied_after_authentication_and_method_before_anything_else() {
    let mut ctx = with_accounts();
    ctx.set(Setting::RequireIfMatch, "true");
    let rita = login_as(&mut ctx, "rita", RITA);
    let denied = ok(403, "Permission denied", Value::Null);
    assert_eq!(ctx.call("PUT", "/book/1", None, "{}"), token_required());
    assert_eq!(ctx.call("PUT", "/book/1", Some("x.y.z"), "{}"), invalid_token());
    assert_eq!(ctx.call("PATCH", "/book/1", Some(&rita), "{}"), not_allowed("GET, PUT, DELETE"));
    assert_eq!(ctx.call("GET", "/book", Some(&rita), ""), not_allowed("POST"));
    let huge = vec![b'x'; 2 * 1024 * 1024];
    ctx.reset_calls();
    for (method, path) in
        [("PUT", "/book/999"), ("PUT", "/book/abc"), ("DELETE", "/book/0"), ("POST", "/book")]
    {
        for body in [&b"not json"[..], &huge[..]] {
            let probe = BodyProbe::default();
            let outcome = ctx.call_with(method, path, Some(rita.as_bytes()), probe.body(body));
            assert_eq!(outcome, denied, "{method} {path}");
            assert!(!probe.read.get(), "{method} {path}: the body was read");
        }
    }
    assert_eq!(ctx.opens, 0, "no store opened for a denied write");
}

/// An account removed, or its password changed, has its tokens refused at
/// once; the others' stay good. A token without `sub` is the pair's; the
/// pair's tokens end with its name; the role a token claims is never read.
#[test]
fn removed_accounts_and_changed_passwords_refuse_their_tokens() {
    let mut ctx = with_accounts();
    let rita = login_as(&mut ctx, "rita", RITA);
    let ed = login_as(&mut ctx, "ed", ED);
    let pair = ctx.login();
    let legacy = valid_token();
    let reads = |ctx: &mut TestContext, token: &str| ctx.call("GET", "/book/1", Some(token), "").0;
    let new_ed = json!([entry("ed", "editor", "a new pass")]).to_string();
    ctx.set(Setting::Accounts, &new_ed);
    assert_eq!(ctx.call("GET", "/books", Some(&rita), ""), invalid_token(), "rita removed");
    assert_eq!(ctx.call("GET", "/books", Some(&ed), ""), invalid_token(), "ed's password changed");
    assert_eq!((reads(&mut ctx, &pair), reads(&mut ctx, &legacy)), (200, 200));
    assert_eq!(
        ctx.post_token(&json!({"username": "ed", "password": ED}).to_string()).0,
        invalid_credentials()
    );
    let ed = login_as(&mut ctx, "ed", "a new pass");
    assert_eq!(reads(&mut ctx, &ed), 200);
    // A reader's token re-signed as an editor's (with the secret) is still a
    // reader's; one naming nobody, or an account without its `fp`, nobody's.
    let rita = json!([entry("rita", "reader", RITA)]).to_string();
    ctx.set(Setting::Accounts, &rita);
    let rita = login_as(&mut ctx, "rita", RITA);
    let fp = claims(&rita)["fp"].as_str().expect("fp").to_string();
    let promoted = login_token("rita", "editor", Some(&fp));
    let denied = ok(403, "Permission denied", Value::Null);
    assert_eq!(ctx.call("DELETE", "/book/1", Some(&promoted), ""), denied);
    for forged in [login_token("nobody", "editor", Some(&fp)), login_token("rita", "editor", None)]
    {
        assert_eq!(ctx.call("GET", "/books", Some(&forged), ""), invalid_token(), "{forged}");
    }
    let only_fp =
        forge(HS256_HEADER, &format!(r#"{{"exp":{},"fp":"{fp}"}}"#, NOW + 900), SECRET.as_bytes());
    assert_eq!(ctx.call("GET", "/books", Some(&only_fp), ""), invalid_token());
    ctx.set(Setting::AuthUsername, "root");
    assert_eq!(
        ctx.call("GET", "/books", Some(&pair), ""),
        invalid_token(),
        "auth_username changed"
    );
    assert_eq!(
        reads(&mut ctx, &legacy),
        200,
        "a token without sub is the pair's, whatever its name"
    );
}

/// A login tries the pair and the accounts; wrong passwords, unknown names
/// and a password of another holder are 401, each counted as a failure.
#[test]
fn logins_take_the_pair_or_an_account_and_nothing_in_between() {
    let mut ctx = with_accounts();
    ctx.set(Setting::LoginMaxFailures, "100");
    for (username, password) in [
        ("rita", ED),
        ("ed", RITA),
        ("rita", "password"),
        ("admin", RITA),
        ("nobody", RITA),
        ("Rita", RITA),
        ("", ""),
    ] {
        let body = json!({"username": username, "password": password}).to_string();
        assert_eq!(ctx.post_token(&body).0, invalid_credentials(), "{username} / {password}");
    }
    assert_eq!(ctx.login_attempts("192.0.2.10").map(|attempts| attempts.count), Some(7));
    login_as(&mut ctx, "rita", RITA);
    assert_eq!(ctx.login_attempts("192.0.2.10"), None, "a success clears the count");
}

/// Unusable `accounts`, or a source that fails: every login and every
/// protected request answers 500, the log naming the setting and the entry,
/// never a hash; health and requests without a token are as before.
#[test]
fn unusable_accounts_fail_closed() {
    let good = entry("rita", "reader", RITA);
    let clash = entry("admin", "editor", ED);
    for (value, logged) in [
        ("rita".to_string(), "not a JSON array"),
        (json!([good, clash]).to_string(), "entry 2 of 2: the username is auth_username's"),
        (
            json!([good, {"username": "x", "role": "owner", "password_hash": cheap_hash(ED)}])
                .to_string(),
            "entry 2 of 2",
        ),
        (
            json!([{"username": "x", "role": "reader", "password_hash": "$argon2id$v=19$m=1"}])
                .to_string(),
            "entry 1 of 1",
        ),
    ] {
        let mut ctx = TestContext::new();
        ctx.set(Setting::Accounts, &value);
        for (method, path, body) in PROTECTED {
            assert_eq!(ctx.authed(method, path, body), internal_error(), "{method} {path}");
        }
        assert_eq!(ctx.post_token(LOGIN).0, internal_error());
        assert_eq!(ctx.call("GET", "/books", None, ""), token_required());
        assert_eq!(ctx.call("GET", "/health", None, ""), healthy());
        assert!(
            ctx.logged("level=error", &format!("accounts / ACCOUNTS is unusable: {logged}")),
            "{:?}",
            ctx.logs
        );
    }
    let mut ctx = TestContext::new();
    ctx.failing_setting = Some(Setting::Accounts);
    assert_eq!(ctx.authed("GET", "/books", ""), internal_error());
    assert_eq!(ctx.post_token(LOGIN).0, internal_error());
    assert!(ctx.logged("level=error", "accounts / ACCOUNTS could not be read"), "{:?}", ctx.logs);
}
