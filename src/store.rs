//! Where books live: the `BookStore` trait the handlers use, the choice of
//! store from `DB_URL`, and an in-memory store for tests.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Bound;

use crate::books::{Book, BookChanges, NewBook};
use crate::catalog::BookQuery;
use crate::router::BookId;

/// Storage for books. Each method is one call to the database, so that a
/// single-book request costs one round trip.
pub trait BookStore {
    /// Every book, in ascending id order.
    fn list(&mut self) -> anyhow::Result<Vec<Book>>;
    /// A catalog query (`GET /books` with parameters): the books matching
    /// its filters with an id above `after`, in ascending id order, at most
    /// `query.fetch_limit()` of them (one more than the page, so the caller
    /// knows whether a next page exists). One statement, every value bound,
    /// with the results of `BookQuery::select` over `list`, which is this
    /// default for a store without its own query.
    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        Ok(query.select(self.list()?))
    }
    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>>;
    /// Stores a book under a new id, never one used before.
    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book>;
    /// Applies non-empty `changes`; `None` when there is no such book.
    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>>;
    /// `false` when there was no such book.
    fn delete(&mut self, id: BookId) -> anyhow::Result<bool>;
    /// Answers a trivial query, for `GET /health` (decisions.md, "Health"):
    /// `Ok` when the store is reachable and answering. The real stores run
    /// `SELECT 1`; this default looks up one book, which any store can do.
    fn ping(&mut self) -> anyhow::Result<()> {
        let any = BookId::new(1).ok_or_else(|| anyhow::anyhow!("book id 1 is invalid"))?;
        self.get(any).map(|_| ())
    }

    // Login attempts per client (decisions.md, "Login protection"), kept in
    // the same database so that the limit holds across instances and
    // replicas. Each method is one statement. A store that keeps no counts
    // refuses, so that logins fail closed rather than go unthrottled.

    /// The count stored for `client`, if any (possibly of a window that has
    /// already ended).
    fn login_failures(&mut self, client: &str) -> anyhow::Result<Option<LoginFailures>> {
        let _ = client;
        anyhow::bail!("this store keeps no failed-login counts")
    }
    /// Counts one login attempt of `client` before its password is checked,
    /// atomically: concurrent calls each get a different count, the one that
    /// includes their own attempt. A window that ended at or before `now`
    /// starts again: count 1, ending at `now + window_seconds`.
    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginFailures> {
        let _ = (client, now, window_seconds);
        anyhow::bail!("this store keeps no failed-login counts")
    }
    /// Forgets `client`'s failures (a successful login).
    fn clear_login_failures(&mut self, client: &str) -> anyhow::Result<()> {
        let _ = client;
        anyhow::bail!("this store keeps no failed-login counts")
    }
    /// Deletes at most `limit` counts whose window ended at or before `now`.
    fn prune_login_failures(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        let _ = (now, limit);
        anyhow::bail!("this store keeps no failed-login counts")
    }
}

impl<S: BookStore + ?Sized> BookStore for &mut S {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        (**self).list()
    }
    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        (**self).list_page(query)
    }
    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        (**self).get(id)
    }
    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        (**self).create(book)
    }
    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        (**self).update(id, changes)
    }
    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        (**self).delete(id)
    }
    fn ping(&mut self) -> anyhow::Result<()> {
        (**self).ping()
    }
    fn login_failures(&mut self, client: &str) -> anyhow::Result<Option<LoginFailures>> {
        (**self).login_failures(client)
    }
    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginFailures> {
        (**self).count_login_attempt(client, now, window_seconds)
    }
    fn clear_login_failures(&mut self, client: &str) -> anyhow::Result<()> {
        (**self).clear_login_failures(client)
    }
    fn prune_login_failures(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        (**self).prune_login_failures(now, limit)
    }
}

/// The login attempts of one client in its current window that no
/// successful login has cleared: failures, and attempts still being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginFailures {
    /// Attempts counted since the window began.
    pub count: u64,
    /// Unix time (seconds) at which the window ends and the count lapses.
    pub window_end: u64,
}

impl LoginFailures {
    /// From a stored row; counts and times are never negative.
    pub fn from_row(count: i64, window_end: i64) -> anyhow::Result<LoginFailures> {
        match (u64::try_from(count), u64::try_from(window_end)) {
            (Ok(count), Ok(window_end)) => Ok(LoginFailures { count, window_end }),
            _ => anyhow::bail!("unexpected failed-login row ({count}, {window_end})"),
        }
    }
}

