//! Login protection through `book_catalog::handle` (decisions.md, "Login
//! protection" and "Credentials and keys"): the failed-login limit per client
//! address, its settings and defaults, the Argon2id password hash, the
//! previous signing secret, and that none of them reaches the log.

mod support;

use book_catalog::store::BookStore;
use book_catalog::token;
use support::*;

const RIGHT: &str = r#"{"username":"admin","password":"password"}"#;
const WRONG: &str = r#"{"username":"admin","password":"wrong-password-7"}"#;

fn too_many() -> Outcome {
    error(429, "Too many login attempts")
}

/// POST /token, and the `Retry-After` it carried.
fn login(ctx: &mut TestContext, body: &str) -> (Outcome, Option<u64>) {
    let head = book_catalog::RequestHead {
        method: "POST",
        path: "/token",
        query: None,
        authorization: None,
    };
    let response = book_catalog::handle(ctx, &head, body.as_bytes());
    let retry_after = response.retry_after;
    let envelope: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        retry_after.is_some(),
        response.status == 429,
        "Retry-After exactly with 429"
    );
    if let Some(token) = envelope["data"]["token"].as_str() {
        ctx.never_logged.push(token.to_string());
    }
    ((response.status, envelope, response.allow), retry_after)
}

fn status(ctx: &mut TestContext, body: &str) -> u16 {
    login(ctx, body).0 .0
}

#[test]
fn defaults_allow_ten_failures_in_900_seconds() {
    let mut ctx = TestContext::new();
    for attempt in 1..=10 {
        assert_eq!(login(&mut ctx, WRONG).0, invalid_credentials(), "{attempt}");
    }
    // The eleventh, and every login after it, right credentials too.
    assert_eq!(login(&mut ctx, WRONG), (too_many(), Some(900)));
    assert_eq!(login(&mut ctx, RIGHT), (too_many(), Some(900)));
    ctx.now += 899;
    assert_eq!(login(&mut ctx, RIGHT), (too_many(), Some(1)));
    // The window ends 900 s after the first failure.
    ctx.now += 1;
    assert_eq!(status(&mut ctx, RIGHT), 200);
}

#[test]
fn retry_after_counts_down_to_the_end_of_the_window() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("2".into());
    ctx.window_seconds = Some("60".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    ctx.now += 20;
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(login(&mut ctx, WRONG), (too_many(), Some(40)));
    ctx.now += 39;
    assert_eq!(login(&mut ctx, RIGHT), (too_many(), Some(1)));
    ctx.now += 1;
    assert_eq!(status(&mut ctx, RIGHT), 200);
}

#[test]
fn a_success_clears_the_count() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("3".into());
    for _ in 0..3 {
        for _ in 0..2 {
            assert_eq!(status(&mut ctx, WRONG), 401);
        }
        // Two failures are below the limit; the success starts afresh (else
        // the third failure of the second round would block the address).
        assert_eq!(status(&mut ctx, RIGHT), 200);
    }
    assert_eq!(ctx.store.login_failure_rows(), 0);
}

#[test]
fn only_wrong_credentials_count() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("2".into());
    for body in ["", "{}", "not json", r#"{"username":"admin"}"#] {
        for _ in 0..3 {
            assert_eq!(login(&mut ctx, body).0, invalid_payload(), "{body:?}");
        }
    }
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(status(&mut ctx, WRONG), 429);
    // Once blocked, a malformed login is refused the same way.
    assert_eq!(login(&mut ctx, "{}").0, too_many());
}

