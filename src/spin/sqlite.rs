//! `BookStore` on a Spin SQLite database (`fermyon:spin/sqlite@2.0.0`).

use anyhow::{anyhow, bail, Context as _};
use spin_sdk::sqlite::{Connection, Error, QueryResult, Value};

use crate::books::{Book, BookChanges, NewBook};
use crate::catalog::{page_statement, BookQuery, Dialect};
use crate::router::BookId;
use crate::schema;
use crate::store::{
    insert_statement, login_sql, update_statement, BookStore, LoginFailures, SqlParam, BOOK_COLUMNS,
};

/// Opens the database on its first query, so requests that fail before
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

    /// Runs one statement. A missing table means the schema was never
    /// created in this database: create it and run the statement again. The
    /// usual path therefore costs no schema check at all.
    fn execute(&mut self, sql: &str, params: &[Value]) -> anyhow::Result<QueryResult> {
        let label = &self.label;
        let connection = match &mut self.connection {
            Some(connection) => connection,
            slot => slot.insert(
                Connection::open(label)
                    .map_err(|error| anyhow!("opening SQLite database {label:?}: {error:?}"))?,
            ),
        };
        match connection.execute(sql, params) {
            Err(Error::Io(message)) if message.contains("no such table") => {
                migrate(connection).with_context(|| format!("creating the schema in {label:?}"))?;
                connection.execute(sql, params)
            }
            result => result,
        }
        .map_err(|error| anyhow!("SQLite database {label:?}: {error:?}"))
    }
}

fn migrate(connection: &Connection) -> anyhow::Result<()> {
    for statement in schema::statements(schema::SQLITE) {
        let result = connection.execute(&statement, &[]);
        // The WAL switch is an optimisation: it cannot happen while another
        // connection holds the file, and a later migration may retry it.
        if statement.starts_with("PRAGMA") {
            continue;
        }
        result.map_err(|error| anyhow!("{statement}: {error:?}"))?;
    }
    Ok(())
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

/// The `failures, window_end` row of a failed-login statement, if any.
fn login_row(result: QueryResult) -> anyhow::Result<Option<LoginFailures>> {
    match result.rows.first().map(|row| row.values.as_slice()) {
        None => Ok(None),
        Some([Value::Integer(count), Value::Integer(window_end)]) => {
            LoginFailures::from_row(*count, *window_end).map(Some)
        }
        Some(other) => bail!("unexpected failed-login row: {other:?}"),
    }
}

fn first_book(result: QueryResult) -> anyhow::Result<Option<Book>> {
    result
        .rows
        .into_iter()
        .next()
        .map(|row| book_from_row(row.values))
        .transpose()
}

impl BookStore for SqliteStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books ORDER BY id");
        let result = self.execute(&sql, &[])?;
        result
            .rows
            .into_iter()
            .map(|row| book_from_row(row.values))
            .collect()
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        let (sql, params) = page_statement(query, Dialect::Sqlite);
        let result = self.execute(&sql, &bind(&params))?;
        result
            .rows
            .into_iter()
            .map(|row| book_from_row(row.values))
            .collect()
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        let sql = format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = ?1");
        first_book(self.execute(&sql, &[Value::Integer(id.get())])?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let (sql, params) = insert_statement(book, '?');
        let result = self.execute(&sql, &bind(&params))?;
        match result.rows.first().map(|row| row.values.as_slice()) {
            Some([Value::Integer(id)]) => Ok(book.with_id(*id)),
            other => bail!("INSERT returned {other:?}"),
        }
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        let (sql, params) = update_statement(changes, '?');
        let mut params = bind(&params);
        params.push(Value::Integer(id.get()));
        first_book(self.execute(&sql, &params)?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        let result = self.execute(
            "DELETE FROM books WHERE id = ?1 RETURNING id",
            &[Value::Integer(id.get())],
        )?;
        Ok(!result.rows.is_empty())
    }

    fn login_failures(&mut self, client: &str) -> anyhow::Result<Option<LoginFailures>> {
        let (sql, params) = login_sql::select(client, '?');
        login_row(self.execute(&sql, &bind(&params))?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginFailures> {
        let (sql, params) = login_sql::count_attempt(client, now, window_seconds, '?');
        login_row(self.execute(&sql, &bind(&params))?)?
            .context("the failed-login upsert returned no row")
    }

    fn clear_login_failures(&mut self, client: &str) -> anyhow::Result<()> {
        let (sql, params) = login_sql::clear(client, '?');
        self.execute(&sql, &bind(&params))?;
        Ok(())
    }

    fn prune_login_failures(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        let (sql, params) = login_sql::prune(now, limit, '?');
        self.execute(&sql, &bind(&params))?;
        Ok(())
    }

    /// `GET /health`: opens the database and runs the most trivial query.
    fn ping(&mut self) -> anyhow::Result<()> {
        let result = self.execute("SELECT 1", &[])?;
        match result.rows.first().map(|row| row.values.as_slice()) {
            Some([Value::Integer(1)]) => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }
}