/// Seconds as stored: SQLite INTEGER and PostgreSQL BIGINT are signed.
pub fn sql_seconds(seconds: u64) -> i64 {
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// The SQL of the failed-login counts with its bound values, numbered
/// placeholders (`?1` for SQLite, `$1` for PostgreSQL). The table is
/// `login_failures` in the migrations: `client` (primary key), `failures`,
/// `window_end` (indexed).
pub mod login_sql {
    use super::{sql_seconds, SqlParam};

    /// `client`'s `failures, window_end` (zero or one row).
    pub fn select(client: &str, marker: char) -> (String, [SqlParam<'_>; 1]) {
        let sql =
            format!("SELECT failures, window_end FROM login_failures WHERE client = {marker}1");
        (sql, [SqlParam::Text(client)])
    }

    /// Counts one login attempt of `client` at `now`, returning `failures,
    /// window_end` (one row). One statement, so concurrent attempts are
    /// counted one by one (a row lock in PostgreSQL, the write lock in
    /// SQLite), each seeing its own number. A window that has ended starts over, so a stale row never
    /// needs a cleanup first. No arithmetic on parameters: PostgreSQL infers
    /// each one's type from the column it meets.
    pub fn count_attempt(
        client: &str,
        now: u64,
        window_seconds: u64,
        marker: char,
    ) -> (String, [SqlParam<'_>; 3]) {
        let m = marker;
        let sql = format!(
            "INSERT INTO login_failures AS f (client, failures, window_end) \
             VALUES ({m}1, 1, {m}3) \
             ON CONFLICT (client) DO UPDATE SET \
             failures = CASE WHEN f.window_end > {m}2 THEN f.failures + 1 ELSE 1 END, \
             window_end = CASE WHEN f.window_end > {m}2 THEN f.window_end ELSE {m}3 END \
             RETURNING failures, window_end"
        );
        let params = [
            SqlParam::Text(client),
            SqlParam::Int64(sql_seconds(now)),
            SqlParam::Int64(sql_seconds(now.saturating_add(window_seconds))),
        ];
        (sql, params)
    }

    /// Forgets `client`'s count. (`RETURNING` so that PostgreSQL can run it
    /// through `query` like every other statement.)
    pub fn clear(client: &str, marker: char) -> (String, [SqlParam<'_>; 1]) {
        let sql = format!("DELETE FROM login_failures WHERE client = {marker}1 RETURNING client");
        (sql, [SqlParam::Text(client)])
    }

    /// Deletes up to `limit` windows that ended at or before `now`, found
    /// through the `window_end` index (no scan of the table).
    pub fn prune(now: u64, limit: u32, marker: char) -> (String, [SqlParam<'static>; 2]) {
        let m = marker;
        let sql = format!(
            "DELETE FROM login_failures WHERE client IN \
             (SELECT client FROM login_failures WHERE window_end <= {m}1 \
             ORDER BY window_end LIMIT {m}2) RETURNING client"
        );
        (
            sql,
            [
                SqlParam::Int64(sql_seconds(now)),
                SqlParam::Int64(limit.into()),
            ],
        )
    }
}

/// A value bound to a placeholder of the SQL the stores share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlParam<'a> {
    Text(&'a str),
    Int32(i32),
    Int64(i64),
}

/// The columns every book query returns, in `Book` field order.
pub const BOOK_COLUMNS: &str = "id, title, author, year";

/// The `INSERT` of a new book, returning its id, with numbered placeholders
/// (`?1` for SQLite, `$1` for PostgreSQL).
pub fn insert_statement(book: &NewBook, marker: char) -> (String, [SqlParam<'_>; 3]) {
    let sql = format!(
        "INSERT INTO books (title, author, year) VALUES ({marker}1, {marker}2, {marker}3) RETURNING id"
    );
    let params = [
        SqlParam::Text(&book.title),
        SqlParam::Text(&book.author),
        SqlParam::Int32(book.year),
    ];
    (sql, params)
}

/// An `UPDATE ... RETURNING` of only the fields `changes` holds, with
/// numbered placeholders (`?1` for SQLite, `$1` for PostgreSQL) and the id
/// last. Only present fields are bound: no NULL parameter whose type a
/// driver would have to guess.
pub fn update_statement(changes: &BookChanges, marker: char) -> (String, Vec<SqlParam<'_>>) {
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
            assignments.push(format!("{column} = {marker}{}", params.len()));
        }
    }
    let sql = format!(
        "UPDATE books SET {} WHERE id = {marker}{} RETURNING {BOOK_COLUMNS}",
        assignments.join(", "),
        params.len() + 1
    );
    (sql, params)
}

/// The store `DB_URL` names (decisions.md, "Configuration").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreTarget {
    /// A Spin SQLite database, by label.
    Sqlite(String),
    /// A PostgreSQL connection URL, passed to `spin:postgres` as is.
    Postgres(String),
}

pub const DEFAULT_SQLITE_LABEL: &str = "default";

/// A `DB_URL` that names no store we support. It keeps only the URL's
/// scheme, never the rest: a value that is not a URL we know may hold a
/// password in any form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedDbUrl {
    scheme: Option<String>,
}

impl UnsupportedDbUrl {
    fn of(db_url: &str) -> UnsupportedDbUrl {
        let scheme = db_url
            .split_once(':')
            .map(|(scheme, _)| scheme)
            .filter(|scheme| {
                !scheme.is_empty()
                    && scheme.len() <= 16
                    && scheme
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            })
            .map(str::to_string);
        UnsupportedDbUrl { scheme }
    }
}

impl fmt::Display for UnsupportedDbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scheme {
            Some(scheme) => write!(f, "DB_URL (a {scheme}: address) is not supported")?,
            None => f.write_str("DB_URL is not supported")?,
        }
        f.write_str(": use sqlite:, sqlite://LABEL, postgres://... or postgresql://...")
    }
}

