//! What every store shares, knowing no resource: the `Connection` a
//! statement runs on (Spin's SQLite and PostgreSQL in `spin/`, rusqlite in
//! `native`), statements with bound values written once for both dialects
//! (`Sql`), the columns of their rows, and running them (`Sql::run`,
//! `in_transaction`) with the schema migrated on first need (`migrations`).

pub mod migrations;
#[cfg(feature = "rusqlite")]
pub mod native;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};

use crate::error::StoreBusy;

/// A database connection. Connecting may be deferred to the first statement.
/// Its futures are awaited one at a time by one request (a connection is
/// never shared by requests running at once).
#[allow(async_fn_in_trait)]
pub trait Connection {
    /// Which database it is, and so the dialect of its statements.
    fn kind(&self) -> StoreKind;
    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError>;
    /// Without parameters or rows read: schema changes, PRAGMAs and
    /// transaction control.
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError>;
    /// Called before each SQLite write: a connection runs `write_pragmas`
    /// before its first.
    async fn prepare_write(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Waits while another writer holds SQLite's lock, holding no thread.
    async fn pause(&mut self, duration: Duration);
}

/// The kinds of store, each a Cargo feature and its own SQL dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

impl StoreKind {
    /// In log lines.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }

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

/// Why a statement failed, as far as the core tells failures apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// SQLite's lock is held elsewhere (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    Locked,
    /// A table, column or function this build's schema has is missing.
    SchemaBehind,
    /// PostgreSQL's unique violation (SQLSTATE 23505).
    UniqueViolation,
    Other,
}

/// A failed statement: its kind and the store's own words, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    pub failure: Failure,
    pub detail: String,
}

impl StoreError {
    pub fn new(failure: Failure, detail: impl Into<String>) -> StoreError {
        StoreError { failure, detail: detail.into() }
    }

    pub fn other(detail: impl Into<String>) -> StoreError {
        StoreError::new(Failure::Other, detail)
    }

    /// A SQLite error as Spin reports it: text only, in SQLite's own words.
    pub fn sqlite(detail: impl Into<String>) -> StoreError {
        let detail = detail.into();
        let failure = if detail.contains("database is locked") || detail.contains("table is locked")
        {
            Failure::Locked
        } else if detail.contains("no such table") || detail.contains("no such column") {
            Failure::SchemaBehind
        } else {
            Failure::Other
        };
        StoreError::new(failure, detail)
    }

    /// A PostgreSQL error by its SQLSTATE (`SQLSTATES_TOLD_APART`).
    pub fn postgres(sqlstate: Option<&str>, detail: impl Into<String>) -> StoreError {
        let failure = match sqlstate {
            Some("42P01" | "42703" | "42883") => Failure::SchemaBehind,
            Some("23505") => Failure::UniqueViolation,
            _ => Failure::Other,
        };
        StoreError::new(failure, detail)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for StoreError {}

/// The SQLSTATEs the core tells apart: undefined table, column and function
/// (the schema is behind), unique violation.
pub const SQLSTATES_TOLD_APART: [&str; 4] = ["42P01", "42703", "42883", "23505"];

/// Whether `error` (with any context) is a statement that failed so.
pub fn failed_with(error: &anyhow::Error, failure: Failure) -> bool {
    let failed = |cause: &(dyn std::error::Error + 'static)| {
        cause.downcast_ref::<StoreError>().is_some_and(|error| error.failure == failure)
    };
    error.chain().any(failed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlParam<'a> {
    Text(&'a str),
    Int32(i32),
    Int64(i64),
}

impl SqlParam<'_> {
    /// Its PostgreSQL type, for a cast where nothing else tells the type.
    fn postgres_type(self) -> &'static str {
        match self {
            SqlParam::Text(_) => "text",
            SqlParam::Int32(_) => "integer",
            SqlParam::Int64(_) => "bigint",
        }
    }
}

/// A statement in the store's dialect and the values of its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub sql: String,
    pub params: Vec<SqlParam<'a>>,
    /// It writes: on SQLite it needs the write lock.
    pub writes: bool,
    /// Written to return a row whatever the data, so a connection need not
    /// make sure it does (PostgreSQL's zero-row hang: `spin/mod.rs`, `always_a_row`).
    pub always_a_row: bool,
}

/// A statement being written: text with `{n}` for the `n`-th bound value
/// (`bind`), turned into the store's placeholders (`?n` or `$n`) and run by
/// `run`. The one way the resources write and run a statement.
#[derive(Debug, Default)]
pub struct Sql<'a> {
    text: String,
    params: Vec<SqlParam<'a>>,
    writes: bool,
    always_a_row: bool,
}

