//! `POST /token` (docs/configuration.md, "Login protection"). The token it
//! issues, and the signing secrets: tokens.rs.

use book_catalog::settings::{
    DEFAULT_LOGIN_MAX_FAILURES, DEFAULT_LOGIN_WINDOW_SECONDS, DEFAULT_PASSWORD, DEFAULT_USERNAME,
};
use serde_json::json;

use crate::support::*;

const WRONG: &str = r#"{"username":"admin","password":"wrong-password-7"}"#;

fn status(ctx: &mut TestContext, body: &str) -> u16 {
    ctx.post_token(body).0 .0
}

fn count_of(ctx: &mut TestContext, key: &str) -> Option<u64> {
    ctx.login_attempts(key).map(|attempts| attempts.count)
}

#[test]
fn login_payloads_that_are_not_a_login_object_are_400_and_not_counted() {
    let mut ctx = TestContext::new();
    let plain = r#"not json | username=admin&password=password | { | [] | ["admin","password"]
        | "admin" | 42 | null | true | {} | {"username":"admin"} | {"username":"nobody"}
        | {"password":"password"} | {"user":"admin","pass":"password"}
        | {"Username":"admin","Password":"password"} | {"username":1,"password":"password"}
        | {"username":"admin","password":12345} | {"username":null,"password":"password"}
        | {"username":"admin","password":null} | {"username":true,"password":false}
        | {"username":{"name":"admin"},"password":"password"}
        | {"username":"admin","password":["password"]}
        | {"username":"admin","password":"\ud800"}"#;
    let payloads = plain.split('|').map(|body| body.trim().to_string()).chain([
        String::new(),
        " ".into(),
        LOGIN[..LOGIN.len() - 1].into(),
        format!("{LOGIN} x"),
        format!("[{LOGIN}]"),
        format!("\u{FEFF}{LOGIN}"),
        "[".repeat(100_000),
        format!(r#"{{"username":{}"#, "[".repeat(100_000)),
    ]);
    for body in payloads {
        let shown: String = body.chars().take(60).collect();
        assert_eq!(ctx.call("POST", "/token", None, &body), invalid_payload(), "{shown:?}");
    }
    let non_utf8 = b"{\"username\":\"adm\xFFin\",\"password\":\"password\"}";
    assert_eq!(ctx.call_with("POST", "/token", None, &non_utf8[..]), invalid_payload());
    assert_eq!(ctx.call_with("POST", "/token", None, BrokenBody), invalid_payload());
    // None counted (else those past the tenth would be 429), but once its
    // client is blocked, one is refused as any login.
    assert_eq!(count_of(&mut ctx, "192.0.2.10"), None);
    ctx.set(Setting::LoginMaxFailures, "1");
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.post_token("{}").0, too_many_attempts());
}

#[test]
fn credentials_must_match_exactly_whatever_the_json_around_them() {
    let mut ctx = TestContext::new();
    // Extra fields, key order, whitespace and escapes do not matter.
    for body in [
        r#"{"username":"admin","password":"password","remember":true,"exp":1,"role":"root"}"#,
        "\n { \"password\" : \"password\" ,\t\"username\":\"admin\" } \n",
        r#"{"username":"\u0061dmin","password":"p\u0061ssword"}"#,
    ] {
        assert_eq!(ctx.call("POST", "/token", None, body), issued(&pair_token()), "{body}");
    }
    let pairs = r#"["admin", "wrong-password-1"] ["someone-else-99", "password"]
        ["someone-else-99", "wrong-password-2"] ["Admin", "password"] ["ADMIN", "password"]
        ["admin", "Password"] ["admin", "PASSWORD"] ["admin ", "password"] [" admin", "password"]
        ["admin", "password "] ["admin", "password\n"] ["admin", "passwor"] ["admin", "password1"]
        ["admin", ""] ["", "password"] ["", ""] ["admin\u0000", "password"] ["admin", "pässword"]"#;
    let pairs = serde_json::Deserializer::from_str(pairs).into_iter::<(String, String)>();
    for (index, pair) in pairs.enumerate() {
        let (username, password) = pair.expect("a pair");
        // Each from its own address: more than the failed-login limit.
        ctx.client_addr = Some(format!("198.51.100.{index}:5000"));
        let body = json!({"username": username, "password": password}).to_string();
        let outcome = ctx.call("POST", "/token", None, &body);
        assert_eq!(outcome, invalid_credentials(), "{username:?} / {password:?}");
    }
    // Checked when `ctx` drops.
    let submitted = ["wrong-password-1", "wrong-password-2", "someone-else-99"];
    ctx.never_logged.extend(submitted.map(String::from));
}

