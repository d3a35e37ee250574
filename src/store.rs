//! What the handlers ask of a database: books (`BookStore`) and login
//! attempts (`LoginAttemptStore`), each method one statement, so that a
//! single-book request costs one round trip. The adapters (`spin::sqlite`,
//! `spin::postgres`) implement both on one connection: `Database`.

use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;

/// Storage for books.
pub trait BookStore {
    /// Every book, in ascending id order.
    fn list(&mut self) -> anyhow::Result<Vec<Book>>;
    /// A catalog query (`GET /books` with parameters): the books matching
    /// its filters with an id above `after`, in ascending id order, at most
    /// `query.fetch_limit()` of them (one more than the page, so the caller
    /// knows whether a next page exists). The same books as
    /// `BookQuery::select` over `list`.
    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>>;
    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>>;
    /// Stores a book under a new id, never one used before.
    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book>;
    /// Applies non-empty `changes`; `None` when there is no such book.
    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>>;
    /// `false` when there was no such book.
    fn delete(&mut self, id: BookId) -> anyhow::Result<bool>;
    /// Answers a trivial query, for `GET /health`: `Ok` when the store is
    /// reachable and answering.
    fn ping(&mut self) -> anyhow::Result<()>;
}

/// Login attempts per client (`login_limit`), kept in the configured
/// database so that the limit holds across instances and replicas.
pub trait LoginAttemptStore {
    /// The count stored for `client`, if any (possibly of a window that has
    /// already ended).
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>>;
    /// Counts one login attempt of `client` before its password is checked,
    /// atomically: concurrent calls each get a different count, the one that
    /// includes their own attempt. A window that ended at or before `now`
    /// starts again: count 1, ending at `now + window_seconds`.
    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts>;
    /// Forgets `client`'s count (a successful login).
    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()>;
    /// Deletes at most `limit` counts whose window ended at or before `now`.
    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()>;
}

/// The configured database: books and login attempts.
pub trait Database: BookStore + LoginAttemptStore {}

impl<T: BookStore + LoginAttemptStore + ?Sized> Database for T {}

/// The login attempts of one client in its current window that no
/// successful login has cleared: failures, and attempts still being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginAttempts {
    /// Attempts counted since the window began.
    pub count: u64,
    /// Unix time (seconds) at which the window ends and the count lapses.
    pub window_end: u64,
}

impl LoginAttempts {
    /// From a stored row; counts and times are never negative.
    pub fn from_row(count: i64, window_end: i64) -> anyhow::Result<LoginAttempts> {
        match (u64::try_from(count), u64::try_from(window_end)) {
            (Ok(count), Ok(window_end)) => Ok(LoginAttempts { count, window_end }),
            _ => anyhow::bail!("unexpected login-attempt row ({count}, {window_end})"),
        }
    }
}
