//! Every SQL statement the stores run, for both databases: the store kind
//! decides placeholders and the one function that differs; every value is a
//! bound parameter. The tables are those of `migrations/` (`books`,
//! `login_attempts`, `idempotency_keys`). The rows these statements return, read back once for
//! both databases; and the `Connection` that runs them.

use anyhow::bail;

use crate::login_limit::LoginAttempts;
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::settings::StoreKind;

/// A database connection. Connecting may be deferred to the first statement.
pub trait Connection {
    /// Which database it is, and so the dialect of its statements.
    fn kind(&self) -> StoreKind;
    /// Runs `statement` and returns its rows, in the statement's order.
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>>;
    /// Runs `sql`, which has no parameters and whose rows are not read:
    /// schema changes and transaction control (`migrations`).
    fn execute(&mut self, sql: &str) -> anyhow::Result<()>;
}

impl<C: Connection + ?Sized> Connection for &mut C {
    fn kind(&self) -> StoreKind {
        (**self).kind()
    }
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        (**self).query(statement)
    }
    fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
        (**self).execute(sql)
    }
}

/// The columns every book statement returns, in `Book` field order.
pub const BOOK_COLUMNS: &str = "id, title, author, year, version";

/// A value bound to a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlParam<'a> {
    Text(&'a str),
    Int32(i32),
    Int64(i64),
}

/// A statement and the values of its placeholders, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub sql: String,
    pub params: Vec<SqlParam<'a>>,
    /// Written to return a row whatever the data (`create_once` on
    /// PostgreSQL), so a connection need not make sure it does.
    pub always_a_row: bool,
}

/// The `n`-th placeholder (1-based): `?1` or `$1`.
fn placeholder(kind: StoreKind, n: usize) -> String {
    match kind {
        StoreKind::Sqlite => format!("?{n}"),
        StoreKind::Postgres => format!("${n}"),
    }
}

/// `column` contains the placeholder's text (already ASCII-lowered), ASCII
/// letters folded, nothing else. SQLite's built-in `lower()` folds ASCII
/// letters only; PostgreSQL's `lower()` would fold others too (depending on
/// the collation), so there `translate` folds exactly A-Z. `instr`/`strpos`
/// compare literally: no wildcard characters.
fn contains(kind: StoreKind, column: &str, placeholder: &str) -> String {
    match kind {
        StoreKind::Sqlite => format!("instr(lower({column}), {placeholder}) > 0"),
        StoreKind::Postgres => format!(
            "strpos(translate({column}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', \
             'abcdefghijklmnopqrstuvwxyz'), {placeholder}) > 0"
        ),
    }
}

/// `text` with `{1}`, `{2}`, ... replaced by the store's placeholders.
fn statement<'a>(kind: StoreKind, text: &str, params: Vec<SqlParam<'a>>) -> Statement<'a> {
    let mut sql = text.to_string();
    for n in (1..=params.len()).rev() {
        sql = sql.replace(&format!("{{{n}}}"), &placeholder(kind, n));
    }
    Statement {
        sql,
        params,
        always_a_row: false,
    }
}

/// A column of a result row, as each connection hands it over: the rows
/// the statements below return are read back here, once for both databases (SQLite INTEGER and PostgreSQL INTEGER/BIGINT are all
/// `Integer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    Integer(i64),
    Text(String),
    Null,
    /// Any other type: never in a row these statements return.
    Other,
}

/// A book row (`BOOK_COLUMNS`). Takes the row's strings rather than copying
/// them: a list of 10,000 books is held once, not twice.
fn book_from_row(row: Vec<Column>) -> anyhow::Result<Book> {
    match <[Column; 5]>::try_from(row) {
        Ok(
            [Column::Integer(id), Column::Text(title), Column::Text(author), Column::Integer(year), Column::Integer(version)],
        ) => match (BookId::new(id), i32::try_from(year)) {
            (Some(id), Ok(year)) if version >= 1 => Ok(Book {
                id,
                title,
                author,
                year,
                version,
            }),
            _ => bail!("stored id {id}, year {year} or version {version} out of range"),
        },
        other => bail!("unexpected book row: {other:?}"),
    }
}

