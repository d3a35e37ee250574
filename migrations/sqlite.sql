-- Book Catalog schema for SQLite. Idempotent: safe on every start, e.g.
-- `spin up --sqlite @migrations/sqlite.sql`. The component also runs it by
-- itself the first time it finds the table missing.
--
-- WAL lets readers and a writer work at once and makes commits cheaper; the
-- setting is stored in the database file, so it persists once switched.
PRAGMA journal_mode = WAL;

-- AUTOINCREMENT: ids are never reused, even after the newest book is deleted.
CREATE TABLE IF NOT EXISTS books (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    title  TEXT    NOT NULL,
    author TEXT    NOT NULL,
    year   INTEGER NOT NULL
);

-- Failed logins per client address (the login throttle): one row per
-- address, its count and the end of its window (Unix seconds). A row whose
-- window has ended starts over on the next failure; the index lets ended
-- windows be deleted in small batches without a scan.
CREATE TABLE IF NOT EXISTS login_failures (
    client     TEXT    NOT NULL PRIMARY KEY,
    failures   INTEGER NOT NULL,
    window_end INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS login_failures_window_end ON login_failures (window_end);
