//! `POST /token` as a whole, through `book_catalog::handle`: what a login
//! payload is; the credentials (configured, the defaults, the
//! default-password warning, the Argon2id `auth_password_hash`); the
//! failed-login limit (docs/configuration.md, "Login protection": the count, its
//! window and `Retry-After`, its settings, what it costs the store) and who
//! the client is (peer, `X-Forwarded-For` through trusted proxies,
//! `client_ip_header`); failing closed when a setting or the store cannot be
//! read; and that nothing secret reaches the log. The token a login issues,
//! and the signing secrets, are in core_tokens.rs.


use book_catalog::settings::{
    Setting, DEFAULT_LOGIN_MAX_FAILURES, DEFAULT_LOGIN_WINDOW_SECONDS, DEFAULT_PASSWORD,
    DEFAULT_USERNAME,
};
use book_catalog::token;
use serde_json::json;
use crate::support::*;

const RIGHT: &str = r#"{"username":"admin","password":"password"}"#;
const WRONG: &str = r#"{"username":"admin","password":"wrong-password-7"}"#;

/// The status of `POST /token` with `body`.
fn status(ctx: &mut TestContext, body: &str) -> u16 {
    ctx.post_token(body).0 .0
}

/// The count stored under `key`.
fn count_of(ctx: &mut TestContext, key: &str) -> Option<u64> {
    ctx.login_attempts(key).map(|f| f.count)
}

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

// ---- Payloads ---------------------------------------------------------------

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
        r#"{"username":"nobody"}"#,
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
fn extra_login_fields_are_ignored() {
    let mut ctx = TestContext::new();
    let body =
        r#"{"username":"admin","password":"password","remember":true,"exp":1,"role":"root"}"#;
    assert_eq!(
        ctx.call("POST", "/token", None, body),
        issued(&valid_token())
    );
    // Key order and whitespace do not matter either.
    let body = "\n { \"password\" : \"password\" ,\t\"username\":\"admin\" } \n";
    assert_eq!(
        ctx.call("POST", "/token", None, body),
        issued(&valid_token())
    );
    // Escapes are decoded before comparing.
    let body = r#"{"username":"\u0061dmin","password":"p\u0061ssword"}"#;
    assert_eq!(ctx.call("POST", "/token", None, body).0, 200);
}

#[test]
fn unreadable_logins_check_no_password_and_are_not_counted() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("2".into());
    for body in ["", "{}", "not json", r#"{"username":"admin"}"#] {
        for _ in 0..3 {
            assert_eq!(ctx.post_token(body).0, invalid_payload(), "{body:?}");
        }
    }
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), None);
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(status(&mut ctx, WRONG), 429);
    // Once blocked, a malformed login is refused the same way.
    assert_eq!(ctx.post_token("{}").0, too_many_attempts());
}

// ---- Credentials ------------------------------------------------------------

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
    // No log line may hold what was submitted (checked when `ctx` drops).
    let submitted = ["wrong-password-1", "wrong-password-2", "someone-else-99"];
    ctx.never_logged.extend(submitted.map(String::from));
}

