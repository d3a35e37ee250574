//! The host port: what the core needs from its host (Spin through `spin/`,
//! the tests' host, the native benchmark), and the request as the core sees it.

use crate::db::Connection;
use crate::error::ApiError;
use crate::settings::{self, DbUrl, SettingSource, StoreKind};

/// Request bodies are refused past 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Settings and log (`SettingSource`), the clock and the database, each asked
/// for only when a request needs it, as each may be a host call.
pub trait Context: SettingSource {
    /// Unix time in seconds.
    fn now(&self) -> u64;
    /// Connecting may be deferred to the first statement.
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
    /// After `?`; `None` without one. Only `GET /books` reads it.
    pub query: Option<&'a str>,
    /// The `Authorization` value; several fields are joined (`join_values`).
    pub authorization: Option<&'a [u8]>,
    /// The `Origin` value: a browser's request from a page.
    pub origin: Option<&'a [u8]>,
    /// Names in lower case, in the order received.
    pub headers: &'a [(String, Vec<u8>)],
}

impl RequestHead<'_> {
    /// Every value of header `name` (lower case), joined.
    pub fn header(&self, name: &str) -> Option<Vec<u8>> {
        join_values(header_values(self.headers, name))
    }
}

/// Every value of the header `name` (lower case), in the order received.
pub fn header_values<'a>(
    fields: &'a [(String, Vec<u8>)],
    name: &'a str,
) -> impl DoubleEndedIterator<Item = &'a [u8]> {
    fields.iter().filter(move |(field, _)| field == name).map(|(_, value)| value.as_slice())
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
