//! The statements of the book endpoints, for both databases, each run here
//! and its rows read back: one statement per single-book request. The tables
//! are those of `migrations/` (`books`, `idempotency_keys`); every value is
//! a bound parameter.

use anyhow::{anyhow, bail};

use super::model::{Book, BookChanges, BookId, NewBook};
use super::query::BookQuery;
use super::safe_writes::{IDEMPOTENCY_KEY_SECONDS, KEYS_PRUNED_PER_CREATE};
use crate::db::{self, in_transaction, rows, seconds, Column, Connection, Row, Sql, SqlParam};
use crate::envelope::Response;
use crate::settings::StoreKind;

/// The columns every book statement returns, in `Book` field order.
const BOOK_COLUMNS: &str = "id, title, author, year, version";

/// Up to `limit` books with an id above `after` (`None`: from the first),
/// in ascending id order: one page of the whole list.
pub fn list(
    db: &mut dyn Connection,
    after: Option<BookId>,
    limit: u32,
) -> anyhow::Result<Vec<Book>> {
    let query = BookQuery { after, limit: Some(limit), ..BookQuery::default() };
    page(db, &query)
}

/// A catalog query: the books matching its filters with an id above
/// `after`, in ascending id order, at most `query.limit` of them.
///
/// Text filters are substring matches (`contains`), served by trigram
/// indexes (`migrations/sqlite/0007_*`, `migrations/postgres/0006_*`).
/// SQLite: the longest filter of 3 or more characters drives the statement
/// through the FTS5 table and the books written since it took them in;
/// shorter filters scan in id order. PostgreSQL:
/// `pg_trgm` serves the `LIKE` when the extension could be created, and the
/// planner weighs it against the primary key.
pub fn page(db: &mut dyn Connection, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
    let filters: Vec<(&str, &str)> = [("title", &query.title), ("author", &query.author)]
        .into_iter()
        .filter_map(|(column, filter)| filter.as_ref().map(|f| (column, f.folded())))
        .collect();
    // Owned here, bound by reference below: what each store compares.
    let kind = db.kind();
    let patterns: Vec<String> = filters
        .iter()
        .map(|(_, folded)| match kind {
            StoreKind::Sqlite => folded.to_string(),
            StoreKind::Postgres => like_anywhere(folded),
        })
        .collect();
    let driver = match kind {
        StoreKind::Sqlite => filters
            .iter()
            .filter(|(_, folded)| folded.chars().count() >= TRIGRAM)
            .max_by_key(|(_, folded)| folded.chars().count())
            .map(|(column, folded)| (*column == "author", trigram_query(folded))),
        StoreKind::Postgres => None,
    };
    let after = query.after.map_or(0, BookId::get);
    books(rows(db, |kind| {
        let mut sql = Sql::default();
        // The filters' conditions, the same in each part of the statement.
        let mut conditions = String::new();
        for ((column, _), pattern) in filters.iter().zip(&patterns) {
            let placeholder = sql.bind(SqlParam::Text(pattern));
            conditions.push_str(&format!(" AND {}", contains(kind, column, &placeholder)));
        }
        if let Some(year) = query.year {
            conditions.push_str(&format!(" AND year = {}", sql.bind(SqlParam::Int32(year))));
        }
        let limit =
            query.limit.map(|fetch| format!(" LIMIT {}", sql.bind(SqlParam::Int64(fetch.into()))));
        let limit = limit.unwrap_or_default();
        sql.text = match &driver {
            None => {
                let range = query
                    .after
                    .map(|after| format!(" AND id > {}", sql.bind(SqlParam::Int64(after.get()))));
                let range = range.unwrap_or_default();
                format!("SELECT {BOOK_COLUMNS} FROM books WHERE true{range}{conditions} ORDER BY id{limit}")
            }
            // The index's candidates (a title under the book's id, an author
            // under its negation: read in the order of ids, an author's
            // downwards) and the books written since it last took them in
            // (`books_unindexed`, at most 32), merged in that order: a page
            // stops at its limit however common the filter.
            Some((author, trigrams)) => {
                let (sign, beyond, order) =
                    if *author { ("-", "<", "DESC") } else { ("", ">", "") };
                let matching = sql.bind(SqlParam::Text(trigrams));
                let bound = sql.bind(SqlParam::Int64(if *author { -after } else { after }));
                let after_id = sql.bind(SqlParam::Int64(after));
                format!(
                    "SELECT {BOOK_COLUMNS} FROM books JOIN (SELECT books_trigrams.rowid AS k \
                     FROM books_trigrams JOIN books ON books.id = {sign}books_trigrams.rowid \
                     WHERE books_trigrams MATCH {matching} AND books_trigrams.rowid {beyond} {bound} \
                     AND books.id NOT IN (SELECT id FROM books_unindexed){conditions} \
                     UNION ALL SELECT {sign}id AS k FROM books_unindexed CROSS JOIN books USING (id) \
                     WHERE id > {after_id}{conditions} ORDER BY k {order}{limit}) AS candidates \
                     ON books.id = {sign}candidates.k ORDER BY candidates.k {order}"
                )
            }
        };
        sql.build(kind)
    })?)
}