#[test]
fn configured_credentials_replace_the_defaults() {
    // A configured username keeps the default password, and vice versa.
    // (username, password, the login that passes, logins refused)
    let cases: [(Option<&str>, Option<&str>, &str, &[&str]); 3] = [
        (
            Some("librarian"),
            Some("Corr3ct-Horse-Battery"),
            r#"{"username":"librarian","password":"Corr3ct-Horse-Battery"}"#,
            &[
                RIGHT,
                r#"{"username":"librarian","password":"password"}"#,
                r#"{"username":"admin","password":"Corr3ct-Horse-Battery"}"#,
                r#"{"username":"librarian","password":"corr3ct-horse-battery"}"#,
            ],
        ),
        (
            Some("librarian"),
            None,
            r#"{"username":"librarian","password":"password"}"#,
            &[RIGHT],
        ),
        (
            None,
            Some("Only-The-Password-Set"),
            r#"{"username":"admin","password":"Only-The-Password-Set"}"#,
            &[RIGHT],
        ),
    ];
    for (username, password, right, refused) in cases {
        let mut ctx = TestContext::new();
        ctx.username = username.map(String::from);
        ctx.password = password.map(String::from);
        assert_eq!(status(&mut ctx, right), 200, "{right}");
        for body in refused {
            assert_eq!(
                ctx.post_token(body).0,
                invalid_credentials(),
                "{right}: {body}"
            );
        }
        let warned = ctx.logs.iter().any(|l| l.contains("default password"));
        assert_eq!(warned, password.is_none(), "{right}: {:?}", ctx.logs);
    }
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

/// A settings table of `file` (README.md, docs/configuration.md): the one
/// whose header names the columns "Spin variable", "Environment" and
/// "Default"; per row (Spin variable, environment name, default).
fn documented_settings(file: &str) -> Vec<(String, String, String)> {
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cells = |line: &str| -> Vec<String> {
        let line = line.trim().trim_start_matches('|').trim_end_matches('|');
        line.split('|')
            .map(|cell| cell.trim().to_string())
            .collect()
    };
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .map(cells)
        .find(|header| header.iter().any(|cell| cell == "Spin variable"))
        .unwrap_or_else(|| panic!("{file}: no table with a \"Spin variable\" column"));
    let column = |name: &str| {
        header
            .iter()
            .position(|cell| cell == name)
            .unwrap_or_else(|| panic!("{file}: no {name:?} column in {header:?}"))
    };
    let (variable, env, default) = (
        column("Spin variable"),
        column("Environment"),
        column("Default"),
    );
    let code = |cell: &str| cell.trim_matches('`').to_string();
    lines
        .skip(1) // |---|---|
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let row = cells(line);
            assert_eq!(row.len(), header.len(), "{file}: {line}");
            (code(&row[variable]), code(&row[env]), row[default].clone())
        })
        .collect()
}

#[test]
fn the_documented_settings_are_the_settings_with_their_login_defaults() {
    for setting in Setting::ALL {
        // What tests/faults/lib.py assumes when it reads the names from
        // spin.toml (whose variables deploy.rs checks against Setting::ALL).
        assert_eq!(
            setting.env_name(),
            setting.variable_name().to_ascii_uppercase(),
            "{setting:?}"
        );
    }
    let mut settings: Vec<(&str, &str)> = Setting::ALL
        .iter()
        .map(|s| (s.variable_name(), s.env_name()))
        .collect();
    settings.sort_unstable();
    for file in ["README.md", "docs/configuration.md"] {
        let table = documented_settings(file);
        let mut documented: Vec<(&str, &str)> = table
            .iter()
            .map(|(variable, env, _)| (variable.as_str(), env.as_str()))
            .collect();
        documented.sort_unstable();
        assert_eq!(documented, settings, "{file}: the settings table");
        // The documented defaults: the first `code` of the Default cell.
        let default_of = |name: &str| -> String {
            let (_, _, cell) = table.iter().find(|(v, _, _)| v == name).unwrap();
            let code = cell.split('`').nth(1);
            code.unwrap_or_else(|| panic!("{file}: no default for {name}: {cell}"))
                .to_string()
        };
        assert_eq!(default_of("auth_username"), DEFAULT_USERNAME, "{file}");
        assert_eq!(default_of("auth_password"), DEFAULT_PASSWORD, "{file}");
        assert_eq!(
            default_of("login_max_failures"),
            DEFAULT_LOGIN_MAX_FAILURES.to_string(),
            "{file}"
        );
        assert_eq!(
            default_of("login_window_seconds"),
            DEFAULT_LOGIN_WINDOW_SECONDS.to_string(),
            "{file}"
        );
        // And they are what a login meets with nothing configured (the
        // limit's: defaults_allow_ten_failures_in_900_seconds).
        let mut ctx = TestContext::new();
        let documented = json!({
            "username": default_of("auth_username"),
            "password": default_of("auth_password"),
        });
        assert_eq!(status(&mut ctx, &documented.to_string()), 200, "{file}");
    }
}

