-- Substring filters on title and author (`GET /books?title=...`,
-- docs/api.md) through an index: each book's title and author, ASCII-lowered
-- as the filters compare them (SQLite's lower() folds ASCII letters only),
-- indexed by their trigrams. A filter of three or more characters looks up
-- the books holding all of its trigrams; the statement then checks the
-- substring itself (src/books/sql.rs).
--
-- One FTS5 table for both columns: a title under the book's id, an author
-- under its negation, so a rowid range reads one column alone, in the order
-- of ids. Contentless (`books` holds the text), `detail=none`, `columnsize=0`:
-- rowids only, the smallest FTS5 index. It forgets a row through 'delete'
-- with the text it was indexed with.
--
-- Rowids are written in ascending order (authors, by -id, before titles):
-- FTS5 flushes its pending entries as a new segment whenever a rowid goes
-- back, so another order would cost the fill of a catalog a segment a book.
CREATE VIRTUAL TABLE books_trigrams USING fts5(
    folded, content='', detail=none, columnsize=0, tokenize='trigram case_sensitive 1'
);

INSERT INTO books_trigrams (rowid, folded) SELECT -id, lower(author) FROM books ORDER BY id DESC;

INSERT INTO books_trigrams (rowid, folded) SELECT id, lower(title) FROM books ORDER BY id;

-- The fill's segments merged into one now, not by the next writes.
INSERT INTO books_trigrams (books_trigrams) VALUES ('optimize');

-- Writes do not touch the FTS5 table: under Spin each request opens the
-- database anew, and an FTS5 write then costs every write its set-up, a new
-- segment and merging (1.4x the CPU of a write, docs/performance.md). A write
-- only notes the book in `books_unindexed`, with the text the index holds
-- for it (NULL: none); filters read the books noted there besides the
-- index's (src/books/sql.rs). Every 32nd note moves them all into the index.
CREATE TABLE books_unindexed (
    id INTEGER PRIMARY KEY, indexed_title TEXT, indexed_author TEXT
);

CREATE TRIGGER books_unindexed_insert AFTER INSERT ON books BEGIN
    INSERT OR IGNORE INTO books_unindexed (id) VALUES (new.id);
END;

CREATE TRIGGER books_unindexed_update AFTER UPDATE OF title, author ON books
WHEN old.title IS NOT new.title OR old.author IS NOT new.author BEGIN
    INSERT OR IGNORE INTO books_unindexed VALUES (old.id, old.title, old.author);
END;

CREATE TRIGGER books_unindexed_delete AFTER DELETE ON books BEGIN
    INSERT OR IGNORE INTO books_unindexed VALUES (old.id, old.title, old.author);
END;

-- In the write's transaction, whoever writes (a replica of an older release
-- too): the indexed text of the noted books out, their present text in.
CREATE TRIGGER books_unindexed_merge AFTER INSERT ON books_unindexed
WHEN (SELECT count(*) FROM books_unindexed) >= 32 BEGIN
    INSERT INTO books_trigrams (books_trigrams, rowid, folded)
        SELECT 'delete', -id, lower(indexed_author) FROM books_unindexed
        WHERE indexed_author IS NOT NULL ORDER BY id DESC;
    INSERT INTO books_trigrams (books_trigrams, rowid, folded)
        SELECT 'delete', id, lower(indexed_title) FROM books_unindexed
        WHERE indexed_title IS NOT NULL ORDER BY id;
    INSERT INTO books_trigrams (rowid, folded)
        SELECT -id, lower(author) FROM books WHERE id IN (SELECT id FROM books_unindexed)
        ORDER BY id DESC;
    INSERT INTO books_trigrams (rowid, folded)
        SELECT id, lower(title) FROM books WHERE id IN (SELECT id FROM books_unindexed)
        ORDER BY id;
    DELETE FROM books_unindexed;
END;
