//! One request through the service: route, authenticate, read the body
//! within its limit, run the handler, and turn any error into its envelope.
//! Everything host-specific comes in through `Context` and `Body`.

use crate::auth;
use crate::books;
use crate::catalog::BookQuery;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::router::{self, Endpoint};
use crate::settings::{Setting, SettingUnavailable};
use crate::store::{BookStore, StoreTarget};

/// Request bodies are refused past 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What the core needs from the host it runs on. Settings and the store are
/// asked for only when a request needs them, as each may be a host call.
pub trait Context {
    /// The resolved, non-empty value of a setting (see `settings::resolve`),
    /// or why its source could not give one.
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable>;
    /// Unix time in seconds.
    fn now(&self) -> u64;
    /// The store `target` names. Connecting may be deferred to its first use.
    fn open_store(&mut self, target: &StoreTarget) -> anyhow::Result<Box<dyn BookStore + '_>>;
    /// A line for the operator's log. Never given a secret.
    fn log(&mut self, line: &str);
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

/// The parts of a request the routing and authentication need.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub method: &'a str,
    /// The path, without the query string.
    pub path: &'a str,
    /// The query string after `?`, without the `?`; `None` when the target
    /// has no `?`. Only `GET /books` reads it.
    pub query: Option<&'a str>,
    /// The `Authorization` value; several headers are joined with ", ".
    pub authorization: Option<&'a [u8]>,
    /// The request's header fields, names in lower case, in the order
    /// received, for the endpoints that read more than `Authorization`
    /// (`router::reads_headers`); an adapter may leave it empty for others.
    pub headers: &'a [(String, Vec<u8>)],
}

impl<'a> RequestHead<'a> {
    /// Every value of header `name` (lower case), in the order received.
    pub fn header_values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        self.headers
            .iter()
            .filter(move |(candidate, _)| candidate == name)
            .map(|(_, value)| value.as_slice())
    }
}

/// Serves one request. Never panics; every outcome is an envelope.
pub fn handle(ctx: &mut impl Context, head: &RequestHead, body: impl Body) -> Response {
    match respond(ctx, head, body) {
        Ok(response) => response,
        Err(error) => {
            if let ApiError::Internal(detail) | ApiError::ServiceUnavailable(detail) = &error {
                ctx.log(&format!("error: {} {}: {detail}", head.method, head.path));
            }
            Response::error(&error)
        }
    }
}

fn respond(
    ctx: &mut impl Context,
    head: &RequestHead,
    body: impl Body,
) -> Result<Response, ApiError> {
    let route = router::route(head.method, head.path)?;
    // Authentication precedes every other check on a protected path.
    if route.protected {
        auth::authorize(ctx, head.authorization)?;
    }
    match route.endpoint? {
        Endpoint::Health => health(ctx),
        // The login throttle answers before the body is judged, so the body
        // is handed over unread-or-failed.
        Endpoint::IssueToken => {
            auth::issue_token(ctx, head, read_body(body, ApiError::InvalidLoginPayload))
        }
        Endpoint::CreateBook => {
            let body = read_body(body, ApiError::InvalidBook)?;
            books::create(&mut *store(ctx)?, &body)
        }
        Endpoint::ListBooks => {
            // Parameters are judged before the store is opened.
            let query = BookQuery::parse(head.query)?;
            books::list(&mut *store(ctx)?, &query)
        }
        Endpoint::GetBook(id) => books::get(&mut *store(ctx)?, id.ok_or(ApiError::BookNotFound)?),
        Endpoint::UpdateBook(id) => {
            let id = id.ok_or(ApiError::BookNotFound)?;
            let body = read_body(body, ApiError::InvalidBook)?;
            books::update(&mut *store(ctx)?, id, &body)
        }
        Endpoint::DeleteBook(id) => {
            books::delete(&mut *store(ctx)?, id.ok_or(ApiError::BookNotFound)?)
        }
    }
}

/// `GET /health` (decisions.md, "Health"): 200 when the configured store
/// answers a trivial query; otherwise 503, the reason in the log only.
fn health<C: Context>(ctx: &mut C) -> Result<Response, ApiError> {
    let db_url = ctx
        .setting(Setting::DbUrl)
        .map_err(|error| ApiError::ServiceUnavailable(error.to_string()))?;
    let target = StoreTarget::from_db_url(db_url.as_deref())
        .map_err(|error| ApiError::ServiceUnavailable(error.to_string()))?;
    let unavailable = |error: anyhow::Error| {
        ApiError::ServiceUnavailable(format!("{}: {error:#}", target.describe()))
    };
    let mut store = ctx.open_store(&target).map_err(unavailable)?;
    store.ping().map_err(unavailable)?;
    Ok(Response::ok::<()>(200, "Service healthy", None))
}

fn read_body(body: impl Body, unreadable: ApiError) -> Result<Vec<u8>, ApiError> {
    body.read(MAX_BODY_BYTES).map_err(|error| match error {
        BodyError::TooLarge => ApiError::BodyTooLarge,
        BodyError::Unreadable => unreadable,
    })
}

pub(crate) fn store<C: Context>(ctx: &mut C) -> Result<Box<dyn BookStore + '_>, ApiError> {
    let db_url = ctx.setting(Setting::DbUrl)?;
    let target = StoreTarget::from_db_url(db_url.as_deref()).map_err(ApiError::internal)?;
    Ok(ctx.open_store(&target)?)
}
