//! Property tests of the parts that read untrusted bytes: the token parser,
//! the body decoders, and the whole request pipeline. Arbitrary input never
//! panics and always ends in the documented outcome.

use crate::support::{TestContext, NOW, SECRET};
use book_catalog::model::{BookChanges, NewBook, MAX_TEXT_CHARS};
use book_catalog::token::{self, TokenError};
use book_catalog::ApiError;
use proptest::prelude::*;
use serde_json::{json, Value};

const KEY: &[u8] = SECRET.as_bytes();

/// Independent statement of the field rules (docs/api.md, "Book rules").
fn valid_text(value: &Value) -> bool {
    value.as_str().is_some_and(|text| {
        !text.trim().is_empty() && !text.contains('\0') && text.chars().count() <= MAX_TEXT_CHARS
    })
}

fn valid_year(value: &Value) -> bool {
    value
        .as_i64()
        .is_some_and(|year| i32::try_from(year).is_ok())
}

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        "[ \t\n]{0,3}".prop_map(Value::from),
        Just(Value::from("x".repeat(MAX_TEXT_CHARS))),
        Just(Value::from("é".repeat(MAX_TEXT_CHARS + 1))),
        Just(json!([1, 2])),
        Just(json!({"nested": true})),
    ]
}

fn book_object() -> impl Strategy<Value = serde_json::Map<String, Value>> {
    let field =
        |name: &'static str| proptest::option::of(field_value()).prop_map(move |v| (name, v));
    (
        field("title"),
        field("author"),
        field("year"),
        field("id"),
        field("extra"),
    )
        .prop_map(|fields| {
            let (t, a, y, i, e) = fields;
            [t, a, y, i, e]
                .into_iter()
                .filter_map(|(name, value)| value.map(|v| (name.to_string(), v)))
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_never_a_token(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        prop_assert!(token::verify(&bytes, KEY, NOW).is_err());
    }

    #[test]
    fn dotted_base64_noise_is_never_a_token(
        segments in proptest::collection::vec("[A-Za-z0-9_=+/ -]{0,60}", 0..6)
    ) {
        let candidate = segments.join(".");
        prop_assert!(token::verify(candidate.as_bytes(), KEY, NOW).is_err());
    }

    #[test]
    fn any_change_to_an_issued_token_invalidates_it(position in 0usize..200, byte in any::<u8>()) {
        let issued = token::issue(KEY, NOW).unwrap();
        let mut tampered = issued.clone().into_bytes();
        let position = position % tampered.len();
        prop_assume!(tampered[position] != byte);
        tampered[position] = byte;
        // A change confined to the signature's unused low bits of the last
        // base64 character is rejected by the strict decoder, so every change counts.
        prop_assert!(token::verify(&tampered, KEY, NOW).is_err(), "{}", String::from_utf8_lossy(&tampered));
    }

    #[test]
    fn issued_tokens_verify_for_any_key_and_time(
        key in proptest::collection::vec(any::<u8>(), 1..100),
        now in 0u64..=u64::MAX / 2,
    ) {
        let issued = token::issue(&key, now).unwrap();
        prop_assert_eq!(token::verify(issued.as_bytes(), &key, now), Ok(()));
        prop_assert_eq!(token::verify(issued.as_bytes(), &key, now + token::LIFETIME_SECONDS), Err(TokenError::Expired));
        prop_assert!(token::verify(issued.as_bytes(), b"another key", now).is_err());
    }

    #[test]
    fn arbitrary_bodies_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let changes = BookChanges::from_json(&bytes);
        let new_book = NewBook::from_json(&bytes);
        prop_assert!(changes.is_ok() || changes == Err(ApiError::InvalidBook));
        prop_assert!(new_book.is_ok() || new_book == Err(ApiError::InvalidBook));
    }

    #[test]
    fn book_bodies_are_accepted_exactly_when_the_rules_hold(object in book_object()) {
        let body = serde_json::to_vec(&object).unwrap();
        let present_valid = object.get("title").is_none_or(valid_text)
            && object.get("author").is_none_or(valid_text)
            && object.get("year").is_none_or(valid_year);
        let complete = ["title", "author", "year"].iter().all(|f| object.contains_key(*f));

        let changes = BookChanges::from_json(&body);
        prop_assert_eq!(changes.is_ok(), present_valid);
        let new_book = NewBook::from_json(&body);
        prop_assert_eq!(new_book.is_ok(), present_valid && complete);
        if let Ok(book) = new_book {
            prop_assert_eq!(Some(&Value::from(book.title)), object.get("title"));
            prop_assert_eq!(Some(&Value::from(book.year)), object.get("year"));
        }
    }

    #[test]
    fn every_request_gets_a_consistent_envelope(
        method in prop_oneof![
            Just("GET".to_string()), Just("POST".to_string()), Just("PUT".to_string()),
            Just("DELETE".to_string()), "[A-Z]{1,8}",
        ],
        path in prop_oneof![
            Just("/token".to_string()), Just("/book".to_string()), Just("/books".to_string()),
            "/book/[0-9a-z%.-]{0,22}", "/[a-z/]{0,12}",
        ],
        authorized in any::<bool>(),
        body in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            book_object().prop_map(|o| serde_json::to_vec(&o).unwrap()),
        ],
    ) {
        // `TestContext` checks what every answer must satisfy: a JSON
        // envelope whose status is the HTTP status, data null on errors,
        // Content-Type, Cache-Control, Allow exactly with 405, Retry-After
        // exactly with 429, no secret in the log.
        let mut ctx = TestContext::new();
        let token = token::issue(KEY, NOW).unwrap();
        let auth = authorized.then_some(token.as_bytes());
        let (status, _, _) = ctx.call_with(&method, &path, auth, &body[..]);
        prop_assert!(status < 500, "{} {} gave {}", method, path, status);
    }
}
