//! Tokens (docs/api.md, "Tokens"): issued, accepted, refused; the signing
//! secrets. Who may log in, and the failed-login limit: login.rs.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use book_catalog::token::{self, Claims, TokenError};
use proptest::prelude::*;
use serde_json::json;

use crate::support::*;

/// The reason decides whether the previous secret is tried (only after a
/// bad signature); every reason is "Invalid token" to the client.
#[test]
fn token_verify_names_the_reason() {
    assert_eq!(token::issue(b"", NOW, &admin(), None), Err(TokenError::EmptyKey));
    assert_eq!(token::verify(valid_token().as_bytes(), b"", NOW), Err(TokenError::EmptyKey));
    let key = SECRET.as_bytes();
    let check = |token: &str| token::verify(token.as_bytes(), key, NOW);
    let claims = r#"{"exp":1700000900}"#;
    assert_eq!(check(&valid_token()), Ok(Claims::default()));
    assert_eq!(check(&token_with_exp(&NOW.to_string())), Err(TokenError::Expired));
    assert_eq!(check(&forge(HS256_HEADER, claims, b"other-key")), Err(TokenError::BadSignature));
    let hs512 = forge(r#"{"alg":"HS512","typ":"JWT"}"#, claims, key);
    assert_eq!(check(&hs512), Err(TokenError::UnsupportedAlgorithm));
    assert_eq!(check(&forge(HS256_HEADER, "{}", key)), Err(TokenError::MissingExpiry));
    assert_eq!(check("a.b"), Err(TokenError::Malformed));
}

/// Mid-rotation (a previous secret set): a login signs with the current
/// secret only (exactly the token forged by hand: HS256, `exp` 900 s on); a
/// token of either is accepted until its `exp`, exclusive (no leeway), one of
/// a third secret never, and the previous one's no more once that is unset.
#[test]
fn tokens_of_the_current_and_previous_secret_are_accepted_until_exp_exclusive() {
    let mut ctx = TestContext::new();
    ctx.set(Setting::SecretTokenPrevious, PREVIOUS);
    let issued = ctx.login();
    assert_eq!(issued, pair_token());
    let old = token::issue(PREVIOUS.as_bytes(), NOW - 100, &admin(), None).unwrap();
    let third =
        token::issue(b"some-third-secret-of-enough-length-000", NOW, &admin(), None).unwrap();
    for now in [NOW, NOW + 1, NOW + 799, NOW + 800, NOW + 899, NOW + 900, NOW + 3600, u64::MAX] {
        ctx.now = now;
        for (token, exp) in [(&issued, NOW + 900), (&old, NOW + 800), (&third, 0)] {
            let expected = if now < exp { listed(json!([])) } else { invalid_token() };
            assert_eq!(ctx.call("GET", "/books", Some(token), ""), expected, "at {now}: {token}");
        }
    }
    ctx.now = NOW;
    ctx.unset(Setting::SecretTokenPrevious);
    assert_eq!(ctx.call("GET", "/books", Some(&old), ""), invalid_token());
}

/// Each refused on every protected route, the store never opened.
fn assert_all_refused(cases: &[(String, Vec<u8>)]) {
    let mut ctx = TestContext::new();
    // Control: the harness' own valid token is accepted.
    assert_eq!(ctx.authed("GET", "/books", "").0, 200);
    ctx.reset_calls();
    for (label, token) in cases {
        for (method, path, body) in PROTECTED {
            let outcome = ctx.call_with(method, path, Some(token), body.as_bytes());
            assert_eq!(outcome, invalid_token(), "{label}: {method} {path}");
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

/// `text` with `FUTURE`, `NOW` and `PAST` as `NOW + 900`, `NOW`, `NOW - 1`.
fn at_times(text: &str) -> String {
    let text = text.replace("FUTURE", &(NOW + 900).to_string());
    text.replace("NOW", &NOW.to_string()).replace("PAST", &(NOW - 1).to_string())
}

/// Headers refused, each signed with the secret (the `none` ones, the first
/// four, also unsigned): another `alg`, `crit`, or not a JSON object.
const REFUSED_HEADERS: &str = r#"{"alg":"none","typ":"JWT"} | {"alg":"None","typ":"JWT"}
    | {"alg":"NONE","typ":"JWT"} | {"alg":"nOnE"} | {"alg":"RS256","typ":"JWT"}
    | {"alg":"ES256","typ":"JWT"} | {"alg":"PS256","typ":"JWT"} | {"alg":"HS384","typ":"JWT"}
    | {"alg":"HS512","typ":"JWT"} | {"alg":"hs256","typ":"JWT"} | {"alg":"HS256 ","typ":"JWT"}
    | {"typ":"JWT"} | {"alg":null,"typ":"JWT"} | {"alg":256,"typ":"JWT"}
    | {"alg":["HS256"],"typ":"JWT"} | {"alg":{"name":"HS256"}}
    | {"alg":"HS256","typ":"JWT","crit":["exp"]} | {"alg":"HS256","crit":[]} | {} | []
    | ["alg","HS256"] | null | HS256 | "HS256""#;

/// Claims refused, signed with the secret (`at_times`): no numeric `exp` in
/// the future, or no JSON object at all.
const REFUSED_CLAIMS: &str = r#"{} | {"sub":"admin","iat":1700000000} | {"EXP":FUTURE}
    | {"exp":"FUTURE"} | {"exp":null} | {"exp":true} | {"exp":[FUTURE]}
    | {"exp":{"seconds":9999999999}} | {"exp":-1} | {"exp":-9223372036854775808} | {"exp":-1.5}
    | {"exp":-1e300} | {"exp":PAST.5} | {"exp":NOW.0} | {"exp":1e400} | [FUTURE] | FUTURE
    | "exp" | null | exp=1700000900 | {"exp":1700000900"#;

#[test]
fn headers_but_an_hs256_object_and_claims_without_a_future_numeric_exp_are_refused() {
    let headers: Vec<&str> = REFUSED_HEADERS.split('|').map(str::trim).collect();
    let signed = headers.iter().map(|h| case(h, forge(h, &claims_900(), SECRET.as_bytes())));
    let unsigned =
        headers[..4].iter().map(|h| case(h, format!("{}.{}.", b64(h), b64(claims_900()))));
    let claims = REFUSED_CLAIMS.split('|').map(|claims| at_times(claims.trim()));
    let claims =
        claims.chain([String::new()]).map(|c| case(&c, forge(HS256_HEADER, &c, SECRET.as_bytes())));
    assert_all_refused(&signed.chain(unsigned).chain(claims).collect::<Vec<_>>());
}

#[test]
fn tokens_of_our_secret_with_a_future_exp_are_valid_whatever_else_they_hold() {
    // Fractional and huge `exp` values, other header and claim fields, and
    // whitespace around the header value (RFC 9110 section 5.5: not part of it).
    let mut ctx = TestContext::new();
    let exps = "NOW.5 FUTURE.25 1e300 1.7976931348623157e308 18446744073709551615 \
                99999999999999999999999 1700000001"; // the last: NOW + 1
    let mut tokens: Vec<String> =
        exps.split(' ').map(|exp| token_with_exp(&at_times(exp))).collect();
    let headers =
        r#"{"alg":"HS256"} {"typ":"JWT","alg":"HS256"} {"alg":"HS256","typ":"JWT","kid":"k1"}"#;
    tokens.extend(headers.split(' ').map(|header| forge(header, &claims_900(), SECRET.as_bytes())));
    let claims = at_times(r#"{"sub":"admin","exp":FUTURE,"iat":NOW}"#);
    tokens.push(forge(HS256_HEADER, &claims, SECRET.as_bytes()));
    tokens.push(format!("  {}\t", valid_token()));
    for token in &tokens {
        assert_eq!(ctx.call("GET", "/books", Some(token), ""), listed(json!([])), "{token:?}");
    }
    // The fractional one expires once its time has passed.
    ctx.now = NOW + 1;
    assert_eq!(ctx.call("GET", "/books", Some(&tokens[0]), ""), invalid_token());
}

#[test]
fn expired_tampered_and_malformed_tokens_are_refused() {
    let valid = valid_token();
    let [h, c, s]: [&str; 3] = valid.split('.').collect::<Vec<_>>().try_into().unwrap();
    let later = b64(format!(r#"{{"exp":{}}}"#, NOW + 90_000));
    let flipped = format!("{}{}", if s.starts_with('A') { "B" } else { "A" }, &s[1..]);
    let another = token_with_exp(&(NOW + 901).to_string());
    let other = another.rsplit('.').next().unwrap();
    let day_old = token::issue(SECRET.as_bytes(), NOW - 86_400, &admin(), None).unwrap();
    let wrong_key = forge(HS256_HEADER, &claims_900(), b"another-secret-of-a-decent-length");
    let longer_key = forge(HS256_HEADER, &claims_900(), format!("{SECRET}x").as_bytes());
    let over_claims = sign(c, SECRET.as_bytes());
    let non_utf8 = [valid.as_bytes(), &[0xFF]].concat();
    let non_utf8_inside =
        [&valid.as_bytes()[..h.len() + 2], &[0xC3], &valid.as_bytes()[h.len() + 2..]].concat();
    let standard = s.replace('-', "+").replace('_', "/") + "+/";
    let (c1, c2, s1, s2) = (&c[..5], &c[5..], &s[..5], &s[5..]);
    let mut cases = vec![
        case("exp zero", token_with_exp("0")),
        case("issued a day ago", day_old),
        case("wrong key", wrong_key),
        case("secret with a byte more", longer_key),
        case("tampered claims", format!("{h}.{later}.{s}")),
        case("tampered signature", format!("{h}.{c}.{flipped}")),
        case("signature of another token", format!("{h}.{c}.{other}")),
        case("truncated signature", valid[..valid.len() - 4].to_string()),
        case("empty signature", format!("{h}.{c}.")),
        case("signature over the claims only", format!("{h}.{c}.{over_claims}")),
        case("one segment", h),
        case("two segments", format!("{h}.{c}")),
        case("four segments", format!("{valid}.{s}")),
        case("one character appended", format!("{valid}x")),
        case("trailing dot", format!("{valid}.")),
        case("leading dot", format!(".{valid}")),
        case("dots only", ".."),
        case("three dots", "..."),
        case("empty header", format!(".{c}.{s}")),
        case("empty claims", format!("{h}..{s}")),
        case("signature padded with =", format!("{valid}=")),
        case("signature with a = inside", format!("{h}.{c}.{s1}={s2}")),
        case("base64 with + and /", format!("{h}.{c}.{standard}")),
        case("space inside", format!("{h}.{c1} {c2}.{s}")),
        case("newline inside", format!("{h}.{c1}\n{c2}.{s}")),
        case("tab inside", format!("{h}.{c}.{s1}\t{s2}")),
        case("two tokens joined", format!("{valid}, {valid}")),
        case("token in quotes", format!("\"{valid}\"")),
        case("non-UTF-8 byte after the token", non_utf8),
        case("non-UTF-8 byte inside", non_utf8_inside),
        case("only non-UTF-8 bytes", vec![0xFF, 0xFE, 0xFD]),
        case("NUL byte", format!("{valid}\0")),
        case("garbage", "not-a-token"),
        case("header not base64", format!("e30!.{c}.{s}")),
    ];
    let prefixes = ["Bearer ", "bearer ", "BEARER ", "Token ", "Bearer"];
    cases.extend(prefixes.map(|prefix| case(prefix, format!("{prefix}{valid}"))));
    assert_all_refused(&cases);
}

/// Segments padded or in the standard alphabet, each signed over its own
/// text so that the encoding is the only fault.
#[test]
fn padded_or_standard_alphabet_segments_are_malformed() {
    let key = SECRET.as_bytes();
    // Lengths not multiples of 3 (34 and 25 bytes), so that padding shows.
    let header = r#"{"alg":"HS256","typ":"JWT","x":12}"#;
    let claims = format!(r#"{{"exp":{},"a":1}} "#, NOW + 900);
    let (h, hp) = (b64(header), URL_SAFE.encode(header));
    let (c, cp) = (b64(&claims), URL_SAFE.encode(&claims));
    let unpadded = sign_segments(&h, &c, key);
    let signature = URL_SAFE_NO_PAD.decode(unpadded.rsplit('.').next().unwrap()).unwrap();
    let mut refused = vec![
        case("padded header", sign_segments(&hp, &c, key)),
        case("padded claims", sign_segments(&h, &cp, key)),
        case("padded header and claims", sign_segments(&hp, &cp, key)),
        case("padded signature", format!("{h}.{c}.{}", URL_SAFE.encode(signature))),
    ];
    let mut accepted = vec![unpadded];
    // Headers whose base64url form holds '-' or '_', in the standard alphabet '+' or '/'.
    for filler in ["~~~", "???", "~~~~", "????", "~~~~~", "?????"] {
        let header = format!(r#"{{"alg":"HS256","x":"{filler}"}}"#);
        let (url_safe, standard) = (b64(&header), STANDARD_NO_PAD.encode(&header));
        if url_safe != standard {
            accepted.push(sign_segments(&url_safe, &c, key));
            let label = format!("standard alphabet header {standard}");
            refused.push(case(&label, sign_segments(&standard, &c, key)));
        }
    }
    let labels = || refused.iter().map(|(label, _)| label);
    let both = labels().any(|l| l.contains('+')) && labels().any(|l| l.contains('/'));
    assert!(both, "both '+' and '/' are exercised: {refused:?}");
    let mut ctx = TestContext::new();
    for token in &accepted {
        assert_eq!(ctx.call("GET", "/books", Some(token), "").0, 200, "{token}");
    }
    assert_all_refused(&refused);
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
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
    assert_eq!(ctx.opens, 0);
}

/// An unusable secret signs nothing and verifies nothing: its tokens are
/// refused on every protected route, a login issues none (unless beside a
/// usable current secret), wrong credentials are refused first, no book is
/// touched, and the log says why.
#[test]
fn an_unusable_secret_signs_nothing_and_verifies_nothing() {
    let short = "0123456789abcdef0123456789abcde"; // 31 bytes
    let empty_key = forge(HS256_HEADER, &claims_900(), b"");
    let short_key = forge(HS256_HEADER, &claims_900(), short.as_bytes());
    let previous = token::issue(PREVIOUS.as_bytes(), NOW, &admin(), None).unwrap();
    let valid = valid_token();
    // The signing secret and the previous one (None: unset), the tokens
    // refused, whether a login issues one, what the log says.
    for (secret, previous_secret, tokens, issues, logged) in [
        (None, None, vec![&valid, &empty_key], false, "secret"),
        (Some(""), None, vec![&empty_key], false, "SECRET_TOKEN"),
        (Some(short), None, vec![&short_key], false, "shorter than 32 bytes (RFC 7518"),
        (None, Some(PREVIOUS), vec![&previous], false, "SECRET_TOKEN"),
        (Some(SECRET), Some(short), vec![&short_key], true, "SECRET_TOKEN_PREVIOUS"),
    ] {
        let mut ctx = TestContext::new();
        ctx.unset(Setting::SecretToken);
        secret.inspect(|secret| ctx.set(Setting::SecretToken, secret));
        previous_secret.inspect(|previous| ctx.set(Setting::SecretTokenPrevious, previous));
        for token in tokens {
            for (method, path, body) in PROTECTED {
                let outcome = ctx.call(method, path, Some(token), body);
                assert_eq!(outcome, invalid_token(), "{logged}: {method} {path}");
            }
        }
        assert_eq!(ctx.call("GET", "/books", None, ""), token_required());
        let (login, _) = ctx.post_token(LOGIN);
        let issued = if issues { login.0 == 200 } else { login == token_not_issued() };
        assert!(issued, "{logged}: {login:?}");
        let wrong = r#"{"username":"admin","password":"wrong-password-1"}"#;
        assert_eq!(ctx.post_token(wrong).0, invalid_credentials(), "{logged}");
        let books_untouched = ctx.statements().iter().all(|name| name.contains("attempt"));
        assert!(books_untouched, "{logged}: {:?}", ctx.statements());
        assert!(ctx.logged("", logged), "{logged}: {:?}", ctx.logs);
    }
    // 32 bytes are enough.
    let mut ctx = TestContext::new();
    ctx.set(Setting::SecretToken, &format!("{short}f"));
    ctx.login();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_are_never_a_token(
        bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..400),
            proptest::collection::vec("[A-Za-z0-9_=+/ -]{0,60}", 0..6)
                .prop_map(|segments| segments.join(".").into_bytes()),
        ]
    ) {
        prop_assert!(token::verify(&bytes, SECRET.as_bytes(), NOW).is_err());
    }

    #[test]
    fn any_change_to_an_issued_token_invalidates_it(position in 0usize..200, byte in any::<u8>()) {
        let mut tampered = valid_token().into_bytes();
        let position = position % tampered.len();
        prop_assume!(tampered[position] != byte);
        tampered[position] = byte;
        // The strict decoder refuses even a change of the last character's unused bits.
        let verified = token::verify(&tampered, SECRET.as_bytes(), NOW);
        prop_assert!(verified.is_err(), "{}", String::from_utf8_lossy(&tampered));
    }

    #[test]
    fn issued_tokens_verify_for_any_key_and_time(
        key in proptest::collection::vec(any::<u8>(), 1..100),
        now in 0u64..=u64::MAX / 2,
    ) {
        let issued = token::issue(&key, now, &admin(), None).unwrap();
        let claims = Claims { sub: Some("admin".into()), fp: None };
        prop_assert_eq!(token::verify(issued.as_bytes(), &key, now), Ok(claims));
        let expired = token::verify(issued.as_bytes(), &key, now + token::LIFETIME_SECONDS);
        prop_assert_eq!(expired, Err(TokenError::Expired));
        prop_assert!(token::verify(issued.as_bytes(), b"another key", now).is_err());
    }
}
