//! The databases the manifest grants, a pool of connections per database,
//! and the `connection` resource the component holds.
//!
//! Each label has the location `runtime_config` gives it. Nothing here knows the WIT types (the
//! interface, `host.rs`, turns these errors into Spin's): `bindings.rs` maps
//! the resource to [`Connection`] and that edge goes one way.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::checkpointer::Checkpointer;
use super::writer::WriterQueue;

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

/// Why `open` refuses a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The manifest does not grant it.
    AccessDenied,
    /// Granted, but no location is configured for it.
    NoSuchDatabase,
}

/// Why no connection could be had.
#[derive(Debug)]
pub enum PoolError {
    /// The database's folder cannot be created (the message says why).
    Folder(String),
    Sqlite(rusqlite::Error),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Folder(message) => f.write_str(message),
            PoolError::Sqlite(e) => e.fmt(f),
        }
    }
}

impl From<rusqlite::Error> for PoolError {
    fn from(e: rusqlite::Error) -> PoolError {
        PoolError::Sqlite(e)
    }
}

/// The manifest's grants and the granted databases that have a location.
pub struct SqliteDbs {
    granted: Vec<String>,
    databases: BTreeMap<String, Arc<Database>>,
}

impl SqliteDbs {
    /// `locations`: label -> file (`runtime_config::locations`). Only the
    /// granted ones are opened (each has a checkpointer thread).
    pub fn new(granted: &[String], locations: BTreeMap<String, PathBuf>) -> SqliteDbs {
        let databases = locations
            .into_iter()
            .filter(|(label, _)| granted.contains(label))
            .map(|(label, path)| (label, Arc::new(Database::new(path))))
            .collect();
        SqliteDbs {
            granted: granted.to_vec(),
            databases,
        }
    }

    /// The database `label` names, if the component may open it, in Spin's
    /// order: a label the manifest does not grant is `access-denied`; a
    /// granted label without a location is `no-such-database`.
    pub fn open(&self, label: &str) -> Result<Arc<Database>, Refused> {
        if !self.granted.iter().any(|g| g == label) {
            return Err(Refused::AccessDenied);
        }
        self.databases
            .get(label)
            .cloned()
            .ok_or(Refused::NoSuchDatabase)
    }
}

/// One database file: its idle connections, its writer queue and its
/// checkpointer.
pub struct Database {
    path: PathBuf,
    idle: Mutex<Vec<rusqlite::Connection>>,
    writer: WriterQueue,
    checkpointer: Checkpointer,
}

impl Drop for Database {
    /// Stops the checkpointer and waits for it to close its connection, so
    /// that the pooled connections, dropped next, include the last one: its
    /// close checkpoints the WAL into the database file.
    fn drop(&mut self) {
        self.checkpointer.stop();
    }
}

impl Database {
    pub fn new(path: PathBuf) -> Database {
        let writer = WriterQueue::default();
        Database {
            checkpointer: Checkpointer::new(path.clone(), writer.clone()),
            path,
            idle: Mutex::new(Vec::new()),
            writer,
        }
    }

    pub fn writer(&self) -> &WriterQueue {
        &self.writer
    }

    #[cfg(test)]
    pub fn checkpointer(&self) -> &Checkpointer {
        &self.checkpointer
    }

    /// Counts a committed write (for the checkpointer).
    pub fn wrote(&self) {
        self.checkpointer.wrote();
    }

    /// Blocking: reuse an idle connection or open (and create) the file.
    pub fn checkout(&self) -> Result<rusqlite::Connection, PoolError> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| PoolError::Folder(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut conn = rusqlite::Connection::open(&self.path)?;
        conn.busy_handler(Some(wait_for_lock))?;
        // WAL lets readers run beside a writer; NORMAL is durable enough in
        // WAL mode and avoids an fsync per commit.
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        // Checkpoints run on the checkpointer thread, not in the commit of
        // whichever request crosses the threshold.
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0")?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    pub fn checkin(&self, conn: rusqlite::Connection) {
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

    #[cfg(test)]
    pub fn idle_count(&self) -> usize {
        self.idle.lock().unwrap().len()
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
    pub(super) db: Arc<Database>,
    pub(super) conn: Option<rusqlite::Connection>,
    /// The writer's turn while a transaction is open; a transaction the
    /// component leaves open ends with the resource (its connection closed,
    /// which rolls it back, not pooled).
    pub(super) turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Connection {
    pub fn new(db: Arc<Database>) -> Connection {
        Connection {
            db,
            conn: None,
            turn: None,
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.db.checkin(conn);
        }
    }
}