/// The kinds of store, each a Cargo feature of the component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

impl StoreKind {
    /// Whether this build of the component contains the store.
    pub fn is_built(self) -> bool {
        match self {
            StoreKind::Sqlite => cfg!(feature = "sqlite"),
            StoreKind::Postgres => cfg!(feature = "postgres"),
        }
    }

    /// For an operator whose `DB_URL` names a store this build lacks: which
    /// build serves it (`make variants` names the files).
    pub fn missing_build_message(self) -> &'static str {
        match self {
            StoreKind::Sqlite => {
                "DB_URL names a SQLite database, but this build of the component has no SQLite \
                 store (it was built with --no-default-features --features postgres): serve the \
                 default build (book-catalog.wasm) or the SQLite-only build \
                 (book-catalog-sqlite.wasm), or set DB_URL to a postgres:// URL"
            }
            StoreKind::Postgres => {
                "DB_URL names a PostgreSQL database, but this build of the component has no \
                 PostgreSQL store (it was built with --no-default-features --features sqlite): \
                 serve the default build (book-catalog.wasm) or the PostgreSQL-only build \
                 (book-catalog-postgres.wasm)"
            }
        }
    }
}

impl StoreTarget {
    pub fn kind(&self) -> StoreKind {
        match self {
            StoreTarget::Sqlite(_) => StoreKind::Sqlite,
            StoreTarget::Postgres(_) => StoreKind::Postgres,
        }
    }

    pub fn from_db_url(db_url: Option<&str>) -> Result<StoreTarget, UnsupportedDbUrl> {
        let db_url = db_url.unwrap_or("").trim();
        if db_url.is_empty() || db_url == "sqlite:" {
            return Ok(StoreTarget::Sqlite(DEFAULT_SQLITE_LABEL.to_string()));
        }
        if let Some(label) = db_url.strip_prefix("sqlite://") {
            let valid = !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if valid {
                return Ok(StoreTarget::Sqlite(label.to_string()));
            }
        }
        if db_url.starts_with("postgres://") || db_url.starts_with("postgresql://") {
            return Ok(StoreTarget::Postgres(db_url.to_string()));
        }
        Err(UnsupportedDbUrl::of(db_url))
    }

    /// How the store is named in logs: never with a password.
    pub fn describe(&self) -> String {
        match self {
            StoreTarget::Sqlite(label) => format!("SQLite database {label:?}"),
            StoreTarget::Postgres(url) => format!("PostgreSQL {}", redact_password(url)),
        }
    }
}

