//! The host port: everything the core needs from the host it runs on (Spin,
//! through `spin/`; the tests' host; the native benchmark), and the request
//! as the core sees it. Handlers import this module; it imports nothing of
//! theirs.

use crate::db::Connection;
use crate::error::ApiError;
use crate::settings::{self, DbUrl, SettingSource, StoreKind};

/// Request bodies are refused past 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What the core needs from its host: its settings and log
/// (`SettingSource`), the clock and the database. Settings and the store are
/// asked for only when a request needs them, as each may be a host call.
pub trait Context: SettingSource {
    /// Unix time in seconds.
    fn now(&self) -> u64;
    /// The database `database` names. Connecting may be deferred to its
    /// first statement.
    fn open_store(&mut self, database: &DbUrl) -> anyhow::Result<Box<dyn Connection + '_>>;
}

/// The configured store (`settings::database`), opened, its kind noted in
/// `opened` for the request's log line.
pub fn open_store<'c>(
    ctx: &'c mut impl Context,
    opened: &mut Option<StoreKind>,
) -> Result<Box<dyn Connection + 'c>, ApiError> {
    let database = settings::database(ctx)?;
    *opened = Some(database.kind);
    Ok(ctx.open_store(&database)?)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    TooLarge,
    Unreadable,
}

/// A request body, read only by the endpoints that take one.
pub trait Body {
    /// The whole body, or `TooLarge` as soon as it passes `limit` bytes.
    fn read(self, limit: usize) -> Result<Vec<u8>, BodyError>;
}

impl Body for &[u8] {
    fn read(self, limit: usize) -> Result<Vec<u8>, BodyError> {
        if self.len() > limit {
            return Err(BodyError::TooLarge);
        }
        Ok(self.to_vec())
    }
}

/// The parts of a request the routing, authentication and handlers need.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub method: &'a str,
    /// The path, without the query string.
    pub path: &'a str,
    /// The query string after `?`, without the `?`; `None` when the target
    /// has no `?`. Only `GET /books` reads it.
    pub query: Option<&'a str>,
    /// The `Authorization` value; several fields are joined (`join_values`).
    pub authorization: Option<&'a [u8]>,
    /// The `Origin` value: a browser's request from a page.
    pub origin: Option<&'a [u8]>,
    /// The request's header fields, names in lower case, in the order
    /// received.
    pub headers: &'a [(String, Vec<u8>)],
}

impl RequestHead<'_> {
    /// Every value of header `name` (lower case), joined; `None` when the
    /// request has none.
    pub fn header(&self, name: &str) -> Option<Vec<u8>> {
        join_values(self.headers.iter().filter(|(field, _)| field == name).map(|(_, value)| value))
    }
}

/// A header's values joined with ", ", as HTTP combines repeated fields;
/// `None` when there is none.
pub fn join_values<V: AsRef<[u8]>>(values: impl IntoIterator<Item = V>) -> Option<Vec<u8>> {
    let mut values = values.into_iter();
    let mut joined = values.next()?.as_ref().to_vec();
    for value in values {
        joined.extend_from_slice(b", ");
        joined.extend_from_slice(value.as_ref());
    }
    Some(joined)
}
