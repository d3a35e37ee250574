//! The change log (docs/api.md, "Changes and history"): every create,
//! update, delete and restore, written by the write's own statement
//! (`sql`); `GET /changes` follows it from a cursor, `GET /book/{id}/history`
//! reads a book's, `POST /book/{id}/restore` brings a deleted book back.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::model::{integer_literal, positive_decimal, Book, BookId};
use super::query::{known_parameters, MAX_LIMIT};
use super::safe_writes::etag;
use super::sql;
use crate::db::{Connection, Failure};
use crate::envelope::Response;
use crate::error::ApiError;
use crate::log::RequestFields;
use crate::port::{open_store, Context};

/// A position in the feed: after the change `(xid, seq)`. On SQLite `xid`
/// is 0 and `seq` is commit order; on PostgreSQL the pair orders the feed
/// (migrations/postgres/0008_changes.sql). Shown as `seq` or `xid.seq`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub xid: i64,
    pub seq: i64,
}

impl Cursor {
    /// `seq` or `xid.seq`, each a canonical decimal (no sign, no leading
    /// zero but `0` itself) that fits in 63 bits.
    pub fn parse(text: &str) -> Option<Cursor> {
        let number = |digits: &str| if digits == "0" { Some(0) } else { positive_decimal(digits) };
        match text.split_once('.') {
            None => Some(Cursor { xid: 0, seq: number(text)? }),
            Some((xid, seq)) => Some(Cursor { xid: number(xid)?, seq: number(seq)? }),
        }
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.xid {
            0 => write!(f, "{}", self.seq),
            xid => write!(f, "{xid}.{}", self.seq),
        }
    }
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Create,
    Update,
    Delete,
    Restore,
}

impl Op {
    /// As stored in `changes.op`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Update => "update",
            Op::Delete => "delete",
            Op::Restore => "restore",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        [Op::Create, Op::Update, Op::Delete, Op::Restore].into_iter().find(|op| op.name() == name)
    }
}

/// One change as the feed and a history show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    #[serde(serialize_with = "as_text")]
    pub cursor: Cursor,
    pub op: Op,
    pub id: BookId,
    /// The book after the change; `None` after a delete.
    pub book: Option<Book>,
    /// Who made it; `None` for a book from before the log.
    pub account: Option<String>,
    /// UTC, to the millisecond: `2026-11-29T06:00:00.123Z`.
    pub at: String,
}

fn as_text<S: serde::Serializer>(cursor: &Cursor, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(cursor)
}

/// The most seconds a `GET /changes` may wait for a change.
pub const MAX_WAIT_SECONDS: u32 = 30;
/// Changes a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u32 = 100;
/// How often a waiting request looks for a change: under two reads a second
/// (100 waiting followers cost a few percent of a core), and a change seen
/// within about this long (docs/performance.md).
pub const POLL_INTERVAL: Duration = Duration::from_millis(600);

/// The parameters of a `GET /changes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangesQuery {
    pub after: Option<Cursor>,
    /// 1 ..= `MAX_LIMIT`.
    pub limit: u32,
    /// 0 ..= `MAX_WAIT_SECONDS`.
    pub wait_seconds: u32,
}

impl ChangesQuery {
    /// Reads a query string as `BookQuery::parse` does: a known parameter
    /// repeated or out of its rules is 400, unknown ones are ignored.
    pub fn parse(query: Option<&str>) -> Result<ChangesQuery, ApiError> {
        let mut parsed = ChangesQuery { after: None, limit: DEFAULT_LIMIT, wait_seconds: 0 };
        let number = |value: &str, most: u32| {
            integer_literal(value).and_then(|n| u32::try_from(n).ok()).filter(|n| *n <= most)
        };
        for (name, value) in known_parameters(query, &["after", "limit", "wait"])? {
            match name {
                "after" => {
                    parsed.after = Some(Cursor::parse(&value).ok_or(ApiError::InvalidQuery)?)
                }
                "limit" => {
                    let limit = number(&value, MAX_LIMIT).filter(|limit| *limit >= 1);
                    parsed.limit = limit.ok_or(ApiError::InvalidQuery)?;
                }
                _ => {
                    parsed.wait_seconds =
                        number(&value, MAX_WAIT_SECONDS).ok_or(ApiError::InvalidQuery)?
                }
            }
        }
        Ok(parsed)
    }
}

