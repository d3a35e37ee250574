//! Spin's SQLite `value`s to and from rusqlite's, and one statement run.

use rusqlite::types::ValueRef;

use crate::bindings::fermyon::spin::sqlite::{Error, QueryResult, RowResult, Value};

/// Spin passes every SQLite error as `io` with rusqlite's text, which is
/// SQLite's own message ("no such table: items", "database is locked").
fn to_error(e: rusqlite::Error) -> Error {
    Error::Io(e.to_string())
}

fn to_sql(v: Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Integer(i) => V::Integer(i),
        Value::Real(f) => V::Real(f),
        Value::Text(s) => V::Text(s),
        Value::Blob(b) => V::Blob(b),
        Value::Null => V::Null,
    }
}

fn from_sql(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// Blocking: one statement, all its rows.
pub fn run(
    conn: &rusqlite::Connection,
    statement: &str,
    params: Vec<Value>,
) -> Result<QueryResult, Error> {
    let mut stmt = conn.prepare_cached(statement).map_err(to_error)?;
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let n = columns.len();
    let mut rows =
        stmt.query(rusqlite::params_from_iter(params.into_iter().map(to_sql))).map_err(to_error)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(to_error)? {
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            values.push(from_sql(row.get_ref(i).map_err(to_error)?));
        }
        out.push(RowResult { values });
    }
    Ok(QueryResult { columns, rows: out })
}
