//! The `connection` resource: as in Spin 4.0.2 (`spin-sqlite-inproc`), a
//! connection of its own per `open`, made at its first statement with
//! rusqlite's defaults and no PRAGMA of the host's (`journal_mode`,
//! `synchronous`, the 5,000 ms busy timeout are SQLite's and rusqlite's; a
//! PRAGMA the component runs lasts as long as its connection).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

/// Its file and, from its first statement on, its own SQLite connection (so
/// a transaction spans several `execute`s). A statement holds it until its
/// last row is taken (`execute-async`), as Spin's lock does.
#[derive(Clone)]
pub struct Connection {
    path: Arc<Path>,
    conn: Arc<Mutex<Lazy>>,
}

struct Lazy(Option<rusqlite::Connection>);

impl Drop for Lazy {
    /// Closing rolls back an open transaction and may checkpoint a WAL
    /// database (fsync): on the blocking pool, not the serving thread.
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn_blocking(move || drop(conn));
            }
        }
    }
}

impl Connection {
    pub fn new(path: Arc<Path>) -> Connection {
        Connection { path, conn: Arc::new(Mutex::new(Lazy(None))) }
    }

    /// Blocking: `f` on the connection, made first if need be (its folder
    /// too; the error is the text of Spin's `io` error).
    pub fn blocking<R>(&self, f: impl FnOnce(&rusqlite::Connection) -> R) -> Result<R, String> {
        let mut lazy = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let conn = match lazy.0.take() {
            Some(conn) => conn,
            None => {
                if let Some(dir) = self.path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                rusqlite::Connection::open(&self.path).map_err(|e| e.to_string())?
            }
        };
        Ok(f(lazy.0.insert(conn)))
    }

    /// `changes` or `last-insert-rowid`: 0 before the first statement, as on
    /// a new connection; a thread hop only while a statement holds it.
    pub async fn counter<R: Default + Send + 'static>(
        &self,
        read: fn(&rusqlite::Connection) -> R,
    ) -> R {
        let read = move |lazy: &Lazy| lazy.0.as_ref().map_or_else(R::default, read);
        let free = match self.conn.try_lock() {
            Ok(lazy) => Some(read(&lazy)),
            Err(TryLockError::Poisoned(lazy)) => Some(read(&lazy.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        };
        if let Some(value) = free {
            return value;
        }
        let conn = self.conn.clone();
        let held = move || read(&conn.lock().unwrap_or_else(PoisonError::into_inner));
        tokio::task::spawn_blocking(held).await.unwrap_or_default()
    }
}
