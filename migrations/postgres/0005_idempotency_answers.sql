-- An Idempotency-Key keeps the first answer, not the book: the status, ETag
-- and body a replay sends again, and the fingerprint of the request (its
-- book as canonical JSON) that a replay must match. A new book field then
-- touches neither this table nor the keyed create. Keys of the previous
-- table are carried over with the answer it gave (201, the book at version
-- 1), written as the component writes it (row_to_json is compact, in
-- column order).
ALTER TABLE idempotency_keys RENAME TO idempotency_keys_0004;

ALTER INDEX IF EXISTS idempotency_keys_created_at RENAME TO idempotency_keys_0004_created_at;

ALTER TABLE idempotency_keys_0004 RENAME CONSTRAINT idempotency_keys_pkey TO idempotency_keys_0004_pkey;

CREATE TABLE idempotency_keys (
    key         TEXT    NOT NULL PRIMARY KEY,
    fingerprint TEXT    NOT NULL,
    status      INTEGER NOT NULL,
    etag        TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL
);

INSERT INTO idempotency_keys (key, fingerprint, status, etag, body, created_at)
SELECT k.key,
       (SELECT row_to_json(f)::text FROM (SELECT k.title, k.author, k.year) AS f),
       201,
       '"' || k.book_id || '.1"',
       (SELECT row_to_json(e)::text FROM (SELECT 201 AS status,
            'Book created successfully'::text AS message,
            (SELECT row_to_json(d) FROM (SELECT k.book_id AS id, k.title, k.author, k.year) AS d) AS data) AS e),
       k.created_at
FROM idempotency_keys_0004 AS k;

DROP TABLE idempotency_keys_0004;

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