/// Replaces the password of a `scheme://user:password@host...` URL and any
/// `password=` parameter with `***`. The user info ends at the last `@`, not
/// at the first `/`, `?` or `#`, because an unencoded password may hold
/// those: this masks too much rather than too little.
pub fn redact_password(url: &str) -> String {
    let mut redacted = url.to_string();
    if let Some(scheme_end) = redacted.find("://") {
        let rest = scheme_end + 3;
        if let Some(at) = redacted[rest..].rfind('@').map(|i| rest + i) {
            if let Some(colon) = redacted[rest..at].find(':').map(|i| rest + i) {
                redacted.replace_range(colon + 1..at, "***");
            }
        }
    }
    let lower = redacted.to_ascii_lowercase();
    if let Some(at) = lower.find("password=") {
        let start = at + "password=".len();
        let end = redacted[start..]
            .find(['&', ' '])
            .map_or(redacted.len(), |i| start + i);
        redacted.replace_range(start..end, "***");
    }
    redacted
}

/// Books in memory, with the same id rules as the real stores, and the
/// failed-login counts with the same window rules.
#[derive(Debug, Default)]
pub struct MemoryStore {
    books: BTreeMap<BookId, Book>,
    last_id: i64,
    login_failures: HashMap<String, LoginFailures>,
}

impl MemoryStore {
    /// How many failed-login rows are kept (ended windows included).
    pub fn login_failure_rows(&self) -> usize {
        self.login_failures.len()
    }
}