/// The fewest characters the trigram index can look up: a shorter filter
/// is matched by reading the books in id order.
const TRIGRAM: usize = 3;

/// An FTS5 query for the rows holding every trigram of `text` (`detail=none`
/// keeps no positions): `"abc" AND "bcd"`, each a string (`"` doubled). A
/// candidate, not a match: a row may hold them apart, so `contains` decides.
fn trigram_query(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut trigrams: Vec<String> = chars
        .windows(TRIGRAM)
        .map(|window| format!("\"{}\"", window.iter().collect::<String>().replace('"', "\"\"")))
        .collect();
    trigrams.sort_unstable();
    trigrams.dedup();
    trigrams.join(" AND ")
}

/// `column` contains the placeholder's text, ASCII letters folded, nothing
/// else. SQLite: the placeholder holds the filter ASCII-lowered, and the
/// built-in `lower()` folds ASCII letters only. PostgreSQL: it holds
/// `like_anywhere` of it, and `ascii_lower()` (migration 0006) folds exactly
/// A-Z where `lower()` would fold others too (depending on the collation);
/// `pg_trgm`'s index on `ascii_lower(column)` serves the `LIKE`. Both
/// compare literally: `instr` has no wildcards, and the pattern escapes them.
fn contains(kind: StoreKind, column: &str, placeholder: &str) -> String {
    match kind {
        StoreKind::Sqlite => format!("instr(lower({column}), {placeholder}) > 0"),
        StoreKind::Postgres => format!("ascii_lower({column}) LIKE {placeholder}"),
    }
}

/// A `LIKE` pattern matching `text` anywhere, literally: `%`, `_` and the
/// escape character `\` escaped.
fn like_anywhere(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

pub fn get(db: &mut dyn Connection, id: BookId) -> anyhow::Result<Option<Book>> {
    let text = format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = {{1}}");
    first_book(rows(db, |kind| db::statement(kind, &text, vec![SqlParam::Int64(id.get())]))?)
}

/// Stores a book under a new id, never one used before.
pub fn create(db: &mut dyn Connection, book: &NewBook) -> anyhow::Result<Book> {
    let rows = rows(db, |kind| {
        let mut sql = insert(book, None);
        sql.text.push_str(" RETURNING id");
        sql.build(kind)
    })?;
    match rows.first().map(Vec::as_slice) {
        Some([Column::Integer(id)]) => BookId::new(*id)
            .map(|id| book.with_id(id))
            .ok_or_else(|| anyhow!("INSERT returned id {id}")),
        other => bail!("INSERT returned {other:?}"),
    }
}

/// The `INSERT` of a new book, under `id` when one was reserved.
fn insert<'a>(book: &'a NewBook, id: Option<BookId>) -> Sql<'a> {
    let mut sql = Sql::default();
    let mut columns = vec!["title", "author", "year"];
    let mut values = vec![
        sql.bind(SqlParam::Text(&book.title)),
        sql.bind(SqlParam::Text(&book.author)),
        sql.bind(SqlParam::Int32(book.year)),
    ];
    if let Some(id) = id {
        columns.push("id");
        values.push(sql.bind(SqlParam::Int64(id.get())));
    }
    sql.text = format!("INSERT INTO books ({}) VALUES ({})", columns.join(", "), values.join(", "));
    sql
}

