-- An Idempotency-Key keeps the first answer, not the book: the status, ETag
-- and body a replay sends again, and the fingerprint of the request (its
-- book as canonical JSON) that a replay must match. A new book field then
-- touches neither this table nor the keyed create. Keys of the previous
-- table are carried over with the answer it gave (201, the book at version
-- 1), written as the component writes it.
ALTER TABLE idempotency_keys RENAME TO idempotency_keys_0004;

DROP INDEX IF EXISTS idempotency_keys_created_at;

CREATE TABLE idempotency_keys (
    key         TEXT    NOT NULL PRIMARY KEY,
    fingerprint TEXT    NOT NULL,
    status      INTEGER NOT NULL,
    etag        TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO idempotency_keys (key, fingerprint, status, etag, body, created_at)
SELECT key,
       json_object('title', title, 'author', author, 'year', year),
       201,
       '"' || book_id || '.1"',
       json_object('status', 201, 'message', 'Book created successfully',
                   'data', json_object('id', book_id, 'title', title, 'author', author, 'year', year)),
       created_at
FROM idempotency_keys_0004;

DROP TABLE idempotency_keys_0004;

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
