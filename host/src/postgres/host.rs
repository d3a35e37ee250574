//! `fermyon:spin/postgres@2.0.0` on [`PgView`].

use tokio_postgres::types::ToSql;
use wasmtime::component::{HasData, Resource, ResourceTable};

use super::pool::{Connection, Kind, Outcome, PgPools, PoolError};
use super::values::{row_set, to_sql};
use crate::bindings::fermyon::spin::postgres::{self, HostConnection};
use crate::bindings::fermyon::spin::rdbms_types::{self, Error, ParameterValue, RowSet};

/// What `fermyon:spin/postgres` (and its `rdbms-types`) sees of an instance.
pub struct PgView<'a> {
    pub pools: &'a PgPools,
    pub table: &'a mut ResourceTable,
    /// `--pg-empty-query-error`.
    pub empty_query_error: bool,
}

/// The interface's `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinPostgres;

impl HasData for SpinPostgres {
    type Data<'a> = PgView<'a>;
}

fn spin_error(e: PoolError) -> Error {
    match e {
        PoolError::ConnectionFailed(text) => Error::ConnectionFailed(text),
        PoolError::QueryFailed(text) => Error::QueryFailed(text),
        PoolError::Other(text) => Error::Other(text),
    }
}

/// Runs one statement: Spin's errors for a closed connection, then for a
/// parameter PostgreSQL cannot take.
async fn run(
    view: &mut PgView<'_>,
    this: &Resource<Connection>,
    statement: &str,
    params: &[ParameterValue],
    kind: Kind,
) -> wasmtime::Result<Result<Outcome, Error>> {
    let client = match view.table.get_mut(this)?.client() {
        Ok(c) => c,
        Err(e) => return Ok(Err(spin_error(e))),
    };
    let boxed = match params.iter().map(to_sql).collect::<Result<Vec<_>, _>>() {
        Ok(boxed) => boxed,
        Err(e) => return Ok(Err(e)),
    };
    let refs: Vec<&(dyn ToSql + Sync)> =
        boxed.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect();
    Ok(client.run(statement, &refs, kind).await.map_err(spin_error))
}

impl rdbms_types::Host for PgView<'_> {}

impl postgres::Host for PgView<'_> {}

impl HostConnection for PgView<'_> {
    async fn open(
        &mut self,
        address: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        match self.pools.open(&address).await {
            Ok(conn) => Ok(Ok(self.table.push(conn)?)),
            Err(e) => Ok(Err(spin_error(e))),
        }
    }

    async fn query(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<RowSet, Error>> {
        let rows = match run(self, &this, &statement, &params, Kind::Query).await? {
            Ok(Outcome::Rows(rows)) => rows,
            Ok(Outcome::Count(_)) => return Ok(Err(Error::Other("unexpected result".into()))),
            Err(e) => return Ok(Err(e)),
        };
        if self.empty_query_error && rows.is_empty() {
            // Real Spin 4.0.0 to 4.0.2 never answer such a query. The log
            // line names the statement on one line, never its parameters.
            let statement = statement.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!(
                "pg-empty-query-error: a PostgreSQL query returned zero rows, on which \
                 Spin 4.0.0 to 4.0.2 hang forever (Spin issue #3671); failing it: {statement}"
            );
            return Ok(Err(Error::QueryFailed(
                "query returned zero rows (spin-lite --pg-empty-query-error: \
                 Spin 4.0.0 to 4.0.2 hang on a query without rows, Spin issue #3671)"
                    .into(),
            )));
        }
        Ok(row_set(&rows).map(|(columns, rows)| RowSet { columns, rows }))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<u64, Error>> {
        Ok(match run(self, &this, &statement, &params, Kind::Execute).await? {
            Ok(Outcome::Count(n)) => Ok(n),
            Ok(Outcome::Rows(_)) => Err(Error::Other("unexpected result".into())),
            Err(e) => Err(e),
        })
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // A healthy connection goes back to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}
