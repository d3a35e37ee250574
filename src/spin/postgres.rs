//! `BookStore` on PostgreSQL through Spin (`spin:postgres/postgres@4.0.0`).

use anyhow::{anyhow, bail};
use spin_sdk::pg4::{Connection, DbValue, ParameterValue, PgError as Error, QueryError, RowSet};

use crate::books::{Book, BookChanges, NewBook};
use crate::router::BookId;
use crate::schema;
use crate::store::{
    insert_statement, redact_password, update_statement, BookStore, SqlParam, BOOK_COLUMNS,
};

/// SQLSTATE codes the store reacts to.
const UNDEFINED_TABLE: &str = "42P01";
/// Two first requests racing to create the table: the loser's
/// `CREATE TABLE IF NOT EXISTS` fails with one of these (duplicate table,
/// duplicate object: the table's row type, unique violation in the
/// catalogue), and the table exists.
const CONCURRENT_CREATE: [&str; 3] = ["42P07", "42710", "23505"];

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

    /// Runs one query; on a missing table, creates the schema and retries.
    fn query(&mut self, sql: &str, params: &[ParameterValue]) -> anyhow::Result<RowSet> {
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(
                Connection::open(&self.url)
                    .map_err(|error| anyhow!("connecting to PostgreSQL: {}", describe(&error)))?,
            ),
        };
        match connection.query(sql, params) {
            Err(error) if sqlstate(&error) == Some(UNDEFINED_TABLE) => {
                migrate(connection)?;
                connection.query(sql, params)
            }
            result => result,
        }
        .map_err(|error| anyhow!("PostgreSQL: {}", describe(&error)))
    }
}

fn migrate(connection: &Connection) -> anyhow::Result<()> {
    for statement in schema::statements(schema::POSTGRES) {
        match connection.execute(&statement, &[]) {
            Ok(_) => {}
            Err(error)
                if sqlstate(&error).is_some_and(|code| CONCURRENT_CREATE.contains(&code)) => {}
            Err(error) => bail!("creating the schema: {}", describe(&error)),
        }
    }
    Ok(())
}

fn sqlstate(error: &Error) -> Option<&str> {
    match error {
        Error::QueryFailed(QueryError::DbError(db_error)) => Some(db_error.code.as_str()),
        _ => None,
    }
}

/// An error for the log; host messages may quote the address, so any
/// password in it is masked.
fn describe(error: &Error) -> String {
    let text = match error {
        Error::QueryFailed(QueryError::DbError(db_error)) => {
            format!("{} (SQLSTATE {})", db_error.message, db_error.code)
        }
        Error::QueryFailed(QueryError::Text(text))
        | Error::ConnectionFailed(text)
        | Error::BadParameter(text)
        | Error::ValueConversionFailed(text)
        | Error::Other(text) => text.clone(),
    };
    redact_password(&text)
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

fn first_book(rows: RowSet) -> anyhow::Result<Option<Book>> {
    rows.rows.into_iter().next().map(book_from_row).transpose()
}

impl BookStore for PostgresStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books ORDER BY id");
        let rows = self.query(&sql, &[])?;
        rows.rows.into_iter().map(book_from_row).collect()
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = $1");
        first_book(self.query(&sql, &[ParameterValue::Int64(id.get())])?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let (sql, params) = insert_statement(book, '$');
        let rows = self.query(&sql, &bind(&params))?;
        match rows.rows.first().map(Vec::as_slice) {
            Some([DbValue::Int64(id)]) => Ok(book.with_id(*id)),
            other => bail!("INSERT returned {other:?}"),
        }
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        let (sql, params) = update_statement(changes, '$');
        let mut params = bind(&params);
        params.push(ParameterValue::Int64(id.get()));
        first_book(self.query(&sql, &params)?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        let rows = self.query(
            "DELETE FROM books WHERE id = $1 RETURNING id",
            &[ParameterValue::Int64(id.get())],
        )?;
        Ok(!rows.rows.is_empty())
    }
}