#[test]
fn configured_credentials_replace_the_defaults() {
    // A configured username keeps the default password, and vice versa. Per
    // row: username and password set ("-": unset), then username/password
    // pairs refused.
    let table = "librarian Corr3ct-Horse-Battery admin/password librarian/password
                     admin/Corr3ct-Horse-Battery librarian/corr3ct-horse-battery;
                 librarian - admin/password;
                 - Only-The-Password-Set admin/password;
                 - - Admin/password";
    let body = |username, password| json!({"username": username, "password": password});
    for row in table.split(';') {
        let words: Vec<&str> = row.split_whitespace().collect();
        let [username, password] = [words[0], words[1]].map(|set| (set != "-").then_some(set));
        let mut ctx = TestContext::new();
        let settings = [(Setting::AuthUsername, username), (Setting::AuthPassword, password)];
        for (setting, value) in settings {
            value.inspect(|value| ctx.set(setting, value));
        }
        let right = body(username.unwrap_or("admin"), password.unwrap_or("password"));
        assert_eq!(status(&mut ctx, &right.to_string()), 200, "{row}");
        for pair in &words[2..] {
            let (username, password) = pair.split_once('/').expect("username/password");
            let outcome = ctx.post_token(&body(username, password).to_string()).0;
            assert_eq!(outcome, invalid_credentials(), "{row}: {pair}");
        }
        // Each login, right or refused, warns of the default password by its
        // setting's name, never by its value (the word itself is in the message).
        let warnings = ctx.logs.iter().filter(|line| line.contains("default password"));
        let logins = if password.is_none() { words.len() - 1 } else { 0 };
        assert_eq!(warnings.clone().count(), logins, "{row}: {:?}", ctx.logs);
        let leaks = ["\"password\"", "'password'", "=password", ": password\"", "password/"];
        for warning in warnings {
            let named = warning.contains("AUTH_PASSWORD");
            assert!(named && !leaks.iter().any(|leak| warning.contains(leak)), "{warning}");
        }
    }
}

/// The rows (Spin variable, environment name, default) of the settings table
/// of `file`, the one whose header has "Spin variable".
fn documented_settings(file: &str) -> Vec<(String, String, String)> {
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cells = |line: &str| -> Vec<String> {
        let line = line.trim().trim_start_matches('|').trim_end_matches('|');
        line.split('|').map(|cell| cell.trim().to_string()).collect()
    };
    let mut lines = text.lines();
    let header =
        lines.by_ref().map(cells).find(|header| header.iter().any(|c| c == "Spin variable"));
    let header = header.unwrap_or_else(|| panic!("{file}: no \"Spin variable\" column"));
    let column = |name: &str| {
        let position = header.iter().position(|cell| cell == name);
        position.unwrap_or_else(|| panic!("{file}: no {name:?} column in {header:?}"))
    };
    let [variable, env, default] = ["Spin variable", "Environment", "Default"].map(column);
    let code = |cell: &str| cell.trim_matches('`').to_string();
    let rows = lines.skip(1).take_while(|line| line.starts_with('|')); // after |---|
    rows.map(|line| {
        let row = cells(line);
        assert_eq!(row.len(), header.len(), "{file}: {line}");
        (code(&row[variable]), code(&row[env]), row[default].clone())
    })
    .collect()
}

