//! PostgreSQL through Spin (`fermyon:spin/postgres@2.0.0`, in every Spin
//! since 2.0) as a `db::Connection`.

use std::time::Duration;

use spin_sdk::pg::{Connection, DbValue, ParameterValue, PgError as Error, RowSet};

use crate::db::{self, Column, Row, SqlParam, Statement, StoreError, StoreKind};
use crate::settings::{redact_password, Database};

/// Wraps `statement` so that it yields at least one row, whatever the data:
/// Spin 4.0.0 to 4.0.2 never return from a `query` that yields none (Spin
/// issue #3671; docs/operations.md). Data-modifying statements run once as
/// CTEs too. The join loses the CTE's order, so the outer query orders by
/// the first column, every statement's key (`id` for books, as lists need).
pub(crate) fn at_least_one_row(statement: &str) -> String {
    format!(
        "WITH result AS ({statement}) \
         SELECT result.* FROM (VALUES (1)) AS one(k) LEFT JOIN result ON true ORDER BY 1"
    )
}

/// The rows of a result built by `at_least_one_row`: without the row of NULLs
/// that stands for "no rows". A row whose first column is NULL is that row:
/// every statement's first column is a NOT NULL key.
fn rows_of(result: RowSet) -> impl Iterator<Item = Vec<DbValue>> {
    result.rows.into_iter().filter(|row| !matches!(row.first(), Some(DbValue::DbNull) | None))
}

/// Connects on its first query (Spin pools the connections host-side).
pub struct PostgresConnection {
    database: Database,
    connection: Option<Connection>,
}

impl PostgresConnection {
    pub fn new(database: &Database) -> PostgresConnection {
        PostgresConnection { database: database.clone(), connection: None }
    }

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

    /// Runs `statement` through `query`, wrapped by `at_least_one_row`
    /// unless it is written to return a row anyway (a statement with
    /// data-modifying CTEs, which PostgreSQL allows only at the top level).
    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let sql = if statement.always_a_row {
            statement.sql.clone()
        } else {
            at_least_one_row(&statement.sql)
        };
        let params = bind(&statement.params);
        let rows = self.connection()?.query(&sql, &params).map_err(|error| failed(&error, ""))?;
        Ok(rows_of(rows).map(|row| row.into_iter().map(column).collect()).collect())
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
fn failed(error: &Error, sql: &str) -> StoreError {
    let text = describe(error);
    let sqlstate = db::SQLSTATES_TOLD_APART.into_iter().find(|code| text.contains(code));
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

fn bind(params: &[SqlParam]) -> Vec<ParameterValue> {
    params
        .iter()
        .map(|param| match *param {
            SqlParam::Text(text) => ParameterValue::Str(text.to_string()),
            SqlParam::Int32(value) => ParameterValue::Int32(value),
            SqlParam::Int64(value) => ParameterValue::Int64(value),
        })
        .collect()
}

fn column(value: DbValue) -> Column {
    match value {
        DbValue::Int32(value) => Column::Integer(value.into()),
        DbValue::Int64(value) => Column::Integer(value),
        DbValue::Str(text) => Column::Text(text),
        DbValue::DbNull => Column::Null,
        _ => Column::Other,
    }
}
