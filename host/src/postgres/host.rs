//! The `connection` resource of `fermyon:spin/postgres@2.0.0`, as the
//! component calls it, on [`PgView`]: the pools, the resource table and the
//! zero-row flag, nothing else of the instance's state.

use tokio_postgres::types::ToSql;
use wasmtime::component::{HasData, Resource, ResourceTable};

use super::pool::{Connection, Kind, Outcome, PgPools, PoolError};
use super::values::{row_set, to_sql};
use crate::bindings::fermyon::spin::postgres::{self, HostConnection};
use crate::bindings::fermyon::spin::rdbms_types::{self, Error, ParameterValue, RowSet};

/// What `fermyon:spin/postgres` (and its `rdbms-types`) sees of an
/// instance's state.
pub struct PgView<'a> {
    pub pools: &'a PgPools,
    pub table: &'a mut ResourceTable,
    /// `--pg-empty-query-error`: a `query` that returns zero rows fails
    /// (real Spin 4.0.0 to 4.0.2 hang on it) instead of answering.
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

/// Runs one statement on the resource's connection: Spin's errors for a
/// closed connection, then for a parameter PostgreSQL cannot take.
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
        if let Some((log, error)) = zero_rows(self.empty_query_error, rows.len(), &statement) {
            eprintln!("{log}");
            return Ok(Err(error));
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
        // Dropping the resource returns a healthy connection to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}

/// `spin-lite --pg-empty-query-error` (`enabled`): a `query` that returned no
/// row. Real Spin 4.0.0 to 4.0.2 never answer such a call (the request
/// hangs), so under this option it is an error the component sees, with a log
/// line naming the statement (on one line; never its parameters, which may be
/// secrets). `None`: answer with the rows as usual.
fn zero_rows(enabled: bool, rows: usize, statement: &str) -> Option<(String, Error)> {
    if !enabled || rows > 0 {
        return None;
    }
    let statement = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    let log = format!(
        "pg-empty-query-error: a PostgreSQL query returned zero rows, on which \
         Spin 4.0.0 to 4.0.2 hang forever (Spin issue #3671); failing it: {statement}"
    );
    let error = Error::QueryFailed(
        "query returned zero rows (spin-lite --pg-empty-query-error: \
         Spin 4.0.0 to 4.0.2 hang on a query without rows, Spin issue #3671)"
            .into(),
    );
    Some((log, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_rows_logs_the_statement_on_one_line_and_fails_the_query() {
        let sql = "SELECT id\n  FROM items\tWHERE id = $1";
        assert!(zero_rows(false, 0, sql).is_none(), "off by default");
        assert!(zero_rows(true, 1, sql).is_none());
        let (log, error) = zero_rows(true, 0, sql).unwrap();
        assert_eq!(log.lines().count(), 1, "{log}");
        assert!(log.contains("Spin 4.0.0 to 4.0.2"), "{log}");
        assert!(log.contains("#3671"), "{log}");
        assert!(log.ends_with(": SELECT id FROM items WHERE id = $1"), "{log}");
        match error {
            Error::QueryFailed(text) => {
                assert!(text.contains("zero rows") && text.contains("#3671"), "{text}")
            }
            other => panic!("{other:?}"),
        }
    }
}
