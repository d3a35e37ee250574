//! The statements of the book endpoints, for both databases, each run here
//! and its rows read back into books and typed outcomes: one statement per
//! single-book request. The tables are those of `migrations/` (`books`,
//! `idempotency_keys`); every value is a bound parameter.

use anyhow::{anyhow, bail};

use super::changes::{Change, Cursor, Op};
use super::model::{Book, BookChanges, BookId, NewBook};
use super::query::BookQuery;
use super::safe_writes::{Precondition, IDEMPOTENCY_KEY_SECONDS, KEYS_PRUNED_PER_CREATE};
use crate::db::StoreKind;
use crate::db::{
    failed_with, in_transaction, seconds, Column, Connection, Failure, Row, Sql, SqlParam,
};

/// The columns every book statement returns, in `Book` field order.
const BOOK_COLUMNS: &str = "id, title, author, year, version";

/// A catalog query: the books matching its filters with an id above
/// `after`, in ascending id order, at most `query.limit` of them. The whole
/// list is such pages of `BookQuery::after`.
///
/// Text filters are substring matches (`contains`), served by trigram
/// indexes (`migrations/sqlite/0007_*`, `migrations/postgres/0006_*`).
/// SQLite: the longest filter of 3 or more characters drives the statement
/// through the FTS5 table and the books written since it took them in;
/// shorter filters scan in id order. PostgreSQL: `pg_trgm` serves the
/// `LIKE` when the extension could be created, and the planner weighs it
/// against the primary key.
pub async fn page(db: &mut impl Connection, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
    let kind = db.kind();
    let filters: Vec<(&str, &str)> = [("title", &query.title), ("author", &query.author)]
        .into_iter()
        .filter_map(|(column, filter)| filter.as_ref().map(|f| (column, f.folded())))
        .collect();
    // Owned here, bound by reference below: what each store compares.
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
            .filter(|(_, folded)| folded.chars().count() >= TRIGRAM_CHARS)
            .max_by_key(|(_, folded)| folded.chars().count())
            .map(|(column, folded)| (*column == "author", trigram_query(folded))),
        StoreKind::Postgres => None,
    };
    let after = query.after.map_or(0, BookId::get);
    let mut sql = Sql::read();
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
    let text = match &driver {
        None => {
            let range = query
                .after
                .map(|after| format!(" AND id > {}", sql.bind(SqlParam::Int64(after.get()))));
            let range = range.unwrap_or_default();
            format!(
                "SELECT {BOOK_COLUMNS} FROM books WHERE true{range}{conditions} ORDER BY id{limit}"
            )
        }
        // The index's candidates (a title under the book's id, an author
        // under its negation: read in the order of ids, an author's
        // downwards) and the books written since it last took them in
        // (`books_unindexed`, at most 32), merged in that order: a page
        // stops at its limit however common the filter.
        Some((author, trigrams)) => {
            let (sign, beyond, order) = if *author { ("-", "<", "DESC") } else { ("", ">", "") };
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
    sql.push(&text);
    sql.run(db).await?.into_iter().map(book).collect()
}

/// The fewest characters the trigram index can look up: a shorter filter
/// is matched by reading the books in id order.
const TRIGRAM_CHARS: usize = 3;

/// An FTS5 query for the rows holding every trigram of `text` (`detail=none`
/// keeps no positions): `"abc" AND "bcd"`, each a string (`"` doubled). A
/// candidate, not a match: a row may hold them apart, so `contains` decides.
fn trigram_query(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut trigrams: Vec<String> = chars
        .windows(TRIGRAM_CHARS)
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

pub async fn get(db: &mut impl Connection, id: BookId) -> anyhow::Result<Option<Book>> {
    let mut sql = Sql::read();
    let id = sql.bind(SqlParam::Int64(id.get()));
    sql.push(&format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = {id}"));
    first_book(sql.run(db).await?)
}

/// Stores a book under a new id, never one used before, with its `create`
/// change by `account`.
pub async fn create(
    db: &mut impl Connection,
    book: &NewBook,
    account: &str,
) -> anyhow::Result<Book> {
    let kind = db.kind();
    let mut sql = Sql::write().always_a_row();
    match kind {
        // The change first; its trigger stores the book under the id
        // AUTOINCREMENT would give it (the write lock is held: none other
        // can take it meanwhile).
        StoreKind::Sqlite => {
            let id = "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'books'), 0) + 1";
            let values = book_values(&mut sql, kind, book);
            let account = sql.bind(SqlParam::Text(account));
            sql.push(&format!(
                "INSERT INTO changes (op, book_id, title, author, year, version, account) \
                 VALUES ('create', {id}, {values}, 1, {account}) RETURNING book_id"
            ));
        }
        StoreKind::Postgres => {
            sql.push("WITH written AS (");
            insert(&mut sql, kind, book, None);
            sql.push(&format!(" RETURNING {BOOK_COLUMNS})"));
            logged(&mut sql, kind, Op::Create, account, "written");
        }
    }
    match sql.run(db).await?.first().map(Vec::as_slice) {
        Some([Column::Integer(id), ..]) => BookId::new(*id)
            .map(|id| book.with_id(id))
            .ok_or_else(|| anyhow!("INSERT returned id {id}")),
        other => bail!("INSERT returned {other:?}"),
    }
}

/// The bound title, author and year of `book`, comma-separated.
fn book_values<'a>(sql: &mut Sql<'a>, kind: StoreKind, book: &'a NewBook) -> String {
    [SqlParam::Text(&book.title), SqlParam::Text(&book.author), SqlParam::Int32(book.year)]
        .map(|value| sql.bind_typed(kind, value))
        .join(", ")
}

/// The `INSERT` of a new book, under `id` when one was reserved.
fn insert<'a>(sql: &mut Sql<'a>, kind: StoreKind, book: &'a NewBook, id: Option<BookId>) {
    let mut values = book_values(sql, kind, book);
    let mut columns = "title, author, year".to_string();
    if let Some(id) = id {
        columns.push_str(", id");
        values = format!("{values}, {}", sql.bind_typed(kind, SqlParam::Int64(id.get())));
    }
    sql.push(&format!("INSERT INTO books ({columns}) VALUES ({values})"));
}

/// PostgreSQL: the rest of a statement whose `WITH` wrote books as `from`
/// (`BOOK_COLUMNS`; after a delete `id, version`): their changes, `op` by
/// `account`, in the same statement, and the written rows as its result
/// (a row of NULLs for none: always a row).
fn logged<'a>(sql: &mut Sql<'a>, kind: StoreKind, op: Op, account: &'a str, from: &str) {
    let account = sql.bind_typed(kind, SqlParam::Text(account));
    let (fields, returned) = match op {
        Op::Delete => ("NULL, NULL, NULL", "w.id, w.version"),
        _ => ("title, author, year", "w.*"),
    };
    sql.push(&format!(
        ", logged AS (INSERT INTO changes (op, book_id, title, author, year, version, account) \
         SELECT '{}', id, {fields}, version, {account} FROM {from}) \
         SELECT {returned} FROM (VALUES (1)) AS one(k) LEFT JOIN {from} AS w ON true",
        op.name()
    ));
}