/// ` AND version IN (...)` when only `versions` may be replaced (`None`:
/// any version). An empty list matches nothing.
fn version_condition(sql: &mut Sql, versions: Option<&[i64]>) {
    match versions {
        None => {}
        Some([]) => sql.text.push_str(" AND false"),
        Some(versions) => {
            let placeholders: Vec<String> =
                versions.iter().map(|version| sql.bind(SqlParam::Int64(*version))).collect();
            sql.text.push_str(&format!(" AND version IN ({})", placeholders.join(", ")));
        }
    }
}

/// Stores `changes` (maybe none) as the book's next version, if it has one
/// of `versions` (`None`: any): the check and the write are one statement.
/// `None` when there is no such book, or not at such a version. Only
/// present fields are bound: no NULL whose type a driver would have to guess.
pub fn update(
    db: &mut dyn Connection,
    id: BookId,
    changes: &BookChanges,
    versions: Option<&[i64]>,
) -> anyhow::Result<Option<Book>> {
    first_book(rows(db, |kind| {
        let mut sql = Sql::default();
        let mut assignments = Vec::with_capacity(4);
        let fields = [
            ("title", changes.title.as_deref().map(SqlParam::Text)),
            ("author", changes.author.as_deref().map(SqlParam::Text)),
            ("year", changes.year.map(SqlParam::Int32)),
        ];
        for (column, value) in fields {
            if let Some(value) = value {
                assignments.push(format!("{column} = {}", sql.bind(value)));
            }
        }
        assignments.push("version = version + 1".to_string());
        let id = sql.bind(SqlParam::Int64(id.get()));
        sql.text = format!("UPDATE books SET {} WHERE id = {id}", assignments.join(", "));
        version_condition(&mut sql, versions);
        sql.text.push_str(&format!(" RETURNING {BOOK_COLUMNS}"));
        sql.build(kind)
    })?)
}

/// Deletes the book if it has one of `versions` (`None`: any); `false` when
/// there was no such book, or not at such a version.
pub fn delete(
    db: &mut dyn Connection,
    id: BookId,
    versions: Option<&[i64]>,
) -> anyhow::Result<bool> {
    let deleted = rows(db, |kind| {
        let mut sql = Sql::new("DELETE FROM books WHERE id = ");
        let id = sql.bind(SqlParam::Int64(id.get()));
        sql.text.push_str(&id);
        version_condition(&mut sql, versions);
        sql.text.push_str(" RETURNING id");
        sql.build(kind)
    })?;
    Ok(!deleted.is_empty())
}

/// What a keyed create found or did.
#[derive(Debug)]
pub enum Keyed {
    /// The key was new: the book was stored and `Response` remembered with
    /// the key, atomically.
    Created(Response),
    /// The key was used before, for a request with this fingerprint, which
    /// was answered `Response`.
    Used { fingerprint: String, first: Response },
}

