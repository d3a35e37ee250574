//! Every SQL statement the stores run, for both databases: the store kind
//! decides placeholders and the one function that differs; every value is a
//! bound parameter. The tables are those of `migrations/` (`books`,
//! `login_attempts`). And the rows these statements return, read back once
//! for both databases.

use anyhow::bail;

use crate::login_limit::LoginAttempts;
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::settings::StoreKind;

/// The columns every book statement returns, in `Book` field order.
pub const BOOK_COLUMNS: &str = "id, title, author, year";

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
    Statement { sql, params }
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
pub fn book_from_row(row: Vec<Column>) -> anyhow::Result<Book> {
    match <[Column; 4]>::try_from(row) {
        Ok(
            [Column::Integer(id), Column::Text(title), Column::Text(author), Column::Integer(year)],
        ) => match (BookId::new(id), i32::try_from(year)) {
            (Some(id), Ok(year)) => Ok(Book {
                id,
                title,
                author,
                year,
            }),
            _ => bail!("stored id {id} or year {year} out of range"),
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

/// An `attempts, window_end` row of the login-attempt statements.
pub fn attempts_from_row(row: &[Column]) -> anyhow::Result<LoginAttempts> {
    match row {
        [Column::Integer(count), Column::Integer(window_end)] => {
            LoginAttempts::from_row(*count, *window_end)
        }
        other => bail!("unexpected login-attempt row: {other:?}"),
    }
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

/// An `UPDATE ... RETURNING` of only the fields `changes` holds (non-empty),
/// the id last. Only present fields are bound: no NULL parameter whose type a
/// driver would have to guess.
pub fn update(kind: StoreKind, id: BookId, changes: &BookChanges) -> Statement<'_> {
    let mut assignments = Vec::with_capacity(3);
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
    params.push(SqlParam::Int64(id.get()));
    let text = format!(
        "UPDATE books SET {} WHERE id = {{{}}} RETURNING {BOOK_COLUMNS}",
        assignments.join(", "),
        params.len()
    );
    statement(kind, &text, params)
}

/// Deletes a book, returning its id (no row: there was none).
pub fn delete(kind: StoreKind, id: BookId) -> Statement<'static> {
    statement(
        kind,
        "DELETE FROM books WHERE id = {1} RETURNING id",
        vec![SqlParam::Int64(id.get())],
    )
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
    use super::*;
    use crate::query::BookQuery;

    fn id(n: i64) -> BookId {
        BookId::new(n).unwrap()
    }

    #[test]
    fn placeholders_follow_the_dialect() {
        let get = get(StoreKind::Sqlite, id(7));
        assert_eq!(
            get.sql,
            "SELECT id, title, author, year FROM books WHERE id = ?1"
        );
        assert_eq!(get.params, [SqlParam::Int64(7)]);
        let delete = delete(StoreKind::Postgres, id(7));
        assert_eq!(delete.sql, "DELETE FROM books WHERE id = $1 RETURNING id");
    }

    #[test]
    fn insert_binds_the_three_fields() {
        let book = NewBook {
            title: "T".into(),
            author: "A".into(),
            year: 7,
        };
        let insert = insert(StoreKind::Sqlite, &book);
        assert_eq!(
            insert.sql,
            "INSERT INTO books (title, author, year) VALUES (?1, ?2, ?3) RETURNING id"
        );
        assert_eq!(
            insert.params,
            [SqlParam::Text("T"), SqlParam::Text("A"), SqlParam::Int32(7)]
        );
    }

    #[test]
    fn update_binds_only_present_fields_and_the_id_last() {
        let changes = BookChanges {
            title: Some("T".into()),
            author: None,
            year: Some(1999),
        };
        let update = update(StoreKind::Postgres, id(3), &changes);
        assert_eq!(
            update.sql,
            "UPDATE books SET title = $1, year = $2 WHERE id = $3 RETURNING id, title, author, year"
        );
        assert_eq!(
            update.params,
            [
                SqlParam::Text("T"),
                SqlParam::Int32(1999),
                SqlParam::Int64(3)
            ]
        );
    }

    #[test]
    fn a_catalog_page_binds_every_value() {
        let query =
            BookQuery::parse(Some("title=A%25_&author=x&year=-3&limit=10&after=7")).unwrap();
        let page_sql = page(StoreKind::Sqlite, &query);
        assert_eq!(
            page_sql.sql,
            "SELECT id, title, author, year FROM books WHERE id > ?1 AND \
             instr(lower(title), ?2) > 0 AND instr(lower(author), ?3) > 0 AND year = ?4 \
             ORDER BY id LIMIT ?5"
        );
        assert_eq!(
            page_sql.params,
            [
                SqlParam::Int64(7),
                SqlParam::Text("a%_"),
                SqlParam::Text("x"),
                SqlParam::Int32(-3),
                SqlParam::Int64(11)
            ]
        );
        let query = BookQuery::parse(Some("author=B")).unwrap();
        let page_sql = page(StoreKind::Postgres, &query);
        assert_eq!(
            page_sql.sql,
            "SELECT id, title, author, year FROM books WHERE strpos(translate(author, \
             'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), $1) > 0 ORDER BY id"
        );
        assert_eq!(page_sql.params, [SqlParam::Text("b")]);
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
    fn rows_are_read_back_once_for_both_stores() {
        let row = |year| {
            vec![
                Column::Integer(7),
                Column::Text("T".into()),
                Column::Text("A".into()),
                Column::Integer(year),
            ]
        };
        let book = book_from_row(row(1965)).unwrap();
        assert_eq!(
            (book.id.get(), book.title.as_str(), book.year),
            (7, "T", 1965)
        );
        assert!(book_from_row(row(i64::from(i32::MAX) + 1)).is_err());
        assert!(book_from_row(vec![Column::Integer(7), Column::Null]).is_err());
        assert_eq!(id_from_row(&[Column::Integer(3)]).unwrap().get(), 3);
        assert!(id_from_row(&[Column::Integer(0)]).is_err());
        assert!(id_from_row(&[Column::Text("3".into())]).is_err());
        let attempts = attempts_from_row(&[Column::Integer(2), Column::Integer(900)]).unwrap();
        assert_eq!((attempts.count, attempts.window_end), (2, 900));
        assert!(attempts_from_row(&[Column::Integer(-1), Column::Integer(900)]).is_err());
    }

    #[test]
    fn login_attempts_are_counted_in_one_upsert() {
        let count = count_login_attempt(StoreKind::Sqlite, "192.0.2.1", 1_000, 900);
        assert!(count.sql.starts_with("INSERT INTO login_attempts AS a"));
        assert!(count.sql.contains("ON CONFLICT (client) DO UPDATE"));
        assert!(count.sql.ends_with("RETURNING attempts, window_end"));
        assert_eq!(
            count.params,
            [
                SqlParam::Text("192.0.2.1"),
                SqlParam::Int64(1_000),
                SqlParam::Int64(1_900)
            ]
        );
        let far = count_login_attempt(StoreKind::Postgres, "c", u64::MAX, 900);
        assert_eq!(far.params[2], SqlParam::Int64(i64::MAX));
    }
}
