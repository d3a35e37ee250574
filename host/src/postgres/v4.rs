//! `spin:postgres/postgres@4.2.0` on [`PgView`], as Spin main gives it
//! (`factor-outbound-pg`): the 2.0 room's pool, checks and values, 4.2's
//! structured errors, and `query-async` streaming its rows as the server
//! sends them (columns from the first row, none without rows).

use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use wasmtime::component::{Accessor, FutureReader, Resource, StreamReader};

use super::host::{execute, query, run, PgView, SpinPostgres};
use super::pool::{query_failed, Builder, Connection, Kind, Outcome, PoolError};
use super::values::v4;
use crate::bindings::spin::postgres::postgres::{
    self, Column, DbError, Error, HostConnection, HostConnectionBuilder,
    HostConnectionBuilderWithStore, HostConnectionWithStore, ParameterValue, QueryError, Row,
    RowSet,
};
use crate::rows::{to_guest, ROWS_AHEAD};

fn spin_error(e: PoolError) -> Error {
    match e {
        PoolError::ConnectionFailed(text) => Error::ConnectionFailed(text),
        PoolError::QueryFailed(text) => Error::QueryFailed(QueryError::Text(text)),
        PoolError::Db(f) => Error::QueryFailed(QueryError::DbError(DbError {
            as_text: f.text,
            severity: f.severity,
            code: f.code,
            message: f.message,
            detail: f.detail,
            extras: f.extras,
        })),
        PoolError::Other(text) => Error::Other(text),
    }
}

fn unconverted(text: String) -> Error {
    Error::QueryFailed(QueryError::Text(text))
}

impl postgres::Host for PgView<'_> {}

impl HostConnectionBuilder for PgView<'_> {
    async fn new(&mut self, address: String) -> wasmtime::Result<Resource<Builder>> {
        Ok(self.table.push(Builder(address))?)
    }

    async fn set_ca_root(
        &mut self,
        _: Resource<Builder>,
        _: String,
    ) -> wasmtime::Result<Result<(), Error>> {
        let refusal = "spin-lite trusts the system's roots only: set-ca-root is not supported";
        Ok(Err(Error::Other(refusal.into())))
    }

    async fn build(
        &mut self,
        this: Resource<Builder>,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        let address = self.table.get(&this)?.0.clone();
        HostConnection::open(self, address).await
    }

    async fn drop(&mut self, this: Resource<Builder>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}

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
        let params = params.iter().map(v4::to_sql).collect();
        let rows = query(client, &statement, params, spin_error).await;
        let rows = rows.and_then(|rows| v4::row_set(&rows).map_err(unconverted));
        Ok(rows.map(|(columns, rows)| RowSet { columns, rows }))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<u64, Error>> {
        let client = self.table.get(&this)?.client();
        let params = params.iter().map(v4::to_sql).collect();
        Ok(execute(client, &statement, params, spin_error).await)
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // A healthy connection goes back to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}

/// Opens on the pools without holding the instance's state.
async fn open<U>(
    accessor: &Accessor<U, SpinPostgres>,
    address: String,
) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
    let pools = accessor.with(|mut access| access.get().pools.clone());
    match pools.open(&address).await {
        Ok(conn) => accessor.with(|mut access| Ok(Ok(access.get().table.push(conn)?))),
        Err(e) => Ok(Err(spin_error(e))),
    }
}

impl<U> HostConnectionBuilderWithStore<U> for SpinPostgres {
    async fn build_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Builder>,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        let address =
            accessor.with(|mut access| access.get().table.get(&this).map(|b| b.0.clone()))?;
        open(accessor, address).await
    }
}

type Rows = (Vec<Column>, StreamReader<Row>, FutureReader<Result<(), Error>>);

impl<U> HostConnectionWithStore<U> for SpinPostgres {
    async fn open_async(
        accessor: &Accessor<U, Self>,
        address: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        open(accessor, address).await
    }

    async fn execute_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<u64, Error>> {
        let client =
            accessor.with(|mut access| access.get().table.get(&this).map(|c| c.client()))?;
        let params = params.iter().map(v4::to_sql).collect();
        Ok(execute(client, &statement, params, spin_error).await)
    }

    /// The rows go to the guest as they come (at most `ROWS_AHEAD`
    /// waiting); a row that does not convert, or a failure on the way, ends
    /// them with the error in the future. Never the zero-row check: Spin
    /// main answers an async query that returns no row (its blocking `query`
    /// still hangs on one, observed).
    async fn query_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<Rows, Error>> {
        let client =
            accessor.with(|mut access| access.get().table.get(&this).map(|c| c.client()))?;
        let params = params.iter().map(v4::to_sql).collect();
        let mut stream = match run(client, &statement, params, Kind::Stream, spin_error).await {
            Ok(Outcome::Stream(stream)) => Box::pin(stream),
            Ok(_) => return Ok(Err(Error::Other("unexpected result".into()))),
            Err(e) => return Ok(Err(e)),
        };
        let (columns_tx, columns_rx) = oneshot::channel();
        let (rows_tx, rows_rx) = mpsc::channel(ROWS_AHEAD);
        let done = tokio::spawn(async move {
            let mut columns_tx = Some(columns_tx);
            while let Some(row) = stream.next().await {
                let row = row.map_err(|e| spin_error(query_failed(&e)))?;
                if let Some(tx) = columns_tx.take() {
                    let _ = tx.send(v4::columns(&row));
                }
                if rows_tx.send(v4::values(&row).map_err(unconverted)?).await.is_err() {
                    // The guest dropped the stream.
                    return Ok(());
                }
            }
            Ok(())
        });
        let columns = columns_rx.await.unwrap_or_default();
        let lost = Error::Other("internal runtime error".into());
        let (rows, done) = to_guest(accessor, rows_rx, done, lost)?;
        Ok(Ok((columns, rows, done)))
    }
}
