-- Substring filters on title and author (`GET /books?title=...`,
-- docs/api.md) through an index: each book's title and author, ASCII-lowered
-- as the filters compare them (SQLite's lower() folds ASCII letters only),
-- indexed by their trigrams. A filter of three or more characters looks up
-- the books holding all of its trigrams; the statement then checks the
-- substring itself (src/books/sql.rs).
--
-- One FTS5 table for both columns (each FTS5 table costs a write its own
-- flush): a title under the book's id, an author under its negation, so a
-- rowid range reads one column alone, in the order of ids. Contentless
-- (`books` holds the text), `detail=none` and `columnsize=0`: rowids only,
-- the smallest FTS5 index. It forgets a row through 'delete' with the text
-- it was indexed with.
--
-- Rowids are written in ascending order within a transaction (authors, by
-- -id, before titles): FTS5 flushes its pending entries as a new segment
-- whenever a rowid goes back, so any other order costs every write a second
-- segment and the fill of an existing catalog one segment a book.
CREATE VIRTUAL TABLE books_trigrams USING fts5(
    folded, content='', detail=none, columnsize=0, tokenize='trigram case_sensitive 1'
);

INSERT INTO books_trigrams (rowid, folded) SELECT -id, lower(author) FROM books ORDER BY id DESC;

INSERT INTO books_trigrams (rowid, folded) SELECT id, lower(title) FROM books ORDER BY id;

-- The fill's segments merged into one now, not by the next writes.
INSERT INTO books_trigrams (books_trigrams) VALUES ('optimize');

-- Kept in step with every write, whoever makes it (a replica of an older
-- release too), in the write's own transaction.
CREATE TRIGGER books_trigrams_insert AFTER INSERT ON books BEGIN
    INSERT INTO books_trigrams (rowid, folded)
        VALUES (-new.id, lower(new.author)), (new.id, lower(new.title));
END;

CREATE TRIGGER books_trigrams_delete AFTER DELETE ON books BEGIN
    INSERT INTO books_trigrams (books_trigrams, rowid, folded)
        VALUES ('delete', -old.id, lower(old.author)), ('delete', old.id, lower(old.title));
END;

CREATE TRIGGER books_trigrams_update AFTER UPDATE OF title, author ON books
WHEN old.title IS NOT new.title OR old.author IS NOT new.author BEGIN
    INSERT INTO books_trigrams (books_trigrams, rowid, folded)
        VALUES ('delete', -old.id, lower(old.author));
    INSERT INTO books_trigrams (rowid, folded) VALUES (-new.id, lower(new.author));
    INSERT INTO books_trigrams (books_trigrams, rowid, folded)
        VALUES ('delete', old.id, lower(old.title));
    INSERT INTO books_trigrams (rowid, folded) VALUES (new.id, lower(new.title));
END;