/// Stores `book` once per `key`: if `key` is new, the book under a new id
/// and, with it atomically, the key with the request's `fingerprint` and
/// the response `answer` makes of the stored book; otherwise what the key
/// holds. Keys made more than `IDEMPOTENCY_KEY_SECONDS` before `now` are
/// forgotten, a few each time.
pub fn create_once(
    db: &mut dyn Connection,
    key: &str,
    fingerprint: &str,
    book: &NewBook,
    answer: impl Fn(Book) -> Response,
    now: u64,
) -> anyhow::Result<Keyed> {
    let horizon = seconds(now.saturating_sub(IDEMPOTENCY_KEY_SECONDS));
    match db.kind() {
        StoreKind::Sqlite => {
            // Looked up before the write lock is taken: a retry never waits
            // for it. Looked up again under it, where it is decided.
            if let Some(used) = find_key(db, key)? {
                return Ok(used);
            }
            let keyed = in_transaction(db, |db| {
                if let Some(used) = find_key(db, key)? {
                    return Ok(used);
                }
                let first = answer(create(db, book)?);
                rows(db, |kind| remember_key(kind, key, fingerprint, &first, now))?;
                Ok(Keyed::Created(first))
            })?;
            // After the commit, so the write lock is not held for it, and
            // housekeeping only: the answer stands if it fails, and the next
            // keyed create prunes what it left.
            let _ = rows(db, |kind| {
                db::statement(
                    kind,
                    "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM \
                     idempotency_keys WHERE created_at <= {1} ORDER BY created_at LIMIT {2}) \
                     RETURNING key",
                    vec![SqlParam::Int64(horizon), SqlParam::Int64(KEYS_PRUNED_PER_CREATE.into())],
                )
            });
            Ok(keyed)
        }
        // PostgreSQL has no transaction across statements here: the book,
        // the key and the pruning are one statement, under an id reserved
        // by the look-up. When a concurrent request stored the same new key
        // first, ours was undone whole (unique violation), and looking the
        // key up again finds theirs.
        StoreKind::Postgres => {
            let mut tries = 0;
            loop {
                tries += 1;
                let (used, reserved) = find_key_reserving_id(db, key)?;
                if let Some(used) = used {
                    return Ok(used);
                }
                let first = answer(book.with_id(reserved));
                let written = rows(db, |kind| {
                    let mut sql = insert(book, Some(reserved));
                    sql.text = format!("WITH created AS ({} RETURNING id), ", sql.text);
                    let remember = remember_key(kind, key, fingerprint, &first, now);
                    let remembered = remember
                        .params
                        .into_iter()
                        .zip(["text", "text", "integer", "text", "text", "bigint"])
                        .map(|(param, type_name)| format!("{}::{type_name}", sql.bind(param)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let horizon = sql.bind(SqlParam::Int64(horizon));
                    let batch = sql.bind(SqlParam::Int64(KEYS_PRUNED_PER_CREATE.into()));
                    sql.text.push_str(&format!(
                        "remembered AS (INSERT INTO idempotency_keys ({KEY_COLUMNS}, created_at) \
                         SELECT {remembered} FROM created RETURNING key), \
                         pruned AS (DELETE FROM idempotency_keys WHERE key IN (SELECT key \
                         FROM idempotency_keys WHERE created_at <= {horizon}::bigint \
                         ORDER BY created_at LIMIT {batch}::bigint) RETURNING key) \
                         SELECT id FROM created"
                    ));
                    let mut statement = sql.build(kind);
                    statement.always_a_row = true;
                    statement
                });
                match written {
                    Err(error) if tries == 1 && format!("{error:#}").contains(UNIQUE_VIOLATION) => {
                    }
                    written => return written.map(|_| Keyed::Created(first)),
                }
            }
        }
    }
}

/// What a key holds, in `Keyed::Used`'s order.
const KEY_COLUMNS: &str = "key, fingerprint, status, etag, body";

/// PostgreSQL's SQLSTATE for a unique violation, as its error text names it.
const UNIQUE_VIOLATION: &str = "23505";

/// `INSERT` of a key and what it answers (`KEY_COLUMNS`), at `now`.
fn remember_key<'a>(
    kind: StoreKind,
    key: &'a str,
    fingerprint: &'a str,
    first: &'a Response,
    now: u64,
) -> db::Statement<'a> {
    let body = std::str::from_utf8(&first.body).unwrap_or_default();
    let etag = first.header("etag").unwrap_or_default();
    db::statement(
        kind,
        &format!(
            "INSERT INTO idempotency_keys ({KEY_COLUMNS}, created_at) \
             VALUES ({{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}) RETURNING key"
        ),
        vec![
            SqlParam::Text(key),
            SqlParam::Text(fingerprint),
            SqlParam::Int32(first.status.into()),
            SqlParam::Text(etag),
            SqlParam::Text(body),
            SqlParam::Int64(seconds(now)),
        ],
    )
}

/// What `key` holds, on SQLite (zero or one row).
fn find_key(db: &mut dyn Connection, key: &str) -> anyhow::Result<Option<Keyed>> {
    let found = rows(db, |kind| {
        db::statement(
            kind,
            "SELECT fingerprint, status, etag, body FROM idempotency_keys WHERE key = {1}",
            vec![SqlParam::Text(key)],
        )
    })?;
    found.into_iter().next().map(used_key).transpose()
}

