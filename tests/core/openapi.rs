//! `openapi.yaml` and the router describe the same API.

use book_catalog::app::route;
use book_catalog::books::safe_writes::{IdempotencyKey, MAX_IDEMPOTENCY_KEY_CHARS};
use book_catalog::envelope::COMMON_HEADERS;
use book_catalog::ApiError;
use serde_yaml::Value;

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

fn document() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml"))
        .expect("openapi.yaml is readable");
    serde_yaml::from_str(&text).expect("openapi.yaml is valid YAML")
}

fn documented_methods(item: &Value) -> Vec<String> {
    let keys = item.as_mapping().expect("a path item is a mapping").keys();
    let methods = keys.filter_map(Value::as_str).map(str::to_ascii_uppercase);
    methods.filter(|method| METHODS.contains(&method.as_str())).collect()
}

/// The schema a local `$ref` names, or `schema` itself.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let path = reference.strip_prefix("#/").expect("a local reference");
            path.split('/').fold(doc, |node, key| &node[key])
        }
        None => schema,
    }
}

/// Every part of an envelope, through `$ref` and `allOf`, that gives its field
/// `field` a schema (each must hold, so one `const` among them fixes the field).
fn field_parts<'a>(doc: &'a Value, schema: &'a Value, field: &str) -> Vec<&'a Value> {
    let schema = resolve(doc, schema);
    let own = Some(schema).filter(|own| !own["properties"][field].is_null());
    let parts = schema["allOf"].as_sequence().into_iter().flatten();
    own.into_iter().chain(parts.flat_map(|part| field_parts(doc, part, field))).collect()
}

/// The schemas those parts give `field`.
fn field_schemas<'a>(doc: &'a Value, schema: &'a Value, field: &str) -> Vec<&'a Value> {
    field_parts(doc, schema, field).into_iter().map(|part| &part["properties"][field]).collect()
}

/// Every response the document defines, by name: each operation's and each
/// shared one (an operation's `$ref` to a shared one is checked there).
fn defined_responses(doc: &Value) -> Vec<(String, &Value)> {
    let mut responses: Vec<(String, &Value)> = Vec::new();
    for (template, item) in doc["paths"].as_mapping().expect("paths") {
        for method in documented_methods(item) {
            let operation = &item[method.to_ascii_lowercase().as_str()];
            for (status, response) in operation["responses"].as_mapping().expect("responses") {
                responses.push((format!("{method} {template:?} {status:?}"), response));
            }
        }
    }
    for (name, response) in doc["components"]["responses"].as_mapping().expect("responses") {
        responses.push((format!("{name:?}"), response));
    }
    responses.retain(|(_, response)| !response["$ref"].is_string());
    responses
}

/// Each documented path is routed with exactly its methods, their list its
/// `Allow`; an operation is public exactly when the router does not protect it.
#[test]
fn each_path_is_routed_with_its_methods_allow_and_security() {
    let doc = document();
    assert!(doc["security"].as_sequence().is_some_and(|s| !s.is_empty()), "protected by default");
    let paths = doc["paths"].as_mapping().expect("paths");
    assert_eq!(paths.len(), 5, "the API has five paths (with /health)");
    for (template, item) in paths {
        let template = template.as_str().expect("path template");
        let path = template.replace("{id}", "1");
        let routed = |method: &str| route(method, &path);
        assert_ne!(routed("GET").endpoint, Err(ApiError::RouteNotFound), "{template} is routed");
        let mut documented = documented_methods(item);
        documented.sort_by_key(|method| METHODS.iter().position(|m| m == method));
        let served = METHODS.into_iter().filter(|method| routed(method).endpoint.is_ok());
        assert_eq!(documented, served.collect::<Vec<_>>(), "{template}");
        let allow = Box::leak(documented.join(", ").into_boxed_str());
        assert_eq!(routed("PATCH").endpoint, Err(ApiError::MethodNotAllowed(allow)), "{template}");
        for method in documented {
            let operation = &item[method.to_ascii_lowercase().as_str()];
            let public = operation["security"].as_sequence().is_some_and(|s| s.is_empty());
            assert_eq!(public, !routed(&method).protected, "{method} {template}");
        }
    }
}

