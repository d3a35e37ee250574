//! Tokens (docs/api.md, "Tokens"): what `POST /token` issues, how long it
//! is accepted on the protected routes, every kind of token they must
//! refuse, and the signing secrets: missing, empty, shorter than 32 bytes,
//! rotated, and the previous secret (`secret_token_previous`). Who may log
//! in, and the failed-login limit, are in core_login.rs.


use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use book_catalog::token::{self, TokenError};
use serde_json::json;
use crate::support::*;

#[test]
fn issued_token_is_exactly_hs256_with_exp_now_plus_900() {
    // The whole envelope, its token forged independently by hand
    // (`support::forge`): the header `{"alg":"HS256","typ":"JWT"}`, the
    // claims `{"exp": now + 900}`, base64url without padding, HMAC-SHA256
    // under the secret.
    let mut ctx = TestContext::new();
    let login = r#"{"username":"admin","password":"password"}"#;
    assert_eq!(
        ctx.call("POST", "/token", None, login),
        issued(&valid_token())
    );
    assert_eq!(token::issue(b"", NOW), Err(TokenError::EmptyKey));
    assert_eq!(
        token::verify(valid_token().as_bytes(), b"", NOW),
        Err(TokenError::EmptyKey)
    );
}

#[test]
fn token_verify_names_the_reason() {
    let key = SECRET.as_bytes();
    let check = |token: &str| token::verify(token.as_bytes(), key, NOW);
    assert_eq!(check(&valid_token()), Ok(()));
    assert_eq!(
        check(&token_with_exp(&NOW.to_string())),
        Err(TokenError::Expired)
    );
    assert_eq!(
        check(&forge(HS256_HEADER, r#"{"exp":1700000900}"#, b"other-key")),
        Err(TokenError::BadSignature)
    );
    assert_eq!(
        check(&forge(
            r#"{"alg":"HS512","typ":"JWT"}"#,
            r#"{"exp":1700000900}"#,
            key
        )),
        Err(TokenError::UnsupportedAlgorithm)
    );
    assert_eq!(
        check(&forge(HS256_HEADER, "{}", key)),
        Err(TokenError::MissingExpiry)
    );
    assert_eq!(check("a.b"), Err(TokenError::Malformed));
}

#[test]
fn token_is_accepted_until_exp_exclusive() {
    let mut ctx = TestContext::new();
    let token = ctx.login();
    let listed = listed(json!([]));
    for now in [NOW, NOW + 1, NOW + 899] {
        ctx.now = now;
        assert_eq!(
            ctx.call("GET", "/books", Some(&token), ""),
            listed,
            "at {now}"
        );
    }
    // `exp` exactly now is expired: no leeway.
    for now in [NOW + 900, NOW + 901, NOW + 3600, u64::MAX] {
        ctx.now = now;
        assert_eq!(
            ctx.call("GET", "/books", Some(&token), ""),
            invalid_token(),
            "at {now}"
        );
    }
}

/// Every token here must be refused with 401 "Invalid token" on every
/// protected route, and the store must never be opened.
fn assert_all_refused(cases: &[(String, Vec<u8>)]) {
    let mut ctx = TestContext::new();
    // Control: the harness' own valid token is accepted.
    assert_eq!(ctx.call("GET", "/books", Some(&valid_token()), "").0, 200);
    ctx.reset_calls();
    for (label, token) in cases {
        for (method, path, body) in PROTECTED {
            assert_eq!(
                ctx.call_raw(method, path, Some(token), body.as_bytes()),
                invalid_token(),
                "{label}: {method} {path}"
            );
        }
    }
    assert_eq!(ctx.opens, 0, "no refused request reaches the store");
}

fn case(label: &str, token: impl Into<Vec<u8>>) -> (String, Vec<u8>) {
    (label.to_string(), token.into())
}

fn claims_900() -> String {
    format!(r#"{{"exp":{}}}"#, NOW + 900)
}

#[test]
fn expired_and_tampered_tokens_are_refused() {
    let valid = valid_token();
    let parts: Vec<&str> = valid.split('.').collect();
    let later_claims = b64(format!(r#"{{"exp":{}}}"#, NOW + 90_000));
    let mut flipped_signature = parts[2].to_string();
    let first = if flipped_signature.starts_with('A') {
        "B"
    } else {
        "A"
    };
    flipped_signature.replace_range(0..1, first);

    assert_all_refused(&[
        case("exp zero", token_with_exp("0")),
        case(
            "issued a day ago",
            token::issue(SECRET.as_bytes(), NOW - 86_400).unwrap(),
        ),
        case(
            "wrong key",
            forge(
                HS256_HEADER,
                &claims_900(),
                b"another-secret-of-a-decent-length-xyz",
            ),
        ),
        case(
            "secret with a byte more",
            forge(HS256_HEADER, &claims_900(), format!("{SECRET}x").as_bytes()),
        ),
        case(
            "tampered claims, signature kept",
            format!("{}.{}.{}", parts[0], later_claims, parts[2]),
        ),
        case(
            "tampered signature",
            format!("{}.{}.{}", parts[0], parts[1], flipped_signature),
        ),
        case(
            "signature of another token",
            format!(
                "{}.{}.{}",
                parts[0],
                parts[1],
                token_with_exp(&(NOW + 901).to_string())
                    .rsplit('.')
                    .next()
                    .unwrap()
            ),
        ),
        case("truncated signature", valid[..valid.len() - 4].to_string()),
        case("empty signature", format!("{}.{}.", parts[0], parts[1])),
        case(
            "signature over the claims only",
            format!(
                "{}.{}.{}",
                parts[0],
                parts[1],
                sign(parts[1], SECRET.as_bytes())
            ),
        ),
    ]);
}

#[test]
fn only_hs256_is_accepted() {
    let claims = claims_900();
    let unsigned = |header: &str| format!("{}.{}.", b64(header), b64(&claims));
    let signed = |header: &str| forge(header, &claims, SECRET.as_bytes());
    assert_all_refused(&[
        case("alg none", unsigned(r#"{"alg":"none","typ":"JWT"}"#)),
        case("alg None", unsigned(r#"{"alg":"None","typ":"JWT"}"#)),
        case("alg NONE", unsigned(r#"{"alg":"NONE","typ":"JWT"}"#)),
        case("alg nOnE", unsigned(r#"{"alg":"nOnE"}"#)),
        case(
            "alg none, signed anyway",
            signed(r#"{"alg":"none","typ":"JWT"}"#),
        ),
        case("alg RS256", signed(r#"{"alg":"RS256","typ":"JWT"}"#)),
        case("alg ES256", signed(r#"{"alg":"ES256","typ":"JWT"}"#)),
        case("alg PS256", signed(r#"{"alg":"PS256","typ":"JWT"}"#)),
        case("alg HS384", signed(r#"{"alg":"HS384","typ":"JWT"}"#)),
        case("alg HS512", signed(r#"{"alg":"HS512","typ":"JWT"}"#)),
        case("alg hs256", signed(r#"{"alg":"hs256","typ":"JWT"}"#)),
        case(
            "alg with a space",
            signed(r#"{"alg":"HS256 ","typ":"JWT"}"#),
        ),
        case("alg missing", signed(r#"{"typ":"JWT"}"#)),
        case("alg null", signed(r#"{"alg":null,"typ":"JWT"}"#)),
        case("alg a number", signed(r#"{"alg":256,"typ":"JWT"}"#)),
        case("alg an array", signed(r#"{"alg":["HS256"],"typ":"JWT"}"#)),
        case("alg an object", signed(r#"{"alg":{"name":"HS256"}}"#)),
        case(
            "crit header",
            signed(r#"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#),
        ),
        case("empty crit header", signed(r#"{"alg":"HS256","crit":[]}"#)),
        case("empty header object", signed("{}")),
    ]);
}

#[test]
fn claims_without_a_future_numeric_exp_are_refused() {
    let signed = |claims: &str| forge(HS256_HEADER, claims, SECRET.as_bytes());
    let past_fraction = format!("{}.5", NOW - 1);
    let now_as_float = format!("{NOW}.0");
    assert_all_refused(&[
        case("no exp", signed("{}")),
        case(
            "no exp, other claims",
            signed(r#"{"sub":"admin","iat":1700000000}"#),
        ),
        case(
            "EXP upper case",
            signed(&format!(r#"{{"EXP":{}}}"#, NOW + 900)),
        ),
        case(
            "exp a string",
            signed(&format!(r#"{{"exp":"{}"}}"#, NOW + 900)),
        ),
        case("exp null", signed(r#"{"exp":null}"#)),
        case("exp true", signed(r#"{"exp":true}"#)),
        case(
            "exp an array",
            signed(&format!(r#"{{"exp":[{}]}}"#, NOW + 900)),
        ),
        case("exp an object", signed(r#"{"exp":{"seconds":9999999999}}"#)),
        case("exp negative", signed(r#"{"exp":-1}"#)),
        case(
            "exp very negative",
            signed(r#"{"exp":-9223372036854775808}"#),
        ),
        case("exp negative fraction", signed(r#"{"exp":-1.5}"#)),
        case("exp huge negative float", signed(r#"{"exp":-1e300}"#)),
        case(
            "exp fractional, in the past",
            signed(&format!(r#"{{"exp":{past_fraction}}}"#)),
        ),
        case(
            "exp now written as a float",
            signed(&format!(r#"{{"exp":{now_as_float}}}"#)),
        ),
        case("exp out of f64 range", signed(r#"{"exp":1e400}"#)),
        case(
            "claims not an object: array",
            signed(&format!("[{}]", NOW + 900)),
        ),
        case(
            "claims not an object: number",
            signed(&(NOW + 900).to_string()),
        ),
        case("claims not an object: string", signed(r#""exp""#)),
        case("claims null", signed("null")),
        case("claims not JSON", signed("exp=1700000900")),
        case("claims truncated JSON", signed(r#"{"exp":1700000900"#)),
        case("claims empty", signed("")),
    ]);
}

#[test]
fn tokens_of_our_secret_with_a_future_exp_are_valid_whatever_else_they_hold() {
    // Fractional and huge `exp` values, other header and claim fields, and
    // whitespace around the header value (RFC 9110 section 5.5: not part of it).
    let mut ctx = TestContext::new();
    let mut tokens: Vec<String> = [
        format!("{NOW}.5"),
        format!("{}.25", NOW + 10),
        "1e300".to_string(),
        "1.7976931348623157e308".to_string(),
        "18446744073709551615".to_string(),
        "99999999999999999999999".to_string(),
        format!("{}", NOW + 1),
    ]
    .iter()
    .map(|exp| token_with_exp(exp))
    .collect();
    for (header, claims) in [
        (r#"{"alg":"HS256"}"#.to_string(), claims_900()),
        (r#"{"typ":"JWT","alg":"HS256"}"#.to_string(), claims_900()),
        (
            r#"{"alg":"HS256","typ":"JWT","kid":"k1"}"#.to_string(),
            claims_900(),
        ),
        (
            HS256_HEADER.to_string(),
            format!(r#"{{"sub":"admin","exp":{},"iat":{NOW}}}"#, NOW + 900),
        ),
    ] {
        tokens.push(forge(&header, &claims, SECRET.as_bytes()));
    }
    tokens.push(format!("  {}\t", valid_token()));
    for token in &tokens {
        let outcome = ctx.call("GET", "/books", Some(token), "");
        assert_eq!(outcome, listed(json!([])), "{token:?}");
    }
    // The fractional one expires once its time has passed.
    ctx.now = NOW + 1;
    assert_eq!(
        ctx.call("GET", "/books", Some(&tokens[0]), ""),
        invalid_token()
    );
}

#[test]
fn malformed_tokens_are_refused() {
    let valid = valid_token();
    let parts: Vec<&str> = valid.split('.').collect();
    let (h, c, s) = (parts[0], parts[1], parts[2]);
    let with_space = format!("{}.{} {}.{}", h, &c[..5], &c[5..], s);
    let with_newline = format!("{}.{}\n{}.{}", h, &c[..5], &c[5..], s);
    let with_tab = format!("{h}.{c}.{}\t{}", &s[..5], &s[5..]);
    let mut non_utf8 = valid.clone().into_bytes();
    non_utf8.push(0xFF);
    let mut non_utf8_inside = valid.clone().into_bytes();
    non_utf8_inside.insert(h.len() + 2, 0xC3);
    let signed = |header: &str| forge(header, &claims_900(), SECRET.as_bytes());
    assert_all_refused(&[
        case("one segment", h.to_string()),
        case("two segments", format!("{h}.{c}")),
        case("four segments", format!("{valid}.{s}")),
        case("trailing dot", format!("{valid}.")),
        case("leading dot", format!(".{valid}")),
        case("dots only", ".."),
        case("three dots", "..."),
        case("empty header", format!(".{c}.{s}")),
        case("empty claims", format!("{h}..{s}")),
        case("signature padded with =", format!("{valid}=")),
        case(
            "signature with a = inside",
            format!("{h}.{c}.{}={}", &s[..20], &s[20..]),
        ),
        case(
            "base64 with + and /",
            format!("{h}.{c}.{}", s.replace('-', "+").replace('_', "/") + "+/"),
        ),
        case("space inside", with_space),
        case("newline inside", with_newline),
        case("tab inside", with_tab),
        case("Bearer prefix", format!("Bearer {valid}")),
        case("bearer prefix", format!("bearer {valid}")),
        case("BEARER prefix", format!("BEARER {valid}")),
        case("Token prefix", format!("Token {valid}")),
        case("Bearer without a space", format!("Bearer{valid}")),
        case("two tokens joined", format!("{valid}, {valid}")),
        case("token in quotes", format!("\"{valid}\"")),
        case("non-UTF-8 byte after the token", non_utf8),
        case("non-UTF-8 byte inside", non_utf8_inside),
        case("only non-UTF-8 bytes", vec![0xFF, 0xFE, 0xFD]),
        case("NUL byte", format!("{valid}\0")),
        case("garbage", "not-a-token"),
        case("header JSON array", signed("[]")),
        case("header JSON array with alg", signed(r#"["alg","HS256"]"#)),
        case("header JSON null", signed("null")),
        case("header not JSON", signed("HS256")),
        case("header JSON string", signed(r#""HS256""#)),
        case("header not base64", format!("{}.{c}.{s}", "e30!")),
    ]);
}

#[test]
fn padding_on_any_segment_is_malformed() {
    // Header and claims whose lengths are not multiples of 3, so that the
    // padded form differs; each padded token is signed over its own text, so
    // the `=` is the only fault. The unpadded controls are accepted.
    let header = r#"{"alg":"HS256","typ":"JWT","x":12}"#; // 34 bytes
    let claims = format!(r#"{{"exp":{},"a":1}}"#, NOW + 900); // 24 bytes
    let claims = format!("{claims} "); // 25 bytes
    assert_ne!(header.len() % 3, 0);
    assert_ne!(claims.len() % 3, 0);
    let key = SECRET.as_bytes();
    let (h, hp) = (b64(header), URL_SAFE.encode(header));
    let (c, cp) = (b64(&claims), URL_SAFE.encode(&claims));
    assert!(hp.ends_with('=') && cp.ends_with('='));

    let mut ctx = TestContext::new();
    assert_eq!(
        ctx.call("GET", "/books", Some(&sign_segments(&h, &c, key)), ""),
        listed(json!([])),
        "unpadded control"
    );
    let padded_signature = {
        let t = sign_segments(&h, &c, key);
        let signature = t.rsplit('.').next().unwrap().to_string();
        let raw = b64_decode(&signature);
        format!("{h}.{c}.{}", URL_SAFE.encode(raw))
    };
    assert!(padded_signature.ends_with('='));
    assert_all_refused(&[
        case("padded header", sign_segments(&hp, &c, key)),
        case("padded claims", sign_segments(&h, &cp, key)),
        case("padded header and claims", sign_segments(&hp, &cp, key)),
        case("padded signature", padded_signature),
    ]);
}

#[test]
fn standard_base64_alphabet_is_malformed() {
    // A header whose base64url form holds '-' or '_': the same bytes in the
    // standard alphabet hold '+' or '/'. Each variant is signed over its own
    // text, so the alphabet is the only fault.
    let key = SECRET.as_bytes();
    let claims = b64(claims_900());
    let mut ctx = TestContext::new();
    let mut refused = Vec::new();
    for filler in ["~~~", "???", "~~~~", "????", "~~~~~", "?????"] {
        let header = format!(r#"{{"alg":"HS256","x":"{filler}"}}"#);
        let url_safe = URL_SAFE_NO_PAD.encode(&header);
        let standard = STANDARD_NO_PAD.encode(&header);
        if url_safe == standard {
            continue;
        }
        assert_eq!(
            ctx.call(
                "GET",
                "/books",
                Some(&sign_segments(&url_safe, &claims, key)),
                ""
            )
            .0,
            200,
            "base64url control for {filler}"
        );
        refused.push(case(
            &format!("standard alphabet header {standard}"),
            sign_segments(&standard, &claims, key),
        ));
    }
    assert!(
        refused.iter().any(|(label, _)| label.contains('+'))
            && refused.iter().any(|(label, _)| label.contains('/')),
        "both '+' and '/' are exercised: {refused:?}"
    );
    assert_all_refused(&refused);
}

#[test]
fn missing_or_blank_header_is_token_required() {
    let mut ctx = TestContext::new();
    for (method, path, body) in PROTECTED {
        for header in [
            None,
            Some(""),
            Some(" "),
            Some("   "),
            Some("\t"),
            Some(" \t \t "),
        ] {
            assert_eq!(
                ctx.call(method, path, header, body),
                token_required(),
                "{method} {path} {header:?}"
            );
        }
    }
    assert_eq!(ctx.opens, 0);
}

#[test]
fn a_one_mebibyte_header_is_refused_fast() {
    let mut ctx = TestContext::new();
    let huge = "a".repeat(1 << 20);
    let huge_dotted = format!("{}.{}.{}", "e".repeat(1 << 19), "f".repeat(1 << 19), "g");
    let huge_valid_prefix = format!("{}{}", valid_token(), "A".repeat(1 << 20));
    let start = Instant::now();
    for header in [&huge, &huge_dotted, &huge_valid_prefix] {
        assert_eq!(ctx.call("GET", "/books", Some(header), ""), invalid_token());
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(ctx.opens, 0);
}

#[test]
fn an_unusable_secret_signs_nothing_and_verifies_nothing() {
    let short = "0123456789abcdef0123456789abcde"; // 31 bytes
    let empty_key = forge(HS256_HEADER, &claims_900(), b"");
    let short_key = forge(HS256_HEADER, &claims_900(), short.as_bytes());
    let previous = token::issue(PREVIOUS.as_bytes(), NOW).unwrap();
    // (case, secret_token, secret_token_previous, whether a login is issued,
    // the tokens refused on every protected route, what the log names)
    let cases = [
        (
            "no secret",
            None,
            None,
            false,
            vec![valid_token(), empty_key.clone()],
            "secret",
        ),
        (
            "an empty secret",
            Some(""),
            None,
            false,
            vec![empty_key.clone()],
            "SECRET_TOKEN",
        ),
        (
            "a secret under 32 bytes",
            Some(short),
            None,
            false,
            vec![short_key.clone()],
            "shorter than 32 bytes (RFC 7518",
        ),
        (
            "a previous secret under 32 bytes",
            Some(SECRET),
            Some(short),
            true,
            vec![short_key.clone()],
            "SECRET_TOKEN_PREVIOUS",
        ),
        (
            "the previous secret alone",
            None,
            Some(PREVIOUS),
            false,
            vec![previous],
            "SECRET_TOKEN",
        ),
    ];
    for (case, secret, previous, issues, tokens, logged) in cases {
        let mut ctx = TestContext::new();
        ctx.secret = secret.map(String::from);
        ctx.previous_secret = previous.map(String::from);
        for token in &tokens {
            for (method, path, body) in PROTECTED {
                let outcome = ctx.call(method, path, Some(token), body);
                assert_eq!(outcome, invalid_token(), "{case}: {method} {path}");
            }
        }
        // Still "required" when nothing is sent.
        assert_eq!(
            ctx.call("GET", "/books", None, ""),
            token_required(),
            "{case}"
        );
        let (login, _) = ctx.post_token(r#"{"username":"admin","password":"password"}"#);
        match issues {
            true => assert_eq!(login.0, 200, "{case}"),
            false => assert_eq!(login, token_not_issued(), "{case}"),
        }
        // Wrong credentials are refused before the secret matters.
        let wrong = r#"{"username":"admin","password":"wrong-password-1"}"#;
        assert_eq!(ctx.post_token(wrong).0, invalid_credentials(), "{case}");
        // The logins touched only the failed-login counts, never the books.
        assert!(
            ctx.statements.iter().all(|name| name.contains("attempt")),
            "{case}"
        );
        assert!(
            ctx.logs.iter().any(|l| l.contains(logged)),
            "{case}: {:?}",
            ctx.logs
        );
    }
    // 32 bytes are enough.
    let mut ctx = TestContext::new();
    ctx.secret = Some(format!("{short}f"));
    ctx.login();
}

#[test]
fn rotating_the_secret_invalidates_earlier_tokens() {
    let mut ctx = TestContext::new();
    let token = ctx.login();
    ctx.secret = Some(format!("{SECRET}-rotated"));
    assert_eq!(ctx.call("GET", "/books", Some(&token), ""), invalid_token());
}

// ---- The previous signing secret ----------------------------------------

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
    // A token of neither secret is still refused.
    let other = token::issue(b"some-third-secret-of-enough-length-000", NOW).unwrap();
    assert_eq!(ctx.call("GET", "/books", Some(&other), ""), invalid_token());
}
