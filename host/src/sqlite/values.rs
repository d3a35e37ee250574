//! Spin's SQLite `value`s to and from rusqlite's, and one statement run, for
//! both versions of the interface (their types are alike but distinct).

use rusqlite::types::ValueRef;

/// Either version's `value`.
pub trait SqlValue: Sized + Send + 'static {
    fn to_sql(self) -> rusqlite::types::Value;
    fn from_sql(v: ValueRef<'_>) -> Self;
}

macro_rules! alike {
    ($($version:ident)::+) => {
        impl SqlValue for crate::bindings::$($version)::+::Value {
            fn to_sql(self) -> rusqlite::types::Value {
                use rusqlite::types::Value as V;
                match self {
                    Self::Integer(i) => V::Integer(i),
                    Self::Real(f) => V::Real(f),
                    Self::Text(s) => V::Text(s),
                    Self::Blob(b) => V::Blob(b),
                    Self::Null => V::Null,
                }
            }

            fn from_sql(v: ValueRef<'_>) -> Self {
                match v {
                    ValueRef::Null => Self::Null,
                    ValueRef::Integer(i) => Self::Integer(i),
                    ValueRef::Real(f) => Self::Real(f),
                    ValueRef::Text(t) => Self::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Self::Blob(b.to_vec()),
                }
            }
        }
    };
}

alike!(fermyon::spin::sqlite);
alike!(spin::sqlite::sqlite);

/// Blocking: one statement; its column names to `columns` once prepared,
/// then each row to `row`, which may stop it with an error. Errors are
/// SQLite's own messages ("no such table: items", "database is locked"),
/// which Spin passes as `io`.
pub fn run<V: SqlValue>(
    conn: &rusqlite::Connection,
    statement: &str,
    params: Vec<V>,
    columns: impl FnOnce(Vec<String>),
    mut row: impl FnMut(Vec<V>) -> Result<(), String>,
) -> Result<(), String> {
    let text = |e: rusqlite::Error| e.to_string();
    let mut stmt = conn.prepare_cached(statement).map_err(text)?;
    let names: Vec<String> = stmt.column_names().map(String::from).collect();
    let n = names.len();
    columns(names);
    let params = rusqlite::params_from_iter(params.into_iter().map(V::to_sql));
    let mut rows = stmt.query(params).map_err(text)?;
    while let Some(r) = rows.next().map_err(text)? {
        let values: Result<Vec<V>, _> = (0..n).map(|i| r.get_ref(i).map(V::from_sql)).collect();
        row(values.map_err(text)?)?;
    }
    Ok(())
}