impl<'a> Sql<'a> {
    /// A statement that only reads.
    pub fn read() -> Sql<'a> {
        Sql::default()
    }

    /// A statement that writes (on SQLite, it waits for the write lock).
    pub fn write() -> Sql<'a> {
        Sql { writes: true, ..Sql::default() }
    }

    /// It returns a row whatever the data (PostgreSQL: see `Statement`).
    pub fn always_a_row(mut self) -> Sql<'a> {
        self.always_a_row = true;
        self
    }

    /// Binds `value`, returning the placeholder to write where it goes.
    pub fn bind(&mut self, value: SqlParam<'a>) -> String {
        self.params.push(value);
        format!("{{{}}}", self.params.len())
    }

    /// `bind` with PostgreSQL's cast to the value's type, where a placeholder
    /// stands alone in a `SELECT` list (which gives it no type).
    pub fn bind_typed(&mut self, kind: StoreKind, value: SqlParam<'a>) -> String {
        let placeholder = self.bind(value);
        match kind {
            StoreKind::Sqlite => placeholder,
            StoreKind::Postgres => format!("{placeholder}::{}", value.postgres_type()),
        }
    }

    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    pub fn build(self, kind: StoreKind) -> Statement<'a> {
        // One pass: an import's statement binds 1,500 values.
        let mut sql = String::with_capacity(self.text.len());
        let mut rest = self.text.as_str();
        while let Some(open) = rest.find('{') {
            sql.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let n = after[..digits].parse().ok().filter(|n| (1..=self.params.len()).contains(n));
            match n {
                Some(_) if after[digits..].starts_with('}') => {
                    sql.push(if kind == StoreKind::Sqlite { '?' } else { '$' });
                    sql.push_str(&after[..digits]);
                    rest = &after[digits + 1..];
                }
                _ => {
                    sql.push('{');
                    rest = after;
                }
            }
        }
        sql.push_str(rest);
        Statement { sql, params: self.params, writes: self.writes, always_a_row: self.always_a_row }
    }

    /// Runs the statement on `db`: its rows. A missing table or column means
    /// the database is behind this build's schema: it is migrated and the
    /// statement runs again. Under Spin there is no start-up, so this is where
    /// a database is first migrated; the usual path costs no schema check.
    pub async fn run(self, db: &mut impl Connection) -> anyhow::Result<Vec<Row>> {
        let statement = self.build(db.kind());
        match run_once(db, &statement).await {
            Err(error) if failed_with(&error, Failure::SchemaBehind) => {
                migrations::migrate(db).await.context("migrating the database")?;
                run_once(db, &statement).await
            }
            result => result,
        }
    }
}

/// A column of a result row, as each connection hands it over (SQLite
/// INTEGER and PostgreSQL INTEGER/BIGINT are all `Integer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    Integer(i64),
    Text(String),
    Null,
    /// Any other type: never in a row our statements return.
    Other,
}

pub type Row = Vec<Column>;

/// Seconds as stored: SQLite INTEGER and PostgreSQL BIGINT are signed.
pub fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// On SQLite a write that finds the write lock taken is tried again until it
/// gets it (`wait_for_the_lock`): an autocommit statement that could not take
/// the lock changed nothing, so repeating it never writes twice. Reads and
/// PostgreSQL go straight through.
async fn run_once(db: &mut impl Connection, statement: &Statement<'_>) -> anyhow::Result<Vec<Row>> {
    if db.kind() == StoreKind::Sqlite && statement.writes {
        return wait_for_the_lock(db, async |db| db.query(statement).await).await;
    }
    Ok(db.query(statement).await?)
}

/// How durable a SQLite commit is before its answer (`sqlite_synchronous`,
/// docs/operations.md): in WAL mode `Normal` syncs at checkpoints, so a
/// process crash loses nothing and an OS crash or power cut may lose the
/// last commits; `Full` syncs every commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    #[default]
    Normal,
    Full,
}

