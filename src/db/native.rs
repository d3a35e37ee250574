//! An in-process SQLite database (rusqlite) as a `db::Connection`, native
//! builds only: the core's tests run on it in memory, bench/native serves it.

use anyhow::Context as _;
use rusqlite::types::{Value, ValueRef};

use super::{Column, Connection, SqlParam, Statement};
use crate::settings::StoreKind;

pub use rusqlite;

/// Opens the SQLite file at `path` as the native benchmark serves it: WAL
/// (set by the migrations), `synchronous=NORMAL`, a busy timeout, prepared
/// statements cached.
pub fn open(path: &std::path::Path) -> anyhow::Result<rusqlite::Connection> {
    let connection =
        rusqlite::Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}

impl Connection for rusqlite::Connection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    /// Every row stepped through, so that a `DELETE ... RETURNING` completes.
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let params = statement.params.iter().map(|param| match *param {
            SqlParam::Text(text) => Value::Text(text.to_string()),
            SqlParam::Int32(value) => Value::Integer(value.into()),
            SqlParam::Int64(value) => Value::Integer(value),
        });
        let mut prepared = self.prepare_cached(&statement.sql)?;
        let rows = prepared
            .query_map(rusqlite::params_from_iter(params), |row| {
                (0..row.as_ref().column_count()).map(|i| Ok(column(row.get_ref(i)?))).collect()
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// `PRAGMA journal_mode` answers with a row: step through any.
    fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
        let mut prepared = self.prepare(sql)?;
        let mut rows = prepared.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
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