/// What `key` holds, on PostgreSQL, and an id reserved for a book the key
/// would create: one row whatever the data.
fn find_key_reserving_id(
    db: &mut dyn Connection,
    key: &str,
) -> anyhow::Result<(Option<Keyed>, BookId)> {
    let mut found = rows(db, |kind| {
        let mut statement = db::statement(
            kind,
            "SELECT nextval(pg_get_serial_sequence('books', 'id')), \
             k.fingerprint, k.status, k.etag, k.body FROM (VALUES (1)) AS one(k) LEFT JOIN idempotency_keys k ON k.key = {1}::text",
            vec![SqlParam::Text(key)],
        );
        statement.always_a_row = true;
        statement
    })?;
    // The reserved id first: the connection drops a row whose first column
    // is NULL (`spin/postgres.rs`), and the key's columns are NULL when it
    // is new.
    let Some(mut row) = found.pop() else {
        bail!("the key look-up returned no row");
    };
    let reserved = match row.first() {
        Some(Column::Integer(id)) => BookId::new(*id),
        _ => None,
    }
    .ok_or_else(|| anyhow!("no book id was reserved"))?;
    row.remove(0);
    let used = match row.first() {
        Some(Column::Null) => None,
        _ => Some(used_key(row)?),
    };
    Ok((used, reserved))
}

/// A `fingerprint, status, etag, body` row.
fn used_key(row: Row) -> anyhow::Result<Keyed> {
    match <[Column; 4]>::try_from(row) {
        Ok(
            [Column::Text(fingerprint), Column::Integer(status), Column::Text(etag), Column::Text(body)],
        ) => {
            let status = u16::try_from(status)?;
            Ok(Keyed::Used {
                fingerprint,
                first: Response {
                    status,
                    body: body.into_bytes(),
                    extra_headers: vec![("etag", etag)],
                    continues_after: None,
                },
            })
        }
        other => bail!("unexpected idempotency key row: {other:?}"),
    }
}

/// A book row (`BOOK_COLUMNS`). Takes the row's strings rather than copying
/// them: a page of books is held once, not twice.
fn book(row: Row) -> anyhow::Result<Book> {
    match <[Column; 5]>::try_from(row) {
        Ok(
            [Column::Integer(id), Column::Text(title), Column::Text(author), Column::Integer(year), Column::Integer(version)],
        ) => match (BookId::new(id), i32::try_from(year)) {
            (Some(id), Ok(year)) if version >= 1 => Ok(Book { id, title, author, year, version }),
            _ => bail!("stored id {id}, year {year} or version {version} out of range"),
        },
        other => bail!("unexpected book row: {other:?}"),
    }
}

fn books(rows: Vec<Row>) -> anyhow::Result<Vec<Book>> {
    rows.into_iter().map(book).collect()
}

fn first_book(rows: Vec<Row>) -> anyhow::Result<Option<Book>> {
    rows.into_iter().next().map(book).transpose()
}

#[cfg(test)]
mod tests {
    //! The statements run for real on SQLite in the core's tests and on
    //! PostgreSQL in `bench/native`'s; here, what a fast test would not
    //! otherwise see: rows outside the schema.
    use super::*;

    #[test]
    fn rows_outside_the_schema_are_errors_not_values() {
        let row = |id, year, version| {
            vec![
                Column::Integer(id),
                Column::Text("T".into()),
                Column::Text("A".into()),
                Column::Integer(year),
                Column::Integer(version),
            ]
        };
        assert!(book(row(7, 1965, 1)).is_ok());
        assert!(book(row(7, i64::from(i32::MAX) + 1, 1)).is_err());
        assert!(book(row(0, 1965, 1)).is_err());
        assert!(book(row(7, 1965, 0)).is_err());
        assert!(book(vec![Column::Integer(7), Column::Null]).is_err());
        assert!(used_key(vec![Column::Text("f".into()), Column::Integer(-1)]).is_err());
    }

    /// PostgreSQL's pattern, as bound (its matching runs in `bench/native`'s
    /// test and `faults/catalog.py`).
    #[test]
    fn filters_are_bound_as_literal_patterns() {
        assert_eq!(like_anywhere("a%b_c\\d'\"é"), "%a\\%b\\_c\\\\d'\"é%");
    }
}
