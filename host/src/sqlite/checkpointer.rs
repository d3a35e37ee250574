//! The checkpointer thread of a database. Commits do not checkpoint
//! (`wal_autocheckpoint=0`: the request that crossed the threshold used to
//! carry the copy and two fsyncs, the write p99); this thread does, beside
//! the writers: after every `CHECKPOINT_EVERY_WRITES` writes, a PASSIVE
//! checkpoint copies the WAL into the database (the copy and its fsyncs
//! block no request). Once the WAL holds `WAL_RESTART_FRAMES` frames, a
//! second checkpoint runs with the writer queue held, so it completes (only
//! the few frames written meanwhile are left to copy) and the next write
//! restarts the WAL from its beginning; without that pause the WAL would
//! grow for as long as writes go on. Started on the first write, stopped
//! when the database is dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;

use super::writer::WriterQueue;

/// Writes between two checkpoints by the checkpointer thread.
pub const CHECKPOINT_EVERY_WRITES: u64 = 200;
/// WAL frames (pages) past which the checkpointer pauses the writers for a
/// moment so that its checkpoint completes and the WAL restarts from its
/// beginning: SQLite's own automatic checkpoint threshold.
const WAL_RESTART_FRAMES: i64 = 1000;

/// Writes so far, shared with the thread.
#[derive(Default)]
struct Writes {
    /// Writes so far, and whether the database is closing.
    count: Mutex<(u64, bool)>,
    wrote: Condvar,
    /// Checkpoints run so far (for tests).
    checkpoints: AtomicU64,
}

/// A database's checkpointer: the thread, once started, and what it shares.
pub struct Checkpointer {
    path: PathBuf,
    writer: WriterQueue,
    writes: Arc<Writes>,
    thread: OnceLock<Mutex<Option<JoinHandle<()>>>>,
}

impl Checkpointer {
    pub fn new(path: PathBuf, writer: WriterQueue) -> Checkpointer {
        Checkpointer {
            path,
            writer,
            writes: Arc::new(Writes::default()),
            thread: OnceLock::new(),
        }
    }

    /// Counts a committed write; every `CHECKPOINT_EVERY_WRITES` wakes the
    /// thread (started on the first write).
    pub fn wrote(&self) {
        self.thread.get_or_init(|| {
            let (path, writer, writes) =
                (self.path.clone(), self.writer.clone(), self.writes.clone());
            let spawned = std::thread::Builder::new()
                .name("sqlite-checkpoint".into())
                .spawn(move || run(&path, &writer, &writes));
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

    /// Stops the thread and waits for it to close its connection.
    pub fn stop(&mut self) {
        if let Ok(mut count) = self.writes.count.lock() {
            count.1 = true;
        }
        self.writes.wrote.notify_all();
        let handle = self
            .thread
            .get_mut()
            .and_then(|h| h.get_mut().ok().and_then(Option::take));
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }

    /// Checkpoints run so far.
    #[cfg(test)]
    pub fn checkpoints(&self) -> u64 {
        self.writes.checkpoints.load(Ordering::Relaxed)
    }
}

/// The thread's connection: like the pool's, without the busy handler's
/// long wait (a checkpoint that finds the database busy is simply retried
/// after the next writes).
fn open(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
    conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0")?;
    Ok(conn)
}

/// The thread: a checkpoint after every `CHECKPOINT_EVERY_WRITES` writes,
/// until the database closes.
fn run(path: &Path, writer: &WriterQueue, writes: &Writes) {
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
            match open(path) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    eprintln!("warning: SQLite checkpointer cannot open the database: {e}");
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
                let _writers = writer.blocking_turn();
                let _ = frames(c);
            }
            Ok(_) => {}
            // E.g. the disk is full: drop the connection, retry later.
            Err(_) => conn = None,
        }
        writes.checkpoints.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::sqlite::pool::Database;

    fn count(conn: &rusqlite::Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
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
        conn.execute_batch("CREATE TABLE t (i INTEGER PRIMARY KEY AUTOINCREMENT, s TEXT)")
            .unwrap();
        let reader = db.checkout().unwrap();
        for i in 0..5_000 {
            if i > 0 && i % CHECKPOINT_EVERY_WRITES as i64 == 0 {
                // Let the checkpointer catch up (it runs beside the writes;
                // here they come much faster than from HTTP requests).
                let done = i as u64 / CHECKPOINT_EVERY_WRITES;
                let deadline = Instant::now() + Duration::from_secs(10);
                while db.checkpointer().checkpoints() < done {
                    assert!(Instant::now() < deadline, "no checkpoint");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let turn = db.writer().blocking_turn();
            conn.execute("INSERT INTO t (s) VALUES (?1)", [format!("row {i}")])
                .unwrap();
            drop(turn);
            db.wrote();
            if i % 10 == 0 {
                assert_eq!(count(&reader), i + 1);
            }
        }
        let wal = std::fs::metadata(dir.path().join("c.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 16 << 20, "WAL of {wal} bytes: no restart");
        assert_eq!(count(&conn), 5_000);
        // Dropping the database stops the checkpointer and closes every
        // connection; the last close moves the WAL into the file (a copy of
        // the file alone then holds every row).
        db.checkin(conn);
        db.checkin(reader);
        drop(db);
        assert!(!dir.path().join("c.db-wal").exists());
        let copy = dir.path().join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        assert_eq!(count(&rusqlite::Connection::open(&copy).unwrap()), 5_000);
    }
}
