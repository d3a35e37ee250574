//! The `connection` resource of `fermyon:spin/sqlite@2.0.0`, as the
//! component calls it, on [`SqliteView`]: the databases and the resource
//! table, nothing else of the instance's state.
//!
//! Statements run inline on the serving thread (each serving thread has its
//! own single-threaded runtime, see `http`): a statement takes microseconds,
//! and handing it to another thread cost more than it.

use wasmtime::component::{HasData, Resource, ResourceTable};

use super::pool::{Connection, SqliteDbs};
use super::values::{pool_error, refused, run, to_error};
use super::writer::{begins_transaction, queued_write};
use crate::bindings::fermyon::spin::sqlite::{self, Error, HostConnection, QueryResult, Value};

/// What `fermyon:spin/sqlite` sees of an instance's state.
pub struct SqliteView<'a> {
    pub dbs: &'a SqliteDbs,
    pub table: &'a mut ResourceTable,
}

/// The interface's `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinSqlite;

impl HasData for SpinSqlite {
    type Data<'a> = SqliteView<'a>;
}

impl sqlite::Host for SqliteView<'_> {}

impl HostConnection for SqliteView<'_> {
    async fn open(
        &mut self,
        database: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        let db = match self.dbs.open(&database) {
            Ok(db) => db,
            Err(e) => return Ok(Err(refused(e))),
        };
        Ok(Ok(self.table.push(Connection::new(db))?))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> wasmtime::Result<Result<QueryResult, Error>> {
        let resource = self.table.get_mut(&this)?;
        let db = resource.db.clone();
        let held = resource.conn.take();
        let mut turn = resource.turn.take();
        // Inline, on this serving thread: the other requests of this thread
        // wait for the statement (microseconds; a write may first queue on
        // the writer lock), those of the other threads do not.
        let (conn, result) = match held.map_or_else(|| db.checkout(), Ok) {
            Ok(conn) => {
                if turn.is_none() && begins_transaction(&conn, &statement) {
                    turn = Some(db.writer().transaction_turn().await);
                }
                // A transaction's statements (its BEGIN IMMEDIATE too, which
                // SQLite counts as a write) run on the turn it holds.
                let queued = turn.is_none().then(|| queued_write(&conn, &statement));
                let result = match queued.unwrap_or(Ok(false)) {
                    Ok(true) => {
                        let turn = db.writer().turn().await;
                        let result = run(&conn, &statement, parameters);
                        drop(turn);
                        db.wrote();
                        result
                    }
                    Ok(false) => run(&conn, &statement, parameters),
                    Err(e) => Err(to_error(e)),
                };
                if turn.is_some() && conn.is_autocommit() {
                    turn = None;
                    db.wrote();
                }
                (Some(conn), result)
            }
            Err(e) => (None, Err(pool_error(e))),
        };
        if let Ok(resource) = self.table.get_mut(&this) {
            resource.conn = conn;
            resource.turn = turn;
        }
        Ok(result)
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // Dropping the resource returns its connection to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}
