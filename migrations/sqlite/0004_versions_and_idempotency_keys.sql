-- Safe writes (docs/api.md). Every book gets a version, shown as its ETag
-- and checked by If-Match: existing books start at 1, and every PUT adds one.
-- (A replica of the previous release still writes without adding one while a
-- rolling upgrade runs; its writes keep the version they found.)
ALTER TABLE books ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- The Idempotency-Key of each POST /book that sent one, with the book as it
-- was created: a retry answers it again, even after the book changed or was
-- deleted. Written in the same transaction as the book. Keys made more than
-- a day ago are forgotten, a few at a time, through the created_at index.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key        TEXT    NOT NULL PRIMARY KEY,
    book_id    INTEGER NOT NULL,
    title      TEXT    NOT NULL,
    author     TEXT    NOT NULL,
    year       INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);