// ---- The password hash --------------------------------------------------

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
            assert_eq!(ctx.post_token(body).0, internal_error(), "{bad}: {body}");
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

// ---- The failed-login limit ---------------------------------------------

#[test]
fn defaults_allow_ten_failures_in_900_seconds() {
    let mut ctx = TestContext::new();
    for attempt in 1..=10 {
        assert_eq!(ctx.post_token(WRONG).0, invalid_credentials(), "{attempt}");
    }
    // The eleventh, and every login after it, right credentials too.
    assert_eq!(ctx.post_token(WRONG), (too_many_attempts(), Some(900)));
    assert_eq!(ctx.post_token(RIGHT), (too_many_attempts(), Some(900)));
    ctx.now += 899;
    assert_eq!(ctx.post_token(RIGHT), (too_many_attempts(), Some(1)));
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
    assert_eq!(ctx.post_token(WRONG), (too_many_attempts(), Some(40)));
    ctx.now += 39;
    assert_eq!(ctx.post_token(RIGHT), (too_many_attempts(), Some(1)));
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
    assert_eq!(ctx.login_attempt_rows(), 0);
}

#[test]
fn attempts_are_counted_before_any_password_is_checked() {
    // Ten attempts of this client already counted and still being checked
    // (another instance, another replica): an eleventh is refused unchecked,
    // even with the right password, and is counted too.
    let mut ctx = TestContext::new();
    for _ in 0..10 {
        ctx.count_login_attempt("192.0.2.10", NOW, 900);
    }
    assert_eq!(ctx.post_token(RIGHT), (too_many_attempts(), Some(900)));
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), Some(11));
    // Nine in flight: the tenth attempt is checked, and a right one clears.
    let mut ctx = TestContext::new();
    for _ in 0..9 {
        ctx.count_login_attempt("192.0.2.10", NOW, 900);
    }
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), None);
}

#[test]
fn a_right_password_anywhere_after_the_tenth_failure_is_refused() {
    for position in [11, 12, 50, 200] {
        let mut ctx = TestContext::new();
        for attempt in 1..=200 {
            let (outcome, _) = ctx.post_token(if attempt == position { RIGHT } else { WRONG });
            let expected = if attempt <= 10 {
                invalid_credentials()
            } else {
                too_many_attempts()
            };
            assert_eq!(outcome, expected, "attempt {attempt}, right at {position}");
        }
    }
}

#[test]
fn zero_turns_the_limit_off_without_store_calls() {
    let mut ctx = TestContext::new();
    ctx.max_failures = Some("0".into());
    for _ in 0..50 {
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(status(&mut ctx, RIGHT), 200);
    assert_eq!(ctx.opens, 0);
    assert_eq!(ctx.statements.len(), 0);
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
            ctx.post_token(WRONG),
            (too_many_attempts(), Some(900)),
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
                    .any(|l| l.starts_with("level=warn ") && l.contains(name)),
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
    assert_eq!(ctx.opens, 1);
    assert_eq!(ctx.statements, ["count attempt", "clear attempts"]);
    // A failure that starts a window: counted, and one bounded cleanup.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.statements, ["count attempt", "prune attempts"]);
    // A failure in the same window: counted, nothing else.
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.statements, ["count attempt"]);
    // An unreadable body: one read.
    ctx.reset_calls();
    assert_eq!(ctx.post_token("{}").0, invalid_payload());
    assert_eq!(ctx.statements, ["read attempts"]);
    // Blocked: the count alone answers.
    ctx.max_failures = Some("1".into());
    ctx.reset_calls();
    assert_eq!(status(&mut ctx, RIGHT), 429);
    assert_eq!(ctx.statements, ["count attempt"]);
}

