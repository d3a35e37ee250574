//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite.
//!
//! Only the `default` database has a location (`<state-dir>/sqlite_db.db`),
//! as in Spin without runtime config. Connections are pooled per database.
//! Statements run inline on the serving thread (each serving thread has its
//! own single-threaded runtime, see `server.rs`): a statement takes
//! microseconds, and handing it to another thread cost more than it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::types::ValueRef;
use wasmtime::component::Resource;

use crate::bindings::fermyon::spin::sqlite::{
    self, Error, HostConnection, QueryResult, RowResult, Value,
};
use crate::state::State;

/// Idle connections kept per database.
const MAX_IDLE: usize = 16;
/// How a statement waits for another connection's lock: short naps first,
/// then 1 ms ones, about 5 s in all. (SQLite's own `busy_timeout` sleeps in
/// steps of up to 100 ms, which under concurrent writes measured as p99
/// latencies of 20 to 50 ms.)
const BUSY_SHORT_NAP: Duration = Duration::from_micros(100);
const BUSY_SHORT_NAPS: i32 = 100;
const BUSY_LONG_NAP: Duration = Duration::from_millis(1);
const BUSY_LONG_NAPS: i32 = 4_990;

fn wait_for_lock(attempt: i32) -> bool {
    if attempt >= BUSY_SHORT_NAPS + BUSY_LONG_NAPS {
        return false;
    }
    std::thread::sleep(if attempt < BUSY_SHORT_NAPS {
        BUSY_SHORT_NAP
    } else {
        BUSY_LONG_NAP
    });
    true
}

pub struct SqliteDbs {
    granted: HashSet<String>,
    default: Arc<Database>,
}

impl SqliteDbs {
    pub fn new(granted: &[String], default_path: PathBuf) -> SqliteDbs {
        SqliteDbs {
            granted: granted.iter().cloned().collect(),
            default: Arc::new(Database::new(default_path)),
        }
    }

    /// Spin's order: a label the manifest does not grant is `access-denied`;
    /// a granted label without a location is `no-such-database`.
    fn open(&self, label: &str) -> Result<Arc<Database>, Error> {
        if !self.granted.contains(label) {
            return Err(Error::AccessDenied);
        }
        if label != "default" {
            return Err(Error::NoSuchDatabase);
        }
        Ok(self.default.clone())
    }
}

pub struct Database {
    path: PathBuf,
    idle: Mutex<Vec<rusqlite::Connection>>,
    /// Held while a single writing statement runs: SQLite allows one writer
    /// at a time, and queueing here wakes the next writer as soon as the
    /// lock is free, where SQLite's busy handler would poll for it.
    writer: Mutex<()>,
}

impl Database {
    fn new(path: PathBuf) -> Database {
        Database {
            path,
            idle: Mutex::new(Vec::new()),
            writer: Mutex::new(()),
        }
    }

    /// Blocking: reuse an idle connection or open (and create) the file.
    fn checkout(&self) -> Result<rusqlite::Connection, Error> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut conn = rusqlite::Connection::open(&self.path).map_err(to_error)?;
        conn.busy_handler(Some(wait_for_lock)).map_err(to_error)?;
        // WAL lets readers run beside a writer; NORMAL is durable enough in
        // WAL mode and avoids an fsync per commit.
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .map_err(to_error)?;
        conn.execute_batch("PRAGMA synchronous=NORMAL")
            .map_err(to_error)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    fn checkin(&self, conn: rusqlite::Connection) {
        // A connection left inside a transaction must not leak it to the next
        // request: close it (which rolls back) instead of pooling it.
        if !conn.is_autocommit() {
            close_in_background(conn);
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }
}

fn close_in_background(conn: rusqlite::Connection) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn_blocking(move || drop(conn));
        }
        Err(_) => drop(conn),
    }
}

/// The `connection` resource: the database plus the connection it holds
/// between calls (so a transaction spans several `execute`s, as in Spin).
pub struct Connection {
    db: Arc<Database>,
    conn: Option<rusqlite::Connection>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.db.checkin(conn);
        }
    }
}

