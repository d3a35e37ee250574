//! `fermyon:spin/postgres@2.0.0` on [`PgView`], and what the 4.2 room
//! (`v4`) shares: the blocking `connection` functions (`blocking!`).

use std::sync::Arc;

use tokio_postgres::Row;
use wasmtime::component::{HasData, Resource, ResourceTable};

use super::pool::{self, BoxedParam, Connection, Kind, Outcome, PgPools, PoolError, Shared};
use super::values::v2;
use crate::bindings::fermyon::spin::postgres::{self, HostConnection};
use crate::bindings::fermyon::spin::rdbms_types::{self, Error, ParameterValue, RowSet};

/// What `fermyon:spin/postgres` (and its `rdbms-types`) and
/// `spin:postgres` see of an instance.
pub struct PgView<'a> {
    pub pools: &'a Arc<PgPools>,
    pub table: &'a mut ResourceTable,
    /// `--pg-empty-query-error`.
    pub empty_query_error: bool,
}

/// The interfaces' `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinPostgres;

impl HasData for SpinPostgres {
    type Data<'a> = PgView<'a>;
}

impl From<PoolError> for Error {
    fn from(e: PoolError) -> Error {
        match e {
            PoolError::ConnectionFailed(text) => Error::ConnectionFailed(text),
            PoolError::QueryFailed(text) => Error::QueryFailed(text),
            PoolError::Db(e) => Error::QueryFailed(format!("{e:?}")),
            PoolError::Other(text) => Error::Other(text),
        }
    }
}

/// A query's rows (`Err`: Spin's error for a parameter PostgreSQL cannot
/// take, or the statement's), and `--pg-empty-query-error`'s check.
pub(super) async fn query<E: From<PoolError>>(
    client: Shared,
    empty_query_error: bool,
    statement: &str,
    params: Result<Vec<BoxedParam>, E>,
) -> Result<Vec<Row>, E> {
    match pool::run(client, statement, params?, Kind::Query).await? {
        Outcome::Rows(rows) if rows.is_empty() && empty_query_error => {
            Err(empty_query(statement).into())
        }
        Outcome::Rows(rows) => Ok(rows),
        _ => Err(unexpected()),
    }
}

/// A statement's count of rows.
pub(super) async fn execute<E: From<PoolError>>(
    client: Shared,
    statement: &str,
    params: Result<Vec<BoxedParam>, E>,
) -> Result<u64, E> {
    match pool::run(client, statement, params?, Kind::Execute).await? {
        Outcome::Count(n) => Ok(n),
        _ => Err(unexpected()),
    }
}

pub(super) fn unexpected<E: From<PoolError>>() -> E {
    PoolError::Other("unexpected result".into()).into()
}

/// Real Spin 4.0.0 to 4.0.2 never answer a query without rows
/// (`--pg-empty-query-error`). The log line names the statement on one
/// line, never its parameters.
fn empty_query(statement: &str) -> PoolError {
    let statement = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!(
        "pg-empty-query-error: a PostgreSQL query returned zero rows, on which \
         Spin 4.0.0 to 4.0.2 hang forever (Spin issue #3671); failing it: {statement}"
    );
    PoolError::QueryFailed(
        "query returned zero rows (spin-lite --pg-empty-query-error: \
         Spin 4.0.0 to 4.0.2 hang on a query without rows, Spin issue #3671)"
            .into(),
    )
}

/// `connection`'s blocking functions, alike in 2.0 and 4.2: `$values` is
/// the version's conversions; its `postgres`, `Error`, `ParameterValue`,
/// `RowSet` and `HostConnection` are in scope.
macro_rules! blocking {
    ($values:ident) => {
        impl postgres::Host for PgView<'_> {}

        impl HostConnection for PgView<'_> {
            async fn open(
                &mut self,
                address: String,
            ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
                Ok(match self.pools.open(&address).await {
                    Ok(conn) => Ok(self.table.push(conn)?),
                    Err(e) => Err(e.into()),
                })
            }

            async fn query(
                &mut self,
                this: Resource<Connection>,
                statement: String,
                params: Vec<ParameterValue>,
            ) -> wasmtime::Result<Result<RowSet, Error>> {
                let client = self.table.get(&this)?.client.clone();
                let params = params.iter().map($values::to_sql).collect();
                let rows = query(client, self.empty_query_error, &statement, params).await;
                Ok(rows.and_then(|rows| $values::row_set(&rows)))
            }

            async fn execute(
                &mut self,
                this: Resource<Connection>,
                statement: String,
                params: Vec<ParameterValue>,
            ) -> wasmtime::Result<Result<u64, Error>> {
                let client = self.table.get(&this)?.client.clone();
                let params = params.iter().map($values::to_sql).collect();
                Ok(execute(client, &statement, params).await)
            }

            /// A healthy connection goes back to the pool.
            async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
                self.table.delete(this)?;
                Ok(())
            }
        }
    };
}
pub(super) use blocking;

impl rdbms_types::Host for PgView<'_> {}

blocking!(v2);
