//! What the handlers ask of a database, written once over a `Connection`:
//! books and login attempts, each function one statement of `sql`, so that a
//! single-book request costs one round trip.
//!
//! A `Connection` (`sql`) is one of: the Spin SQLite and Spin PostgreSQL
//! databases (`spin/`, in the component), or an in-process SQLite through
//! rusqlite (`native`, for the core's tests and the native benchmark).

use anyhow::{anyhow, bail, Context as _};

use crate::login_limit::LoginAttempts;
use crate::migrations;
use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::safe_writes::{IDEMPOTENCY_KEY_SECONDS, KEYS_PRUNED_PER_CREATE};
use crate::settings::StoreKind;
use crate::sql::{self, Column, Connection, Statement};

/// Runs a statement. A missing table or column means the database is behind
/// this build's schema: migrate it and run the statement again. Under Spin
/// there is no start-up, so this is where a database is first migrated; the
/// usual path costs no schema check at all.
fn rows<'a>(
    db: &mut dyn Connection,
    statement: impl FnOnce(StoreKind) -> Statement<'a>,
) -> anyhow::Result<Vec<Vec<Column>>> {
    let statement = statement(db.kind());
    match db.query(&statement) {
        Err(error) if migrations::schema_is_behind(db.kind(), &error) => {
            migrations::migrate(db).context("migrating the database")?;
            db.query(&statement)
        }
        result => result,
    }
}

/// Every book, in ascending id order.
pub fn list(db: &mut dyn Connection) -> anyhow::Result<Vec<Book>> {
    sql::books_from_rows(rows(db, sql::list)?)
}

/// A catalog query (`GET /books` with parameters): the books matching its
/// filters with an id above `after`, in ascending id order, at most
/// `query.fetch_limit()` of them (one more than the page, so the caller
/// knows whether a next page exists).
pub fn list_page(db: &mut dyn Connection, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
    sql::books_from_rows(rows(db, |kind| sql::page(kind, query))?)
}

pub fn get(db: &mut dyn Connection, id: BookId) -> anyhow::Result<Option<Book>> {
    sql::first_book(rows(db, |kind| sql::get(kind, id))?)
}

/// Stores a book under a new id, never one used before.
pub fn create(db: &mut dyn Connection, book: &NewBook) -> anyhow::Result<Book> {
    let rows = rows(db, |kind| sql::insert(kind, book))?;
    let id = sql::id_from_row(rows.first().map_or(&[], Vec::as_slice))?;
    Ok(book.with_id(id))
}

/// Stores `changes` (maybe none) as the book's next version, if it has one
/// of `versions` (`None`: any); `None` when there is no such book, or not
/// at such a version. The check and the write are one statement.
pub fn update(
    db: &mut dyn Connection,
    id: BookId,
    changes: &BookChanges,
    versions: Option<&[i64]>,
) -> anyhow::Result<Option<Book>> {
    sql::first_book(rows(db, |kind| sql::update(kind, id, changes, versions))?)
}

/// Deletes the book if it has one of `versions` (`None`: any); `false` when
/// there was no such book, or not at such a version.
pub fn delete(
    db: &mut dyn Connection,
    id: BookId,
    versions: Option<&[i64]>,
) -> anyhow::Result<bool> {
    Ok(!rows(db, |kind| sql::delete(kind, id, versions))?.is_empty())
}

/// Stores `book` once per `key`: the book `key` already created, as it was
/// created, with `true`; or `book` stored under a new id and `key`
/// remembered with it, atomically, with `false`. Keys made more than
/// `IDEMPOTENCY_KEY_SECONDS` before `now` are forgotten, a few each time.
pub fn create_once(
    db: &mut dyn Connection,
    key: &str,
    book: &NewBook,
    now: u64,
) -> anyhow::Result<(Book, bool)> {
    let horizon = now.saturating_sub(IDEMPOTENCY_KEY_SECONDS);
    match db.kind() {
        // One statement; when a concurrent request stored the same new key
        // first, ours was undone whole, and running it again finds theirs.
        StoreKind::Postgres => {
            let statement = |_| sql::create_once(key, book, now, horizon, KEYS_PRUNED_PER_CREATE);
            let rows = match rows(db, statement) {
                Err(error) if format!("{error:#}").contains(UNIQUE_VIOLATION) => {
                    rows(db, statement)
                }
                result => result,
            }?;
            let row = rows.into_iter().next();
            sql::keyed_book_from_row(
                row.ok_or_else(|| anyhow!("the keyed create returned no row"))?,
            )
        }
        // A transaction holding the write lock from its start.
        StoreKind::Sqlite => in_transaction(db, |db| {
            let kind = db.kind();
            if let Some(row) = db.query(&sql::find_key(kind, key))?.into_iter().next() {
                return sql::keyed_book_from_row(row);
            }
            let stored = create(db, book)?;
            db.query(&sql::remember_key(kind, key, &stored, now))?;
            db.query(&sql::prune_keys(kind, horizon, KEYS_PRUNED_PER_CREATE))?;
            Ok((stored, false))
        }),
    }
}

/// PostgreSQL's SQLSTATE for a unique violation, as its error text names it.
const UNIQUE_VIOLATION: &str = "23505";

/// Runs `work` in one SQLite transaction that takes the write lock first,
/// committed if it succeeds and rolled back if not. A database behind this
/// build's schema is migrated, and `work` runs again.
fn in_transaction<T>(
    db: &mut dyn Connection,
    work: impl Fn(&mut dyn Connection) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut migrated = false;
    loop {
        db.execute("BEGIN IMMEDIATE")?;
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
    match rows(db, sql::ping)?.as_slice() {
        [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
        other => bail!("SELECT 1 returned {other:?}"),
    }
}

/// The count stored for `client`, if any (possibly of a window that has
/// already ended).
pub fn login_attempts(
    db: &mut dyn Connection,
    client: &str,
) -> anyhow::Result<Option<LoginAttempts>> {
    sql::first_attempts(&rows(db, |kind| sql::login_attempts(kind, client))?)
}

/// Counts one login attempt of `client` before its password is checked,
/// atomically: concurrent calls each get a different count, the one that
/// includes their own attempt. A window that ended at or before `now`
/// starts again: count 1, ending at `now + window_seconds`.
pub fn count_login_attempt(
    db: &mut dyn Connection,
    client: &str,
    now: u64,
    window_seconds: u64,
) -> anyhow::Result<LoginAttempts> {
    let statement = |kind| sql::count_login_attempt(kind, client, now, window_seconds);
    sql::first_attempts(&rows(db, statement)?)?
        .ok_or_else(|| anyhow!("the login-attempt upsert returned no row"))
}

/// Forgets `client`'s count (a successful login).
pub fn clear_login_attempts(db: &mut dyn Connection, client: &str) -> anyhow::Result<()> {
    rows(db, |kind| sql::clear_login_attempts(kind, client)).map(drop)
}

/// Deletes at most `limit` counts whose window ended at or before `now`.
pub fn prune_login_attempts(db: &mut dyn Connection, now: u64, limit: u32) -> anyhow::Result<()> {
    rows(db, |kind| sql::prune_login_attempts(kind, now, limit)).map(drop)
}
