//! The host port: what the core needs from its host (Spin through `spin/`,
//! the tests' host, the native benchmark), and the request as the core sees it.

use std::time::Duration;

use crate::db::Connection;
use crate::error::ApiError;
use crate::log::RequestFields;
use crate::settings::{self, Database, SettingSource};

/// Request bodies are refused past 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Settings and log (`SettingSource`), the clock and the database, each asked
/// for only when a request needs it, as each may be a host call.
#[allow(async_fn_in_trait)]
pub trait Context: SettingSource {
    /// An open database. It owns its connection (a whole list streams from it
    /// after `handle` returns).
    type Store: Connection + 'static;
    /// Unix time in seconds.
    fn now(&self) -> u64;
    /// Connecting may be deferred to the first statement.
    fn connect(&mut self, database: &Database) -> anyhow::Result<Self::Store>;
    /// Waits, holding no store and (WASI 0.3) letting the instance serve
    /// other requests meanwhile.
    async fn pause(&mut self, duration: Duration);
}

/// The configured store (`settings::database`), opened.
pub fn open_store<C: Context>(
    ctx: &mut C,
    fields: &mut RequestFields,
) -> Result<C::Store, ApiError> {
    let database = settings::database(ctx)?;
    Ok(connect(ctx, &database, fields)?)
}

/// `database` opened: the one way a request opens a store, its kind noted
/// for the request's log line.
pub fn connect<C: Context>(
    ctx: &mut C,
    database: &Database,
    fields: &mut RequestFields,
) -> anyhow::Result<C::Store> {
    fields.store = database.kind.name();
    ctx.connect(database)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    TooLarge,
    Unreadable,
}

/// A request body as its host hands it over.
#[allow(async_fn_in_trait)]
pub trait BodyStream {
    /// `Content-Length`, when the request declares one.
    fn declared_length(&self) -> Option<u64>;
    /// The next bytes; `Ok(None)` at the end.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError>;
}

/// A body in memory, as the tests and the native benchmark have it.
impl BodyStream for &[u8] {
    fn declared_length(&self) -> Option<u64> {
        Some(self.len() as u64)
    }

    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        Ok((!self.is_empty()).then(|| std::mem::take(self).to_vec()))
    }
}

/// The whole body, or `TooLarge` past `limit` bytes. A declared length far
/// over the limit is refused before reading a byte; one a few times the
/// limit is read to its end and dropped: Spin closes the connection on an
/// answer sent before the body was read, and an honest client still sending
/// it would see a broken pipe instead of its 413. An undeclared length stops
/// at the limit.
pub async fn read_body(mut body: impl BodyStream, limit: usize) -> Result<Vec<u8>, BodyError> {
    let declared = body.declared_length();
    if declared.is_some_and(|length| length > 4 * limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let (mut bytes, mut read, mut over) = (Vec::new(), 0u64, false);
    while let Some(chunk) = body.chunk().await? {
        read += chunk.len() as u64;
        if over || bytes.len() + chunk.len() > limit {
            if declared.is_none() {
                return Err(BodyError::TooLarge);
            }
            over = true;
            bytes = Vec::new();
        } else {
            bytes.extend_from_slice(&chunk);
        }
        // All the declared bytes: the end needs no more host call.
        if declared == Some(read) {
            break;
        }
    }
    if over {
        return Err(BodyError::TooLarge);
    }
    Ok(bytes)
}

/// The parts of a request the routing, authentication and handlers need.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub method: &'a str,
    /// The path, without the query string.
    pub path: &'a str,
    /// After `?`; `None` without one. Only `GET /books` reads it.
    pub query: Option<&'a str>,
    /// Names in lower case, in the order received.
    pub headers: &'a [(String, Vec<u8>)],
}

impl RequestHead<'_> {
    /// Every value of header `name` (lower case), joined.
    pub fn header(&self, name: &str) -> Option<Vec<u8>> {
        join_values(header_values(self.headers, name))
    }
}

/// The path of a request target, without its query string, and the query
/// string after the first `?`, if any.
pub fn split_target(target: &str) -> (&str, Option<&str>) {
    target.split_once('?').map_or((target, None), |(path, query)| (path, Some(query)))
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

#[cfg(test)]
mod tests {
    //! The body limit through `handle`: the core's request tests. Here what
    //! only a host's streamed body shows, and splitting a target.
    use super::*;
    use crate::block_on;

    /// Chunks as a host hands them over, with or without `Content-Length`.
    struct Chunks(Vec<Vec<u8>>, Option<u64>, usize);

    impl BodyStream for &mut Chunks {
        fn declared_length(&self) -> Option<u64> {
            self.1
        }
        async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
            self.2 += 1;
            Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
        }
    }

    #[test]
    fn a_body_past_the_limit_is_read_to_its_end_when_declared_and_cut_off_when_not() {
        let chunks = || vec![vec![1u8; 40], vec![2; 40], vec![3; 40], vec![4; 40]];
        let mut declared = Chunks(chunks(), Some(160), 0);
        assert_eq!(block_on(read_body(&mut declared, 100)), Err(BodyError::TooLarge));
        assert_eq!((declared.0.len(), declared.2), (0, 4), "read to its end, no call after it");
        let mut undeclared = Chunks(chunks(), None, 0);
        assert_eq!(block_on(read_body(&mut undeclared, 100)), Err(BodyError::TooLarge));
        assert_eq!(undeclared.0.len(), 1, "stopped at the chunk past the limit");
        let mut far_over = Chunks(chunks(), Some(401), 0);
        assert_eq!(block_on(read_body(&mut far_over, 100)), Err(BodyError::TooLarge));
        assert_eq!(far_over.2, 0, "refused before reading a byte");
        let mut within = Chunks(chunks(), None, 0);
        assert_eq!(block_on(read_body(&mut within, 160)).map(|b| b.len()), Ok(160));
    }

    #[test]
    fn query_strings_are_not_part_of_the_path() {
        assert_eq!(split_target("/books?limit=1&a=?"), ("/books", Some("limit=1&a=?")));
        assert_eq!(split_target("/book/1?"), ("/book/1", Some("")));
        assert_eq!(split_target("/books"), ("/books", None));
    }
}
