//! A Spin SQLite database (`fermyon:spin/sqlite@2.0.0`) as a `db::Connection`.

use std::time::Duration;

use spin_sdk::sqlite::{Connection, QueryResult, Value};

use crate::db::{self, Row, Statement, StoreError, StoreKind, Synchronous};
use crate::settings::Database;

super::super::sqlite_values!(Value);

/// Opens the database on its first statement, so requests that fail before
/// touching the store never open it.
pub struct SqliteConnection {
    label: String,
    connection: Option<Connection>,
    synchronous: Synchronous,
    /// Whether `db::write_pragmas` ran: before its first write.
    write_ready: bool,
}

impl super::super::Open for SqliteConnection {
    fn open(database: &Database) -> anyhow::Result<SqliteConnection> {
        let (label, synchronous) = (database.address.clone(), database.synchronous);
        Ok(SqliteConnection { label, connection: None, synchronous, write_ready: false })
    }
}

impl SqliteConnection {
    fn run(&mut self, sql: &str, params: &[Value]) -> Result<QueryResult, StoreError> {
        let label = &self.label;
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(Connection::open(label).map_err(|error| {
                StoreError::other(format!("opening SQLite database {label:?}: {error:?}"))
            })?),
        };
        connection.execute(sql, params).map_err(|error| {
            let detail = match error {
                spin_sdk::sqlite::Error::Io(text) => text,
                other => format!("{other:?}"),
            };
            StoreError::sqlite(format!("SQLite database {label:?}: {detail}"))
        })
    }
}

impl db::Connection for SqliteConnection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let params = bind(&statement.params);
        self.run(&statement.sql, &params).map(rows)
    }

    /// Spin sets no PRAGMA: rusqlite's 5 s busy timeout would hand the wait
    /// to SQLite's backing-off busy handler (a short one leaves it to the
    /// core, `db::BUSY_TIMEOUT_MS`), and `synchronous` would stay FULL.
    async fn prepare_write(&mut self) -> Result<(), StoreError> {
        if !self.write_ready {
            for pragma in db::write_pragmas(self.synchronous) {
                self.run(&pragma, &[])?;
            }
            self.write_ready = true;
        }
        Ok(())
    }

    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.run(sql, &[]).map(drop)
    }

    /// A component's sleep is a host timer: it holds no thread.
    async fn pause(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

fn rows(result: QueryResult) -> Vec<Row> {
    result.rows.into_iter().map(|row| row.values.into_iter().map(column).collect()).collect()
}