/// ` AND version IN (...)` when the precondition names versions (an empty
/// list matches nothing).
fn version_condition(sql: &mut Sql, precondition: &Precondition) {
    match precondition {
        Precondition::Any => {}
        Precondition::Versions(versions) if !versions.is_empty() => {
            let placeholders: Vec<String> =
                versions.iter().map(|version| sql.bind(SqlParam::Int64(*version))).collect();
            sql.push(&format!(" AND version IN ({})", placeholders.join(", ")));
        }
        Precondition::Versions(_) | Precondition::Required => sql.push(" AND false"),
    }
}

/// Stores `changes` (maybe none) as the book's next version, with its
/// `update` change by `account`, if its version meets `precondition`: the
/// check and the write are one statement. `None` when there is no such
/// book, or not at such a version. Only present fields are bound: no NULL
/// whose type a driver would have to guess.
pub async fn update(
    db: &mut impl Connection,
    id: BookId,
    changes: &BookChanges,
    precondition: &Precondition,
    account: &str,
) -> anyhow::Result<Option<Book>> {
    let kind = db.kind();
    let mut sql = Sql::write().always_a_row();
    let fields = [
        ("title", changes.title.as_deref().map(SqlParam::Text)),
        ("author", changes.author.as_deref().map(SqlParam::Text)),
        ("year", changes.year.map(SqlParam::Int32)),
    ];
    let values: Vec<(&str, String)> = (fields.into_iter())
        .map(|(column, value)| (column, value.map_or(column.to_string(), |v| sql.bind(v))))
        .collect();
    let id = sql.bind(SqlParam::Int64(id.get()));
    match kind {
        // The change, made from the row as it is; its trigger applies it.
        StoreKind::Sqlite => {
            let values: Vec<&str> = values.iter().map(|(_, value)| value.as_str()).collect();
            let account = sql.bind(SqlParam::Text(account));
            sql.push(&format!(
                "INSERT INTO changes (op, book_id, title, author, year, version, account) \
                 SELECT 'update', id, {}, version + 1, {account} FROM books WHERE id = {id}",
                values.join(", ")
            ));
            version_condition(&mut sql, precondition);
            sql.push(" RETURNING book_id, title, author, year, version");
        }
        StoreKind::Postgres => {
            let assignments: Vec<String> =
                values.iter().map(|(column, value)| format!("{column} = {value}")).collect();
            sql.push(&format!(
                "WITH written AS (UPDATE books SET {}, version = version + 1 WHERE id = {id}",
                assignments.join(", ")
            ));
            version_condition(&mut sql, precondition);
            sql.push(&format!(" RETURNING {BOOK_COLUMNS})"));
            logged(&mut sql, kind, Op::Update, account, "written");
        }
    }
    first_book(sql.run(db).await?)
}

