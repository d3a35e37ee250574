//! One request through the service: route, authenticate, read the body
//! within its limit, run the handler, and turn any error into its envelope.
//! Everything host-specific comes in through the host port (`port`).

use crate::envelope::Response;
use crate::error::ApiError;
use crate::handlers::{auth, books, health, login};
use crate::log::{self, RequestFields};
use crate::model::BookId;
use crate::port::{open_configured_store, Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
use crate::query::BookQuery;
use crate::router::{self, Endpoint};
use crate::safe_writes::{IdempotencyKey, IfMatch, Precondition};
use crate::settings::{self, DbUrl, Setting, SettingSource, SettingUnavailable, StoreKind};
use crate::sql::Connection;

/// A request served: its response, and what its log line
/// (`log::request`, written by the adapter once the response is sent) says
/// of it.
#[derive(Debug)]
pub struct Served<'a> {
    pub response: Response,
    pub fields: RequestFields<'a>,
}

/// Serves one request. Never panics; every outcome is an envelope. A 500 or
/// 503 logs its reason.
pub fn handle<'h>(ctx: &mut impl Context, head: &RequestHead<'h>, body: impl Body) -> Served<'h> {
    let mut noted = NotingStore { ctx, store: None };
    let result = respond(&mut noted, head, body);
    let fields = RequestFields {
        method: head.method,
        route: router::pattern(head.path),
        store: noted.store.map_or("none", StoreKind::name),
    };
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            if let ApiError::Internal(detail) | ApiError::ServiceUnavailable(detail) = &error {
                noted.ctx.log(&log::failure(&fields, detail));
            }
            Response::error(&error)
        }
    };
    Served { response, fields }
}

/// The host's context, noting which store the request opened.
struct NotingStore<'c, C> {
    ctx: &'c mut C,
    store: Option<StoreKind>,
}

impl<C: Context> SettingSource for NotingStore<'_, C> {
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        self.ctx.setting(setting)
    }
    fn log(&mut self, line: &str) {
        self.ctx.log(line);
    }
}

impl<C: Context> Context for NotingStore<'_, C> {
    fn now(&self) -> u64 {
        self.ctx.now()
    }
    fn open_store(&mut self, database: &DbUrl) -> anyhow::Result<Box<dyn Connection + '_>> {
        self.store = Some(database.kind);
        self.ctx.open_store(database)
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
        Endpoint::Health => health::health(ctx),
        // The login limit answers before the body is judged, so the body is
        // handed over read or failed.
        Endpoint::IssueToken => {
            login::issue_token(ctx, head, read_body(body, ApiError::InvalidLoginPayload))
        }
        Endpoint::CreateBook => {
            let body = read_body(body, ApiError::InvalidBook)?;
            let key = head.header(router::IDEMPOTENCY_KEY);
            let key = key.map(|key| IdempotencyKey::parse(&key)).transpose()?;
            let now = ctx.now();
            books::create(&mut *open_configured_store(ctx)?, &body, key.as_ref(), now)
        }
        Endpoint::ListBooks => {
            // Parameters are judged before the store is opened.
            let query = BookQuery::parse(head.query)?;
            books::list(&mut *open_configured_store(ctx)?, &query)
        }
        Endpoint::GetBook(id) => {
            let id = id.ok_or(ApiError::BookNotFound)?;
            books::get(&mut *open_configured_store(ctx)?, id)
        }
        Endpoint::UpdateBook(id) => {
            let id = id.ok_or(ApiError::BookNotFound)?;
            let body = read_body(body, ApiError::InvalidBook)?;
            let precondition = precondition(ctx, head, id)?;
            books::update(&mut *open_configured_store(ctx)?, id, &precondition, &body)
        }
        Endpoint::DeleteBook(id) => {
            let id = id.ok_or(ApiError::BookNotFound)?;
            let precondition = precondition(ctx, head, id)?;
            books::delete(&mut *open_configured_store(ctx)?, id, &precondition)
        }
    }
}

/// The request's `If-Match` for book `id`; without one, whether one is
/// required (a setting read only then).
fn precondition(
    ctx: &mut impl Context,
    head: &RequestHead,
    id: BookId,
) -> Result<Precondition, ApiError> {
    Ok(match head.header(router::IF_MATCH) {
        Some(value) => Precondition::IfMatch(IfMatch::parse(&value, id)),
        None if settings::require_if_match(ctx)? => Precondition::Missing,
        None => Precondition::Unconditional,
    })
}

fn read_body(body: impl Body, unreadable: ApiError) -> Result<Vec<u8>, ApiError> {
    body.read(MAX_BODY_BYTES).map_err(|error| match error {
        BodyError::TooLarge => ApiError::BodyTooLarge,
        BodyError::Unreadable => unreadable,
    })
}