/// Every message an error can carry, found in the document at its status.
#[test]
fn every_error_message_is_documented_at_its_status() {
    let doc = document();
    let text = serde_yaml::to_string(&doc["components"]["responses"]).expect("responses");
    // No wildcard: a new ApiError does not compile until it is listed here
    // (or, as the two the tests above check, ruled out).
    macro_rules! every_error {
        ($($variant:ident $(($arg:expr))? $({ $($field:ident: $value:expr),* })?),*) => {{
            match ApiError::RouteNotFound {
                ApiError::RouteNotFound | ApiError::MethodNotAllowed(_) => {}
                $(ApiError::$variant { .. } => {})*
            }
            [$(ApiError::$variant $(($arg))? $({ $($field: $value),* })?),*]
        }};
    }
    let errors = every_error! {
        InvalidLoginPayload, InvalidBook, InvalidImport { row: 1, field: None, reason: "" },
        InvalidQuery, InvalidCredentials, TokenRequired,
        InvalidToken, PermissionDenied, BookNotFound, BookExists, ChangesGone, BodyTooLarge,
        PreconditionFailed,
        PreconditionRequired,
        InvalidIdempotencyKey, IdempotencyKeyReused, TooManyLoginAttempts { retry_after: 1 },
        TokenNotIssued, Internal(String::new()), ServiceUnavailable(String::new()),
        StoreBusy(String::new())
    };
    let responses = doc["components"]["responses"].as_mapping().expect("responses");
    for error in errors {
        let documented = responses.values().any(|response| {
            let schema = &response["content"]["application/json"]["schema"];
            let (status, message) = (error.status().into(), Some(error.message()));
            let statuses = field_schemas(&doc, schema, "status");
            let status_matches = statuses.iter().any(|s| s["const"].as_u64() == Some(status));
            let messages = field_schemas(&doc, schema, "message").into_iter();
            let mut texts = messages
                .flat_map(|m| m["enum"].as_sequence().into_iter().flatten().chain([&m["const"]]));
            status_matches && texts.any(|text| text.as_str() == message)
        });
        assert!(documented, "{} {:?} is not documented:\n{text}", error.status(), error.message());
    }
}

/// The documented `Idempotency-Key` is the one the component accepts.
#[test]
fn the_idempotency_key_rule_is_the_components() {
    let doc = document();
    let key = &doc["components"]["parameters"]["IdempotencyKey"];
    assert_eq!(key["name"].as_str(), Some("Idempotency-Key"));
    let schema = &key["schema"];
    assert_eq!(schema["pattern"].as_str(), Some(r"^[\x21-\x7E]{1,255}$"));
    assert_eq!(schema["maxLength"].as_u64(), Some(255));
    assert_eq!(MAX_IDEMPOTENCY_KEY_CHARS, 255);
    for byte in 0..=u8::MAX {
        let visible = (0x21..=0x7e).contains(&byte);
        assert_eq!(IdempotencyKey::parse(&[byte]).is_ok(), visible, "{byte:#x}");
    }
    let post = &doc["paths"]["/book"]["post"]["parameters"][0]["$ref"];
    assert_eq!(post.as_str(), Some("#/components/parameters/IdempotencyKey"));
}

/// Every documented response carries the headers every response has, as
/// `envelope::COMMON_HEADERS` sets them. Generators ignore keywords beside a
/// `$ref` (an envelope's `data` came out untyped): no `$ref` has any, and
/// every envelope types its three fields. A typed client makes a field
/// optional when any part typing it does not require it (a created book was
/// `Book | undefined`): each part requires it.
#[test]
fn every_response_documents_cache_control_and_an_envelope_typed_for_generators() {
    fn no_ref_has_siblings(node: &Value, at: &str) {
        match node {
            Value::Mapping(mapping) => {
                if mapping.contains_key("$ref") {
                    assert_eq!(mapping.len(), 1, "keywords beside a $ref at {at}");
                }
                for (key, value) in mapping {
                    no_ref_has_siblings(value, &format!("{at}/{}", key.as_str().unwrap_or("?")));
                }
            }
            Value::Sequence(items) => items.iter().for_each(|item| no_ref_has_siblings(item, at)),
            _ => {}
        }
    }
    let doc = document();
    let common = &doc["components"]["headers"]["CacheControl"];
    let (name, value) = COMMON_HEADERS[1];
    assert_eq!(name, "cache-control");
    assert_eq!(common["schema"]["const"].as_str(), Some(value));
    assert_eq!(common["required"].as_bool(), Some(true));
    no_ref_has_siblings(&doc, "");
    let responses = defined_responses(&doc);
    assert_eq!(responses.len(), 25, "8 successes and 17 shared error responses");
    for (name, response) in responses {
        let reference = response["headers"]["Cache-Control"]["$ref"].as_str();
        assert_eq!(reference, Some("#/components/headers/CacheControl"), "{name}");
        let schema = &response["content"]["application/json"]["schema"];
        for field in ["status", "message", "data"] {
            let typed = field_schemas(&doc, schema, field)
                .iter()
                .any(|part| part.as_mapping().is_some_and(|m| !m.is_empty()));
            assert!(typed, "{name}: `{field}` is untyped");
            for part in field_parts(&doc, schema, field) {
                let required = part["required"].as_sequence().into_iter().flatten();
                let listed = required.filter_map(Value::as_str).any(|name| name == field);
                assert!(listed, "{name}: `{field}` is typed but not required in {part:?}");
            }
        }
    }
}
