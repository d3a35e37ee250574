//! An in-process SQLite database (rusqlite) as a `db::Connection`, native
//! builds only: the core's tests run on it in memory. Its futures are ready
//! at once: each statement runs when polled.

use std::time::Duration;

use rusqlite::types::{Value, ValueRef};
use rusqlite::ErrorCode;

use super::{Column, Connection, Failure, Row, SqlParam, Statement, StoreError};
use crate::db::StoreKind;

pub use rusqlite;

/// rusqlite tells its failures by SQLite's result code.
fn failure(error: rusqlite::Error) -> StoreError {
    let failure = match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Failure::Locked,
        _ => StoreError::sqlite(error.to_string()).failure,
    };
    StoreError::new(failure, error.to_string())
}

/// Runs `statement`, every row stepped through (so that a `DELETE ...
/// RETURNING` completes): what `Connection::query` does, at once.
pub fn query(db: &rusqlite::Connection, statement: &Statement) -> Result<Vec<Row>, StoreError> {
    let params = statement.params.iter().map(|param| match *param {
        SqlParam::Text(text) => Value::Text(text.to_string()),
        SqlParam::Int32(value) => Value::Integer(value.into()),
        SqlParam::Int64(value) => Value::Integer(value),
    });
    let mut prepared = db.prepare_cached(&statement.sql).map_err(failure)?;
    let rows = prepared
        .query_map(rusqlite::params_from_iter(params), |row| {
            (0..row.as_ref().column_count()).map(|i| Ok(column(row.get_ref(i)?))).collect()
        })
        .map_err(failure)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(failure)?;
    Ok(rows)
}

/// Runs `sql`, stepping through any rows (`PRAGMA journal_mode` answers
/// with one): what `Connection::execute` does, at once.
pub fn execute(db: &rusqlite::Connection, sql: &str) -> Result<(), StoreError> {
    let mut prepared = db.prepare(sql).map_err(failure)?;
    let mut rows = prepared.query([]).map_err(failure)?;
    while rows.next().map_err(failure)?.is_some() {}
    Ok(())
}

impl Connection for rusqlite::Connection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        query(self, statement)
    }

    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        execute(self, sql)
    }

    async fn pause(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

fn column(value: ValueRef) -> Column {
    match value {
        ValueRef::Integer(value) => Column::Integer(value),
        ValueRef::Text(text) => Column::Text(String::from_utf8_lossy(text).into_owned()),
        ValueRef::Null => Column::Null,
        ValueRef::Real(_) | ValueRef::Blob(_) => Column::Other,
    }
}
