//! `BookStore` on PostgreSQL through Spin (`fermyon:spin/postgres@2.0.0`,
//! in every Spin since 2.0).

use anyhow::{anyhow, bail};
use spin_sdk::pg::{Connection, DbValue, ParameterValue, PgError as Error, RowSet};

use crate::books::{Book, BookChanges, NewBook};
use crate::catalog::{page_statement, BookQuery, Dialect};
use crate::router::BookId;
use crate::schema;
use crate::store::{
    insert_statement, login_sql, redact_password, update_statement, BookStore, LoginFailures,
    SqlParam, BOOK_COLUMNS,
};

/// SQLSTATE codes the store reacts to. The 2.0 interface reports a failed
/// query as text only; Spin (and our host) put tokio-postgres' description
/// of the error there, which names the SQLSTATE (`SqlState(E42P01)`).
const UNDEFINED_TABLE: &str = "42P01";
/// Two first requests racing to create the table: the loser's
/// `CREATE TABLE IF NOT EXISTS` fails with one of these (duplicate table,
/// duplicate object: the table's row type, unique violation in the
/// catalogue), and the table exists.
const CONCURRENT_CREATE: [&str; 3] = ["42P07", "42710", "23505"];

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

    /// Runs `statement` through `query`, wrapped by `at_least_one_row`; on a
    /// missing table, creates the schema and runs it again.
    fn query(
        &mut self,
        statement: &str,
        order_by: Option<&str>,
        params: &[ParameterValue],
    ) -> anyhow::Result<Vec<Vec<DbValue>>> {
        let sql = at_least_one_row(statement, order_by);
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(
                Connection::open(&self.url)
                    .map_err(|error| anyhow!("connecting to PostgreSQL: {}", describe(&error)))?,
            ),
        };
        let result = match connection.query(&sql, params) {
            Err(error) if has_sqlstate(&error, UNDEFINED_TABLE) => {
                migrate(connection)?;
                connection.query(&sql, params)
            }
            result => result,
        };
        let rows = result.map_err(|error| anyhow!("PostgreSQL: {}", describe(&error)))?;
        Ok(rows_of(rows).collect())
    }
}

fn migrate(connection: &Connection) -> anyhow::Result<()> {
    for statement in schema::statements(schema::POSTGRES) {
        match connection.execute(&statement, &[]) {
            Ok(_) => {}
            Err(error)
                if CONCURRENT_CREATE
                    .iter()
                    .any(|code| has_sqlstate(&error, code)) => {}
            Err(error) => bail!("creating the schema: {}", describe(&error)),
        }
    }
    Ok(())
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

/// Takes the row's strings rather than copying them: a list of 10,000
/// books is then held once, not twice.
fn book_from_row(row: Vec<DbValue>) -> anyhow::Result<Book> {
    match <[DbValue; 4]>::try_from(row) {
        Ok(
            [DbValue::Int64(id), DbValue::Str(title), DbValue::Str(author), DbValue::Int32(year)],
        ) => Ok(Book {
            id,
            title,
            author,
            year,
        }),
        other => bail!("unexpected book row: {other:?}"),
    }
}

/// The `failures, window_end` row of a failed-login statement, if any.
fn login_row(rows: Vec<Vec<DbValue>>) -> anyhow::Result<Option<LoginFailures>> {
    match rows.first().map(Vec::as_slice) {
        None => Ok(None),
        Some([DbValue::Int64(count), DbValue::Int64(window_end)]) => {
            LoginFailures::from_row(*count, *window_end).map(Some)
        }
        Some(other) => bail!("unexpected failed-login row: {other:?}"),
    }
}

fn first_book(rows: Vec<Vec<DbValue>>) -> anyhow::Result<Option<Book>> {
    rows.into_iter().next().map(book_from_row).transpose()
}

impl BookStore for PostgresStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books");
        let rows = self.query(&sql, Some("id"), &[])?;
        rows.into_iter().map(book_from_row).collect()
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        // The statement's own ORDER BY picks the page (with its LIMIT); the
        // outer one keeps that order through the wrapper's join.
        let (sql, params) = page_statement(query, Dialect::Postgres);
        let rows = self.query(&sql, Some("id"), &bind(&params))?;
        rows.into_iter().map(book_from_row).collect()
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = $1");
        first_book(self.query(&sql, None, &[ParameterValue::Int64(id.get())])?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let (sql, params) = insert_statement(book, '$');
        let rows = self.query(&sql, None, &bind(&params))?;
        match rows.first().map(Vec::as_slice) {
            Some([DbValue::Int64(id)]) => Ok(book.with_id(*id)),
            other => bail!("INSERT returned {other:?}"),
        }
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        let (sql, params) = update_statement(changes, '$');
        let mut params = bind(&params);
        params.push(ParameterValue::Int64(id.get()));
        first_book(self.query(&sql, None, &params)?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        let rows = self.query(
            "DELETE FROM books WHERE id = $1 RETURNING id",
            None,
            &[ParameterValue::Int64(id.get())],
        )?;
        Ok(!rows.is_empty())
    }

    /// `GET /health`: connects (or takes a pooled connection) and runs the
    /// most trivial query, through the same always-a-row wrapper.
    fn ping(&mut self) -> anyhow::Result<()> {
        let rows = self.query("SELECT 1 AS ok", None, &[])?;
        match rows.first().map(Vec::as_slice) {
            Some([DbValue::Int32(1)]) => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }

    fn login_failures(&mut self, client: &str) -> anyhow::Result<Option<LoginFailures>> {
        let (sql, params) = login_sql::select(client, '$');
        login_row(self.query(&sql, None, &bind(&params))?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginFailures> {
        let (sql, params) = login_sql::count_attempt(client, now, window_seconds, '$');
        login_row(self.query(&sql, None, &bind(&params))?)?
            .ok_or_else(|| anyhow!("the failed-login upsert returned no row"))
    }

    fn clear_login_failures(&mut self, client: &str) -> anyhow::Result<()> {
        let (sql, params) = login_sql::clear(client, '$');
        self.query(&sql, None, &bind(&params))?;
        Ok(())
    }

    fn prune_login_failures(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        let (sql, params) = login_sql::prune(now, limit, '$');
        self.query(&sql, None, &bind(&params))?;
        Ok(())
    }
}
