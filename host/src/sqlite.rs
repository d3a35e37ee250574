//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite.
//!
//! Only the `default` database has a location (`<state-dir>/sqlite_db.db`),
//! as in Spin without runtime config. Connections are pooled per database.
//! Statements run inline on the serving thread (each serving thread has its
//! own single-threaded runtime, see `server.rs`): a statement takes
//! microseconds, and handing it to another thread cost more than it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
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

/// Writes between two checkpoints by the checkpointer thread.
const CHECKPOINT_EVERY_WRITES: u64 = 200;
/// WAL frames (pages) past which the checkpointer pauses the writers for a
/// moment so that its checkpoint completes and the WAL restarts from its
/// beginning: SQLite's own automatic checkpoint threshold.
const WAL_RESTART_FRAMES: i64 = 1000;

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
    /// lock is free, where SQLite's busy handler would poll for it. An async
    /// lock: a request waiting to write leaves its thread to other requests.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// Writes so far, shared with the checkpointer thread.
    writes: Arc<Writes>,
    checkpointer: OnceLock<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

#[derive(Default)]
struct Writes {
    /// Writes so far, and whether the database is closing.
    count: Mutex<(u64, bool)>,
    wrote: Condvar,
    /// Checkpoints run so far (for tests).
    checkpoints: std::sync::atomic::AtomicU64,
}

