//! The writer queue: SQLite allows one writer at a time, so a writing
//! statement outside a transaction takes its turn here. Queueing wakes the
//! next writer as soon as the lock is free, where SQLite's busy handler
//! would poll for it; and the turn is an async lock, so a request waiting to
//! write leaves its thread to other requests. A transaction takes its turn
//! at `BEGIN` and holds it to its end (`transaction_turn`): SQLite's lock
//! would otherwise make the next writer's busy handler block a serving
//! thread that the transaction's own next statement may need.

use std::sync::Arc;

/// One database's queue; clones share it (the checkpointer holds one).
#[derive(Clone, Default)]
pub struct WriterQueue(Arc<tokio::sync::Mutex<()>>);

impl WriterQueue {
    /// Waits for this writer's turn; the turn ends when the guard drops.
    pub async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.0.lock().await
    }

    /// A turn held across calls: a transaction's, from `BEGIN` to its end.
    pub async fn transaction_turn(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.0.clone().lock_owned().await
    }

    /// The same, from a thread outside the async runtime.
    pub fn blocking_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.0.blocking_lock()
    }
}

/// Whether `statement` starts a transaction on a connection outside one.
pub fn begins_transaction(conn: &rusqlite::Connection, statement: &str) -> bool {
    let start = statement.trim_start().get(..5).unwrap_or_default();
    conn.is_autocommit() && start.eq_ignore_ascii_case("begin")
}

/// Whether `statement` writes outside an explicit transaction, and so
/// takes a turn on the queue.
pub fn queued_write(conn: &rusqlite::Connection, statement: &str) -> rusqlite::Result<bool> {
    let stmt = conn.prepare_cached(statement)?;
    Ok(!stmt.readonly() && conn.is_autocommit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::pool::Database;

    #[test]
    fn queued_writes_are_the_writes_outside_a_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::new(dir.path().join("q.db"));
        let conn = db.checkout().unwrap();
        conn.execute_batch("CREATE TABLE t (i INTEGER)").unwrap();
        assert!(queued_write(&conn, "INSERT INTO t VALUES (1)").unwrap());
        assert!(!queued_write(&conn, "SELECT * FROM t").unwrap());
        conn.execute_batch("BEGIN").unwrap();
        assert!(!queued_write(&conn, "INSERT INTO t VALUES (1)").unwrap());
        conn.execute_batch("ROLLBACK").unwrap();
        assert!(queued_write(&conn, "SELECT * FROM nowhere").is_err());
        assert!(begins_transaction(&conn, " begin immediate"));
        assert!(!begins_transaction(&conn, "SELECT 1"));
        conn.execute_batch("BEGIN").unwrap();
        assert!(!begins_transaction(&conn, "BEGIN"));
    }
}
