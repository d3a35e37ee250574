//! PostgreSQL for the native comparator: tokio-postgres connections with
//! their prepared statements, as the core's `Connection`.

use std::collections::HashMap;

use anyhow::{anyhow, Context as _};
use book_catalog::db::{Column, Connection, SqlParam, Statement};
use book_catalog::settings::StoreKind;
use tokio::runtime::Handle;

/// One PostgreSQL connection and the statements prepared on it.
pub struct PgConnection {
    client: tokio_postgres::Client,
    statements: HashMap<String, tokio_postgres::Statement>,
}

pub async fn connect_postgres(url: &str) -> anyhow::Result<PgConnection> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("error: PostgreSQL connection: {error}");
        }
    });
    Ok(PgConnection { client, statements: HashMap::new() })
}

/// A pooled connection, used from a blocking thread: each query is driven
/// to completion on the runtime with `Handle::block_on`.
pub struct PgStore<'a> {
    pub connection: &'a mut PgConnection,
    pub runtime: Handle,
}

type PgParam<'p> = &'p (dyn tokio_postgres::types::ToSql + Sync);

/// Borrows a shared-SQL value as a tokio-postgres parameter.
fn pg_param<'p>(param: &'p SqlParam) -> PgParam<'p> {
    match param {
        SqlParam::Text(text) => text,
        SqlParam::Int32(value) => value,
        SqlParam::Int64(value) => value,
    }
}

/// A row as the shared readers of `sql` take it.
fn pg_columns(row: &tokio_postgres::Row) -> anyhow::Result<Vec<Column>> {
    use tokio_postgres::types::Type;
    (0..row.len())
        .map(|i| {
            let column = match *row.columns()[i].type_() {
                Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(|v| Column::Integer(v.into())),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Column::Integer),
                Type::TEXT | Type::VARCHAR => {
                    row.try_get::<_, Option<String>>(i)?.map(Column::Text)
                }
                _ => Some(Column::Other),
            };
            Ok(column.unwrap_or(Column::Null))
        })
        .collect()
}

impl Connection for PgStore<'_> {
    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }

    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let params: Vec<PgParam> = statement.params.iter().map(pg_param).collect();
        let PgConnection { client, statements } = &mut *self.connection;
        let sql = &statement.sql;
        let rows = self
            .runtime
            .block_on(async {
                let prepared = match statements.get(sql) {
                    Some(prepared) => prepared.clone(),
                    None => {
                        let prepared = client.prepare(sql).await?;
                        statements.insert(sql.clone(), prepared.clone());
                        prepared
                    }
                };
                client.query(&prepared, &params).await
            })
            // `{:?}` names the SQLSTATE, as Spin's text does.
            .map_err(|error| anyhow!("PostgreSQL: {error:?}"))?;
        rows.iter().map(pg_columns).collect()
    }

    fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
        let client = &self.connection.client;
        self.runtime
            .block_on(client.batch_execute(sql))
            .with_context(|| format!("PostgreSQL: {sql}"))
    }
}
