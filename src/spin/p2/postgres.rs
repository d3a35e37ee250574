//! PostgreSQL through Spin (`fermyon:spin/postgres@2.0.0`, in every Spin
//! since 2.0) as a `db::Connection`: every query returns a row
//! (`always_a_row`).

use std::time::Duration;

use spin_sdk::pg::{Connection, DbValue, ParameterValue, PgError as Error};

use super::super::{always_a_row, without_the_empty_row};
use crate::db::{self, Row, Statement, StoreError, StoreKind};
use crate::settings::{redact_password, Database};

super::super::postgres_values!(ParameterValue, DbValue);

/// Connects on its first query (Spin pools the connections host-side).
pub struct PostgresConnection {
    database: Database,
    connection: Option<Connection>,
}

impl super::super::Open for PostgresConnection {
    fn open(database: &Database) -> anyhow::Result<PostgresConnection> {
        Ok(PostgresConnection { database: database.clone(), connection: None })
    }
}

impl PostgresConnection {
    fn connection(&mut self) -> Result<&Connection, StoreError> {
        match &mut self.connection {
            Some(connection) => Ok(connection),
            slot => Ok(slot.insert(Connection::open(&self.database.address).map_err(|error| {
                StoreError::other(self.database.connect_failure(&describe(&error)))
            })?)),
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
        let set = self.connection()?.query(&sql, &params).map_err(|error| failed(&error, ""))?;
        Ok(without_the_empty_row(set.rows.into_iter().map(|row| row.into_iter().map(column))))
    }

    /// Through `execute`, which the zero-row hang never affects.
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.connection()?.execute(sql, &[]).map(drop).map_err(|error| failed(&error, sql))
    }

    async fn pause(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// A failed statement, told apart by the SQLSTATE the 2.0 interface leaves
/// only in its text: tokio-postgres' description names it (`SqlState(E42P01)`).
/// Spin 3.6.3 (SpinKube's containerd-shim-spin) words a unique violation as
/// PostgreSQL's message alone (`db error ... duplicate key value ...`): English
/// unless the server's `lc_messages` is another language.
fn failed(error: &Error, sql: &str) -> StoreError {
    let text = describe(error);
    let sqlstate =
        db::SQLSTATES_TOLD_APART.into_iter().find(|code| text.contains(code)).or_else(|| {
            text.contains("duplicate key value violates unique constraint").then_some("23505")
        });
    let statement = if sql.is_empty() { String::new() } else { format!("{sql}: ") };
    StoreError::postgres(sqlstate, format!("PostgreSQL: {statement}{text}"))
}

/// An error for the log, any password in a quoted address masked.
fn describe(error: &Error) -> String {
    let text = match error {
        Error::ConnectionFailed(text)
        | Error::BadParameter(text)
        | Error::QueryFailed(text)
        | Error::ValueConversionFailed(text)
        | Error::Other(text) => text,
    };
    redact_password(text)
}