/// Deletes the book, with its `delete` change by `account`, if its version
/// meets `precondition`; `false` when there was no such book, or not at
/// such a version.
pub async fn delete(
    db: &mut impl Connection,
    id: BookId,
    precondition: &Precondition,
    account: &str,
) -> anyhow::Result<bool> {
    let kind = db.kind();
    let mut sql = Sql::write().always_a_row();
    let id = sql.bind(SqlParam::Int64(id.get()));
    match kind {
        StoreKind::Sqlite => {
            let account = sql.bind(SqlParam::Text(account));
            sql.push(&format!(
                "INSERT INTO changes (op, book_id, version, account) \
                 SELECT 'delete', id, version, {account} FROM books WHERE id = {id}"
            ));
            version_condition(&mut sql, precondition);
            sql.push(" RETURNING book_id");
        }
        StoreKind::Postgres => {
            sql.push(&format!("WITH written AS (DELETE FROM books WHERE id = {id}"));
            version_condition(&mut sql, precondition);
            sql.push(" RETURNING id, version)");
            logged(&mut sql, kind, Op::Delete, account, "written");
        }
    }
    Ok(!sql.run(db).await?.is_empty())
}

/// Brings deleted book `id` back with the fields its last kept change
/// before the delete had, at the version after, with its `restore` change
/// by `account`. `None` when it exists or has no such change (PostgreSQL:
/// a unique violation when a concurrent write stored it first).
pub async fn restore(
    db: &mut impl Connection,
    id: BookId,
    account: &str,
) -> anyhow::Result<Option<Book>> {
    let kind = db.kind();
    let mut sql = Sql::write().always_a_row();
    let id = sql.bind_typed(kind, SqlParam::Int64(id.get()));
    let last = format!(
        "SELECT book_id AS id, title, author, year, version + 1 AS version FROM changes \
         WHERE book_id = {id} AND op <> 'delete' AND NOT EXISTS \
         (SELECT 1 FROM books WHERE id = {id}) ORDER BY {} LIMIT 1",
        feed_order(kind, " DESC")
    );
    match kind {
        StoreKind::Sqlite => {
            let account = sql.bind(SqlParam::Text(account));
            sql.push(&format!(
                "INSERT INTO changes (op, book_id, title, author, year, version, account) \
                 SELECT 'restore', id, title, author, year, version, {account} \
                 FROM ({last}) RETURNING book_id, title, author, year, version"
            ));
        }
        StoreKind::Postgres => {
            sql.push(&format!(
                "WITH last AS ({last}), written AS (INSERT INTO books ({BOOK_COLUMNS}) \
                 SELECT * FROM last RETURNING {BOOK_COLUMNS})"
            ));
            logged(&mut sql, kind, Op::Restore, account, "written");
        }
    }
    first_book(sql.run(db).await?)
}

/// The feed's order (`changes::Cursor`), each key followed by `direction`.
fn feed_order(kind: StoreKind, direction: &str) -> String {
    match kind {
        StoreKind::Sqlite => format!("seq{direction}"),
        StoreKind::Postgres => format!("xid{direction}, seq{direction}"),
    }
}

/// The first answer of a keyed create, as stored with its key and replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    pub status: u16,
    pub etag: String,
    pub body: String,
}

/// What a keyed create found or did.
#[derive(Debug, PartialEq, Eq)]
pub enum Keyed {
    /// The key was new: the book was stored and its answer remembered with
    /// the key, atomically.
    Created(StoredAnswer),
    /// The key came with this request before: its first answer.
    Replayed(StoredAnswer),
    /// The key came with a different request (another fingerprint).
    Conflict,
}

