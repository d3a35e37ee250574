//! Login protection through `book_catalog::handle` (decisions.md, "Login
//! protection" and "Credentials and keys"): the failed-login limit per client
//! address, its settings and defaults, the Argon2id password hash, the
//! previous signing secret, and that none of them reaches the log.

mod support;

use book_catalog::store::LoginAttemptStore;
use book_catalog::token;
use support::*;

const RIGHT: &str = r#"{"username":"admin","password":"password"}"#;
const WRONG: &str = r#"{"username":"admin","password":"wrong-password-7"}"#;

fn too_many() -> Outcome {
    error(429, "Too many login attempts")
}

/// POST /token, and the `Retry-After` it carried.
fn login(ctx: &mut TestContext, body: &str) -> (Outcome, Option<u64>) {
    let headers = ctx.header_fields();
    let head = book_catalog::RequestHead {
        method: "POST",
        path: "/token",
        query: None,
        authorization: None,
        headers: &headers,
    };
    let response = book_catalog::handle(ctx, &head, body.as_bytes());
    let retry_after = response
        .header("retry-after")
        .map(|value| value.parse::<u64>().expect("Retry-After is whole seconds"));
    let envelope: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        retry_after.is_some(),
        response.status == 429,
        "Retry-After exactly with 429"
    );
    assert_eq!(response.header("cache-control"), Some("no-store"));
    if let Some(token) = envelope["data"]["token"].as_str() {
        ctx.never_logged.push(token.to_string());
    }
    let allow = response.header("allow").map(str::to_string);
    ((response.status, envelope, allow), retry_after)
}

fn status(ctx: &mut TestContext, body: &str) -> u16 {
    login(ctx, body).0 .0
}

/// The count stored under `key`.
fn count_of(ctx: &mut TestContext, key: &str) -> Option<u64> {
    ctx.store.login_attempts(key).unwrap().map(|f| f.count)
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
    assert_eq!(ctx.store.login_attempt_rows(), 0);
}

#[test]
fn attempts_are_counted_before_any_password_is_checked() {
    // Ten attempts of this client already counted and still being checked
    // (another instance, another replica): an eleventh is refused unchecked,
    // even with the right password, and is counted too.
    let mut ctx = TestContext::new();
    for _ in 0..10 {
        ctx.store
            .count_login_attempt("192.0.2.10", NOW, 900)
            .unwrap();
    }
    assert_eq!(login(&mut ctx, RIGHT), (too_many(), Some(900)));
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), Some(11));
    // Nine in flight: the tenth attempt is checked, and a right one clears.
    let mut ctx = TestContext::new();
    for _ in 0..9 {
        ctx.store
            .count_login_attempt("192.0.2.10", NOW, 900)
            .unwrap();
    }
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), None);
}

#[test]
fn a_right_password_anywhere_after_the_tenth_failure_is_refused() {
    for position in [11, 12, 50, 200] {
        let mut ctx = TestContext::new();
        for attempt in 1..=200 {
            let (outcome, _) = login(&mut ctx, if attempt == position { RIGHT } else { WRONG });
            let expected = if attempt <= 10 {
                invalid_credentials()
            } else {
                too_many()
            };
            assert_eq!(outcome, expected, "attempt {attempt}, right at {position}");
        }
    }
}

#[test]
fn unreadable_logins_check_no_password_and_are_not_counted() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("2".into());
    for body in ["", "{}", "not json", r#"{"username":"admin"}"#] {
        for _ in 0..3 {
            assert_eq!(login(&mut ctx, body).0, invalid_payload(), "{body:?}");
        }
    }
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), None);
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
    ctx.client_addr = Some("[::ffff:203.0.113.1]:4000".into());
    assert_eq!(
        status(&mut ctx, RIGHT),
        429,
        "IPv4-mapped IPv6 is the IPv4 address"
    );
}

#[test]
fn eleven_addresses_of_one_64_share_a_bucket() {
    let mut ctx = TestContext::new();
    // Each address of the /64 makes one wrong login: ten are checked, then
    // the whole /64 is blocked, whichever address it uses next.
    for host in 1..=10 {
        ctx.client_addr = Some(format!("[2001:db8:aa:bb::{host:x}]:443"));
        assert_eq!(status(&mut ctx, WRONG), 401, "address {host}");
    }
    ctx.client_addr = Some("[2001:db8:aa:bb:ffff:1:2:3]:443".into());
    assert_eq!(login(&mut ctx, RIGHT), (too_many(), Some(900)));
    assert_eq!(count_of(&mut ctx, "2001:db8:aa:bb::/64"), Some(11));
    // The next /64 is another end site.
    ctx.client_addr = Some("[2001:db8:aa:bc::1]:443".into());
    assert_eq!(status(&mut ctx, RIGHT), 200);
}