#[test]
fn addresses_are_counted_apart_and_the_port_is_ignored() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("2".into());
    ctx.client_addr = Some("203.0.113.1:1000".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    ctx.client_addr = Some("203.0.113.1:2000".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    ctx.client_addr = Some("203.0.113.1:3000".into());
    assert_eq!(status(&mut ctx, RIGHT), 429, "same address, other port");
    ctx.client_addr = Some("203.0.113.2:1000".into());
    assert_eq!(status(&mut ctx, RIGHT), 200, "another address");
    ctx.client_addr = Some("[2001:db8::1]:443".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
}

#[test]
fn forwarded_for_names_the_client_only_when_trusted() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("1".into());
    ctx.client_addr = Some("10.0.0.9:5555".into());
    // Not trusted: a client cannot escape its count by inventing addresses.
    for fake in ["198.51.100.1", "198.51.100.2"] {
        ctx.forwarded_for = Some(fake.into());
        let expected = if fake.ends_with('1') { 401 } else { 429 };
        assert_eq!(status(&mut ctx, WRONG), expected, "{fake}");
    }
    ctx.client_addr = Some("10.0.0.10:5555".into());
    ctx.trust_forwarded_for = Some("true".into());
    ctx.forwarded_for = Some("198.51.100.7, 10.0.0.1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(status(&mut ctx, WRONG), 429);
    // The first address decides; the proxy's own address does not.
    ctx.forwarded_for = Some("198.51.100.8, 10.0.0.1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    // Without the header, the peer.
    ctx.forwarded_for = None;
    assert_eq!(status(&mut ctx, RIGHT), 200);
}

#[test]
fn zero_turns_the_limit_off_without_store_calls() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("0".into());
    for _ in 0..50 {
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!(ctx.calls.opens, 0);
    assert_eq!(ctx.calls.total(), 0);
}

#[test]
fn invalid_settings_warn_and_use_the_defaults() {
    for (max, window, trust) in [
        ("ten", "15m", "maybe"),
        ("-1", "0", "2"),
        ("99999999999", "31536001", ""),
    ] {
        let mut ctx = TestContext::new();
        ctx.max_failures = Some(max.into());
        ctx.window_seconds = Some(window.into());
        ctx.trust_forwarded_for = Some(trust.into());
        ctx.forwarded_for = Some("198.51.100.77".into());
        for _ in 0..10 {
            assert_eq!(status(&mut ctx, WRONG), 401, "{max} {window}");
        }
        assert_eq!(
            login(&mut ctx, WRONG),
            (too_many(), Some(900)),
            "{max} {window}"
        );
        for name in ["LOGIN_MAX_FAILURES", "LOGIN_WINDOW_SECONDS"] {
            assert!(
                ctx.logs
                    .iter()
                    .any(|l| l.starts_with("warning:") && l.contains(name)),
                "{name}: {:?}",
                ctx.logs
            );
        }
        if !trust.is_empty() {
            assert!(ctx.logs.iter().any(|l| l.contains("TRUST_FORWARDED_FOR")));
        }
        // Untrusted: the count is the peer's, not the forwarded address's.
        let peer = ctx.store.login_failures("192.0.2.10").unwrap();
        assert_eq!(
            peer.map(|f| f.count),
            Some(10),
            "a blocked login is not counted"
        );
    }
}

#[test]
fn a_login_with_no_failures_on_record_is_one_store_call() {
    let mut ctx = TestContext::new();
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!((ctx.calls.opens, ctx.calls.total()), (1, 1));
    assert_eq!(ctx.calls.login_read, 1);
    // A failure: the check, the count, and (a new window) one bounded cleanup.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(
        (
            ctx.calls.login_read,
            ctx.calls.login_record,
            ctx.calls.login_prune
        ),
        (1, 1, 1)
    );
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.calls.login_prune, 0, "the same window: no cleanup");
    // A success with failures on record: the check and the clearing.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!((ctx.calls.login_read, ctx.calls.login_clear), (1, 1));
    // Blocked: the check alone answers.
    ctx.max_failures = Some("1".into());
    status(&mut ctx, WRONG);
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 429);
    assert_eq!(ctx.calls.total(), 1);
}

