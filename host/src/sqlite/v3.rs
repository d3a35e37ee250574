//! `spin:sqlite/sqlite@3.1.0` on [`SqliteView`]: the blocking functions as
//! 2.0's; the async ones as Spin main's (`factor-sqlite`, `sqlite-inproc`),
//! `execute-async` streaming its rows while the statement runs.

use tokio::sync::{mpsc, oneshot};
use wasmtime::component::{Accessor, FutureReader, Resource, StreamReader};

use super::databases::Connection;
use super::host::{blocking, query_all, SpinSqlite, SqliteView};
use super::values::run;
use crate::bindings::spin::sqlite::sqlite::{
    self, Error, HostConnection, HostConnectionWithStore, QueryResult, RowResult, Value,
};
use crate::rows::{to_guest, ROWS_AHEAD};

blocking! {
    async fn changes(&mut self, this: Resource<Connection>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&this)?.counter(rusqlite::Connection::changes).await)
    }

    async fn last_insert_rowid(&mut self, this: Resource<Connection>) -> wasmtime::Result<i64> {
        Ok(self.table.get(&this)?.counter(rusqlite::Connection::last_insert_rowid).await)
    }
}

type Rows = (Vec<String>, StreamReader<RowResult>, FutureReader<Result<(), Error>>);
type Started = (Vec<String>, mpsc::Receiver<RowResult>, oneshot::Receiver<Result<(), Error>>);

/// A statement on the blocking pool: its columns once prepared, its rows as
/// they come (at most `ROWS_AHEAD` waiting), then its outcome. As in Spin,
/// a statement that does not prepare has no columns and its error comes
/// last; a connection that cannot be made is the call's error.
async fn start(
    conn: Connection,
    statement: String,
    parameters: Vec<Value>,
) -> Result<Started, Error> {
    let (columns_tx, columns_rx) = oneshot::channel();
    let (rows_tx, rows_rx) = mpsc::channel(ROWS_AHEAD);
    let (done_tx, done_rx) = oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let mut columns_tx = Some(columns_tx);
        let ran = conn.blocking(|c| {
            let columns = |names| drop(columns_tx.take().map(|tx| tx.send(Ok(names))));
            let sent = |values| rows_tx.blocking_send(RowResult { values });
            run(c, &statement, parameters, columns, |row| {
                sent(row).map_err(|_| "row send error".into())
            })
        });
        match ran {
            Ok(ran) => drop(done_tx.send(ran.map_err(Error::Io))),
            Err(e) => drop(columns_tx.map(|tx| tx.send(Err(e)))),
        }
    });
    match columns_rx.await {
        Ok(Ok(columns)) => Ok((columns, rows_rx, done_rx)),
        Ok(Err(e)) => Err(Error::Io(e)),
        Err(_) => Ok((Vec::new(), rows_rx, done_rx)),
    }
}

fn connection<U>(
    accessor: &Accessor<U, SpinSqlite>,
    this: &Resource<Connection>,
) -> wasmtime::Result<Connection> {
    Ok(accessor.with(|mut access| access.get().table.get(this).cloned())?)
}

impl<U> HostConnectionWithStore<U> for SpinSqlite {
    async fn open_async(
        accessor: &Accessor<U, Self>,
        database: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        let refusals = [Error::AccessDenied, Error::NoSuchDatabase];
        accessor.with(|mut access| access.get().open_connection(&database, refusals))
    }

    async fn execute_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> wasmtime::Result<Result<Rows, Error>> {
        let conn = connection(accessor, &this)?;
        let (columns, rows, done) = match start(conn, statement, parameters).await {
            Ok(started) => started,
            Err(e) => return Ok(Err(e)),
        };
        let lost = Error::Io("internal runtime error".into());
        let (rows, done) = to_guest(accessor, rows, done, lost)?;
        Ok(Ok((columns, rows, done)))
    }

    async fn changes_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Connection>,
    ) -> wasmtime::Result<u64> {
        Ok(connection(accessor, &this)?.counter(rusqlite::Connection::changes).await)
    }

    async fn last_insert_rowid_async(
        accessor: &Accessor<U, Self>,
        this: Resource<Connection>,
    ) -> wasmtime::Result<i64> {
        let conn = connection(accessor, &this)?;
        Ok(conn.counter(rusqlite::Connection::last_insert_rowid).await)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    async fn rows_of(sql: &str, conn: &Connection) -> (Vec<String>, Vec<i64>, Result<(), Error>) {
        let (columns, mut rows, done) = start(conn.clone(), sql.into(), vec![]).await.unwrap();
        let mut numbers = Vec::new();
        while let Some(row) = rows.recv().await {
            numbers.extend(row.values.iter().map(|v| match v {
                Value::Integer(i) => *i,
                other => panic!("{other:?}"),
            }));
        }
        (columns, numbers, done.await.unwrap())
    }

    /// Rows come in order while the statement runs, no more than
    /// `ROWS_AHEAD` ahead of the reader; errors come last, as in Spin.
    #[tokio::test]
    async fn rows_stream_in_order_and_errors_come_last() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::new(Arc::from(dir.path().join("db.sqlite")));
        assert!(rows_of("CREATE TABLE t (n INTEGER)", &conn).await.2.is_ok());
        let insert = "INSERT INTO t WITH RECURSIVE c(n) AS \
                      (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) SELECT n FROM c";
        assert!(rows_of(insert, &conn).await.2.is_ok());
        let (columns, numbers, done) = rows_of("SELECT n FROM t ORDER BY n", &conn).await;
        assert_eq!(columns, ["n"]);
        assert_eq!(numbers, (1..=1000).collect::<Vec<_>>());
        assert!(done.is_ok());

        let (_, rows, mut done) =
            start(conn.clone(), "SELECT n FROM t".into(), vec![]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(rows.len(), ROWS_AHEAD);
        assert!(done.try_recv().is_err(), "still running");
        // The statement holds the connection: the counter waits for it.
        drop(rows);
        assert!(matches!(done.await.unwrap(), Err(Error::Io(m)) if m == "row send error"));
        assert_eq!(conn.counter(rusqlite::Connection::changes).await, 1000);

        let overflow = "SELECT abs(-9223372036854775808) AS a";
        let (columns, numbers, done) = rows_of(overflow, &conn).await;
        assert_eq!((columns, numbers.len()), (vec!["a".to_string()], 0));
        assert!(matches!(done, Err(Error::Io(m)) if m == "integer overflow"));
        let (columns, _, done) = rows_of("SELECT * FROM missing", &conn).await;
        assert!(columns.is_empty());
        assert!(matches!(done, Err(Error::Io(m)) if m == "no such table: missing"));

        std::fs::write(dir.path().join("file"), "").unwrap();
        let unmade = Connection::new(Arc::from(dir.path().join("file/x.db")));
        let refused = start(unmade, "SELECT 1".into(), vec![]).await.err();
        assert!(matches!(refused, Some(Error::Io(m)) if m.starts_with("cannot create")));
    }
}