/// Stores `book` once per `key`: if `key` is new, the book under a new id
/// and, with it atomically, the key with the request's `fingerprint` and
/// `answer` of the stored book; otherwise what the key holds decides. Keys
/// made more than `IDEMPOTENCY_KEY_SECONDS` before `now` are forgotten, a
/// few each time.
pub async fn create_once<C: Connection>(
    db: &mut C,
    key: &str,
    fingerprint: &str,
    book: &NewBook,
    answer: impl Fn(&Book) -> anyhow::Result<StoredAnswer>,
    now: u64,
    account: &str,
) -> anyhow::Result<Keyed> {
    let used = |found: Option<(String, StoredAnswer)>| {
        found.map(
            |(used, first)| {
                if used == fingerprint {
                    Keyed::Replayed(first)
                } else {
                    Keyed::Conflict
                }
            },
        )
    };
    let horizon = seconds(now.saturating_sub(IDEMPOTENCY_KEY_SECONDS));
    match db.kind() {
        StoreKind::Sqlite => {
            // Looked up before the write lock is taken: a retry never waits
            // for it. Looked up again under it, where it is decided.
            if let Some(keyed) = used(find_key(db, key).await?) {
                return Ok(keyed);
            }
            let keyed = in_transaction(db, async |db: &mut C| {
                if let Some(keyed) = used(find_key(db, key).await?) {
                    return Ok(keyed);
                }
                let first = answer(&create(db, book, account).await?)?;
                let mut sql = Sql::write();
                remember_key(&mut sql, db.kind(), key, fingerprint, &first, now, "");
                sql.run(db).await?;
                Ok(Keyed::Created(first))
            })
            .await?;
            // After the commit, so the write lock is not held for it, and
            // housekeeping only: the answer stands if it fails, and the next
            // keyed create prunes what it left.
            let mut sql = Sql::write();
            prune_keys(&mut sql, StoreKind::Sqlite, horizon);
            let _ = sql.run(db).await;
            Ok(keyed)
        }
        // PostgreSQL has no transaction across statements here: the book,
        // the key and the pruning are one statement, under an id reserved
        // by the look-up. When a concurrent request stored the same new key
        // first, ours was undone whole (unique violation), and looking the
        // key up again finds theirs.
        StoreKind::Postgres => {
            let mut retried = false;
            loop {
                let (found, reserved) = find_key_reserving_id(db, key).await?;
                if let Some(keyed) = used(found) {
                    return Ok(keyed);
                }
                let first = answer(&book.with_id(reserved))?;
                let kind = StoreKind::Postgres;
                let mut sql = Sql::write().always_a_row();
                sql.push("WITH written AS (");
                insert(&mut sql, kind, book, Some(reserved));
                sql.push(&format!(" RETURNING {BOOK_COLUMNS}), remembered AS ("));
                remember_key(&mut sql, kind, key, fingerprint, &first, now, " FROM written");
                sql.push("), pruned AS (");
                prune_keys(&mut sql, kind, horizon);
                sql.push(")");
                logged(&mut sql, kind, Op::Create, account, "written");
                match sql.run(db).await {
                    Err(error) if !retried && failed_with(&error, Failure::UniqueViolation) => {
                        retried = true;
                    }
                    written => return written.map(|_| Keyed::Created(first)),
                }
            }
        }
    }
}

/// What a key holds, in `StoredAnswer`'s order after the fingerprint.
const KEY_COLUMNS: &str = "key, fingerprint, status, etag, body";

/// `INSERT` of a key and what it answers (`KEY_COLUMNS`), at `now`, its
/// values selected `from` a table (PostgreSQL: the book just created).
fn remember_key<'a>(
    sql: &mut Sql<'a>,
    kind: StoreKind,
    key: &'a str,
    fingerprint: &'a str,
    first: &'a StoredAnswer,
    now: u64,
    from: &str,
) {
    let values = [
        SqlParam::Text(key),
        SqlParam::Text(fingerprint),
        SqlParam::Int32(first.status.into()),
        SqlParam::Text(&first.etag),
        SqlParam::Text(&first.body),
        SqlParam::Int64(seconds(now)),
    ]
    .map(|value| sql.bind_typed(kind, value));
    sql.push(&format!(
        "INSERT INTO idempotency_keys ({KEY_COLUMNS}, created_at) SELECT {}{from} RETURNING key",
        values.join(", ")
    ));
}

/// Forgets up to `KEYS_PRUNED_PER_CREATE` keys made at or before `horizon`.
fn prune_keys(sql: &mut Sql, kind: StoreKind, horizon: i64) {
    let horizon = sql.bind_typed(kind, SqlParam::Int64(horizon));
    let batch = sql.bind_typed(kind, SqlParam::Int64(KEYS_PRUNED_PER_CREATE.into()));
    sql.push(&format!(
        "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys \
         WHERE created_at <= {horizon} ORDER BY created_at LIMIT {batch}) RETURNING key"
    ));
}