#[test]
fn the_documented_settings_are_the_settings_with_their_login_defaults() {
    let mut settings: Vec<(&str, &str)> =
        Setting::ALL.iter().map(|s| (s.variable_name(), s.env_name())).collect();
    settings.sort_unstable();
    let file = "docs/configuration.md";
    let table = documented_settings(file);
    let mut documented: Vec<(&str, &str)> =
        table.iter().map(|(variable, env, _)| (variable.as_str(), env.as_str())).collect();
    documented.sort_unstable();
    assert_eq!(documented, settings, "{file}: the settings table");
    // The documented defaults: the first `code` of the Default cell.
    let default_of = |name: &str| -> String {
        let (_, _, cell) = table.iter().find(|(v, _, _)| v == name).unwrap();
        let code = cell.split('`').nth(1);
        code.unwrap_or_else(|| panic!("{file}: no default for {name}: {cell}")).to_string()
    };
    assert_eq!(default_of("auth_username"), DEFAULT_USERNAME, "{file}");
    assert_eq!(default_of("auth_password"), DEFAULT_PASSWORD, "{file}");
    assert_eq!(default_of("login_max_failures"), DEFAULT_LOGIN_MAX_FAILURES.to_string(), "{file}");
    let window = default_of("login_window_seconds");
    assert_eq!(window, DEFAULT_LOGIN_WINDOW_SECONDS.to_string(), "{file}");
    // And they are what a login meets with nothing configured.
    let mut ctx = TestContext::new();
    let username = default_of("auth_username");
    let documented = json!({"username": username, "password": default_of("auth_password")});
    assert_eq!(status(&mut ctx, &documented.to_string()), 200, "{file}");
}