#[test]
fn a_client_sent_spin_client_addr_is_not_the_peer() {
    // Spin appends its own spin-client-addr after one a client sends: the
    // last value is the platform's.
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("1".into());
    for spoofed in ["198.51.100.1:1", "198.51.100.2:1"] {
        ctx.request_headers = vec![("spin-client-addr".into(), spoofed.into())];
        let expected = if spoofed.starts_with("198.51.100.1") {
            401
        } else {
            429
        };
        assert_eq!(status(&mut ctx, WRONG), expected, "{spoofed}");
    }
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), Some(2));
}

#[test]
fn forwarded_for_is_read_only_from_trusted_proxies() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("1".into());
    ctx.client_addr = Some("10.0.0.9:5555".into());
    // No trusted proxy: a client cannot escape its count by inventing addresses.
    for fake in ["198.51.100.1", "198.51.100.2"] {
        ctx.forwarded_for = Some(fake.into());
        let expected = if fake.ends_with('1') { 401 } else { 429 };
        assert_eq!(status(&mut ctx, WRONG), expected, "{fake}");
    }
    assert_eq!(count_of(&mut ctx, "10.0.0.9"), Some(2));
}

#[test]
fn with_one_hop_a_spoofed_leftmost_entry_does_not_change_the_bucket() {
    let mut ctx = TestContext::new();
    ctx.trusted_proxy_hops = Some("1".into());
    ctx.client_addr = Some("10.0.0.1:5555".into());
    // The client writes its own X-Forwarded-For; the ingress appends the
    // address it received from (198.51.100.7).
    for attempt in 1..=12 {
        ctx.forwarded_for = Some(format!("203.0.113.{attempt}, 198.51.100.7"));
        let expected = if attempt <= 10 { 401 } else { 429 };
        assert_eq!(status(&mut ctx, WRONG), expected, "attempt {attempt}");
    }
    assert_eq!(count_of(&mut ctx, "198.51.100.7"), Some(12));
    assert_eq!(count_of(&mut ctx, "203.0.113.1"), None);
    // Another client behind the same ingress is not locked out with it.
    ctx.forwarded_for = Some("198.51.100.8".into());
    assert_eq!(status(&mut ctx, RIGHT), 200);
}

#[test]
fn the_old_trust_forwarded_for_is_one_hop_with_a_log_line() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("1".into());
    ctx.trust_forwarded_for = Some("true".into());
    ctx.client_addr = Some("10.0.0.1:5555".into());
    ctx.forwarded_for = Some("203.0.113.50, 198.51.100.9".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(count_of(&mut ctx, "198.51.100.9"), Some(1));
    assert!(
        ctx.logs
            .iter()
            .any(|l| l.contains("TRUST_FORWARDED_FOR") && l.contains("trusted_proxy_hops=1")),
        "{:?}",
        ctx.logs
    );
    // trusted_proxy_hops, when set, wins.
    ctx.trusted_proxy_hops = Some("0".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(count_of(&mut ctx, "10.0.0.1"), Some(1));
}

#[test]
fn two_hops_skip_the_cdn_and_the_ingress() {
    let mut ctx = TestContext::new();
    ctx.trusted_proxy_hops = Some("2".into());
    ctx.client_addr = Some("10.0.0.1:5555".into());
    // client -> CDN (appends the client) -> ingress (appends the CDN) -> us
    ctx.forwarded_for = Some("6.6.6.6, 198.51.100.20, 192.0.2.250".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(count_of(&mut ctx, "198.51.100.20"), Some(1));
}

#[test]
fn the_client_ip_header_names_the_client_when_present() {
    let mut ctx = TestContext::new();
    ctx.client_ip_header = Some("True-Client-IP".into());
    ctx.client_addr = Some("10.0.0.1:5555".into());
    ctx.request_headers = vec![("true-client-ip".into(), "203.0.113.77".into())];
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(count_of(&mut ctx, "203.0.113.77"), Some(1));
    // Missing or unparsable: the peer (no proxy hops here).
    ctx.request_headers = vec![("true-client-ip".into(), "not-an-ip".into())];
    assert_eq!(status(&mut ctx, WRONG), 401);
    ctx.request_headers.clear();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(count_of(&mut ctx, "10.0.0.1"), Some(2));
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
    for (max, window, hops, header) in [
        ("ten", "15m", "maybe", "two words"),
        ("-1", "0", "-2", "x:y"),
        ("99999999999", "31536001", "33", ""),
    ] {
        let mut ctx = TestContext::new();
        ctx.max_failures = Some(max.into());
        ctx.window_seconds = Some(window.into());
        ctx.trusted_proxy_hops = Some(hops.into());
        ctx.client_ip_header = Some(header.into());
        ctx.forwarded_for = Some("198.51.100.77".into());
        for _ in 0..10 {
            assert_eq!(status(&mut ctx, WRONG), 401, "{max} {window}");
        }
        assert_eq!(
            login(&mut ctx, WRONG),
            (too_many(), Some(900)),
            "{max} {window}"
        );
        for name in [
            "LOGIN_MAX_FAILURES",
            "LOGIN_WINDOW_SECONDS",
            "TRUSTED_PROXY_HOPS",
        ] {
            assert!(
                ctx.logs
                    .iter()
                    .any(|l| l.starts_with("warning:") && l.contains(name)),
                "{name}: {:?}",
                ctx.logs
            );
        }
        if !header.is_empty() {
            assert!(ctx.logs.iter().any(|l| l.contains("CLIENT_IP_HEADER")));
        }
        // No trusted proxy: the count is the peer's.
        assert_eq!(count_of(&mut ctx, "192.0.2.10"), Some(11));
    }
}

#[test]
fn what_each_login_costs_the_store() {
    let mut ctx = TestContext::new();
    // A success with no failures on record: the attempt counted, then cleared.
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!(ctx.calls.opens, 1);
    assert_eq!(
        (
            ctx.calls.login_record,
            ctx.calls.login_clear,
            ctx.calls.total()
        ),
        (1, 1, 2)
    );
    // A failure that starts a window: counted, and one bounded cleanup.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(
        (
            ctx.calls.login_record,
            ctx.calls.login_prune,
            ctx.calls.total()
        ),
        (1, 1, 2)
    );
    // A failure in the same window: counted, nothing else.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!((ctx.calls.login_record, ctx.calls.total()), (1, 1));
    // An unreadable body: one read.
    ctx.reset_calls();
    assert_eq!(login(&mut ctx, "{}").0, invalid_payload());
    assert_eq!((ctx.calls.login_read, ctx.calls.total()), (1, 1));
    // Blocked: the count alone answers.
    ctx.max_failures = Some("1".into());
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, RIGHT), 429);
    assert_eq!((ctx.calls.login_record, ctx.calls.total()), (1, 1));
}

