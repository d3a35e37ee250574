-- The change log (docs/api.md, "Changes and history"): one row per
-- successful create, update, delete and restore, with the book after it
-- (NULL fields after a delete), its version (a restore continues from it),
-- the account that wrote it and the time. A write inserts its change, and
-- the triggers below apply it to `books` within that statement: still one
-- statement a write, under SQLite's one write lock, so `seq` (AUTOINCREMENT,
-- never reused, taken under the lock) is commit order.
CREATE TABLE changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    op      TEXT    NOT NULL,
    book_id INTEGER NOT NULL,
    title   TEXT,
    author  TEXT,
    year    INTEGER,
    version INTEGER NOT NULL,
    account TEXT,
    at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX changes_book ON changes (book_id, seq);

-- How far retention (`history_days`) has pruned: a follower behind it has
-- missed changes (410).
CREATE TABLE changes_pruned (seq INTEGER NOT NULL);

INSERT INTO changes_pruned (seq) VALUES (0);

CREATE TRIGGER changes_pruned_mark AFTER DELETE ON changes BEGIN
    UPDATE changes_pruned SET seq = old.seq WHERE seq < old.seq;
END;

-- A catalog from before the log: one `create` per book (no account), so
-- that replaying the feed from its start rebuilds the catalog. Before the
-- triggers: these are already applied.
INSERT INTO changes (op, book_id, title, author, year, version)
    SELECT 'create', id, title, author, year, version FROM books ORDER BY id;

-- One trigger an operation, each body run only for its own (WHEN).
CREATE TRIGGER changes_apply_insert AFTER INSERT ON changes
WHEN new.op IN ('create', 'restore') BEGIN
    INSERT INTO books (id, title, author, year, version)
        VALUES (new.book_id, new.title, new.author, new.year, new.version);
END;

CREATE TRIGGER changes_apply_update AFTER INSERT ON changes WHEN new.op = 'update' BEGIN
    UPDATE books SET title = new.title, author = new.author, year = new.year,
        version = new.version WHERE id = new.book_id;
END;

CREATE TRIGGER changes_apply_delete AFTER INSERT ON changes WHEN new.op = 'delete' BEGIN
    DELETE FROM books WHERE id = new.book_id;
END;