/// Every book of a result.
pub fn books_from_rows(rows: Vec<Vec<Column>>) -> anyhow::Result<Vec<Book>> {
    rows.into_iter().map(book_from_row).collect()
}

/// The book of a zero-or-one-row result.
pub fn first_book(rows: Vec<Vec<Column>>) -> anyhow::Result<Option<Book>> {
    rows.into_iter().next().map(book_from_row).transpose()
}

/// The count of a zero-or-one-row login-attempt result.
pub fn first_attempts(rows: &[Vec<Column>]) -> anyhow::Result<Option<LoginAttempts>> {
    rows.first().map(|row| attempts_from_row(row)).transpose()
}

/// The id an `insert` returned.
pub fn id_from_row(row: &[Column]) -> anyhow::Result<BookId> {
    match row {
        [Column::Integer(id)] => {
            BookId::new(*id).ok_or_else(|| anyhow::anyhow!("INSERT returned id {id}"))
        }
        other => bail!("INSERT returned {other:?}"),
    }
}

/// An `attempts, window_end` row of the login-attempt statements; counts
/// and times are never negative.
fn attempts_from_row(row: &[Column]) -> anyhow::Result<LoginAttempts> {
    if let [Column::Integer(count), Column::Integer(window_end)] = row {
        if let (Ok(count), Ok(window_end)) = (u64::try_from(*count), u64::try_from(*window_end)) {
            return Ok(LoginAttempts { count, window_end });
        }
    }
    bail!("unexpected login-attempt row: {row:?}")
}

/// Seconds as stored: SQLite INTEGER and PostgreSQL BIGINT are signed.
pub fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Every book, ascending id.
pub fn list(kind: StoreKind) -> Statement<'static> {
    statement(
        kind,
        &format!("SELECT {BOOK_COLUMNS} FROM books ORDER BY id"),
        Vec::new(),
    )
}

/// One book (zero or one row).
pub fn get(kind: StoreKind, id: BookId) -> Statement<'static> {
    statement(
        kind,
        &format!("SELECT {BOOK_COLUMNS} FROM books WHERE id = {{1}}"),
        vec![SqlParam::Int64(id.get())],
    )
}

/// A new book, returning its id.
pub fn insert(kind: StoreKind, book: &NewBook) -> Statement<'_> {
    statement(
        kind,
        "INSERT INTO books (title, author, year) VALUES ({1}, {2}, {3}) RETURNING id",
        vec![
            SqlParam::Text(&book.title),
            SqlParam::Text(&book.author),
            SqlParam::Int32(book.year),
        ],
    )
}

/// `AND version IN (...)` when only `versions` may be replaced (`None`:
/// any), its values appended to `params`. An empty list matches nothing.
fn version_condition(versions: Option<&[i64]>, params: &mut Vec<SqlParam>) -> String {
    let Some(versions) = versions else {
        return String::new();
    };
    let mut placeholders = Vec::with_capacity(versions.len());
    for version in versions {
        params.push(SqlParam::Int64(*version));
        placeholders.push(format!("{{{}}}", params.len()));
    }
    if placeholders.is_empty() {
        return " AND false".to_string();
    }
    format!(" AND version IN ({})", placeholders.join(", "))
}

/// An `UPDATE ... RETURNING` of the fields `changes` holds and a new
/// version, of the book only while it has one of `versions` (`None`: any):
/// the check and the write are one statement. Only present fields are bound:
/// no NULL parameter whose type a driver would have to guess.
pub fn update<'a>(
    kind: StoreKind,
    id: BookId,
    changes: &'a BookChanges,
    versions: Option<&[i64]>,
) -> Statement<'a> {
    let mut assignments = Vec::with_capacity(4);
    let mut params = Vec::with_capacity(4);
    let fields = [
        ("title", changes.title.as_deref().map(SqlParam::Text)),
        ("author", changes.author.as_deref().map(SqlParam::Text)),
        ("year", changes.year.map(SqlParam::Int32)),
    ];
    for (column, value) in fields {
        if let Some(value) = value {
            params.push(value);
            assignments.push(format!("{column} = {{{}}}", params.len()));
        }
    }
    assignments.push("version = version + 1".to_string());
    params.push(SqlParam::Int64(id.get()));
    let id_placeholder = params.len();
    let condition = version_condition(versions, &mut params);
    let text = format!(
        "UPDATE books SET {} WHERE id = {{{id_placeholder}}}{condition} RETURNING {BOOK_COLUMNS}",
        assignments.join(", "),
    );
    statement(kind, &text, params)
}