/// What `key` holds on SQLite (zero or one row): the fingerprint and the
/// first answer.
async fn find_key(
    db: &mut impl Connection,
    key: &str,
) -> anyhow::Result<Option<(String, StoredAnswer)>> {
    let mut sql = Sql::read();
    let key = sql.bind(SqlParam::Text(key));
    sql.push(&format!(
        "SELECT fingerprint, status, etag, body FROM idempotency_keys WHERE key = {key}"
    ));
    sql.run(db).await?.into_iter().next().map(used_key).transpose()
}

/// What `key` holds on PostgreSQL, and an id reserved for a book the key
/// would create: one row whatever the data.
async fn find_key_reserving_id(
    db: &mut impl Connection,
    key: &str,
) -> anyhow::Result<(Option<(String, StoredAnswer)>, BookId)> {
    let mut sql = Sql::read().always_a_row();
    let key = sql.bind_typed(StoreKind::Postgres, SqlParam::Text(key));
    sql.push(&format!(
        "SELECT nextval(pg_get_serial_sequence('books', 'id')), k.fingerprint, k.status, k.etag, \
         k.body FROM (VALUES (1)) AS one(k) LEFT JOIN idempotency_keys k ON k.key = {key}"
    ));
    // The reserved id first: a connection drops a row whose first column is
    // NULL (`spin/*/postgres.rs`), and the key's columns are NULL when it is new.
    let Some(mut row) = sql.run(db).await?.pop() else {
        bail!("the key look-up returned no row");
    };
    let reserved = match row.first() {
        Some(Column::Integer(id)) => BookId::new(*id),
        _ => None,
    }
    .ok_or_else(|| anyhow!("no book id was reserved"))?;
    row.remove(0);
    let found = match row.first() {
        Some(Column::Null) => None,
        _ => Some(used_key(row)?),
    };
    Ok((found, reserved))
}

// Imports (`transfer.rs`). The books of a body are staged while it is read
// in a TEMP table, the request's connection's own (it takes no lock on the
// database and nobody else sees it), then moved into `books` at the end in
// one short write: on SQLite one `BEGIN IMMEDIATE` transaction, on
// PostgreSQL (no transaction across statements here, see `create_once`)
// one statement. Both adapters hold one connection for all of a request's
// statements.

/// The staging table: on SQLite in `temp`, on PostgreSQL in `pg_temp`.
fn staged(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::Sqlite => "temp.import_books",
        StoreKind::Postgres => "pg_temp.import_books",
    }
}

/// An empty staging table (one a failed import left is dropped first). On
/// PostgreSQL each staged book carries the id it will have.
pub async fn stage_start(db: &mut impl Connection) -> anyhow::Result<()> {
    let kind = db.kind();
    db.execute(&format!("DROP TABLE IF EXISTS {}", staged(kind))).await?;
    let columns = match kind {
        StoreKind::Sqlite => "title TEXT NOT NULL, author TEXT NOT NULL, year INTEGER NOT NULL",
        StoreKind::Postgres => {
            "id bigint NOT NULL, title text NOT NULL, author text NOT NULL, year integer NOT NULL"
        }
    };
    Ok(db.execute(&format!("CREATE TEMP TABLE import_books ({columns})")).await?)
}

pub async fn stage_end(db: &mut impl Connection) -> anyhow::Result<()> {
    Ok(db.execute(&format!("DROP TABLE IF EXISTS {}", staged(db.kind()))).await?)
}

/// Stages `books` after those staged before, one statement. On PostgreSQL
/// each gets its id now, from the books' sequence (ids are never reused, so
/// those of a failed import are only skipped): returned in the books' order.
pub async fn stage(db: &mut impl Connection, books: &[NewBook]) -> anyhow::Result<Vec<i64>> {
    let kind = db.kind();
    // Never an empty batch: a row for each book.
    let mut sql = Sql::write().always_a_row();
    let mut rows = Vec::with_capacity(books.len());
    for book in books {
        rows.push(format!("({})", book_values(&mut sql, kind, book)));
    }
    let (rows, table) = (rows.join(", "), staged(kind));
    if kind == StoreKind::Sqlite {
        sql.push(&format!("INSERT INTO {table} (title, author, year) VALUES {rows}"));
        sql.run(db).await?;
        return Ok(Vec::new());
    }
    sql.push(&format!(
        "INSERT INTO {table} (id, title, author, year) SELECT nextval((SELECT \
         pg_get_serial_sequence('books', 'id'))::regclass), title, author, year FROM (VALUES \
         {rows}) AS book (title, author, year) RETURNING id"
    ));
    reserved_ids(sql.run(db).await?)
}

