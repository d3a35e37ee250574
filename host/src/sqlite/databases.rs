//! The databases the manifest grants, and the `connection` resource the
//! component holds: as in Spin 4.0.2 (`spin-sqlite-inproc`), a connection of
//! its own per `open`, made at its first statement with rusqlite's defaults
//! and no PRAGMA of the host's (so `journal_mode`, `synchronous` and the
//! 5,000 ms busy timeout are SQLite's and rusqlite's, and a PRAGMA the
//! component runs lasts as long as its connection).
//!
//! Nothing here knows the WIT types (the interface, `host.rs`, turns these
//! errors into Spin's): `bindings.rs` maps the resource to [`Connection`]
//! and that edge goes one way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why `open` refuses a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The manifest does not grant it.
    AccessDenied,
    /// Granted, but no location is configured for it.
    NoSuchDatabase,
}

/// The manifest's grants and the files of the granted labels.
pub struct SqliteDbs {
    granted: Vec<String>,
    files: BTreeMap<String, Arc<Path>>,
}

impl SqliteDbs {
    /// `locations`: label -> file (`runtime_config::locations`).
    pub fn new(granted: &[String], locations: BTreeMap<String, PathBuf>) -> SqliteDbs {
        let files = locations
            .into_iter()
            .filter(|(label, _)| granted.contains(label))
            .map(|(label, path)| (label, Arc::from(path)))
            .collect();
        SqliteDbs { granted: granted.to_vec(), files }
    }

    /// The file `label` names, if the component may open it, in Spin's
    /// order: a label the manifest does not grant is `access-denied`; a
    /// granted label without a location is `no-such-database`.
    pub fn open(&self, label: &str) -> Result<Arc<Path>, Refused> {
        if !self.granted.iter().any(|g| g == label) {
            return Err(Refused::AccessDenied);
        }
        self.files.get(label).cloned().ok_or(Refused::NoSuchDatabase)
    }
}

/// Blocking: a new connection to `path`, its folder made first; the error
/// is the text Spin's `io` error carries.
pub fn connect(path: &Path) -> Result<rusqlite::Connection, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    rusqlite::Connection::open(path).map_err(|e| e.to_string())
}

/// The `connection` resource: its file and, from its first statement on,
/// its own SQLite connection (so a transaction spans several `execute`s).
pub struct Connection {
    pub(super) path: Arc<Path>,
    pub(super) conn: Option<rusqlite::Connection>,
}

impl Connection {
    pub fn new(path: Arc<Path>) -> Connection {
        Connection { path, conn: None }
    }
}

impl Drop for Connection {
    /// Closing rolls back a transaction left open and, for the last
    /// connection to a WAL database, checkpoints it (fsyncs): on the
    /// blocking pool, not the serving thread.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn_blocking(move || drop(conn));
            }
        }
    }
}