/// Deletes a book while it has one of `versions` (`None`: any), returning
/// its id (no row: there was none, or not at such a version).
pub fn delete(kind: StoreKind, id: BookId, versions: Option<&[i64]>) -> Statement<'static> {
    let mut params = vec![SqlParam::Int64(id.get())];
    let condition = version_condition(versions, &mut params);
    let text = format!("DELETE FROM books WHERE id = {{1}}{condition} RETURNING id");
    statement(kind, &text, params)
}

/// The columns of a keyed create's row: whether it is the book a key
/// already created (1) or a new one (0), then `BOOK_COLUMNS` of the book as
/// first created (`keyed_book_from_row`).
const KEYED_COLUMNS: &str = "replayed, id, title, author, year, version";

/// The book `key` created, as it was created (zero or one row of
/// `KEYED_COLUMNS`).
pub fn find_key(kind: StoreKind, key: &str) -> Statement<'_> {
    statement(
        kind,
        "SELECT 1 AS replayed, book_id AS id, title, author, year, 1 AS version \
         FROM idempotency_keys WHERE key = {1}",
        vec![SqlParam::Text(key)],
    )
}

/// Remembers that `key` created `book`, at `now`.
pub fn remember_key<'a>(kind: StoreKind, key: &'a str, book: &'a Book, now: u64) -> Statement<'a> {
    statement(
        kind,
        "INSERT INTO idempotency_keys (key, book_id, title, author, year, created_at) \
         VALUES ({1}, {2}, {3}, {4}, {5}, {6}) RETURNING key",
        vec![
            SqlParam::Text(key),
            SqlParam::Int64(book.id.get()),
            SqlParam::Text(&book.title),
            SqlParam::Text(&book.author),
            SqlParam::Int32(book.year),
            SqlParam::Int64(seconds(now)),
        ],
    )
}

/// Forgets up to `limit` keys made at or before `horizon`, through the
/// `created_at` index.
pub fn prune_keys(kind: StoreKind, horizon: u64, limit: u32) -> Statement<'static> {
    statement(
        kind,
        "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys \
         WHERE created_at <= {1} ORDER BY created_at LIMIT {2}) RETURNING key",
        vec![
            SqlParam::Int64(seconds(horizon)),
            SqlParam::Int64(limit.into()),
        ],
    )
}

/// PostgreSQL's whole keyed create in one statement (one row of
/// `KEYED_COLUMNS`, whatever the data): the book `key` already created, or
/// `book` stored with `key` remembered beside it, and up to `limit` keys
/// made at or before `horizon` forgotten. Two such statements with one new key both
/// insert, and the second's key waits on the first's and then fails
/// (unique violation): all of it, its book included, is undone.
pub fn create_once<'a>(
    key: &'a str,
    book: &'a NewBook,
    now: u64,
    horizon: u64,
    limit: u32,
) -> Statement<'a> {
    let mut statement = statement(
        StoreKind::Postgres,
        &format!(
            "WITH existing AS (SELECT 1 AS replayed, book_id AS id, title, author, year \
             FROM idempotency_keys WHERE key = {{1}}::text), \
             created AS (INSERT INTO books (title, author, year) \
             SELECT {{2}}::text, {{3}}::text, {{4}}::integer \
             WHERE NOT EXISTS (SELECT 1 FROM existing) RETURNING id, title, author, year), \
             remembered AS (INSERT INTO idempotency_keys \
             (key, book_id, title, author, year, created_at) \
             SELECT {{1}}::text, id, title, author, year, {{5}}::bigint FROM created \
             RETURNING key), \
             pruned AS (DELETE FROM idempotency_keys WHERE key IN (SELECT key \
             FROM idempotency_keys WHERE created_at <= {{6}}::bigint ORDER BY created_at \
             LIMIT {{7}}::bigint) RETURNING key) \
             SELECT {KEYED_COLUMNS} FROM (SELECT replayed, id, title, author, year, 1 AS version \
             FROM existing UNION ALL SELECT 0, id, title, author, year, 1 FROM created) AS keyed"
        ),
        vec![
            SqlParam::Text(key),
            SqlParam::Text(&book.title),
            SqlParam::Text(&book.author),
            SqlParam::Int32(book.year),
            SqlParam::Int64(seconds(now)),
            SqlParam::Int64(seconds(horizon)),
            SqlParam::Int64(limit.into()),
        ],
    );
    statement.always_a_row = true;
    statement
}

