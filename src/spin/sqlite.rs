//! The store on a Spin SQLite database (`fermyon:spin/sqlite@2.0.0`).

use anyhow::{anyhow, bail, Context as _};
use spin_sdk::sqlite::{Connection, Error, QueryResult, Value};

use crate::migrations::{self, SchemaConnection};
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::sql::{self, Column, Dialect, SqlParam, Statement};
use crate::store::{BookStore, LoginAttemptStore, LoginAttempts};

const DIALECT: Dialect = Dialect::Sqlite;

/// Opens the database on its first statement, so requests that fail before
/// touching the store never open it.
pub struct SqliteStore {
    label: String,
    connection: Option<Connection>,
}

impl SqliteStore {
    pub fn new(label: &str) -> SqliteStore {
        SqliteStore {
            label: label.to_string(),
            connection: None,
        }
    }

    /// Runs one statement and returns its rows. A missing table or column
    /// means the database is behind this build's schema: migrate it and run
    /// the statement again. The usual path therefore costs no schema check.
    fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let label = &self.label;
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(
                Connection::open(label)
                    .map_err(|error| anyhow!("opening SQLite database {label:?}: {error:?}"))?,
            ),
        };
        let params = bind(&statement.params);
        match connection.execute(&statement.sql, &params) {
            Err(Error::Io(message))
                if message.contains("no such table") || message.contains("no such column") =>
            {
                migrations::migrate(&mut Schema(connection), DIALECT)
                    .with_context(|| format!("migrating SQLite database {label:?}"))?;
                connection.execute(&statement.sql, &params)
            }
            result => result,
        }
        .map(rows)
        .map_err(|error| anyhow!("SQLite database {label:?}: {error:?}"))
    }
}

/// The connection, as `migrations::migrate` works through it.
struct Schema<'a>(&'a Connection);

impl SchemaConnection for Schema<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        self.0
            .execute(statement, &[])
            .map(drop)
            .map_err(|error| anyhow!("{statement}: {error:?}"))
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let result = self
            .0
            .execute(migrations::APPLIED_VERSIONS, &[])
            .map_err(|error| anyhow!("reading schema_migrations: {error:?}"))?;
        result
            .rows
            .iter()
            .map(|row| match row.values.as_slice() {
                [Value::Integer(version)] => Ok(*version),
                other => bail!("unexpected schema_migrations row: {other:?}"),
            })
            .collect()
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

/// The rows of a result, as the shared readers of `sql` take them.
fn rows(result: QueryResult) -> Vec<Vec<Column>> {
    result
        .rows
        .into_iter()
        .map(|row| row.values.into_iter().map(column).collect())
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

impl BookStore for SqliteStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        sql::books_from_rows(self.rows(&sql::list(DIALECT))?)
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        sql::books_from_rows(self.rows(&sql::page(DIALECT, query))?)
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.rows(&sql::get(DIALECT, id))?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let rows = self.rows(&sql::insert(DIALECT, book))?;
        let id = sql::id_from_row(rows.first().map_or(&[], Vec::as_slice))?;
        Ok(book.with_id(id))
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.rows(&sql::update(DIALECT, id, changes))?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(!self.rows(&sql::delete(DIALECT, id))?.is_empty())
    }

    /// `GET /health`: opens the database and runs the most trivial query.
    fn ping(&mut self) -> anyhow::Result<()> {
        match self.rows(&sql::ping(DIALECT))?.as_slice() {
            [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }
}

impl LoginAttemptStore for SqliteStore {
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
        sql::first_attempts(&self.rows(&sql::login_attempts(DIALECT, client))?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts> {
        let statement = sql::count_login_attempt(DIALECT, client, now, window_seconds);
        sql::first_attempts(&self.rows(&statement)?)?
            .context("the login-attempt upsert returned no row")
    }

    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()> {
        self.rows(&sql::clear_login_attempts(DIALECT, client))
            .map(drop)
    }

    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        self.rows(&sql::prune_login_attempts(DIALECT, now, limit))
            .map(drop)
    }
}
