//! What every store shares, knowing no resource: the `Connection` a
//! statement runs on (Spin's SQLite and PostgreSQL in `spin/`, rusqlite in
//! `native`), statements with bound values written once for both dialects,
//! the columns of their rows, and running them with the schema migrated on
//! first need (`migrations`).

pub mod migrations;
#[cfg(feature = "rusqlite")]
pub mod native;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};

use crate::error::StoreBusy;
use crate::settings::StoreKind;

/// A database connection. Connecting may be deferred to the first statement.
pub trait Connection {
    /// Which database it is, and so the dialect of its statements.
    fn kind(&self) -> StoreKind;
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>>;
    /// Without parameters or rows read: schema changes and transaction control.
    fn execute(&mut self, sql: &str) -> anyhow::Result<()>;
    /// Called before each SQLite write: Spin's connection runs
    /// `write_pragmas` before its first.
    fn prepare_write(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Waits while another writer holds SQLite's lock. Under Spin a
    /// component's sleep is a host timer: it holds no thread.
    fn pause(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// A borrowed connection is one too (a pooled connection lent to a request).
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
    fn prepare_write(&mut self) -> anyhow::Result<()> {
        (**self).prepare_write()
    }
    fn pause(&mut self, duration: Duration) {
        (**self).pause(duration)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlParam<'a> {
    Text(&'a str),
    Int32(i32),
    Int64(i64),
}

/// A statement in the store's dialect and the values of its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub sql: String,
    pub params: Vec<SqlParam<'a>>,
    /// Written to return a row whatever the data, so a connection need not
    /// make sure it does (PostgreSQL's zero-row hang: `spin/postgres.rs`).
    pub always_a_row: bool,
}

/// A statement being written: text with `{n}` for the `n`-th bound value,
/// turned into the store's placeholders (`?n` or `$n`) by `build`.
#[derive(Debug, Default)]
pub struct Sql<'a> {
    pub text: String,
    params: Vec<SqlParam<'a>>,
}

impl<'a> Sql<'a> {
    pub fn new(text: impl Into<String>) -> Sql<'a> {
        Sql { text: text.into(), params: Vec::new() }
    }

    /// Binds `value`, returning the placeholder to write where it goes.
    pub fn bind(&mut self, value: SqlParam<'a>) -> String {
        self.params.push(value);
        format!("{{{}}}", self.params.len())
    }

    /// `text` with `value` bound in place of its one `{}`.
    pub fn push_bound(&mut self, text: &str, value: SqlParam<'a>) {
        let placeholder = self.bind(value);
        self.text.push_str(&text.replacen("{}", &placeholder, 1));
    }

    pub fn build(self, kind: StoreKind) -> Statement<'a> {
        let mut sql = self.text;
        // From the last, so that `{1}` is never replaced inside `{10}`.
        for n in (1..=self.params.len()).rev() {
            let placeholder = match kind {
                StoreKind::Sqlite => format!("?{n}"),
                StoreKind::Postgres => format!("${n}"),
            };
            sql = sql.replace(&format!("{{{n}}}"), &placeholder);
        }
        Statement { sql, params: self.params, always_a_row: false }
    }
}

pub fn statement<'a>(kind: StoreKind, text: &str, params: Vec<SqlParam<'a>>) -> Statement<'a> {
    let mut sql = Sql::new(text);
    sql.params = params;
    sql.build(kind)
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

/// Runs a statement. A missing table or column means the database is behind
/// this build's schema: migrate it and run the statement again. Under Spin
/// there is no start-up, so this is where a database is first migrated; the
/// usual path costs no schema check at all.
pub fn rows<'a>(
    db: &mut dyn Connection,
    statement: impl Fn(StoreKind) -> Statement<'a>,
) -> anyhow::Result<Vec<Row>> {
    let statement = statement(db.kind());
    match run(db, &statement) {
        Err(error) if migrations::schema_is_behind(db.kind(), &error) => {
            migrations::migrate(db).context("migrating the database")?;
            run(db, &statement)
        }
        result => result,
    }
}