/// A row of `KEYED_COLUMNS`: the book, and whether a key already made it.
pub fn keyed_book_from_row(mut row: Vec<Column>) -> anyhow::Result<(Book, bool)> {
    if row.is_empty() {
        bail!("empty keyed row");
    }
    let replayed = row.remove(0);
    match (replayed, book_from_row(row)?) {
        (Column::Integer(1), book) => Ok((book, true)),
        (Column::Integer(0), book) => Ok((book, false)),
        (other, _) => bail!("unexpected replayed column {other:?}"),
    }
}

/// The one `SELECT` of a catalog query: filters, `id > after`, ascending id,
/// `LIMIT fetch_limit`.
pub fn page(kind: StoreKind, query: &BookQuery) -> Statement<'_> {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if let Some(after) = query.after {
        params.push(SqlParam::Int64(after.get()));
        conditions.push(format!("id > {{{}}}", params.len()));
    }
    for (column, filter) in [("title", &query.title), ("author", &query.author)] {
        if let Some(filter) = filter {
            params.push(SqlParam::Text(filter.folded()));
            conditions.push(contains(kind, column, &format!("{{{}}}", params.len())));
        }
    }
    if let Some(year) = query.year {
        params.push(SqlParam::Int32(year));
        conditions.push(format!("year = {{{}}}", params.len()));
    }
    let mut text = format!("SELECT {BOOK_COLUMNS} FROM books");
    if !conditions.is_empty() {
        text.push_str(" WHERE ");
        text.push_str(&conditions.join(" AND "));
    }
    text.push_str(" ORDER BY id");
    if let Some(fetch) = query.fetch_limit() {
        params.push(SqlParam::Int64(fetch.into()));
        text.push_str(&format!(" LIMIT {{{}}}", params.len()));
    }
    statement(kind, &text, params)
}

/// The most trivial query, for `GET /health`: one row, `1`.
pub fn ping(kind: StoreKind) -> Statement<'static> {
    statement(kind, "SELECT 1 AS ok", Vec::new())
}

/// `client`'s `attempts, window_end` (zero or one row).
pub fn login_attempts(kind: StoreKind, client: &str) -> Statement<'_> {
    statement(
        kind,
        "SELECT attempts, window_end FROM login_attempts WHERE client = {1}",
        vec![SqlParam::Text(client)],
    )
}

/// Counts one login attempt of `client` at `now`, returning `attempts,
/// window_end` (one row). One statement, so concurrent attempts are counted
/// one by one (a row lock in PostgreSQL, the write lock in SQLite), each
/// seeing its own number. A window that has ended starts over, so a stale
/// row never needs a cleanup first. No arithmetic on parameters: PostgreSQL
/// infers each one's type from the column it meets.
pub fn count_login_attempt(
    kind: StoreKind,
    client: &str,
    now: u64,
    window_seconds: u64,
) -> Statement<'_> {
    statement(
        kind,
        "INSERT INTO login_attempts AS a (client, attempts, window_end) VALUES ({1}, 1, {3}) \
         ON CONFLICT (client) DO UPDATE SET \
         attempts = CASE WHEN a.window_end > {2} THEN a.attempts + 1 ELSE 1 END, \
         window_end = CASE WHEN a.window_end > {2} THEN a.window_end ELSE {3} END \
         RETURNING attempts, window_end",
        vec![
            SqlParam::Text(client),
            SqlParam::Int64(seconds(now)),
            SqlParam::Int64(seconds(now.saturating_add(window_seconds))),
        ],
    )
}

