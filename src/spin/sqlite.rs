//! A Spin SQLite database (`fermyon:spin/sqlite@2.0.0`) as a `db::Connection`.

use anyhow::anyhow;
use spin_sdk::sqlite::{Connection, QueryResult, Value};

use crate::db::{self, Column, SqlParam, Statement, Synchronous};
use crate::settings::StoreKind;

/// Opens the database on its first statement, so requests that fail before
/// touching the store never open it.
pub struct SqliteConnection {
    label: String,
    connection: Option<Connection>,
    synchronous: Synchronous,
    /// Whether `db::write_pragmas` ran: before its first write.
    write_ready: bool,
}

impl SqliteConnection {
    pub fn new(label: &str, synchronous: Synchronous) -> SqliteConnection {
        let label = label.to_string();
        SqliteConnection { label, connection: None, synchronous, write_ready: false }
    }

    fn connection(&mut self) -> anyhow::Result<&Connection> {
        let label = &self.label;
        match &mut self.connection {
            Some(connection) => Ok(connection),
            slot => {
                Ok(slot
                    .insert(Connection::open(label).map_err(|error| {
                        anyhow!("opening SQLite database {label:?}: {error:?}")
                    })?))
            }
        }
    }
}

impl db::Connection for SqliteConnection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let params = bind(&statement.params);
        let result = self.connection()?.execute(&statement.sql, &params);
        result.map(rows).map_err(|error| anyhow!("SQLite database {:?}: {error:?}", self.label))
    }

    /// Spin sets no PRAGMA: rusqlite's 5 s busy timeout would hand the wait
    /// to SQLite's backing-off busy handler (a short one leaves it to the
    /// core, `db::BUSY_TIMEOUT_MS`), and `synchronous` would stay FULL.
    fn prepare_write(&mut self) -> anyhow::Result<()> {
        if !self.write_ready {
            for pragma in db::write_pragmas(self.synchronous) {
                self.execute(&pragma)?;
            }
            self.write_ready = true;
        }
        Ok(())
    }

    fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
        let result = self.connection()?.execute(sql, &[]);
        result
            .map(drop)
            .map_err(|error| anyhow!("SQLite database {:?}: {sql}: {error:?}", self.label))
    }
}

fn bind(params: &[SqlParam]) -> Vec<Value> {
    params
        .iter()
        .map(|param| match *param {
            SqlParam::Text(text) => Value::Text(text.to_string()),
            SqlParam::Int32(value) => Value::Integer(value.into()),
            SqlParam::Int64(value) => Value::Integer(value),
        })
        .collect()
}

fn rows(result: QueryResult) -> Vec<Vec<Column>> {
    result.rows.into_iter().map(|row| row.values.into_iter().map(column).collect()).collect()
}

fn column(value: Value) -> Column {
    match value {
        Value::Integer(value) => Column::Integer(value),
        Value::Text(text) => Column::Text(text),
        Value::Null => Column::Null,
        Value::Real(_) | Value::Blob(_) => Column::Other,
    }
}
