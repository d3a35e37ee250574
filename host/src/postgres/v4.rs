//! `spin:postgres/postgres@4.2.0` on [`PgView`], as Spin main gives it
//! (`factor-outbound-pg`): the 2.0 room's pool, checks and values, 4.2's
//! structured errors, and `query-async` streaming its rows as the server
//! sends them (columns from the first row, none without rows).

use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use wasmtime::component::{Accessor, FutureReader, Resource, StreamReader};

use super::host::{blocking, execute, query, unexpected, PgView, SpinPostgres};
use super::pool::{self, query_failed, Builder, Connection, Kind, Outcome, PoolError, Shared};
use super::values::v4;
use crate::bindings::spin::postgres::postgres::{
    self, Column, DbError, Error, HostConnection, HostConnectionBuilder,
    HostConnectionBuilderWithStore, HostConnectionWithStore, ParameterValue, QueryError, Row,
    RowSet,
};
use crate::rows::{to_guest, ROWS_AHEAD};

impl From<PoolError> for Error {
    fn from(e: PoolError) -> Error {
        let db = match e {
            PoolError::ConnectionFailed(text) => return Error::ConnectionFailed(text),
            PoolError::QueryFailed(text) => return Error::QueryFailed(QueryError::Text(text)),
            PoolError::Other(text) => return Error::Other(text),
            PoolError::Db(e) => e,
        };
        let Some(fields) = db.as_db_error() else {
            return Error::QueryFailed(QueryError::Text(format!("{db:?}")));
        };
        // The server's fields, as Spin main gives them.
        let named = [
            ("column", fields.column()),
            ("constraint", fields.constraint()),
            ("routine", fields.routine()),
            ("hint", fields.hint()),
            ("table", fields.table()),
            ("datatype", fields.datatype()),
            ("schema", fields.schema()),
            ("file", fields.file()),
        ];
        let extras = named.into_iter().filter_map(|(name, v)| Some((name.into(), v?.into())));
        let line = fields.line().map(|line| ("line".to_string(), line.to_string()));
        let at = fields.where_().map(|at| ("where_".to_string(), at.to_string()));
        Error::QueryFailed(QueryError::DbError(DbError {
            severity: fields.severity().to_string(),
            code: fields.code().code().to_string(),
            message: fields.message().to_string(),
            detail: fields.detail().map(str::to_string),
            extras: extras.chain(line).chain(at).collect(),
            as_text: format!("{db:?}"),
        }))
    }
}

blocking!(v4);

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

/// Opens on the pools without holding the instance's state.
async fn open<U>(
    accessor: &Accessor<U, SpinPostgres>,
    address: String,
) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
    let pools = accessor.with(|mut access| access.get().pools.clone());
    match pools.open(&address).await {
        Ok(conn) => accessor.with(|mut access| Ok(Ok(access.get().table.push(conn)?))),
        Err(e) => Ok(Err(e.into())),
    }
}

fn client<U>(
    accessor: &Accessor<U, SpinPostgres>,
    this: &Resource<Connection>,
) -> wasmtime::Result<Shared> {
    Ok(accessor.with(|mut access| access.get().table.get(this).map(|c| c.client.clone()))?)
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
        let params = params.iter().map(v4::to_sql).collect();
        Ok(execute(client(accessor, &this)?, &statement, params).await)
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
        let client = client(accessor, &this)?;
        let params = match params.iter().map(v4::to_sql).collect() {
            Ok(params) => params,
            Err(e) => return Ok(Err(e)),
        };
        let mut stream = match pool::run(client, &statement, params, Kind::Stream).await {
            Ok(Outcome::Stream(stream)) => Box::pin(stream),
            Ok(_) => return Ok(Err(unexpected())),
            Err(e) => return Ok(Err(e.into())),
        };
        let (columns_tx, columns_rx) = oneshot::channel();
        let (rows_tx, rows_rx) = mpsc::channel(ROWS_AHEAD);
        let done = tokio::spawn(async move {
            let mut columns_tx = Some(columns_tx);
            while let Some(row) = stream.next().await {
                let row = row.map_err(|e| Error::from(query_failed(e)))?;
                if let Some(tx) = columns_tx.take() {
                    let _ = tx.send(v4::columns(&row));
                }
                if rows_tx.send(v4::values(&row)?).await.is_err() {
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