/// Forgets `client`'s count. (`RETURNING` so that PostgreSQL can run it
/// through `query` like every other statement.)
pub fn clear_login_attempts(kind: StoreKind, client: &str) -> Statement<'_> {
    statement(
        kind,
        "DELETE FROM login_attempts WHERE client = {1} RETURNING client",
        vec![SqlParam::Text(client)],
    )
}

/// Deletes up to `limit` windows that ended at or before `now`, found
/// through the `window_end` index (no scan of the table).
pub fn prune_login_attempts(kind: StoreKind, now: u64, limit: u32) -> Statement<'static> {
    statement(
        kind,
        "DELETE FROM login_attempts WHERE client IN \
         (SELECT client FROM login_attempts WHERE window_end <= {1} \
         ORDER BY window_end LIMIT {2}) RETURNING client",
        vec![SqlParam::Int64(seconds(now)), SqlParam::Int64(limit.into())],
    )
}

#[cfg(test)]
mod tests {
    //! The statements run for real on SQLite in the core's tests
    //! (`tests/core_*.rs`) and on PostgreSQL in `bench/native`'s; here, the
    //! PostgreSQL text the fast tests would not otherwise see.
    use super::*;
    use crate::query::BookQuery;

    #[test]
    fn postgres_statements_use_numbered_placeholders_and_fold_a_to_z_only() {
        let changes = BookChanges {
            title: Some("T".into()),
            author: None,
            year: Some(1999),
        };
        let update = update(
            StoreKind::Postgres,
            BookId::new(3).unwrap(),
            &changes,
            Some(&[4, 5]),
        );
        assert_eq!(
            update.sql,
            "UPDATE books SET title = $1, year = $2, version = version + 1 WHERE id = $3 AND \
             version IN ($4, $5) RETURNING id, title, author, year, version"
        );
        let delete = delete(StoreKind::Postgres, BookId::new(3).unwrap(), Some(&[]));
        assert_eq!(
            delete.sql,
            "DELETE FROM books WHERE id = $1 AND false RETURNING id"
        );
        let query = BookQuery::parse(Some("author=B&after=7&limit=2")).unwrap();
        let page_sql = page(StoreKind::Postgres, &query);
        assert_eq!(
            page_sql.sql,
            "SELECT id, title, author, year, version FROM books WHERE id > $1 AND strpos(translate(author, \
             'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), $2) > 0 ORDER BY id \
             LIMIT $3"
        );
        assert_eq!(
            page_sql.params,
            [SqlParam::Int64(7), SqlParam::Text("b"), SqlParam::Int64(3)]
        );
    }

    #[test]
    fn ten_or_more_placeholders_are_not_confused() {
        // `{1}` must not be replaced inside `{10}`.
        let texts: Vec<String> = (1..=11).map(|n| n.to_string()).collect();
        let params: Vec<SqlParam> = texts.iter().map(|t| SqlParam::Text(t)).collect();
        let text: Vec<String> = (1..=11).map(|n| format!("{{{n}}}")).collect();
        let statement = statement(StoreKind::Postgres, &text.join(","), params);
        assert_eq!(statement.sql, "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11");
    }

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
        assert!(book_from_row(row(7, 1965, 1)).is_ok());
        assert!(book_from_row(row(7, i64::from(i32::MAX) + 1, 1)).is_err());
        assert!(book_from_row(row(0, 1965, 1)).is_err());
        assert!(book_from_row(row(7, 1965, 0)).is_err());
        let mut keyed = row(7, 1965, 1);
        keyed.insert(0, Column::Integer(2));
        assert!(keyed_book_from_row(keyed).is_err());
        assert!(book_from_row(vec![Column::Integer(7), Column::Null]).is_err());
        assert!(id_from_row(&[Column::Integer(0)]).is_err());
        assert!(id_from_row(&[Column::Text("3".into())]).is_err());
        assert!(attempts_from_row(&[Column::Integer(-1), Column::Integer(900)]).is_err());
    }

    #[test]
    fn a_window_past_the_end_of_time_is_stored_as_the_largest_time() {
        let far = count_login_attempt(StoreKind::Postgres, "c", u64::MAX, 900);
        assert_eq!(far.params[2], SqlParam::Int64(i64::MAX));
    }
}
