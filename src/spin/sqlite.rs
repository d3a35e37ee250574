//! The store on a Spin SQLite database (`fermyon:spin/sqlite@2.0.0`).

use anyhow::{anyhow, bail, Context as _};
use spin_sdk::sqlite::{Connection, Error, QueryResult, Value};

use crate::migrations::{self, SchemaConnection};
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::sql::{self, Dialect, SqlParam, Statement};
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

    /// Runs one statement. A missing table or column means the database is
    /// behind this build's schema: migrate it and run the statement again.
    /// The usual path therefore costs no schema check at all.
    fn run(&mut self, statement: &Statement) -> anyhow::Result<QueryResult> {
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

/// Takes the row's strings rather than copying them: a list of 10,000
/// books is then held once, not twice.
fn book_from_row(values: Vec<Value>) -> anyhow::Result<Book> {
    match <[Value; 4]>::try_from(values) {
        Ok([Value::Integer(id), Value::Text(title), Value::Text(author), Value::Integer(year)]) => {
            let year = i32::try_from(year).context("stored year out of range")?;
            Ok(Book {
                id,
                title,
                author,
                year,
            })
        }
        other => bail!("unexpected book row: {other:?}"),
    }
}

fn books(result: QueryResult) -> anyhow::Result<Vec<Book>> {
    result
        .rows
        .into_iter()
        .map(|row| book_from_row(row.values))
        .collect()
}

fn first_book(result: QueryResult) -> anyhow::Result<Option<Book>> {
    result
        .rows
        .into_iter()
        .next()
        .map(|row| book_from_row(row.values))
        .transpose()
}

/// The `attempts, window_end` row of a login-attempt statement, if any.
fn attempts_row(result: QueryResult) -> anyhow::Result<Option<LoginAttempts>> {
    match result.rows.first().map(|row| row.values.as_slice()) {
        None => Ok(None),
        Some([Value::Integer(count), Value::Integer(window_end)]) => {
            LoginAttempts::from_row(*count, *window_end).map(Some)
        }
        Some(other) => bail!("unexpected login-attempt row: {other:?}"),
    }
}

impl BookStore for SqliteStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        books(self.run(&sql::list(DIALECT))?)
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        books(self.run(&sql::page(DIALECT, query))?)
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        first_book(self.run(&sql::get(DIALECT, id))?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let result = self.run(&sql::insert(DIALECT, book))?;
        match result.rows.first().map(|row| row.values.as_slice()) {
            Some([Value::Integer(id)]) => Ok(book.with_id(*id)),
            other => bail!("INSERT returned {other:?}"),
        }
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        first_book(self.run(&sql::update(DIALECT, id, changes))?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(!self.run(&sql::delete(DIALECT, id))?.rows.is_empty())
    }

    /// `GET /health`: opens the database and runs the most trivial query.
    fn ping(&mut self) -> anyhow::Result<()> {
        let result = self.run(&sql::ping(DIALECT))?;
        match result.rows.first().map(|row| row.values.as_slice()) {
            Some([Value::Integer(1)]) => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }
}

impl LoginAttemptStore for SqliteStore {
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
        attempts_row(self.run(&sql::login_attempts(DIALECT, client))?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts> {
        let statement = sql::count_login_attempt(DIALECT, client, now, window_seconds);
        attempts_row(self.run(&statement)?)?.context("the login-attempt upsert returned no row")
    }

    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()> {
        self.run(&sql::clear_login_attempts(DIALECT, client))
            .map(drop)
    }

    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        self.run(&sql::prune_login_attempts(DIALECT, now, limit))
            .map(drop)
    }
}