fn to_error(e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => Error::DatabaseFull,
        // rusqlite's Display is SQLite's own message ("no such table: books").
        _ => Error::Io(e.to_string()),
    }
}

fn to_sql(v: Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Integer(i) => V::Integer(i),
        Value::Real(f) => V::Real(f),
        Value::Text(s) => V::Text(s),
        Value::Blob(b) => V::Blob(b),
        Value::Null => V::Null,
    }
}

fn from_sql(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// Blocking: one statement, all its rows.
fn run(
    db: &Database,
    conn: &rusqlite::Connection,
    statement: &str,
    params: Vec<Value>,
) -> Result<QueryResult, Error> {
    let mut stmt = conn.prepare_cached(statement).map_err(to_error)?;
    // Writes outside an explicit transaction take turns here; inside one,
    // the connection already holds SQLite's lock and the busy handler waits.
    let _writer = (!stmt.readonly() && conn.is_autocommit()).then(|| {
        db.writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    });
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let n = columns.len();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.into_iter().map(to_sql)))
        .map_err(to_error)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(to_error)? {
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            values.push(from_sql(row.get_ref(i).map_err(to_error)?));
        }
        out.push(RowResult { values });
    }
    Ok(QueryResult { columns, rows: out })
}

impl sqlite::Host for State {}

impl HostConnection for State {
    async fn open(
        &mut self,
        database: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        self.calls.open += 1;
        let db = match self.shared.sqlite.open(&database) {
            Ok(db) => db,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.table.push(Connection { db, conn: None })?))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> wasmtime::Result<Result<QueryResult, Error>> {
        self.calls.execute += 1;
        let resource = self.table.get_mut(&this)?;
        let db = resource.db.clone();
        let held = resource.conn.take();
        // Inline, on this serving thread: the other requests of this thread
        // wait for the statement (microseconds; a write may first queue on
        // the writer lock), those of the other threads do not.
        let (conn, result) = match held.map_or_else(|| db.checkout(), Ok) {
            Ok(conn) => {
                let result = run(&db, &conn, &statement, parameters);
                (Some(conn), result)
            }
            Err(e) => (None, Err(e)),
        };
        if let Ok(resource) = self.table.get_mut(&this) {
            resource.conn = conn;
        }
        Ok(result)
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // Dropping the resource returns its connection to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_and_labels() {
        let dbs = SqliteDbs::new(&["default".into(), "other".into()], "/nowhere/x.db".into());
        assert!(dbs.open("default").is_ok());
        assert!(matches!(dbs.open("other"), Err(Error::NoSuchDatabase)));
        assert!(matches!(dbs.open("secret"), Err(Error::AccessDenied)));
        let none = SqliteDbs::new(&[], "/nowhere/x.db".into());
        assert!(matches!(none.open("default"), Err(Error::AccessDenied)));
    }

    #[test]
    fn executes_and_keeps_sqlite_messages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sqlite_db.db");
        let db = Database::new(path.clone());
        let conn = db.checkout().unwrap();
        assert!(path.exists());
        let err = run(&db, &conn, "SELECT * FROM books", vec![]).unwrap_err();
        assert!(
            matches!(&err, Error::Io(m) if m.contains("no such table: books")),
            "{err:?}"
        );
        run(
            &db,
            &conn,
            "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)",
            vec![],
        )
        .unwrap();
        run(
            &db,
            &conn,
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
            vec![
                Value::Integer(-7),
                Value::Real(1.5),
                Value::Text("x".into()),
                Value::Blob(vec![1, 2]),
                Value::Null,
            ],
        )
        .unwrap();
        let r = run(&db, &conn, "SELECT * FROM t", vec![]).unwrap();
        assert_eq!(r.columns, vec!["i", "r", "s", "b", "n"]);
        assert_eq!(r.rows.len(), 1);
        assert!(matches!(r.rows[0].values[0], Value::Integer(-7)));
        assert!(matches!(&r.rows[0].values[3], Value::Blob(b) if b == &[1, 2]));
        assert!(matches!(r.rows[0].values[4], Value::Null));
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        db.checkin(conn);
        assert_eq!(db.idle.lock().unwrap().len(), 1);
    }
}
