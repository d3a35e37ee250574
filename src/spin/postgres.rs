//! The store on PostgreSQL through Spin (`fermyon:spin/postgres@2.0.0`, in
//! every Spin since 2.0).

use anyhow::{anyhow, bail, Context as _};
use spin_sdk::pg::{Connection, DbValue, ParameterValue, PgError as Error, RowSet};

use crate::db_url::redact_password;
use crate::migrations::{self, SchemaConnection};
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::sql::{self, Column, Dialect, SqlParam, Statement};
use crate::store::{BookStore, LoginAttemptStore, LoginAttempts};

const DIALECT: Dialect = Dialect::Postgres;

/// The SQLSTATEs of a database behind this build's schema: undefined table,
/// undefined column. The 2.0 interface reports a failed query as text only;
/// Spin (and our host) put tokio-postgres' description of the error there,
/// which names the SQLSTATE (`SqlState(E42P01)`).
const SCHEMA_BEHIND: [&str; 2] = ["42P01", "42703"];

/// Wraps `statement` so that it yields at least one row, whatever the data.
///
/// Why: Spin 4.0.0 to 4.0.2 never return from a PostgreSQL `query` that
/// yields no rows (Spin issue #3671, in all three PostgreSQL interfaces), so a
/// request for a missing book, or a list of an empty catalog, would hang until
/// the client gave up. Every statement this store sends through `query` is
/// built here: the statement becomes a CTE, left-joined to a one-row `VALUES`,
/// which gives the statement's rows or, when it has none, one row of NULLs
/// (that `rows_of` then drops). Data-modifying statements (`INSERT`, `UPDATE`,
/// `DELETE ... RETURNING`) work as CTEs too, and still run exactly once.
/// `order_by` orders the outer rows (a CTE's order is not kept by the join).
pub(crate) fn at_least_one_row(statement: &str, order_by: Option<&str>) -> String {
    let order = order_by.map_or(String::new(), |columns| format!(" ORDER BY {columns}"));
    format!(
        "WITH result AS ({statement}) \
         SELECT result.* FROM (VALUES (1)) AS one(k) LEFT JOIN result ON true{order}"
    )
}

/// The rows of a result built by `at_least_one_row`: without the row of NULLs
/// that stands for "no rows". A row whose first column is NULL is that row:
/// every statement's first column is a NOT NULL key.
fn rows_of(result: RowSet) -> impl Iterator<Item = Vec<DbValue>> {
    result
        .rows
        .into_iter()
        .filter(|row| !matches!(row.first(), Some(DbValue::DbNull) | None))
}

/// Connects on its first query (Spin pools the connections host-side).
pub struct PostgresStore {
    url: String,
    connection: Option<Connection>,
}

impl PostgresStore {
    pub fn new(url: &str) -> PostgresStore {
        PostgresStore {
            url: url.to_string(),
            connection: None,
        }
    }

    /// Runs `statement` through `query`, wrapped by `at_least_one_row`. A
    /// missing table or column means the database is behind this build's
    /// schema: migrate it and run the statement again.
    fn query(
        &mut self,
        statement: &Statement,
        order_by: Option<&str>,
    ) -> anyhow::Result<Vec<Vec<Column>>> {
        let sql = at_least_one_row(&statement.sql, order_by);
        let params = bind(&statement.params);
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(
                Connection::open(&self.url)
                    .map_err(|error| anyhow!("connecting to PostgreSQL: {}", describe(&error)))?,
            ),
        };
        let result = match connection.query(&sql, &params) {
            Err(error) if SCHEMA_BEHIND.iter().any(|code| has_sqlstate(&error, code)) => {
                migrations::migrate(&mut Schema(connection), DIALECT)
                    .context("migrating the PostgreSQL database")?;
                connection.query(&sql, &params)
            }
            result => result,
        };
        let rows = result.map_err(|error| anyhow!("PostgreSQL: {}", describe(&error)))?;
        Ok(rows_of(rows)
            .map(|row| row.into_iter().map(column).collect())
            .collect())
    }
}

/// The connection, as `migrations::migrate` works through it: statements
/// through `execute` (never affected by the zero-row hang), the recorded
/// versions through the always-a-row `query`.
struct Schema<'a>(&'a Connection);

impl SchemaConnection for Schema<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        self.0
            .execute(statement, &[])
            .map(drop)
            .map_err(|error| anyhow!("{statement}: {}", describe(&error)))
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let sql = at_least_one_row(migrations::APPLIED_VERSIONS, None);
        let rows = self
            .0
            .query(&sql, &[])
            .map_err(|error| anyhow!("reading schema_migrations: {}", describe(&error)))?;
        rows_of(rows)
            .map(|row| match row.as_slice() {
                [DbValue::Int64(version)] => Ok(*version),
                other => bail!("unexpected schema_migrations row: {other:?}"),
            })
            .collect()
    }
}

fn has_sqlstate(error: &Error, code: &str) -> bool {
    matches!(error, Error::QueryFailed(text) if text.contains(code))
}

/// An error for the log; host messages may quote the address, so any
/// password in it is masked.
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

impl BookStore for PostgresStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        // The outer ORDER BY keeps the order through the wrapper's join.
        sql::books_from_rows(self.query(&sql::list(DIALECT), Some("id"))?)
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        // The statement's own ORDER BY picks the page (with its LIMIT); the
        // outer one keeps that order through the wrapper's join.
        sql::books_from_rows(self.query(&sql::page(DIALECT, query), Some("id"))?)
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.query(&sql::get(DIALECT, id), None)?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let rows = self.query(&sql::insert(DIALECT, book), None)?;
        let id = sql::id_from_row(rows.first().map_or(&[], Vec::as_slice))?;
        Ok(book.with_id(id))
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.query(&sql::update(DIALECT, id, changes), None)?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(!self.query(&sql::delete(DIALECT, id), None)?.is_empty())
    }

    /// `GET /health`: connects (or takes a pooled connection) and runs the
    /// most trivial query, through the same always-a-row wrapper.
    fn ping(&mut self) -> anyhow::Result<()> {
        match self.query(&sql::ping(DIALECT), None)?.as_slice() {
            [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }
}

impl LoginAttemptStore for PostgresStore {
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
        sql::first_attempts(&self.query(&sql::login_attempts(DIALECT, client), None)?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts> {
        let statement = sql::count_login_attempt(DIALECT, client, now, window_seconds);
        sql::first_attempts(&self.query(&statement, None)?)?
            .ok_or_else(|| anyhow!("the login-attempt upsert returned no row"))
    }

    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()> {
        self.query(&sql::clear_login_attempts(DIALECT, client), None)
            .map(drop)
    }

    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        self.query(&sql::prune_login_attempts(DIALECT, now, limit), None)
            .map(drop)
    }
}