impl Drop for Database {
    /// Stops the checkpointer and waits for it to close its connection, so
    /// that the pooled connections, dropped next, include the last one: its
    /// close checkpoints the WAL into the database file.
    fn drop(&mut self) {
        if let Ok(mut count) = self.writes.count.lock() {
            count.1 = true;
        }
        self.writes.wrote.notify_all();
        let handle = self
            .checkpointer
            .get_mut()
            .and_then(|h| h.get_mut().ok().and_then(Option::take));
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Database {
    fn new(path: PathBuf) -> Database {
        Database {
            path,
            idle: Mutex::new(Vec::new()),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            writes: Arc::new(Writes::default()),
            checkpointer: OnceLock::new(),
        }
    }

    /// Counts a committed write; every CHECKPOINT_EVERY_WRITES wakes the
    /// checkpointer (started on the first write).
    fn wrote(&self) {
        self.checkpointer.get_or_init(|| {
            let (path, writer, writes) =
                (self.path.clone(), self.writer.clone(), self.writes.clone());
            let spawned = std::thread::Builder::new()
                .name("sqlite-checkpoint".into())
                .spawn(move || checkpointer(path, writer, writes));
            match spawned {
                Ok(handle) => Mutex::new(Some(handle)),
                Err(e) => {
                    eprintln!("warning: no SQLite checkpointer thread ({e}); the WAL will grow");
                    Mutex::new(None)
                }
            }
        });
        if let Ok(mut count) = self.writes.count.lock() {
            count.0 += 1;
            if count.0 % CHECKPOINT_EVERY_WRITES == 0 {
                self.writes.wrote.notify_one();
            }
        }
    }
}

/// The checkpointer's connection: like the others, without the busy
/// handler's long wait (a checkpoint that finds the database busy is simply
/// retried after the next writes).
fn open_for_checkpoints(path: &std::path::Path) -> Result<rusqlite::Connection, Error> {
    let conn = rusqlite::Connection::open(path).map_err(to_error)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .map_err(to_error)?;
    conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0")
        .map_err(to_error)?;
    Ok(conn)
}

impl Database {
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
        // Checkpoints run on the checkpointer thread, not in the commit of
        // whichever request crosses the threshold (that request used to
        // carry the copy and two fsyncs: the write p99).
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0")
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

/// The checkpointer thread: after every CHECKPOINT_EVERY_WRITES writes, a
/// PASSIVE checkpoint copies the WAL into the database beside the writers
/// (the copy and its fsyncs block no request). Once the WAL holds
/// WAL_RESTART_FRAMES frames, a second checkpoint runs with the writer queue
/// held, so it completes (only the few frames written meanwhile are left to
/// copy) and the next write restarts the WAL from its beginning; without
/// that pause the WAL would grow for as long as writes go on. Ends when the
/// database is dropped.
fn checkpointer(path: PathBuf, writer: Arc<tokio::sync::Mutex<()>>, writes: Arc<Writes>) {
    let mut conn = None;
    let mut seen = 0;
    loop {
        {
            let Ok(mut count) = writes.count.lock() else {
                return;
            };
            while !count.1 && count.0 < seen + CHECKPOINT_EVERY_WRITES {
                match writes.wrote.wait(count) {
                    Ok(guard) => count = guard,
                    Err(_) => return,
                }
            }
            if count.1 {
                return;
            }
            seen = count.0;
        }
        if conn.is_none() {
            match open_for_checkpoints(&path) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    eprintln!("warning: SQLite checkpointer cannot open the database: {e:?}");
                    continue;
                }
            }
        }
        let Some(c) = conn.as_ref() else { continue };
        let frames = |c: &rusqlite::Connection| {
            c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                row.get::<_, i64>(1)
            })
        };
        match frames(c) {
            Ok(log) if log >= WAL_RESTART_FRAMES => {
                let _writers = writer.blocking_lock();
                let _ = frames(c);
            }
            Ok(_) => {}
            // E.g. the disk is full: drop the connection, retry later.
            Err(_) => conn = None,
        }
        writes
            .checkpoints
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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

/// Whether `statement` writes outside an explicit transaction: such writes
/// take turns on the writer queue; inside a transaction the connection
/// already holds SQLite's lock (the busy handler waits for it).
fn queued_write(conn: &rusqlite::Connection, statement: &str) -> Result<bool, Error> {
    let stmt = conn.prepare_cached(statement).map_err(to_error)?;
    Ok(!stmt.readonly() && conn.is_autocommit())
}

/// Blocking: one statement, all its rows.
fn run(
    conn: &rusqlite::Connection,
    statement: &str,
    params: Vec<Value>,
) -> Result<QueryResult, Error> {
    let mut stmt = conn.prepare_cached(statement).map_err(to_error)?;
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
                let result = match queued_write(&conn, &statement) {
                    Ok(true) => {
                        let writer = db.writer.lock().await;
                        let result = run(&conn, &statement, parameters);
                        drop(writer);
                        db.wrote();
                        result
                    }
                    Ok(false) => run(&conn, &statement, parameters),
                    Err(e) => Err(e),
                };
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
        let err = run(&conn, "SELECT * FROM books", vec![]).unwrap_err();
        assert!(
            matches!(&err, Error::Io(m) if m.contains("no such table: books")),
            "{err:?}"
        );
        run(
            &conn,
            "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)",
            vec![],
        )
        .unwrap();
        run(
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
        let r = run(&conn, "SELECT * FROM t", vec![]).unwrap();
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

    #[test]
    fn queued_writes_are_the_writes_outside_a_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::new(dir.path().join("q.db"));
        let conn = db.checkout().unwrap();
        run(&conn, "CREATE TABLE t (i INTEGER)", vec![]).unwrap();
        assert!(queued_write(&conn, "INSERT INTO t VALUES (1)").unwrap());
        assert!(!queued_write(&conn, "SELECT * FROM t").unwrap());
        run(&conn, "BEGIN", vec![]).unwrap();
        assert!(!queued_write(&conn, "INSERT INTO t VALUES (1)").unwrap());
        run(&conn, "ROLLBACK", vec![]).unwrap();
        assert!(queued_write(&conn, "SELECT * FROM nowhere").is_err());
    }

    /// Commits do not checkpoint; the checkpointer thread does, and the WAL
    /// restarts from its beginning: it stays far below what 5,000 inserts
    /// write (about 10,000 pages, 40 MiB) while a reader keeps reading.
    #[test]
    fn the_checkpointer_keeps_the_wal_small() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let db = Database::new(path.clone());
        let conn = db.checkout().unwrap();
        let autocheckpoint: i64 = conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(autocheckpoint, 0, "commits must not checkpoint");
        run(
            &conn,
            "CREATE TABLE t (i INTEGER PRIMARY KEY AUTOINCREMENT, s TEXT)",
            vec![],
        )
        .unwrap();
        let reader = db.checkout().unwrap();
        for i in 0..5_000 {
            if i > 0 && i % CHECKPOINT_EVERY_WRITES as i64 == 0 {
                // Let the checkpointer catch up (it runs beside the writes;
                // here they come much faster than from HTTP requests).
                let done = i as u64 / CHECKPOINT_EVERY_WRITES;
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while db
                    .writes
                    .checkpoints
                    .load(std::sync::atomic::Ordering::Relaxed)
                    < done
                {
                    assert!(std::time::Instant::now() < deadline, "no checkpoint");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let writer = db.writer.blocking_lock();
            run(
                &conn,
                "INSERT INTO t (s) VALUES (?)",
                vec![Value::Text(format!("row {i}"))],
            )
            .unwrap();
            drop(writer);
            db.wrote();
            if i % 10 == 0 {
                let r = run(&reader, "SELECT count(*) FROM t", vec![]).unwrap();
                assert!(matches!(r.rows[0].values[0], Value::Integer(n) if n == i + 1));
            }
        }
        let wal = std::fs::metadata(dir.path().join("c.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 16 << 20, "WAL of {wal} bytes: no restart");
        let r = run(&conn, "SELECT count(*) FROM t", vec![]).unwrap();
        assert!(matches!(r.rows[0].values[0], Value::Integer(5_000)));
        // Dropping the database stops the checkpointer and closes every
        // connection; the last close moves the WAL into the file (a copy of
        // the file alone then holds every row).
        db.checkin(conn);
        db.checkin(reader);
        drop(db);
        assert!(!dir.path().join("c.db-wal").exists());
        let copy = dir.path().join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        let n: i64 = rusqlite::Connection::open(&copy)
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 5_000);
    }
}