/// `GET /changes`: the changes after the cursor, in commit order; with
/// `wait`, read again every `POLL_INTERVAL` until one commits or the time
/// is up, the store given back between reads (PostgreSQL connections are a
/// pool's: followers waiting never hold them). A cursor behind what
/// retention pruned is 410.
pub async fn feed<C: Context>(
    ctx: &mut C,
    fields: &mut RequestFields,
    query: &ChangesQuery,
) -> Result<Response, ApiError> {
    let mut db = open_store(ctx, fields)?;
    if let Some(after) = query.after {
        if after < sql::pruned_through(&mut db).await? {
            return Err(ApiError::ChangesGone);
        }
    }
    // Ends a little before `wait`, so that a host's 30 s deadline is never met.
    let polls = (query.wait_seconds * 1000).saturating_sub(200) / POLL_INTERVAL.as_millis() as u32;
    let mut changes = sql::changes_after(&mut db, query.after, query.limit).await?;
    for _ in 0..polls {
        if !changes.is_empty() {
            break;
        }
        drop(db);
        ctx.pause(POLL_INTERVAL).await;
        db = open_store(ctx, fields)?;
        changes = sql::changes_after(&mut db, query.after, query.limit).await?;
    }
    Response::ok(200, "Changes retrieved successfully", &changes)
}

/// `GET /book/{id}/history`: the book's kept changes, oldest first, a page
/// of `limit` after `after` (`wait` is not read), with a `Link` to the next.
pub async fn history(
    db: &mut impl Connection,
    id: BookId,
    query: &ChangesQuery,
) -> Result<Response, ApiError> {
    // One more than the page: whether a next page exists.
    let mut changes = sql::history(db, id, query.after, query.limit + 1).await?;
    if changes.is_empty() && query.after.is_none() {
        return Err(ApiError::BookNotFound);
    }
    let next = (changes.len() > query.limit as usize).then(|| {
        changes.truncate(query.limit as usize);
        changes.last().map(|last| {
            let (id, limit, cursor) = (id.get(), query.limit, last.cursor);
            format!("</book/{id}/history?limit={limit}&after={cursor}>; rel=\"next\"")
        })
    });
    let response = Response::ok(200, "History retrieved successfully", &changes)?;
    Ok(match next.flatten() {
        Some(link) => response.with_header("link", link),
        None => response,
    })
}

/// `POST /book/{id}/restore`: a deleted book back under its id with the
/// fields it last had, at its next version.
pub async fn restore(
    db: &mut impl Connection,
    id: BookId,
    account: &str,
) -> Result<Response, ApiError> {
    let restored = match sql::restore(db, id, account).await {
        // PostgreSQL: a concurrent restore (or create) stored it first.
        Err(error) if crate::db::failed_with(&error, Failure::UniqueViolation) => None,
        restored => restored?,
    };
    if let Some(book) = restored {
        let response = Response::ok(200, "Book restored successfully", &book)?;
        return Ok(response.with_header("etag", etag(book.id, book.version)));
    }
    match sql::get(db, id).await? {
        Some(_) => Err(ApiError::BookExists),
        None => Err(ApiError::BookNotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_canonical_decimals() {
        assert_eq!(Cursor::parse("15"), Some(Cursor { xid: 0, seq: 15 }));
        assert_eq!(Cursor::parse("0"), Some(Cursor::default()));
        assert_eq!(Cursor::parse("761.0"), Some(Cursor { xid: 761, seq: 0 }));
        for bad in ["", "-1", "01", "1.", ".1", "1.2.3", "x", "1e3", "+1", "9223372036854775808"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
        for cursor in ["15", "761.0", "9223372036854775807.3"] {
            assert_eq!(Cursor::parse(cursor).unwrap().to_string(), cursor);
        }
        assert!(Cursor::parse("2.0") > Cursor::parse("1.99"));
        assert_eq!(Op::parse("restore"), Some(Op::Restore));
        assert_eq!(Op::parse("drop"), None);
    }
}