impl BookStore for MemoryStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        Ok(self.books.values().cloned().collect())
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        let after = query.after.map_or(Bound::Unbounded, Bound::Excluded);
        let books = self.books.range((after, Bound::Unbounded));
        Ok(query.select(books.map(|(_, book)| book.clone())))
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        Ok(self.books.get(&id).cloned())
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let id = self
            .last_id
            .checked_add(1)
            .and_then(BookId::new)
            .ok_or_else(|| anyhow::anyhow!("book ids exhausted"))?;
        self.last_id = id.get();
        let book = book.with_id(id.get());
        self.books.insert(id, book.clone());
        Ok(book)
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        Ok(self.books.get_mut(&id).map(|book| {
            changes.clone().apply_to(book);
            book.clone()
        }))
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(self.books.remove(&id).is_some())
    }

    fn ping(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    fn login_failures(&mut self, client: &str) -> anyhow::Result<Option<LoginFailures>> {
        Ok(self.login_failures.get(client).copied())
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginFailures> {
        let fresh = LoginFailures {
            count: 1,
            window_end: now.saturating_add(window_seconds),
        };
        let entry = self
            .login_failures
            .entry(client.to_string())
            .and_modify(|failures| {
                if failures.window_end > now {
                    failures.count += 1;
                } else {
                    *failures = fresh;
                }
            })
            .or_insert(fresh);
        Ok(*entry)
    }

    fn clear_login_failures(&mut self, client: &str) -> anyhow::Result<()> {
        self.login_failures.remove(client);
        Ok(())
    }

    fn prune_login_failures(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        let mut ended: Vec<(u64, String)> = self
            .login_failures
            .iter()
            .filter(|(_, failures)| failures.window_end <= now)
            .map(|(client, failures)| (failures.window_end, client.clone()))
            .collect();
        ended.sort_unstable();
        for (_, client) in ended.into_iter().take(limit as usize) {
            self.login_failures.remove(&client);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<StoreTarget, UnsupportedDbUrl> {
        StoreTarget::from_db_url(Some(url))
    }

    #[test]
    fn empty_or_sqlite_means_the_default_database() {
        let default = Ok(StoreTarget::Sqlite("default".into()));
        assert_eq!(StoreTarget::from_db_url(None), default);
        assert_eq!(target(""), default);
        assert_eq!(target("sqlite:"), default);
        assert_eq!(target("sqlite://default"), default);
    }

    #[test]
    fn sqlite_labels_and_postgres_urls() {
        assert_eq!(
            target("sqlite://books_2"),
            Ok(StoreTarget::Sqlite("books_2".into()))
        );
        let pg = "postgres://u:p@127.0.0.1:5432/books";
        assert_eq!(target(pg), Ok(StoreTarget::Postgres(pg.into())));
        let pg = "postgresql://127.0.0.1/books?sslmode=disable";
        assert_eq!(target(pg), Ok(StoreTarget::Postgres(pg.into())));
    }

    #[test]
    fn anything_else_is_refused_without_echoing_a_password() {
        for bad in [
            "mysql://u:hunter2@h/db",
            "sqlite://",
            "sqlite://a/b",
            "file.db",
            "redis://x",
            "hunter2",
            "host=db password=hunter2",
            "postgress://u:hunter2@h/db",
            "postgres:u:hunter2@h",
        ] {
            let error = target(bad).unwrap_err().to_string();
            assert!(error.starts_with("DB_URL"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        assert_eq!(
            target("mysql://u:hunter2@h/db").unwrap_err().to_string(),
            "DB_URL (a mysql: address) is not supported: use sqlite:, sqlite://LABEL, \
             postgres://... or postgresql://..."
        );
        assert_eq!(
            target("hunter2").unwrap_err().to_string(),
            "DB_URL is not supported: use sqlite:, sqlite://LABEL, postgres://... or \
             postgresql://..."
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_password("postgres://user:s3cret@db:5432/books"),
            "postgres://user:***@db:5432/books"
        );
        assert_eq!(
            redact_password("postgres://user@db/books"),
            "postgres://user@db/books"
        );
        assert_eq!(
            redact_password("postgres://db/books?user=u&password=s3cret&sslmode=require"),
            "postgres://db/books?user=u&password=***&sslmode=require"
        );
        assert_eq!(
            redact_password("postgres://u:p@ss@db/x"),
            "postgres://u:***@db/x"
        );
        for password in ["hunter/2", "hunter#2", "hunter?2", "p@ss/hunter2"] {
            let redacted = redact_password(&format!("postgres://u:{password}@db:5432/x"));
            assert_eq!(redacted, "postgres://u:***@db:5432/x");
        }
        let described = StoreTarget::Postgres("postgres://a:b@h/d".into()).describe();
        assert_eq!(described, "PostgreSQL postgres://a:***@h/d");
    }

    #[test]
    fn a_store_missing_from_the_build_names_the_build_that_has_it() {
        let sqlite = target("sqlite://default").unwrap().kind();
        let postgres = target("postgres://h/d").unwrap().kind();
        assert_eq!((sqlite, postgres), (StoreKind::Sqlite, StoreKind::Postgres));
        assert!(postgres
            .missing_build_message()
            .contains("book-catalog-postgres.wasm"));
        assert!(sqlite
            .missing_build_message()
            .contains("book-catalog-sqlite.wasm"));
        // The native test build has the default features: both stores.
        assert!(sqlite.is_built() && postgres.is_built());
    }

    #[test]
    fn insert_statement_binds_the_three_fields() {
        let book = NewBook {
            title: "T".into(),
            author: "A".into(),
            year: 7,
        };
        let (sql, params) = insert_statement(&book, '?');
        assert_eq!(
            sql,
            "INSERT INTO books (title, author, year) VALUES (?1, ?2, ?3) RETURNING id"
        );
        assert_eq!(
            params,
            [SqlParam::Text("T"), SqlParam::Text("A"), SqlParam::Int32(7)]
        );
    }

    #[test]
    fn update_statement_binds_only_present_fields() {
        let changes = BookChanges {
            title: Some("T".into()),
            author: None,
            year: Some(1999),
        };
        let (sql, params) = update_statement(&changes, '$');
        assert_eq!(
            sql,
            "UPDATE books SET title = $1, year = $2 WHERE id = $3 RETURNING id, title, author, year"
        );
        assert_eq!(params, [SqlParam::Text("T"), SqlParam::Int32(1999)]);
        let changes = BookChanges {
            title: None,
            author: Some("A".into()),
            year: None,
        };
        let (sql, params) = update_statement(&changes, '?');
        assert_eq!(
            sql,
            "UPDATE books SET author = ?1 WHERE id = ?2 RETURNING id, title, author, year"
        );
        assert_eq!(params, [SqlParam::Text("A")]);
    }

    #[test]
    fn memory_store_never_reuses_ids() {
        let mut store = MemoryStore::default();
        let book = NewBook {
            title: "t".into(),
            author: "a".into(),
            year: 1,
        };
        let first = store.create(&book).unwrap();
        assert!(store.delete(BookId::new(first.id).unwrap()).unwrap());
        let second = store.create(&book).unwrap();
        assert_eq!((first.id, second.id), (1, 2));
        assert!(!store.delete(BookId::new(first.id).unwrap()).unwrap());
    }
}
