//! A Spin SQLite database (`spin:sqlite/sqlite@3.1.0`) as a `db::Connection`,
//! its connection kept by the instance between requests (with its PRAGMAs):
//! a request takes an idle one or opens one, and gives it back when done, so
//! no two requests running at once share a connection or a transaction.
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

use crate::db::{self, Column, Row, SqlParam, Statement, StoreError, StoreKind, Synchronous};
use crate::settings::Database;

/// Idle connections an instance keeps: one per request it may run at once.
const KEPT_IDLE: usize = 16;

/// An open connection, the `synchronous` its PRAGMAs set (if they ran),
/// and whether a transaction is open on it.
struct Opened {
    label: String,
    connection: Connection,
    write_pragmas: Option<Synchronous>,
    in_transaction: bool,
}

thread_local! {
    static IDLE: RefCell<Vec<Opened>> = const { RefCell::new(Vec::new()) };
}

pub struct SqliteConnection {
    label: String,
    synchronous: Synchronous,
    /// Taken from the idle ones, or opened at the first statement.
    open: Option<Opened>,
}

impl super::super::Open for SqliteConnection {
    fn open(database: &Database) -> anyhow::Result<SqliteConnection> {
        let label = database.address.clone();
        let open = IDLE.with_borrow_mut(|idle| {
            let found = idle.iter().rposition(|open| open.label == label)?;
            Some(idle.swap_remove(found))
        });
        Ok(SqliteConnection { label, synchronous: database.synchronous, open })
    }
}

impl SqliteConnection {
    fn run(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<RowResult>, StoreError> {
        let label = &self.label;
        let failed = |error: Error| {
            let detail = match error {
                Error::Io(text) => text,
                other => format!("{other:?}"),
            };
            StoreError::sqlite(format!("SQLite database {label:?}: {detail}"))
        };
        let open = match &mut self.open {
            Some(open) => open,
            slot => {
                let connection = Connection::open(label).map_err(|error| {
                    StoreError::other(format!("opening SQLite database {label:?}: {error:?}"))
                })?;
                let label = label.clone();
                slot.insert(Opened {
                    label,
                    connection,
                    write_pragmas: None,
                    in_transaction: false,
                })
            }
        };
        Ok(open.connection.execute(sql, &params).map_err(failed)?.rows)
    }
}

impl Drop for SqliteConnection {
    /// Kept only when no transaction is open on it (a request cut short in
    /// one): closing it rolls that back.
    fn drop(&mut self) {
        if let Some(open) = self.open.take().filter(|open| !open.in_transaction) {
            IDLE.with_borrow_mut(|idle| {
                if idle.len() < KEPT_IDLE {
                    idle.push(open);
                }
            });
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
        let ran = self.open.as_ref().and_then(|open| open.write_pragmas);
        if ran != Some(self.synchronous) {
            for pragma in db::write_pragmas(self.synchronous) {
                self.run(&pragma, Vec::new())?;
            }
            if let Some(open) = &mut self.open {
                open.write_pragmas = Some(self.synchronous);
            }
        }
        Ok(())
    }

    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.run(sql, Vec::new())?;
        if let Some(open) = &mut self.open {
            match sql {
                db::BEGIN_WRITE => open.in_transaction = true,
                db::COMMIT | db::ROLLBACK => open.in_transaction = false,
                _ => {}
            }
        }
        Ok(())
    }

    /// A timer of the host's: the instance's other requests run meanwhile.
    async fn pause(&mut self, duration: Duration) {
        monotonic_clock::wait_for(duration.as_nanos() as u64).await;
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

fn column(value: Value) -> Column {
    match value {
        Value::Integer(value) => Column::Integer(value),
        Value::Text(text) => Column::Text(text),
        Value::Null => Column::Null,
        Value::Real(_) | Value::Blob(_) => Column::Other,
    }
}