/// The ids of rows of one column, ascending: a statement's order of
/// assigning them, the staged books' order.
fn reserved_ids(rows: Vec<Row>) -> anyhow::Result<Vec<i64>> {
    let mut ids = rows
        .into_iter()
        .map(|row| match row.as_slice() {
            [Column::Integer(id)] => Ok(*id),
            other => bail!("unexpected id row: {other:?}"),
        })
        .collect::<anyhow::Result<Vec<i64>>>()?;
    ids.sort_unstable();
    Ok(ids)
}

/// Moves the staged books into `books`, in their order, each with its
/// `create` change by `account`, and, with a `key` (and the request's
/// fingerprint) that is new, remembers `answer` of their ids with it,
/// atomically; otherwise what the key holds decides, as for `create_once`.
/// `reserved`: the ids staged on PostgreSQL.
pub async fn import_staged<C: Connection>(
    db: &mut C,
    key: Option<(&str, &str)>,
    reserved: &[i64],
    answer: impl Fn(&[i64]) -> anyhow::Result<StoredAnswer>,
    now: u64,
    account: &str,
) -> anyhow::Result<Keyed> {
    let used = |found: Option<(String, StoredAnswer)>, fingerprint: &str| {
        found.map(|(used, first)| match used == fingerprint {
            true => Keyed::Replayed(first),
            false => Keyed::Conflict,
        })
    };
    let kind = db.kind();
    let horizon = seconds(now.saturating_sub(IDEMPOTENCY_KEY_SECONDS));
    let table = staged(kind);
    let changes = "INSERT INTO changes (op, book_id, title, author, year, version, account)";
    if kind == StoreKind::Sqlite {
        if let Some((key, fingerprint)) = key {
            if let Some(keyed) = used(find_key(db, key).await?, fingerprint) {
                return Ok(keyed);
            }
        }
        // The write lock is held for the move alone.
        let keyed = in_transaction(db, async |db: &mut C| {
            if let Some((key, fingerprint)) = key {
                if let Some(keyed) = used(find_key(db, key).await?, fingerprint) {
                    return Ok(keyed);
                }
            }
            // Under the lock the books take the ids AUTOINCREMENT would
            // give them, one after another (as `create`); the changes'
            // trigger stores them.
            let mut sql = Sql::read();
            sql.push(&format!(
                "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'books'), 0), \
                 (SELECT count(*) FROM {table})"
            ));
            let (last, moved) = match sql.run(db).await?.as_slice() {
                [row] => match row.as_slice() {
                    [Column::Integer(last), Column::Integer(moved)] => (*last, *moved),
                    other => bail!("unexpected sequence row: {other:?}"),
                },
                other => bail!("unexpected sequence rows: {other:?}"),
            };
            let mut sql = Sql::write();
            let (last_id, account) =
                (sql.bind(SqlParam::Int64(last)), sql.bind(SqlParam::Text(account)));
            sql.push(&format!(
                "{changes} SELECT 'create', {last_id} + rowid, title, author, year, 1, {account} \
                 FROM {table} ORDER BY rowid"
            ));
            sql.run(db).await?;
            let first = answer(&(last + 1..=last + moved).collect::<Vec<i64>>())?;
            if let Some((key, fingerprint)) = key {
                let mut sql = Sql::write();
                remember_key(&mut sql, kind, key, fingerprint, &first, now, "");
                sql.run(db).await?;
            }
            Ok(Keyed::Created(first))
        })
        .await?;
        if key.is_some() {
            // After the commit, as `create_once` does.
            let mut sql = Sql::write();
            prune_keys(&mut sql, kind, horizon);
            let _ = sql.run(db).await;
        }
        return Ok(keyed);
    }
    let mut retried = false;
    loop {
        if let Some((key, fingerprint)) = key {
            // The id it reserves goes unused.
            if let Some(keyed) = used(find_key_reserving_id(db, key).await?.0, fingerprint) {
                return Ok(keyed);
            }
        }
        let first = answer(reserved)?;
        let mut sql = Sql::write().always_a_row();
        let account = sql.bind_typed(kind, SqlParam::Text(account));
        sql.push(&format!(
            "WITH moved AS (INSERT INTO books (id, title, author, year) SELECT id, title, author, \
             year FROM {table} ORDER BY id RETURNING {BOOK_COLUMNS}), logged AS ({changes} \
             SELECT 'create', id, title, author, year, version, {account} FROM moved)"
        ));
        if let Some((key, fingerprint)) = key {
            sql.push(", remembered AS (");
            remember_key(&mut sql, kind, key, fingerprint, &first, now, "");
            sql.push("), pruned AS (");
            prune_keys(&mut sql, kind, horizon);
            sql.push(")");
        }
        sql.push(" SELECT count(*) FROM moved");
        match sql.run(db).await {
            Err(error) if !retried && failed_with(&error, Failure::UniqueViolation) => {
                retried = true;
            }
            moved => return moved.map(|_| Keyed::Created(first)),
        }
    }
}

