//! Spin's SQLite `value`s to and from rusqlite's, the errors as Spin names
//! them, and one statement run with all its rows in the interface's types.

use rusqlite::types::ValueRef;

use super::pool::{PoolError, Refused};
use crate::bindings::fermyon::spin::sqlite::{Error, QueryResult, RowResult, Value};

pub fn to_error(e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => Error::DatabaseFull,
        // rusqlite's Display is SQLite's own message ("no such table: items").
        _ => Error::Io(e.to_string()),
    }
}

pub fn pool_error(e: PoolError) -> Error {
    match e {
        PoolError::Folder(message) => Error::Io(message),
        PoolError::Sqlite(e) => to_error(e),
    }
}

pub fn refused(r: Refused) -> Error {
    match r {
        Refused::AccessDenied => Error::AccessDenied,
        Refused::NoSuchDatabase => Error::NoSuchDatabase,
    }
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
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.into_iter().map(to_sql)))
        .map_err(to_error)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::pool::Database;

    #[test]
    fn executes_and_keeps_sqlite_messages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sqlite_db.db");
        let db = Database::new(path.clone());
        let conn = db.checkout().unwrap();
        assert!(path.exists());
        let err = run(&conn, "SELECT * FROM items", vec![]).unwrap_err();
        assert!(
            matches!(&err, Error::Io(m) if m.contains("no such table: items")),
            "{err:?}"
        );
        run(
            &conn,
            "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)",
            vec![],
        )
        .unwrap();
        run(
            &conn,
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
            vec![
                Value::Integer(-7),
                Value::Real(1.5),
                Value::Text("x".into()),
                Value::Blob(vec![1, 2]),
                Value::Null,
            ],
        )
        .unwrap();
        let r = run(&conn, "SELECT * FROM t", vec![]).unwrap();
        assert_eq!(r.columns, vec!["i", "r", "s", "b", "n"]);
        assert_eq!(r.rows.len(), 1);
        assert!(matches!(r.rows[0].values[0], Value::Integer(-7)));
        assert!(matches!(&r.rows[0].values[3], Value::Blob(b) if b == &[1, 2]));
        assert!(matches!(r.rows[0].values[4], Value::Null));
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        db.checkin(conn);
        assert_eq!(db.idle_count(), 1);
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let db = Database::new(file.join("sub/x.db"));
        let err = pool_error(db.checkout().unwrap_err());
        assert!(
            matches!(&err, Error::Io(m) if m.starts_with("cannot create")),
            "{err:?}"
        );
    }
}