/// What a SQLite connection runs before its first write: each lasts as long
/// as the connection, and Spin sets neither (it leaves `synchronous` FULL).
pub fn write_pragmas(synchronous: Synchronous) -> [String; 2] {
    let level = match synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    [format!("PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}"), format!("PRAGMA synchronous = {level}")]
}

/// How long one SQLite write waits for the lock inside the host, in ms
/// (`PRAGMA busy_timeout`, `write_pragmas`); after it, the waiting is ours
/// (`wait_for_the_lock`), so a writer that has waited longer tries more often
/// than a newcomer. Why 25: docs/performance.md.
pub const BUSY_TIMEOUT_MS: u64 = 25;

/// How long a write waits for SQLite's write lock in all before it gives up
/// (503 with `Retry-After`, nothing written): rusqlite's default busy timeout.
pub const WRITE_LOCK_DEADLINE_MS: u64 = 5_000;

/// Tries `attempt` (an autocommit write, or `BEGIN IMMEDIATE`) until it is
/// not refused for a lock held elsewhere, pausing 0.5 to 1.5 ms between
/// tries (jittered, so writers that collided do not collide again), for at
/// most `WRITE_LOCK_DEADLINE_MS` counting each try's busy timeout; then
/// `StoreBusy`.
pub(crate) async fn wait_for_the_lock<C: Connection, T>(
    db: &mut C,
    mut attempt: impl AsyncFnMut(&mut C) -> Result<T, StoreError>,
) -> anyhow::Result<T> {
    let mut waited_us = 0;
    let mut jitter = Jitter::new();
    loop {
        // Its PRAGMAs too: `synchronous` reads the schema, which another
        // writer's lock can hold up as it can the write.
        let tried = match db.prepare_write().await {
            Ok(()) => attempt(db).await,
            Err(error) => Err(error),
        };
        match tried {
            Err(error) if error.failure == Failure::Locked => {
                waited_us += BUSY_TIMEOUT_MS * 1_000;
                if waited_us >= WRITE_LOCK_DEADLINE_MS * 1_000 {
                    let waited_ms = waited_us / 1_000;
                    return Err(anyhow::Error::new(StoreBusy { waited_ms }).context(error));
                }
                let pause = 500 + jitter.next() % 1_000;
                db.pause(Duration::from_micros(pause)).await;
                waited_us += pause;
            }
            result => return Ok(result?),
        }
    }
}

/// A small xorshift generator for pauses, stirred with the clock at each
/// draw: no host randomness needed, and writers that failed at different
/// moments drift apart even when the clock is coarse.
struct Jitter(u64);

fn clock_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos() as u64)
}