/// A `fingerprint, status, etag, body` row.
fn used_key(row: Row) -> anyhow::Result<(String, StoredAnswer)> {
    match <[Column; 4]>::try_from(row) {
        Ok(
            [Column::Text(fingerprint), Column::Integer(status), Column::Text(etag), Column::Text(body)],
        ) => Ok((fingerprint, StoredAnswer { status: u16::try_from(status)?, etag, body })),
        other => bail!("unexpected idempotency key row: {other:?}"),
    }
}

/// The columns a change is read with (`change`), each store's cursor first.
fn change_columns(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::Sqlite => "0, seq, op, book_id, title, author, year, account, at",
        StoreKind::Postgres => "xid, seq, op, book_id, title, author, year, account, at",
    }
}

/// At most `limit` changes after `after` (from the oldest kept without
/// one), in commit order. PostgreSQL: only those of transactions below the
/// oldest one still running, which have all ended
/// (migrations/postgres/0008_changes.sql): none can later commit behind them.
pub async fn changes_after(
    db: &mut impl Connection,
    after: Option<Cursor>,
    limit: u32,
) -> anyhow::Result<Vec<Change>> {
    let kind = db.kind();
    let mut sql = Sql::read().always_a_row();
    let after = after_cursor(&mut sql, kind, after);
    let condition = match kind {
        StoreKind::Sqlite => after,
        StoreKind::Postgres => format!("{after} AND xid < {VISIBLE_BELOW}"),
    };
    select_changes(&mut sql, kind, &condition, limit);
    sql.run(db).await?.into_iter().map(change).collect()
}

/// The condition "after cursor `after`" (none: every change), bound.
fn after_cursor(sql: &mut Sql, kind: StoreKind, after: Option<Cursor>) -> String {
    let mut after = after.unwrap_or_default();
    if kind == StoreKind::Sqlite && after.xid > 0 {
        // A cursor past every SQLite change (only PostgreSQL's have an xid).
        after.seq = i64::MAX;
    }
    let seq = sql.bind(SqlParam::Int64(after.seq));
    match kind {
        StoreKind::Sqlite => format!("seq > {seq}"),
        StoreKind::Postgres => {
            format!("(xid, seq) > ({}, {seq})", sql.bind(SqlParam::Int64(after.xid)))
        }
    }
}

/// The changes meeting `condition`, in the feed's order, at most `limit`
/// (PostgreSQL: always a row, and ordered by the whole cursor).
fn select_changes(sql: &mut Sql, kind: StoreKind, condition: &str, limit: u32) {
    let limit = sql.bind(SqlParam::Int64(limit.into()));
    let (columns, order) = (change_columns(kind), feed_order(kind, ""));
    let select =
        format!("SELECT {columns} FROM changes WHERE {condition} ORDER BY {order} LIMIT {limit}");
    sql.push(&match kind {
        StoreKind::Sqlite => select,
        StoreKind::Postgres => format!(
            "SELECT c.* FROM (VALUES (1)) AS one(k) LEFT JOIN ({select}) AS c ON true \
             ORDER BY c.xid, c.seq"
        ),
    });
}

/// PostgreSQL: the oldest transaction still running (or the next to start).
const VISIBLE_BELOW: &str = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// Where the feed is now: a follower from here misses nothing committed
/// after (`GET /books`' `Changes-Cursor`, read before the list). SQLite:
/// AUTOINCREMENT's mark, the last change ever made; PostgreSQL: below the
/// oldest transaction still running.
pub async fn feed_position(db: &mut impl Connection) -> anyhow::Result<Cursor> {
    let mut sql = Sql::read().always_a_row();
    sql.push(&match db.kind() {
        StoreKind::Sqlite => {
            "SELECT 0, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0)"
                .to_string()
        }
        StoreKind::Postgres => format!("SELECT {VISIBLE_BELOW}, 0"),
    });
    cursor_row(sql.run(db).await?)
}

/// How far retention has pruned: a cursor below it has missed changes.
pub async fn pruned_through(db: &mut impl Connection) -> anyhow::Result<Cursor> {
    // One row, written by the migration.
    let mut sql = Sql::read().always_a_row();
    sql.push(match db.kind() {
        StoreKind::Sqlite => "SELECT 0, seq FROM changes_pruned",
        StoreKind::Postgres => "SELECT xid, seq FROM changes_pruned",
    });
    cursor_row(sql.run(db).await?)
}