#[test]
fn ended_windows_start_over_and_are_cleaned_up_in_batches() {
    let mut ctx = TestContext::new();
    ctx.window_seconds = Some("60".into());
    for i in 0..150 {
        ctx.client_addr = Some(format!("198.51.100.{i}:1"));
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(ctx.store.login_attempt_rows(), 150);
    // After the window, the next new window's failure removes at most 100
    // ended rows (and its own row is new).
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.store.login_attempt_rows(), 150 - 100 + 1);
    ctx.client_addr = Some("192.0.2.201:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.store.login_attempt_rows(), 2);
    // An address whose window ended starts over at one.
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    let row = ctx.store.login_attempts("192.0.2.200").unwrap().unwrap();
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

// ---- Failing closed -------------------------------------------------------

#[test]
fn a_setting_whose_provider_fails_is_never_replaced_by_its_default() {
    use book_catalog::settings::Setting;
    // Every setting a login reads: the default credentials never sign.
    for setting in [
        Setting::AuthUsername,
        Setting::AuthPassword,
        Setting::AuthPasswordHash,
        Setting::LoginMaxFailures,
        Setting::LoginWindowSeconds,
        Setting::TrustedProxyHops,
        Setting::TrustForwardedFor,
        Setting::ClientIpHeader,
        Setting::DbUrl,
        Setting::SecretToken,
    ] {
        let mut ctx = TestContext::new();
        ctx.failing_setting = Some(setting);
        assert_eq!(login(&mut ctx, RIGHT).0, internal_error(), "{setting:?}");
        let name = setting.env_name();
        assert!(
            ctx.logs
                .iter()
                .any(|l| l.starts_with("error:") && l.contains(name)),
            "{setting:?}: {:?}",
            ctx.logs
        );
    }
    // A protected route whose secret cannot be read: 500, not 401.
    let mut ctx = TestContext::new();
    ctx.failing_setting = Some(Setting::SecretToken);
    assert_eq!(
        ctx.call("GET", "/books", Some(&valid_token()), ""),
        internal_error()
    );
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
    ctx.trusted_proxy_hops = Some("bogus-hops".into());
    ctx.client_ip_header = Some("bogus header".into());
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
            "bogus-hops",
            "bogus header",
        ]
        .map(String::from),
    );
    assert!(!ctx.logs.is_empty(), "the bogus settings were warned about");
    ctx.assert_logs_clean();
}