impl Jitter {
    fn new() -> Jitter {
        Jitter(clock_nanos() | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 = (self.0 ^ clock_nanos()).max(1);
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Transaction control: SQLite's `BEGIN` takes the write lock at once.
pub const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";
pub const BEGIN: &str = "BEGIN";
pub const COMMIT: &str = "COMMIT";
pub const ROLLBACK: &str = "ROLLBACK";

/// Runs `work` in one transaction (SQLite's takes the write lock first,
/// waiting for it as a write does), committed if it succeeds and rolled back
/// if not: never left open on a connection, which may be kept for another
/// request. A `COMMIT` that finds a lock taken waits for it too (SQLite
/// keeps the transaction for another try).
pub(crate) async fn transaction<C: Connection, T>(
    db: &mut C,
    work: impl AsyncFnOnce(&mut C) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    match db.kind() {
        StoreKind::Sqlite => {
            wait_for_the_lock(db, async |db| db.execute(BEGIN_WRITE).await).await?
        }
        StoreKind::Postgres => db.execute(BEGIN).await?,
    }
    let failed = match work(db).await {
        Ok(value) => match wait_for_the_lock(db, async |db| db.execute(COMMIT).await).await {
            Ok(()) => return Ok(value),
            Err(error) => error,
        },
        Err(error) => error,
    };
    let _ = db.execute(ROLLBACK).await;
    Err(failed)
}

/// Runs `work` in one SQLite transaction (`transaction`). A database behind
/// this build's schema is migrated, and `work` runs again.
pub async fn in_transaction<C: Connection, T>(
    db: &mut C,
    mut work: impl AsyncFnMut(&mut C) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    match transaction(db, async |db| work(db).await).await {
        Err(error) if failed_with(&error, Failure::SchemaBehind) => {
            migrations::migrate(db).await.context("migrating the database")?;
            transaction(db, async |db| work(db).await).await
        }
        result => result,
    }
}

/// `GET /health`: connects (or takes a pooled connection) and runs the most
/// trivial query.
pub async fn ping(db: &mut impl Connection) -> anyhow::Result<()> {
    let mut sql = Sql::read();
    sql.push("SELECT 1 AS ok");
    match sql.run(db).await?.as_slice() {
        [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
        other => bail!("SELECT 1 returned {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use crate::Response;

    /// A SQLite connection whose writes find the lock taken `locked` times,
    /// and whose PRAGMAs find it taken `pragmas_locked` times first.
    struct Contended {
        kind: StoreKind,
        locked: usize,
        pragmas_locked: usize,
        commits_locked: usize,
        tries: Vec<String>,
        prepared: usize,
        paused: Vec<Duration>,
    }

    impl Contended {
        fn new(kind: StoreKind, locked: usize) -> Contended {
            let tries = Vec::new();
            let paused = Vec::new();
            Contended {
                kind,
                locked,
                pragmas_locked: 0,
                commits_locked: 0,
                tries,
                prepared: 0,
                paused,
            }
        }
    }

    impl Connection for Contended {
        fn kind(&self) -> StoreKind {
            self.kind
        }
        async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
            self.execute(&statement.sql).await.map(|()| vec![vec![Column::Integer(1)]])
        }
        async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
            self.tries.push(sql.to_string());
            let locked = match sql {
                COMMIT => &mut self.commits_locked,
                _ if sql.starts_with("SELECT") => return Ok(()),
                _ => &mut self.locked,
            };
            if *locked > 0 {
                *locked -= 1;
                return Err(StoreError::sqlite("SQLite database \"default\": database is locked"));
            }
            Ok(())
        }
        async fn prepare_write(&mut self) -> Result<(), StoreError> {
            self.prepared += 1;
            if self.pragmas_locked > 0 {
                self.pragmas_locked -= 1;
                return Err(StoreError::sqlite("database is locked"));
            }
            Ok(())
        }
        async fn pause(&mut self, duration: Duration) {
            self.paused.push(duration);
        }
    }

    fn insert() -> Sql<'static> {
        let mut sql = Sql::write();
        sql.push("INSERT INTO books (title) VALUES (");
        let title = sql.bind(SqlParam::Text("T"));
        sql.push(&title);
        sql.push(")");
        sql
    }

    fn wait<F: std::future::Future>(future: F) -> F::Output {
        crate::block_on(future)
    }

    #[test]
    fn a_sqlite_write_waits_for_the_lock_in_short_jittered_pauses_and_runs_once() {
        let mut db = Contended::new(StoreKind::Sqlite, 3);
        db.pragmas_locked = 2;
        assert_eq!(wait(insert().run(&mut db)).unwrap(), [[Column::Integer(1)]]);
        assert_eq!(db.tries.len(), 4, "three refusals, then the one write");
        assert_eq!((db.prepared, db.paused.len()), (6, 5), "the PRAGMAs waited too");
        for pause in &db.paused {
            assert!((500..1_500).contains(&pause.as_micros()), "{pause:?}");
        }
        // BEGIN IMMEDIATE and COMMIT wait the same way; the work runs once.
        let mut db = Contended::new(StoreKind::Sqlite, 2);
        db.commits_locked = 1;
        let update = async |db: &mut Contended| Ok(db.execute("UPDATE books SET year = 1").await?);
        wait(in_transaction(&mut db, update)).unwrap();
        let begin = ["BEGIN IMMEDIATE"; 3];
        let rest = ["UPDATE books SET year = 1", "COMMIT", "COMMIT"];
        assert_eq!(db.tries, [&begin[..], &rest].concat());
    }

    #[test]
    fn a_transaction_that_cannot_commit_is_rolled_back_never_left_open() {
        let mut db = Contended::new(StoreKind::Sqlite, 0);
        db.commits_locked = usize::MAX;
        let work = async |db: &mut Contended| Ok(db.execute("UPDATE books SET year = 1").await?);
        let error = wait(transaction(&mut db, work)).unwrap_err();
        assert!(format!("{error:#}").contains("database is locked"), "{error:#}");
        assert_eq!(db.tries.last().map(String::as_str), Some(ROLLBACK));
        let mut db = Contended::new(StoreKind::Sqlite, 0);
        let fails = async |_: &mut Contended| -> anyhow::Result<()> { anyhow::bail!("no") };
        assert!(wait(transaction(&mut db, fails)).is_err());
        assert_eq!(db.tries, [BEGIN_WRITE, ROLLBACK]);
    }

    #[test]
    fn reads_and_postgresql_are_never_retried() {
        let mut db = Contended::new(StoreKind::Sqlite, 1);
        let mut read = Sql::read();
        read.push("SELECT 1");
        assert!(wait(read.run(&mut db)).is_ok());
        assert_eq!((db.prepared, db.paused.len()), (0, 0));
        let mut db = Contended::new(StoreKind::Postgres, 1);
        assert!(wait(insert().run(&mut db)).is_err());
        assert_eq!((db.tries.len(), db.prepared, db.paused.len()), (1, 0, 0));
    }

    #[test]
    fn a_write_that_never_gets_the_lock_is_a_503_with_retry_after_past_the_deadline() {
        let mut db = Contended::new(StoreKind::Sqlite, usize::MAX);
        let error = wait(insert().run(&mut db)).unwrap_err();
        let waited: Duration = db.paused.iter().sum::<Duration>()
            + Duration::from_millis(BUSY_TIMEOUT_MS) * db.tries.len() as u32;
        assert!(waited >= Duration::from_millis(WRITE_LOCK_DEADLINE_MS), "{waited:?}");
        // At most one try's busy timeout and one pause past the deadline.
        let most = Duration::from_millis(WRITE_LOCK_DEADLINE_MS + BUSY_TIMEOUT_MS + 2);
        assert!(waited < most, "{waited:?}");
        let api = ApiError::from(error);
        assert!(
            matches!(&api, ApiError::StoreBusy(detail) if detail.contains("database is locked"))
        );
        let response = Response::error(&api);
        assert_eq!(response.status, 503);
        assert_eq!(response.header("retry-after"), Some("1"));
        assert!(String::from_utf8_lossy(response.bytes()).contains("Service unavailable"));
    }

    #[test]
    fn statements_bind_in_each_dialect_and_ten_placeholders_are_not_confused() {
        let texts: Vec<String> = (1..=11).map(|n| n.to_string()).collect();
        let mut sql = Sql::default();
        let placeholders: Vec<String> = texts.iter().map(|t| sql.bind(SqlParam::Text(t))).collect();
        sql.push(&placeholders.join(","));
        sql.push(",{12},{x},{");
        assert_eq!(
            sql.build(StoreKind::Postgres).sql,
            "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,{12},{x},{"
        );
        let mut sql = Sql::default();
        let typed = [SqlParam::Text("a"), SqlParam::Int32(1), SqlParam::Int64(2)]
            .map(|param| sql.bind_typed(StoreKind::Postgres, param));
        assert_eq!(typed, ["{1}::text", "{2}::integer", "{3}::bigint"]);
        assert_eq!(Sql::default().bind_typed(StoreKind::Sqlite, SqlParam::Int32(1)), "{1}");
    }

    #[test]
    fn failures_are_told_apart_by_what_each_store_says() {
        let sqlite = |text| StoreError::sqlite(text).failure;
        assert_eq!(sqlite("database is locked"), Failure::Locked);
        assert_eq!(sqlite("database table is locked"), Failure::Locked);
        assert_eq!(sqlite("no such table: books"), Failure::SchemaBehind);
        assert_eq!(sqlite("no such column: version"), Failure::SchemaBehind);
        assert_eq!(sqlite("disk I/O error"), Failure::Other);
        let postgres = |code| StoreError::postgres(Some(code), "").failure;
        assert_eq!(postgres("42P01"), Failure::SchemaBehind);
        assert_eq!(postgres("42883"), Failure::SchemaBehind);
        assert_eq!(postgres("23505"), Failure::UniqueViolation);
        assert_eq!(postgres("57014"), Failure::Other);
        let wrapped = anyhow::Error::new(StoreError::sqlite("no such table: x")).context("while");
        assert!(failed_with(&wrapped, Failure::SchemaBehind));
    }
}
