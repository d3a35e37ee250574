//! PostgreSQL through Spin (`spin:postgres/postgres@4.2.0`) as a
//! `db::Connection`, by the interface's blocking calls: Spin hands
//! `query-async`'s rows over one a read, which made a page of 1,000 books
//! 2 to 8 times dearer, and a single-row request 10 to 20 % (measured:
//! docs/performance.md). Its blocking `query` never returns from a statement
//! with no rows under Spin main (observed), as under 4.0.0 to 4.0.2: every
//! query returns a row (`always_a_row`).

use std::time::Duration;

use spin_sdk::pg::wit::postgres::{Connection, DbValue, Error, ParameterValue, QueryError};
use spin_sdk::wasip3::clocks::monotonic_clock;

use std::cell::RefCell;

use super::super::{always_a_row, without_the_empty_row};
use super::instance::{Idle, Kept};
use crate::db::{self, Row, Statement, StoreError, StoreKind};
use crate::settings::{redact_password, Database};

super::super::postgres_values!(ParameterValue, DbValue);

thread_local! {
    static IDLE: Idle<Connection> = const { RefCell::new(Vec::new()) };
}

/// Spin's connection (one of its host-side pool), kept by the instance
/// between requests (`instance::Kept`) unless a statement failed on it.
pub struct PostgresConnection {
    database: Database,
    kept: Option<Kept<Connection>>,
}

impl super::super::Open for PostgresConnection {
    fn open(database: &Database) -> anyhow::Result<PostgresConnection> {
        let kept = Kept::take(&IDLE, &database.address);
        Ok(PostgresConnection { database: database.clone(), kept })
    }
}

impl PostgresConnection {
    /// Runs `statement` on the connection, opened at the first.
    fn run<T>(
        &mut self,
        sql: &str,
        statement: impl FnOnce(&Connection) -> Result<T, Error>,
    ) -> Result<T, StoreError> {
        let kept = match &mut self.kept {
            Some(kept) => kept,
            slot => {
                let address = &self.database.address;
                let connection = Connection::open(address).map_err(|error| {
                    StoreError::other(self.database.connect_failure(&describe(error).1))
                })?;
                slot.insert(Kept::new(address, connection))
            }
        };
        match statement(&kept.held) {
            Ok(value) => {
                kept.ran(sql);
                Ok(value)
            }
            Err(error) => {
                kept.broken();
                Err(failed(error, sql))
            }
        }
    }
}

impl Drop for PostgresConnection {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.give_back(&IDLE);
        }
    }
}

impl db::Connection for PostgresConnection {
    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }

    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let params = bind(&statement.params);
        let sql = always_a_row(statement);
        let set = self.run("", |connection| connection.query(&sql, &params))?;
        Ok(without_the_empty_row(set.rows.into_iter().map(|row| row.into_iter().map(column))))
    }

    /// Through `execute`, which the zero-row hang never affects.
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.run(sql, |connection| connection.execute(sql, &[])).map(drop)
    }

    async fn pause(&mut self, duration: Duration) {
        monotonic_clock::wait_for(duration.as_nanos() as u64).await;
    }
}

/// A failed statement, told apart by the SQLSTATE PostgreSQL gave.
fn failed(error: Error, sql: &str) -> StoreError {
    let (sqlstate, text) = describe(error);
    let statement = if sql.is_empty() { String::new() } else { format!("{sql}: ") };
    StoreError::postgres(sqlstate.as_deref(), format!("PostgreSQL: {statement}{text}"))
}

/// An error's SQLSTATE, if PostgreSQL gave one, and its text for the log,
/// any password in a quoted address masked.
fn describe(error: Error) -> (Option<String>, String) {
    let (sqlstate, text) = match error {
        Error::QueryFailed(QueryError::DbError(error)) => (Some(error.code), error.as_text),
        Error::QueryFailed(QueryError::Text(text))
        | Error::ConnectionFailed(text)
        | Error::BadParameter(text)
        | Error::ValueConversionFailed(text)
        | Error::Other(text) => (None, text),
    };
    // The blocking calls give some failures as text only (a unique violation).
    let told = || db::SQLSTATES_TOLD_APART.into_iter().find(|code| text.contains(code));
    let sqlstate = sqlstate.or_else(|| told().map(str::to_string));
    (sqlstate, redact_password(&text))
}
