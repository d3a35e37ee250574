//! `fermyon:spin/postgres@2.0.0` on [`PgView`], and what the 4.2 room
//! (`v4`) shares.

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

fn spin_error(e: PoolError) -> Error {
    match e {
        PoolError::ConnectionFailed(text) => Error::ConnectionFailed(text),
        PoolError::QueryFailed(text) => Error::QueryFailed(text),
        PoolError::Db(failure) => Error::QueryFailed(failure.text),
        PoolError::Other(text) => Error::Other(text),
    }
}

impl PgView<'_> {
    /// A pooled connection, or the version's error (by `error`).
    pub(super) async fn open_connection<E>(
        &mut self,
        address: &str,
        error: fn(PoolError) -> E,
    ) -> wasmtime::Result<Result<Resource<Connection>, E>> {
        match self.pools.open(address).await {
            Ok(conn) => Ok(Ok(self.table.push(conn)?)),
            Err(e) => Ok(Err(error(e))),
        }
    }
}

/// Runs one statement: Spin's error for a parameter PostgreSQL cannot take,
/// then the statement's (in the version's terms, by `error`).
pub(super) async fn run<E>(
    client: Shared,
    statement: &str,
    params: Result<Vec<BoxedParam>, E>,
    kind: Kind,
    error: fn(PoolError) -> E,
) -> Result<Outcome, E> {
    pool::run(client, statement, params?, kind).await.map_err(error)
}

/// A query's rows, and `--pg-empty-query-error`'s check.
pub(super) async fn query<E>(
    (client, empty_query_error): (Shared, bool),
    statement: &str,
    params: Result<Vec<BoxedParam>, E>,
    error: fn(PoolError) -> E,
) -> Result<Vec<Row>, E> {
    match run(client, statement, params, Kind::Query, error).await? {
        Outcome::Rows(rows) if rows.is_empty() && empty_query_error => {
            Err(error(empty_query(statement)))
        }
        Outcome::Rows(rows) => Ok(rows),
        _ => Err(error(PoolError::Other("unexpected result".into()))),
    }
}

/// A statement's count of rows.
pub(super) async fn execute<E>(
    client: Shared,
    statement: &str,
    params: Result<Vec<BoxedParam>, E>,
    error: fn(PoolError) -> E,
) -> Result<u64, E> {
    match run(client, statement, params, Kind::Execute, error).await? {
        Outcome::Count(n) => Ok(n),
        _ => Err(error(PoolError::Other("unexpected result".into()))),
    }
}

/// Real Spin 4.0.0 to 4.0.2 never answer a query without rows
/// (`--pg-empty-query-error`). The log line names the statement on one
/// line, never its parameters.
pub(super) fn empty_query(statement: &str) -> PoolError {
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

impl rdbms_types::Host for PgView<'_> {}

impl postgres::Host for PgView<'_> {}

impl HostConnection for PgView<'_> {
    async fn open(
        &mut self,
        address: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        self.open_connection(&address, spin_error).await
    }

    async fn query(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<RowSet, Error>> {
        let client = (self.table.get(&this)?.client(), self.empty_query_error);
        let params = params.iter().map(v2::to_sql).collect();
        let rows = query(client, &statement, params, spin_error).await;
        let rows = rows.and_then(|rows| v2::row_set(&rows).map_err(Error::QueryFailed));
        Ok(rows.map(|(columns, rows)| RowSet { columns, rows }))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<u64, Error>> {
        let client = self.table.get(&this)?.client();
        let params = params.iter().map(v2::to_sql).collect();
        Ok(execute(client, &statement, params, spin_error).await)
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // A healthy connection goes back to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}