/// Without the default password's warning; an unusable hash (which are:
/// src/settings/password_hash.rs) makes every login 500, with a log line that
/// never holds the hash or a part of it.
#[test]
fn a_password_hash_replaces_the_password_and_an_unusable_one_makes_every_login_500() {
    let mut ctx = TestContext::new();
    let hash = cheap_hash("Hashed pass 1");
    ctx.set(Setting::AuthUsername, "librarian");
    ctx.set(Setting::AuthPasswordHash, &hash);
    let right = r#"{"username":"librarian","password":"Hashed pass 1"}"#;
    assert_eq!(status(&mut ctx, right), 200);
    let wrong = r#"{"username":"librarian","password":"Hashed pass 2"}
        | {"username":"librarian","password":"password"} | {"username":"admin","password":"Hashed pass 1"}"#;
    for wrong in wrong.split('|').map(str::trim) {
        assert_eq!(status(&mut ctx, wrong), 401, "{wrong}");
    }
    // A plain password set beside it is ignored.
    ctx.set(Setting::AuthPassword, "plain-password-9");
    assert_eq!(status(&mut ctx, r#"{"username":"librarian","password":"plain-password-9"}"#), 401);
    assert_eq!(status(&mut ctx, right), 200);
    assert!(!ctx.logged("", "default password"), "{:?}", ctx.logs);
    assert_eq!(ctx.leaks(), Vec::<String>::new());
    let corrupt = hash[..hash.len() - 10].to_string() + "!!!!!!!!!!";
    for bad in ["not-a-phc-string-at-all".to_string(), corrupt] {
        ctx.set(Setting::AuthPasswordHash, &bad);
        for body in [right, LOGIN, WRONG, "{}"] {
            ctx.logs.clear();
            assert_eq!(ctx.post_token(body).0, internal_error(), "{bad}: {body}");
            assert!(ctx.logged("level=error ", "AUTH_PASSWORD_HASH"), "{:?}", ctx.logs);
            assert_eq!(ctx.leaks(), Vec::<String>::new());
        }
    }
}

/// Ten failures of a client (of an IPv6 one, from any addresses of its /64)
/// block its every login, right ones too, until 900 s after the first.
#[test]
fn by_default_ten_failures_block_the_client_until_900_seconds_after_the_first() {
    let mut ctx = TestContext::new();
    for attempt in 1..=10 {
        ctx.client_addr = Some(format!("[2001:db8:aa:bb::{attempt:x}]:443"));
        assert_eq!(ctx.post_token(WRONG).0, invalid_credentials(), "{attempt}");
        ctx.now += if attempt == 1 { 100 } else { 0 };
    }
    ctx.client_addr = Some("[2001:db8:aa:bb:ffff:1:2:3]:443".into());
    for attempt in 11..=200 {
        let body = if [11, 12, 50, 200].contains(&attempt) { LOGIN } else { WRONG };
        assert_eq!(ctx.post_token(body), (too_many_attempts(), Some(800)), "{attempt}");
    }
    assert_eq!(count_of(&mut ctx, "2001:db8:aa:bb::/64"), Some(200));
    ctx.now += 799;
    assert_eq!(ctx.post_token(LOGIN), (too_many_attempts(), Some(1)));
    // The next /64 is another end site.
    ctx.client_addr = Some("[2001:db8:aa:bc::1]:443".into());
    assert_eq!(status(&mut ctx, LOGIN), 200);
    ctx.now += 1;
    ctx.client_addr = Some("[2001:db8:aa:bb::1]:443".into());
    assert_eq!(status(&mut ctx, LOGIN), 200);
}

#[test]
fn attempts_are_counted_before_any_password_is_checked() {
    // Attempts of this client already counted and still being checked
    // (another instance, another replica): with ten, an eleventh is refused
    // unchecked, even with the right password, and counted too; with nine,
    // the tenth is checked, and a right one clears the count.
    for (in_flight, answer) in [(10, too_many_attempts()), (9, issued(&pair_token()))] {
        let mut ctx = TestContext::new();
        for _ in 0..in_flight {
            ctx.count_login_attempt("192.0.2.10");
        }
        assert_eq!(ctx.post_token(LOGIN).0, answer);
        assert_eq!(count_of(&mut ctx, "192.0.2.10"), (in_flight == 10).then_some(11));
    }
}

#[test]
fn invalid_settings_warn_and_use_the_defaults() {
    for (max, window, hops, header) in [
        ("ten", "15m", "maybe", "two words"),
        ("-1", "0", "-2", "x:y"),
        ("99999999999", "31536001", "33", ""),
    ] {
        let mut ctx = TestContext::new();
        ctx.set(Setting::LoginMaxFailures, max);
        ctx.set(Setting::LoginWindowSeconds, window);
        ctx.set(Setting::TrustedProxyHops, hops);
        ctx.set(Setting::ClientIpHeader, header);
        ctx.request_headers = vec![("x-forwarded-for".into(), "198.51.100.77".into())];
        for _ in 0..10 {
            assert_eq!(status(&mut ctx, WRONG), 401, "{max} {window}");
        }
        assert_eq!(ctx.post_token(WRONG), (too_many_attempts(), Some(900)), "{max} {window}");
        let mut names = vec!["LOGIN_MAX_FAILURES", "LOGIN_WINDOW_SECONDS", "TRUSTED_PROXY_HOPS"];
        names.extend((!header.is_empty()).then_some("CLIENT_IP_HEADER"));
        for name in names {
            assert!(ctx.logged("level=warn ", name), "{name}: {:?}", ctx.logs);
        }
        // No trusted proxy: the count is the peer's.
        assert_eq!(count_of(&mut ctx, "192.0.2.10"), Some(11));
    }
}

#[test]
fn what_each_login_costs_the_store() {
    let mut ctx = TestContext::new();
    // A success with no failures on record: counted, then cleared; a failure
    // that starts a window: counted, and one bounded cleanup; one in the same
    // window: counted; an unreadable body: one read; blocked: the count alone;
    // with the limit off (0), blocked no more: no store at all.
    for (max_failures, body, status, statements) in [
        (None, LOGIN, 200, &["count attempt", "clear attempts"][..]),
        (None, WRONG, 401, &["count attempt", "prune attempts"]),
        (None, WRONG, 401, &["count attempt"]),
        (None, "{}", 400, &["read attempts"]),
        (Some("1"), LOGIN, 429, &["count attempt"]),
        (Some("0"), WRONG, 401, &[]),
        (None, LOGIN, 200, &[]),
    ] {
        max_failures.inspect(|max| ctx.set(Setting::LoginMaxFailures, max));
        ctx.reset_calls();
        assert_eq!(ctx.post_token(body).0 .0, status, "{body}");
        let opens = usize::from(!statements.is_empty());
        assert_eq!((ctx.opens, &ctx.statements()[..]), (opens, statements), "{body}");
    }
}

#[test]
fn ended_windows_start_over_and_are_cleaned_up_in_batches() {
    let mut ctx = TestContext::new();
    ctx.set(Setting::LoginWindowSeconds, "60");
    for i in 0..150 {
        ctx.client_addr = Some(format!("198.51.100.{i}:1"));
        assert_eq!(status(&mut ctx, WRONG), 401);
    }
    assert_eq!(ctx.rows("login_attempts"), 150);
    // After the window, the next new window's failure removes at most 100
    // ended rows (and its own row is new).
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.rows("login_attempts"), 150 - 100 + 1);
    ctx.client_addr = Some("192.0.2.201:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    assert_eq!(ctx.rows("login_attempts"), 2);
    // An address whose window ended starts over at one.
    ctx.now += 61;
    ctx.client_addr = Some("192.0.2.200:1".into());
    assert_eq!(status(&mut ctx, WRONG), 401);
    let row = ctx.login_attempts("192.0.2.200").unwrap();
    assert_eq!((row.count, row.window_end), (1, ctx.now + 60));
}

/// How each address and header is read: src/login/client.rs. Spin appends
/// its own `spin-client-addr` after one a client sends.
#[test]
fn the_client_counted_is_the_one_the_settings_name() {
    // From the peer 10.0.0.1:5555: settings (hops: trusted_proxy_hops, trust:
    // trust_forwarded_for, header: client_ip_header) | a header (XFF:
    // X-Forwarded-For) | the client counted
    let table = "
                              | spin-client-addr=198.51.100.1:1         | 10.0.0.1
                              | XFF=198.51.100.1                        | 10.0.0.1
        hops=1                | XFF=203.0.113.1, 198.51.100.7           | 198.51.100.7
        trust=true            | XFF=203.0.113.50, 198.51.100.9          | 198.51.100.9
        trust=true hops=0     | XFF=203.0.113.50, 198.51.100.9          | 10.0.0.1
        header=True-Client-IP | true-client-ip=203.0.113.77             | 203.0.113.77
        header=True-Client-IP |                                         | 10.0.0.1";
    for row in table.trim_matches('\n').lines() {
        let [settings, header, counted] = cells(row);
        let mut ctx = TestContext::new();
        ctx.client_addr = Some("10.0.0.1:5555".into());
        for setting in settings.split_whitespace() {
            let (name, value) = setting.split_once('=').unwrap();
            let setting = match name {
                "hops" => Setting::TrustedProxyHops,
                "trust" => Setting::TrustForwardedFor,
                _ => Setting::ClientIpHeader,
            };
            ctx.set(setting, value);
        }
        if let Some((name, value)) = header.split_once('=') {
            let name = if name == "XFF" { "x-forwarded-for" } else { name };
            ctx.request_headers = vec![(name.into(), value.into())];
        }
        assert_eq!(status(&mut ctx, WRONG), 401, "{row}");
        assert_eq!(count_of(&mut ctx, counted), Some(1), "{row}");
        if settings == "trust=true" {
            // The old setting is one hop, with a line saying so.
            let said = |l: &String| l.contains("TRUST_FORWARDED_FOR") && l.contains("hops=1");
            assert!(ctx.logs.iter().any(said), "{:?}", ctx.logs);
        }
    }
}

#[test]
fn a_setting_that_fails_is_never_replaced_by_a_default() {
    // Every setting a login reads: the default credentials never sign.
    let unread = [
        Setting::SecretTokenPrevious,
        Setting::RequireIfMatch,
        Setting::CorsAllowedOrigins,
        Setting::HistoryDays,
        Setting::ImportMaxBytes,
    ];
    for setting in Setting::ALL.into_iter().filter(|setting| !unread.contains(setting)) {
        let mut ctx = TestContext::new();
        ctx.failing_setting = Some(setting);
        assert_eq!(ctx.post_token(LOGIN).0, internal_error(), "{setting:?}");
        assert!(ctx.logged("level=error ", setting.env_name()), "{setting:?}: {:?}", ctx.logs);
    }
    // A protected route whose secret cannot be read: 500, not 401.
    let mut ctx = TestContext::new();
    ctx.failing_setting = Some(Setting::SecretToken);
    assert_eq!(ctx.authed("GET", "/books", ""), internal_error());
}

/// Logins that log (else the check proves nothing) with every secret set:
/// no line holds one, and a line holding any would be caught.
#[test]
fn nothing_secret_reaches_the_log() {
    let hash = cheap_hash("Hashed-Secret-Pass-42");
    let right = r#"{"username":"keeper","password":"Hashed-Secret-Pass-42"}"#;
    let guess = r#"{"username":"keeper","password":"Guess-Number-One"}"#;
    let submitted = ["Hashed-Secret-Pass-42", "Guess-Number-One"];
    let bogus = [
        (Setting::LoginMaxFailures, "bogus-value"),
        (Setting::LoginWindowSeconds, "bogus-window"),
        (Setting::TrustForwardedFor, "bogus-flag"),
        (Setting::TrustedProxyHops, "bogus-hops"),
        (Setting::ClientIpHeader, "bogus header"),
    ];
    let mut ctx = TestContext::new();
    ctx.set(Setting::AuthUsername, "keeper");
    ctx.set(Setting::AuthPasswordHash, &hash);
    ctx.set(Setting::SecretTokenPrevious, PREVIOUS);
    for (setting, value) in bogus {
        ctx.set(setting, value);
        ctx.never_logged.push(value.into());
    }
    ctx.never_logged.extend(submitted.map(String::from));
    let (issued, _) = ctx.post_token(right);
    let issued = issued.1["data"]["token"].as_str().expect("a token").to_string();
    assert_eq!(status(&mut ctx, guess), 401);
    // A token of the previous secret on a protected route.
    let old = forge(HS256_HEADER, &format!(r#"{{"exp":{}}}"#, NOW + 900), PREVIOUS.as_bytes());
    assert_eq!(ctx.call("GET", "/books", Some(&old), "").0, 200);
    // A store that fails: no login passes uncounted, and the log says why.
    ctx.fail_store = Some("disk I/O error (detail-LOGSTORE)".into());
    assert_eq!([right, guess].map(|body| status(&mut ctx, body)), [500, 500]);
    let failed = "level=error msg=\"request failed\" method=POST route=/token";
    for (start, logged) in [("level=warn ", "LOGIN_MAX_FAILURES"), (failed, "detail-LOGSTORE")] {
        assert!(ctx.logged(start, logged), "{logged}: {:?}", ctx.logs);
    }
    assert_eq!(ctx.leaks(), Vec::<String>::new());
    // The check is live: a line holding any of them is caught.
    let mut parts: Vec<&str> = hash.rsplit('$').take(2).collect();
    parts.extend([SECRET, PREVIOUS, &old, &issued]);
    parts.extend(submitted.into_iter().chain(bogus.map(|(_, value)| value)));
    for part in parts {
        ctx.logs.push(format!("error: POST /token: {part}"));
        assert!(!ctx.leaks().is_empty(), "{part:?} is not looked for");
        ctx.logs.pop();
    }
}