/// Runs a statement. On SQLite a write that finds the write lock taken is
/// tried again until it gets it (`wait_for_the_lock`): an autocommit
/// statement that could not take the lock changed nothing, so repeating it
/// never writes twice. Reads and PostgreSQL go straight through.
fn run(db: &mut dyn Connection, statement: &Statement) -> anyhow::Result<Vec<Row>> {
    let writes = ["INSERT", "UPDATE", "DELETE"].iter().any(|verb| statement.sql.starts_with(verb));
    if db.kind() != StoreKind::Sqlite || !writes {
        return db.query(statement);
    }
    wait_for_the_lock(db, |db| db.query(statement))
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
/// (`PRAGMA busy_timeout`, set by Spin's connection before its first write);
/// after it, the waiting is ours (`wait_for_the_lock`), so a writer that has
/// waited longer tries more often than a newcomer. Why 25: docs/performance.md.
pub const BUSY_TIMEOUT_MS: u64 = 25;

/// How long a write waits for SQLite's write lock in all before it gives up
/// (503 with `Retry-After`, nothing written): rusqlite's default busy timeout.
pub const WRITE_LOCK_DEADLINE_MS: u64 = 5_000;

/// SQLite's errors for a lock held elsewhere: `SQLITE_BUSY` (the database)
/// and `SQLITE_LOCKED` (a table), as Spin and rusqlite word them.
fn is_locked(error: &anyhow::Error) -> bool {
    let text = format!("{error:#}");
    text.contains("database is locked") || text.contains("database table is locked")
}

/// Tries `attempt` (an autocommit write, or `BEGIN IMMEDIATE`) until it is
/// not refused for a lock held elsewhere, pausing 0.5 to 1.5 ms between
/// tries (jittered, so writers that collided do not collide again), for at
/// most `WRITE_LOCK_DEADLINE_MS` counting each try's busy timeout; then
/// `StoreBusy`.
pub(crate) fn wait_for_the_lock<T>(
    db: &mut dyn Connection,
    mut attempt: impl FnMut(&mut dyn Connection) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    db.prepare_write()?;
    let mut waited_us = 0;
    let mut jitter = Jitter::new();
    loop {
        match attempt(db) {
            Err(error) if is_locked(&error) => {
                waited_us += BUSY_TIMEOUT_MS * 1_000;
                if waited_us >= WRITE_LOCK_DEADLINE_MS * 1_000 {
                    let waited_ms = waited_us / 1_000;
                    return Err(anyhow::Error::new(StoreBusy { waited_ms }).context(error));
                }
                let pause = 500 + jitter.next() % 1_000;
                db.pause(Duration::from_micros(pause));
                waited_us += pause;
            }
            result => return result,
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

/// Runs `work` in one SQLite transaction that takes the write lock first,
/// committed if it succeeds and rolled back if not. A database behind this
/// build's schema is migrated, and `work` runs again.
pub fn in_transaction<T>(
    db: &mut dyn Connection,
    work: impl Fn(&mut dyn Connection) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut migrated = false;
    loop {
        wait_for_the_lock(db, |db| db.execute("BEGIN IMMEDIATE"))?;
        match work(db) {
            Ok(value) => {
                db.execute("COMMIT")?;
                return Ok(value);
            }
            Err(error) => {
                let _ = db.execute("ROLLBACK");
                if migrated || !migrations::schema_is_behind(db.kind(), &error) {
                    return Err(error);
                }
                migrations::migrate(db).context("migrating the database")?;
                migrated = true;
            }
        }
    }
}

/// `GET /health`: connects (or takes a pooled connection) and runs the most
/// trivial query.
pub fn ping(db: &mut dyn Connection) -> anyhow::Result<()> {
    match rows(db, |kind| statement(kind, "SELECT 1 AS ok", Vec::new()))?.as_slice() {
        [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
        other => bail!("SELECT 1 returned {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use crate::Response;

    /// A SQLite connection whose writes find the lock taken `locked` times.
    struct Contended {
        kind: StoreKind,
        locked: usize,
        tries: Vec<String>,
        prepared: usize,
        paused: Vec<Duration>,
    }

    impl Contended {
        fn new(kind: StoreKind, locked: usize) -> Contended {
            Contended { kind, locked, tries: Vec::new(), prepared: 0, paused: Vec::new() }
        }
    }

    impl Connection for Contended {
        fn kind(&self) -> StoreKind {
            self.kind
        }
        fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Row>> {
            self.execute(&statement.sql).map(|()| vec![vec![Column::Integer(1)]])
        }
        fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
            self.tries.push(sql.to_string());
            if self.locked > 0 && !sql.starts_with("SELECT") && !sql.starts_with("COMMIT") {
                self.locked -= 1;
                bail!("SQLite database \"default\": Io(\"database is locked\")");
            }
            Ok(())
        }
        fn prepare_write(&mut self) -> anyhow::Result<()> {
            self.prepared += 1;
            Ok(())
        }
        fn pause(&mut self, duration: Duration) {
            self.paused.push(duration);
        }
    }

    fn insert(kind: StoreKind) -> Statement<'static> {
        statement(kind, "INSERT INTO books (title) VALUES ({1})", vec![SqlParam::Text("T")])
    }

    #[test]
    fn a_sqlite_write_waits_for_the_lock_in_short_jittered_pauses_and_runs_once() {
        let mut db = Contended::new(StoreKind::Sqlite, 3);
        assert_eq!(rows(&mut db, insert).unwrap(), [[Column::Integer(1)]]);
        assert_eq!(db.tries.len(), 4, "three refusals, then the one write");
        assert_eq!(db.prepared, 1);
        assert_eq!(db.paused.len(), 3);
        for pause in &db.paused {
            assert!((500..1_500).contains(&pause.as_micros()), "{pause:?}");
        }
        // BEGIN IMMEDIATE waits the same way; the transaction then runs once.
        let mut db = Contended::new(StoreKind::Sqlite, 2);
        in_transaction(&mut db, |db| db.execute("UPDATE books SET year = 1")).unwrap();
        let begin = ["BEGIN IMMEDIATE"; 3];
        assert_eq!(db.tries, [&begin[..], &["UPDATE books SET year = 1", "COMMIT"]].concat());
    }

    #[test]
    fn reads_and_postgresql_are_never_retried() {
        let mut db = Contended::new(StoreKind::Sqlite, 1);
        let read = |kind| statement(kind, "SELECT 1", Vec::new());
        assert!(rows(&mut db, read).is_ok());
        assert_eq!((db.prepared, db.paused.len()), (0, 0));
        let mut db = Contended::new(StoreKind::Postgres, 1);
        assert!(rows(&mut db, insert).is_err());
        assert_eq!((db.tries.len(), db.prepared, db.paused.len()), (1, 0, 0));
    }

    #[test]
    fn a_write_that_never_gets_the_lock_is_a_503_with_retry_after_past_the_deadline() {
        let mut db = Contended::new(StoreKind::Sqlite, usize::MAX);
        let error = rows(&mut db, insert).unwrap_err();
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
        assert!(String::from_utf8_lossy(&response.body).contains("Service unavailable"));
    }

    #[test]
    fn ten_or_more_placeholders_are_not_confused() {
        let texts: Vec<String> = (1..=11).map(|n| n.to_string()).collect();
        let mut sql = Sql::default();
        let placeholders: Vec<String> = texts.iter().map(|t| sql.bind(SqlParam::Text(t))).collect();
        sql.text = placeholders.join(",");
        assert_eq!(sql.build(StoreKind::Postgres).sql, "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11");
    }
}
