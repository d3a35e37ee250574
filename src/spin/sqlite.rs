//! A Spin SQLite database (`fermyon:spin/sqlite@2.0.0`) as the stores'
//! `SqlConnection`.

use anyhow::{anyhow, bail, Context as _};
use spin_sdk::sqlite::{Connection, Error, QueryResult, Value};

use crate::migrations::{self, SchemaConnection};
use crate::sql::{Column, Dialect, SqlParam, Statement};
use crate::sql_store::SqlConnection;

/// Opens the database on its first statement, so requests that fail before
/// touching the store never open it.
pub struct SqliteConnection {
    label: String,
    connection: Option<Connection>,
}

impl SqliteConnection {
    pub fn new(label: &str) -> SqliteConnection {
        SqliteConnection {
            label: label.to_string(),
            connection: None,
        }
    }
}

impl SqlConnection for SqliteConnection {
    const DIALECT: Dialect = Dialect::Sqlite;

    /// A missing table or column means the database is behind this build's
    /// schema: migrate it and run the statement again. The usual path
    /// therefore costs no schema check at all.
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
                migrations::migrate(&mut Schema(connection), Self::DIALECT)
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