#[test]
fn ended_windows_start_over_and_are_cleaned_up_in_batches() {
    let mut ctx = TestContext::new();
    ctx.window_seconds = Some("60".into());
    for i in 0..150 {
        ctx.client_addr = Some(format!("198.51.100.{i}:1"));
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(ctx.store.login_failure_rows(), 150);
    // After the window, the next new window's failure removes at most 100
    // ended rows (and its own row is new).
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.store.login_failure_rows(), 150 - 100 + 1);
    ctx.client_addr = Some("192.0.2.201:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.store.login_failure_rows(), 2);
    // An address whose window ended starts over at one.
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    let row = ctx.store.login_failures("192.0.2.200").unwrap().unwrap();
    assert_eq!((row.count, row.window_end), (1, ctx.now + 60));
}

#[test]
fn a_store_failure_fails_the_login_closed() {
    let mut ctx = TestContext::new();
    ctx.fail_store = Some("database is locked (detail-LOCK)".into());
    assert_eq!(login(&mut ctx, RIGHT).0, internal_error());
    assert_eq!(login(&mut ctx, WRONG).0, internal_error());
    assert!(ctx.logs.iter().any(|l| l.contains("detail-LOCK")));
}

// ---- The password hash --------------------------------------------------

/// An Argon2id PHC string of `password` with small parameters (fast tests);
/// `src/password.rs` checks the reference vector and OWASP's parameters.
fn cheap_hash(password: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::from_b64("dGVzdHNhbHR0ZXN0c2FsdA").unwrap();
    let params = argon2::Params::new(64, 1, 1, None).unwrap();
    argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .unwrap()
        .to_string()
}

#[test]
fn a_password_hash_replaces_the_password_without_the_default_warning() {
    let mut ctx = TestContext::new();
    ctx.username = Some("librarian".into());
    ctx.password_hash = Some(cheap_hash("Hashed pass 1"));
    let ok = r#"{"username":"librarian","password":"Hashed pass 1"}"#;
    assert_eq!(status(&mut ctx, ok), 200);
    for wrong in [
        r#"{"username":"librarian","password":"Hashed pass 2"}"#,
        r#"{"username":"librarian","password":"password"}"#,
        r#"{"username":"admin","password":"Hashed pass 1"}"#,
    ] {
        assert_eq!(status(&mut ctx, wrong), 401, "{wrong}");
    }
    // A plain password set beside it is ignored.
    ctx.password = Some("plain-password-9".into());
    let plain = r#"{"username":"librarian","password":"plain-password-9"}"#;
    assert_eq!(status(&mut ctx, plain), 401);
    assert_eq!(status(&mut ctx, ok), 200);
    assert!(
        !ctx.logs.iter().any(|l| l.contains("default password")),
        "{:?}",
        ctx.logs
    );
}

#[test]
fn an_unusable_hash_makes_every_login_500_with_a_log_line_without_the_hash() {
    let good = cheap_hash("pw");
    for bad in [
        "not-a-phc-string-at-all".to_string(),
        good.replacen("$argon2id$", "$argon2i$", 1),
        good.replacen("m=64", "m=999999999", 1),
        good[..good.len() - 10].to_string() + "!!!!!!!!!!",
    ] {
        let mut ctx = TestContext::new();
        ctx.password_hash = Some(bad.clone());
        for body in [
            RIGHT,
            WRONG,
            r#"{"username":"admin","password":"pw"}"#,
            "{}",
        ] {
            ctx.logs.clear();
            assert_eq!(login(&mut ctx, body).0, internal_error(), "{bad}: {body}");
            assert!(
                ctx.logs
                    .iter()
                    .any(|l| l.contains("error") && l.contains("AUTH_PASSWORD_HASH")),
                "{:?}",
                ctx.logs
            );
        }
        // `TestContext` checks on drop that no line holds the hash or a part.
    }
}

// ---- The previous signing secret ----------------------------------------

const PREVIOUS: &str = "the-previous-signing-secret-0123456789-abcdef";

#[test]
fn tokens_of_the_previous_secret_are_accepted_until_they_expire() {
    let mut ctx = TestContext::new();
    ctx.previous_secret = Some(PREVIOUS.into());
    let old = token::issue(PREVIOUS.as_bytes(), NOW - 100).unwrap();
    ctx.never_logged.push(old.clone());
    assert_eq!(ctx.call("GET", "/books", Some(&old), "").0, 200);
    // Until its exp (NOW - 100 + 900), not a second longer.
    ctx.now = NOW + 799;
    assert_eq!(ctx.call("GET", "/books", Some(&old), "").0, 200);
    ctx.now = NOW + 800;
    assert_eq!(ctx.call("GET", "/books", Some(&old), ""), invalid_token());
    // Without the setting, the old token is refused at once.
    ctx.now = NOW;
    ctx.previous_secret = None;
    assert_eq!(ctx.call("GET", "/books", Some(&old), ""), invalid_token());
}

#[test]
fn new_tokens_are_signed_with_the_current_secret_only() {
    let mut ctx = TestContext::new();
    ctx.previous_secret = Some(PREVIOUS.into());
    let issued = ctx.login();
    assert_eq!(
        token::verify(issued.as_bytes(), SECRET.as_bytes(), NOW),
        Ok(())
    );
    assert!(token::verify(issued.as_bytes(), PREVIOUS.as_bytes(), NOW).is_err());
    // A token of neither secret, and a forged one, are still refused.
    let other = token::issue(b"some-third-secret-of-enough-length-000", NOW).unwrap();
    assert_eq!(ctx.call("GET", "/books", Some(&other), ""), invalid_token());
    let none = forge(
        r#"{"alg":"none"}"#,
        r#"{"exp":9999999999}"#,
        PREVIOUS.as_bytes(),
    );
    assert_eq!(ctx.call("GET", "/books", Some(&none), ""), invalid_token());
}

#[test]
fn the_previous_secret_alone_verifies_nothing() {
    // Without a current secret every token is refused, old ones too.
    let mut ctx = TestContext::without_secret();
    ctx.previous_secret = Some(PREVIOUS.into());
    let old = token::issue(PREVIOUS.as_bytes(), NOW).unwrap();
    ctx.never_logged.push(old.clone());
    assert_eq!(ctx.call("GET", "/books", Some(&old), ""), invalid_token());
    assert_eq!(status(&mut ctx, RIGHT), 500);
}

// ---- Nothing secret in the log ------------------------------------------

#[test]
fn no_secret_hash_password_or_token_is_ever_logged() {
    let hash = cheap_hash("Hashed-Secret-Pass-42");
    let mut ctx = TestContext::new();
    ctx.username = Some("keeper".into());
    ctx.password_hash = Some(hash.clone());
    ctx.previous_secret = Some(PREVIOUS.into());
    ctx.max_failures = Some("bogus-value".into());
    ctx.window_seconds = Some("bogus-window".into());
    ctx.trust_forwarded_for = Some("bogus-flag".into());
    let attempts = [
        r#"{"username":"keeper","password":"Hashed-Secret-Pass-42"}"#,
        r#"{"username":"keeper","password":"Guess-Number-One"}"#,
        r#"{"username":"keeper","password":"Guess-Number-Two"}"#,
    ];
    for _ in 0..5 {
        for body in attempts {
            login(&mut ctx, body);
        }
    }
    let old = token::issue(PREVIOUS.as_bytes(), NOW).unwrap();
    ctx.never_logged.push(old.clone());
    ctx.call("GET", "/books", Some(&old), "");
    ctx.never_logged.extend(
        [
            "Hashed-Secret-Pass-42",
            "Guess-Number-One",
            "Guess-Number-Two",
            "bogus-value",
            "bogus-window",
            "bogus-flag",
        ]
        .map(String::from),
    );
    assert!(!ctx.logs.is_empty(), "the bogus settings were warned about");
    ctx.assert_logs_clean();
}