fn cursor_row(rows: Vec<Row>) -> anyhow::Result<Cursor> {
    match rows.first().map(Vec::as_slice) {
        Some([Column::Integer(xid), Column::Integer(seq)]) => Ok(Cursor { xid: *xid, seq: *seq }),
        other => bail!("unexpected cursor row: {other:?}"),
    }
}

/// Book `id`'s kept changes after `after`, oldest first, at most `limit`.
/// Not held back behind running transactions as the feed is: a writer reads
/// its own change at once.
pub async fn history(
    db: &mut impl Connection,
    id: BookId,
    after: Option<Cursor>,
    limit: u32,
) -> anyhow::Result<Vec<Change>> {
    let kind = db.kind();
    let mut sql = Sql::read().always_a_row();
    let id = sql.bind(SqlParam::Int64(id.get()));
    let after = after_cursor(&mut sql, kind, after);
    select_changes(&mut sql, kind, &format!("book_id = {id} AND {after}"), limit);
    sql.run(db).await?.into_iter().map(change).collect()
}

/// Changes pruned by one write at most (`history_days`).
pub const CHANGES_PRUNED_PER_WRITE: u32 = 10;

/// Forgets the oldest changes made more than `days` ago, at most
/// `CHANGES_PRUNED_PER_WRITE` (looking at no more than that many), and
/// moves `changes_pruned` past them in the same statement.
pub async fn prune_changes(db: &mut impl Connection, days: u32) -> anyhow::Result<()> {
    let kind = db.kind();
    let mut sql = Sql::write().always_a_row();
    let days = sql.bind_typed(kind, SqlParam::Int64(days.into()));
    let batch = sql.bind_typed(kind, SqlParam::Int64(CHANGES_PRUNED_PER_WRITE.into()));
    sql.push(&match kind {
        // `changes_pruned` follows through a trigger (migration 0008).
        StoreKind::Sqlite => format!(
            "DELETE FROM changes WHERE seq IN (SELECT seq FROM (SELECT seq, at FROM changes \
             ORDER BY seq LIMIT {batch}) WHERE at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', \
             '-' || {days} || ' days')) RETURNING seq"
        ),
        StoreKind::Postgres => format!(
            "WITH pruned AS (DELETE FROM changes WHERE (xid, seq) IN (SELECT xid, seq \
             FROM (SELECT xid, seq, at FROM changes ORDER BY xid, seq LIMIT {batch}) AS o WHERE at < to_char((clock_timestamp() - make_interval(days \
             => {days}::integer)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')) \
             RETURNING xid, seq), last AS (SELECT xid, seq FROM pruned ORDER BY xid DESC, \
             seq DESC LIMIT 1), moved AS (UPDATE changes_pruned AS p SET xid = last.xid, \
             seq = last.seq FROM last WHERE (p.xid, p.seq) < (last.xid, last.seq) RETURNING \
             p.xid) SELECT count(*) FROM pruned"
        ),
    });
    sql.run(db).await?;
    Ok(())
}

/// A change row (`change_columns`).
fn change(row: Row) -> anyhow::Result<Change> {
    let Ok(
        [Column::Integer(xid), Column::Integer(seq), Column::Text(op), Column::Integer(id), title, author, year, account, Column::Text(at)],
    ) = <[Column; 9]>::try_from(row)
    else {
        bail!("unexpected change row");
    };
    let op = Op::parse(&op).ok_or_else(|| anyhow!("unknown change {op}"))?;
    let id = BookId::new(id).ok_or_else(|| anyhow!("change of book {id}"))?;
    let book = match (title, author, year) {
        (Column::Text(title), Column::Text(author), Column::Integer(year)) => {
            Some(Book { id, title, author, year: i32::try_from(year)?, version: 0 })
        }
        _ => None,
    };
    let account = match account {
        Column::Text(account) => Some(account),
        _ => None,
    };
    Ok(Change { cursor: Cursor { xid, seq }, op, id, book, account, at })
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

fn first_book(rows: Vec<Row>) -> anyhow::Result<Option<Book>> {
    rows.into_iter().next().map(book).transpose()
}

#[cfg(test)]
mod tests {
    //! The statements run for real on SQLite in the core's tests and on
    //! PostgreSQL in the fault tests; here, what a fast test would not
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

    /// PostgreSQL's pattern, as bound (its matching: `faults/catalog.py`).
    #[test]
    fn filters_are_bound_as_literal_patterns() {
        assert_eq!(like_anywhere("a%b_c\\d'\"é"), "%a\\%b\\_c\\\\d'\"é%");
    }
}
