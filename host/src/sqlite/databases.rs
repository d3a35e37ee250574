//! The `connection` resource: as in Spin 4.0.2 (`spin-sqlite-inproc`), a
//! connection of its own per `open`, made at its first statement with
//! rusqlite's defaults and no PRAGMA of the host's (`journal_mode`,
//! `synchronous`, the 5,000 ms busy timeout are SQLite's and rusqlite's; a
//! PRAGMA the component runs lasts as long as its connection).

use std::path::Path;
use std::sync::Arc;

/// Blocking: a new connection to `path`, its folder made first; the error
/// is the text Spin's `io` error carries.
pub fn connect(path: &Path) -> Result<rusqlite::Connection, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    rusqlite::Connection::open(path).map_err(|e| e.to_string())
}

/// Its file and, from its first statement on, its own SQLite connection (so
/// a transaction spans several `execute`s).
pub struct Connection {
    pub(super) path: Arc<Path>,
    pub(super) conn: Option<rusqlite::Connection>,
}

impl Drop for Connection {
    /// Closing rolls back an open transaction and may checkpoint a WAL
    /// database (fsync): on the blocking pool, not the serving thread.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn_blocking(move || drop(conn));
            }
        }
    }
}
