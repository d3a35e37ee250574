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

/// Applies non-empty `changes`; `None` when there is no such book.
pub fn update(
    db: &mut dyn Connection,
    id: BookId,
    changes: &BookChanges,
) -> anyhow::Result<Option<Book>> {
    sql::first_book(rows(db, |kind| sql::update(kind, id, changes))?)
}

/// `false` when there was no such book.
pub fn delete(db: &mut dyn Connection, id: BookId) -> anyhow::Result<bool> {
    Ok(!rows(db, |kind| sql::delete(kind, id))?.is_empty())
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