#[test]
fn ended_windows_start_over_and_are_cleaned_up_in_batches() {
    let mut ctx = TestContext::new();
    ctx.window_seconds = Some("60".into());
    for i in 0..150 {
        ctx.client_addr = Some(format!("198.51.100.{i}:1"));
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(ctx.login_attempt_rows(), 150);
    // After the window, the next new window's failure removes at most 100
    // ended rows (and its own row is new).
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.login_attempt_rows(), 150 - 100 + 1);
    ctx.client_addr = Some("192.0.2.201:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.login_attempt_rows(), 2);
    // An address whose window ended starts over at one.
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    let row = ctx.login_attempts("192.0.2.200").unwrap();
    assert_eq!((row.count, row.window_end), (1, ctx.now + 60));
}

// ---- Who the client is --------------------------------------------------

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
    assert_eq!(ctx.post_token(RIGHT), (too_many_attempts(), Some(900)));
    assert_eq!(count_of(&mut ctx, "2001:db8:aa:bb::/64"), Some(11));
    // The next /64 is another end site.
    ctx.client_addr = Some("[2001:db8:aa:bc::1]:443".into());
    assert_eq!(status(&mut ctx, RIGHT), 200);
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
fn the_client_counted_is_the_one_the_settings_name() {
    // (case, trusted_proxy_hops, client_ip_header, request headers,
    // X-Forwarded-For, the bucket counted); the peer is 10.0.0.1.
    let cases: [(
        &str,
        Option<&str>,
        Option<&str>,
        &[(&str, &str)],
        Option<&str>,
        &str,
    ); 6] = [
        // Spin appends its own spin-client-addr after one a client sends.
        (
            "a client-sent spin-client-addr",
            None,
            None,
            &[("spin-client-addr", "198.51.100.1:1")],
            None,
            "10.0.0.1",
        ),
        (
            "X-Forwarded-For without a trusted proxy",
            None,
            None,
            &[],
            Some("198.51.100.1"),
            "10.0.0.1",
        ),
        // client -> CDN (appends the client) -> ingress (appends the CDN) -> us
        (
            "two hops skip the CDN and the ingress",
            Some("2"),
            None,
            &[],
            Some("6.6.6.6, 198.51.100.20, 192.0.2.250"),
            "198.51.100.20",
        ),
        (
            "client_ip_header present",
            None,
            Some("True-Client-IP"),
            &[("true-client-ip", "203.0.113.77")],
            None,
            "203.0.113.77",
        ),
        (
            "client_ip_header unparsable",
            None,
            Some("True-Client-IP"),
            &[("true-client-ip", "not-an-ip")],
            None,
            "10.0.0.1",
        ),
        (
            "client_ip_header missing",
            None,
            Some("True-Client-IP"),
            &[],
            None,
            "10.0.0.1",
        ),
    ];
    for (case, hops, header, request_headers, forwarded_for, bucket) in cases {
        let mut ctx = TestContext::new();
        ctx.client_addr = Some("10.0.0.1:5555".into());
        ctx.trusted_proxy_hops = hops.map(String::from);
        ctx.client_ip_header = header.map(String::from);
        ctx.forwarded_for = forwarded_for.map(String::from);
        ctx.request_headers = request_headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(status(&mut ctx, WRONG), 401, "{case}");
        assert_eq!(count_of(&mut ctx, bucket), Some(1), "{case}");
    }
}

// ---- Failing closed -----------------------------------------------------

#[test]
fn a_setting_whose_provider_fails_is_never_replaced_by_its_default() {
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
        assert_eq!(ctx.post_token(RIGHT).0, internal_error(), "{setting:?}");
        let name = setting.env_name();
        assert!(
            ctx.logs
                .iter()
                .any(|l| l.starts_with("level=error ") && l.contains(name)),
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

// ---- Nothing secret in the log ------------------------------------------

#[test]
fn nothing_secret_reaches_the_log() {
    // Each scenario must log what it is about (else the check proves
    // nothing), and a line holding any secret value must be caught.
    let hash = cheap_hash("Hashed-Secret-Pass-42");
    let right = r#"{"username":"keeper","password":"Hashed-Secret-Pass-42"}"#;
    let guesses = [
        r#"{"username":"keeper","password":"Guess-Number-One"}"#,
        r#"{"username":"keeper","password":"Guess-Number-Two"}"#,
    ];
    let submitted = [
        "Hashed-Secret-Pass-42",
        "Guess-Number-One",
        "Guess-Number-Two",
    ];
    let bogus = [
        "bogus-value",
        "bogus-window",
        "bogus-flag",
        "bogus-hops",
        "bogus header",
    ];
    // (scenario, hash, store failure, the right login's and a wrong one's
    // status, the start of a line the log must hold and what it says)
    let scenarios = [
        (
            "working hash",
            hash.clone(),
            None,
            200,
            401,
            "level=warn ",
            "LOGIN_MAX_FAILURES",
        ),
        (
            "failing store",
            hash.clone(),
            Some("disk I/O error (detail-LOGSTORE)"),
            500,
            500,
            "level=error msg=\"request failed\" method=POST route=/token",
            "detail-LOGSTORE",
        ),
        (
            "unusable hash",
            format!("{hash}-UNUSABLE-MARK"),
            None,
            500,
            500,
            "level=error msg=\"request failed\" method=POST route=/token",
            "AUTH_PASSWORD_HASH",
        ),
    ];
    for (what, phc, fail_store, right_status, wrong_status, start, logged) in scenarios {
        let mut ctx = TestContext::new();
        ctx.username = Some("keeper".into());
        ctx.password_hash = Some(phc.clone());
        ctx.previous_secret = Some(PREVIOUS.into());
        ctx.max_failures = Some(bogus[0].into());
        ctx.window_seconds = Some(bogus[1].into());
        ctx.trust_forwarded_for = Some(bogus[2].into());
        ctx.trusted_proxy_hops = Some(bogus[3].into());
        ctx.client_ip_header = Some(bogus[4].into());
        ctx.fail_store = fail_store.map(str::to_string);
        ctx.never_logged.extend(submitted.map(String::from));
        ctx.never_logged.extend(bogus.map(String::from));
        ctx.never_logged.push("UNUSABLE-MARK".to_string());
        let mut issued = Vec::new();
        for round in 0..5 {
            let (outcome, _) = ctx.post_token(right);
            assert_eq!(outcome.0, right_status, "{what}: {round}");
            issued.extend(outcome.1["data"]["token"].as_str().map(String::from));
            for guess in guesses {
                assert_eq!(status(&mut ctx, guess), wrong_status, "{what}: {round}");
            }
        }
        if right_status == 200 {
            // Two failures since the last success; the limit is the default
            // (its setting is bogus): eight more are checked, then 429.
            for attempt in 3..=10 {
                assert_eq!(status(&mut ctx, guesses[0]), 401, "{what}: {attempt}");
            }
            assert_eq!(ctx.post_token(guesses[1]).0, too_many_attempts());
            assert_eq!(ctx.post_token(right).0, too_many_attempts());
        }
        // A token of the previous secret on a protected route.
        let old = token::issue(PREVIOUS.as_bytes(), NOW).unwrap();
        let listed = if fail_store.is_some() { 500 } else { 200 };
        assert_eq!(
            ctx.call("GET", "/books", Some(&old), "").0,
            listed,
            "{what}"
        );

        assert!(
            ctx.logs
                .iter()
                .any(|l| l.starts_with(start) && l.contains(logged)),
            "{what}: {:?}",
            ctx.logs
        );
        assert_eq!(ctx.leaks(), Vec::<String>::new(), "{what}");
        // The check is live: a line holding any of them is caught.
        let mut parts: Vec<String> = phc.rsplit('$').take(2).map(String::from).collect();
        parts.extend([SECRET, PREVIOUS, &old].map(String::from));
        parts.extend(issued);
        parts.extend(submitted.map(String::from));
        parts.extend(bogus.map(String::from));
        for part in parts {
            ctx.logs.push(format!("error: POST /token: {part}"));
            assert!(
                !ctx.leaks().is_empty(),
                "{what}: {part:?} is not looked for"
            );
            ctx.logs.pop();
        }
        // Dropping `ctx` checks every line once more.
    }
}
