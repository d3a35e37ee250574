//! The component's log lines, one per event, in logfmt (docs/operations.md).
//! No line holds a secret: callers pass routes, not paths, and reasons whose
//! addresses are already masked.

use std::fmt::Write;

/// `value` as a logfmt value.
fn value(text: &str) -> String {
    let plain = !text.is_empty()
        && !text.chars().any(|c| c == ' ' || c == '"' || c == '\\' || c == '=' || c.is_control());
    if plain {
        return text.to_string();
    }
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(quoted, "\\u{{{:x}}}", c as u32);
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// What a request was, for its log lines: its method, its route pattern
/// (`app::route`), the store it opened (`none` if none) and the account it
/// was made as (the token's holder, or a login's), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFields {
    pub method: String,
    pub route: &'static str,
    pub store: &'static str,
    pub account: Option<String>,
}

/// The line after every request.
pub fn request(fields: &RequestFields, status: u16, duration_us: u128) -> String {
    format!(
        "level=info msg=request method={} route={} status={status} store={} \
         duration_us={duration_us}{}",
        value(&fields.method),
        fields.route,
        fields.store,
        by(fields)
    )
}

/// The line before a 500 or 503, the service's failure (`level=error`):
/// why. A host error may carry the host's own backtrace (Spin's, under
/// `RUST_BACKTRACE=1`): only the cause is kept.
pub fn failure(fields: &RequestFields, reason: &str) -> String {
    let reason = reason.split("\n\nStack backtrace:").next().unwrap_or(reason);
    let (about, by) = (about(fields), by(fields));
    format!("level=error msg=\"request failed\" {about} reason={}{by}", value(reason))
}

/// The line of a client that closed its connection before its answer was
/// whole: the client's doing, so no error.
pub fn client_left(fields: &RequestFields) -> String {
    format!("level=info msg=\"client left\" {}{}", about(fields), by(fields))
}

fn about(fields: &RequestFields) -> String {
    format!("method={} route={} store={}", value(&fields.method), fields.route, fields.store)
}

/// Who made the request, last on each of its lines: ` account=NAME`, if any.
fn by(fields: &RequestFields) -> String {
    fields
        .account
        .as_deref()
        .map(|account| format!(" account={}", value(account)))
        .unwrap_or_default()
}

/// A setting's warning.
pub fn warning(message: &str) -> String {
    format!("level=warn msg={}", value(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_spaces_quotes_or_newlines_are_quoted_and_escaped() {
        assert_eq!(value("GET"), "GET");
        assert_eq!(value(""), "\"\"");
        assert_eq!(value("a b"), "\"a b\"");
        assert_eq!(value("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
        assert_eq!(value("x=1\ny\u{7}"), "\"x=1\\ny\\u{7}\"");
        let mut fields = RequestFields {
            method: "PUT".into(),
            route: "/book/{id}",
            store: "postgres",
            account: None,
        };
        assert_eq!(
            request(&fields, 200, 123),
            "level=info msg=request method=PUT route=/book/{id} status=200 store=postgres \
             duration_us=123"
        );
        assert_eq!(
            failure(&fields, "PostgreSQL: db error"),
            "level=error msg=\"request failed\" method=PUT route=/book/{id} store=postgres \
             reason=\"PostgreSQL: db error\""
        );
        assert_eq!(
            failure(&fields, "refused\n\nStack backtrace:\n   0: spin::main"),
            failure(&fields, "refused")
        );
        assert_eq!(
            client_left(&fields),
            "level=info msg=\"client left\" method=PUT route=/book/{id} store=postgres"
        );
        assert_eq!(warning("no secret"), "level=warn msg=\"no secret\"");
        fields.account = Some("ed \"the\" editor".into());
        for line in [request(&fields, 200, 1), failure(&fields, "x"), client_left(&fields)] {
            assert!(line.ends_with(r#" account="ed \"the\" editor""#), "{line}");
        }
    }
}
