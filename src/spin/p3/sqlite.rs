//! A Spin SQLite database (`spin:sqlite/sqlite@3.1.0`) as a `db::Connection`,
//! its connection kept by the instance between requests with its PRAGMAs
//! (`instance::Kept`).
//!
//! Statements go through the interface's blocking `open` and `execute`, not
//! `*-async`: under Spin main they cost 10 to 20 % less CPU a request, with a
//! p99 as good at 16 and 64 clients (docs/performance.md), as a statement
//! takes well under a millisecond; the instance's other requests wait that
//! long. Waiting for another writer's lock is a host timer (`pause`).

use std::cell::RefCell;
use std::time::Duration;

use spin_sdk::sqlite::wit::sqlite::{Connection, Error, RowResult, Value};
use spin_sdk::wasip3::clocks::monotonic_clock;

use super::instance::{Idle, Kept};
use crate::db::{self, Row, Statement, StoreError, StoreKind, Synchronous};
use crate::settings::Database;

super::super::sqlite_values!(Value);

thread_local! {
    static IDLE: Idle<Opened> = const { RefCell::new(Vec::new()) };
}

/// An open connection and the `synchronous` its PRAGMAs set, if they ran.
struct Opened {
    connection: Connection,
    write_pragmas: Option<Synchronous>,
}

pub struct SqliteConnection {
    label: String,
    synchronous: Synchronous,
    /// Taken from the instance's idle ones, or opened at the first statement.
    kept: Option<Kept<Opened>>,
}

impl super::super::Open for SqliteConnection {
    fn open(database: &Database) -> anyhow::Result<SqliteConnection> {
        let label = database.address.clone();
        let kept = Kept::take(&IDLE, &label);
        Ok(SqliteConnection { label, synchronous: database.synchronous, kept })
    }
}

impl SqliteConnection {
    fn run(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<RowResult>, StoreError> {
        let label = &self.label;
        let kept = match &mut self.kept {
            Some(kept) => kept,
            slot => {
                let connection = Connection::open(label).map_err(|error| {
                    StoreError::other(format!("opening SQLite database {label:?}: {error:?}"))
                })?;
                slot.insert(Kept::new(label, Opened { connection, write_pragmas: None }))
            }
        };
        let result = kept.held.connection.execute(sql, &params).map_err(|error| {
            let detail = match error {
                Error::Io(text) => text,
                other => format!("{other:?}"),
            };
            StoreError::sqlite(format!("SQLite database {label:?}: {detail}"))
        })?;
        kept.ran(sql);
        Ok(result.rows)
    }
}

impl Drop for SqliteConnection {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.give_back(&IDLE);
        }
    }
}

impl db::Connection for SqliteConnection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let rows = self.run(&statement.sql, bind(&statement.params))?;
        Ok(rows.into_iter().map(|row| row.values.into_iter().map(column).collect()).collect())
    }

    /// Spin sets no PRAGMA: rusqlite's 5 s busy timeout would hand the wait
    /// to SQLite's backing-off busy handler (a short one leaves it to the
    /// core, `db::BUSY_TIMEOUT_MS`), and `synchronous` would stay FULL. They
    /// last as long as the connection.
    async fn prepare_write(&mut self) -> Result<(), StoreError> {
        let ran = self.kept.as_ref().and_then(|kept| kept.held.write_pragmas);
        if ran != Some(self.synchronous) {
            for pragma in db::write_pragmas(self.synchronous) {
                self.run(&pragma, Vec::new())?;
            }
            if let Some(kept) = &mut self.kept {
                kept.held.write_pragmas = Some(self.synchronous);
            }
        }
        Ok(())
    }

    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.run(sql, Vec::new()).map(drop)
    }

    /// A timer of the host's: the instance's other requests run meanwhile.
    async fn pause(&mut self, duration: Duration) {
        monotonic_clock::wait_for(duration.as_nanos() as u64).await;
    }
}
