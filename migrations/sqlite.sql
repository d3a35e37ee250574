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
