//! One request through the service, top to bottom: route, authenticate,
//! read the body within its limit, run the resource's handler, and turn any
//! error into its envelope. Everything host-specific comes in through the
//! host port (`port`).

use crate::books::model::BookId;
use crate::books::query::BookQuery;
use crate::books::safe_writes::{IdempotencyKey, IfMatch, Precondition};
use crate::db;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::log::{self, RequestFields};
use crate::port::{open_store, Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
use crate::settings::{self, StoreKind};
use crate::{books, cors, login, token};

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
    let mut opened = None;
    // Only a browser sends `Origin`: other clients never read the setting.
    let cors = match head.origin {
        Some(origin) => settings::cors_origins(ctx).map(|origins| origins.allow(origin)),
        None => Ok(None),
    };
    let result = match &cors {
        Err(error) => Err(error.clone()),
        // A preflight from a listed origin never carries a token: it is
        // answered before authentication, with the path's methods.
        Ok(Some(_)) if head.method == "OPTIONS" && head.header(PREFLIGHT_METHOD).is_some() => {
            match route(head.method, head.path).map(|route| route.endpoint) {
                Ok(Err(ApiError::MethodNotAllowed(methods))) => Ok(cors::preflight(methods)),
                Ok(_) => Err(ApiError::RouteNotFound),
                Err(error) => Err(error),
            }
        }
        Ok(_) => respond(ctx, head, body, &mut opened),
    };
    let fields = RequestFields {
        method: head.method,
        route: pattern(head.path),
        store: opened.map_or("none", StoreKind::name),
    };
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            if let Some(detail) = error.detail() {
                ctx.log(&log::failure(&fields, detail));
            }
            Response::error(&error)
        }
    };
    let response = match cors {
        Ok(Some(allow_origin)) => cors::allowed(response, allow_origin),
        _ => response,
    };
    Served { response, fields }
}

/// The header that makes an `OPTIONS` request a CORS preflight.
const PREFLIGHT_METHOD: &str = "access-control-request-method";

fn respond(
    ctx: &mut impl Context,
    head: &RequestHead,
    body: impl Body,
    opened: &mut Option<StoreKind>,
) -> Result<Response, ApiError> {
    let route = route(head.method, head.path)?;
    // Authentication precedes every other check on a protected path.
    if route.protected {
        token::authorize(ctx, head.authorization)?;
    }
    match route.endpoint? {
        Endpoint::Health => health(ctx, opened),
        // The login limit answers before the body is judged, so the body is
        // handed over read or failed.
        Endpoint::IssueToken => {
            let body = read_body(body, ApiError::InvalidLoginPayload);
            login::issue_token(ctx, head, body, opened)
        }
        Endpoint::CreateBook => {
            let body = read_body(body, ApiError::InvalidBook)?;
            let key = head.header(IDEMPOTENCY_KEY);
            let key = key.map(|key| IdempotencyKey::parse(&key)).transpose()?;
            let now = ctx.now();
            books::create(&mut *open_store(ctx, opened)?, &body, key.as_ref(), now)
        }
        Endpoint::ListBooks => {
            // Parameters are judged before the store is opened.
            let query = BookQuery::parse(head.query)?;
            books::list(&mut *open_store(ctx, opened)?, &query)
        }
        Endpoint::GetBook(id) => books::get(&mut *open_store(ctx, opened)?, id),
        Endpoint::UpdateBook(id) => {
            let body = read_body(body, ApiError::InvalidBook)?;
            let precondition = precondition(ctx, head, id)?;
            books::update(&mut *open_store(ctx, opened)?, id, &precondition, &body)
        }
        Endpoint::DeleteBook(id) => {
            let precondition = precondition(ctx, head, id)?;
            books::delete(&mut *open_store(ctx, opened)?, id, &precondition)
        }
    }
}

/// `GET /health`: 200 "Service healthy" when the configured store answers a
/// trivial query; otherwise 503 "Service unavailable", the reason in the log
/// only (a setting that cannot be read included: the store cannot be known).
fn health(ctx: &mut impl Context, opened: &mut Option<StoreKind>) -> Result<Response, ApiError> {
    let target = settings::database(ctx).map_err(|error| match error {
        ApiError::Internal(detail) => ApiError::ServiceUnavailable(detail),
        other => other,
    })?;
    let unavailable = |error: anyhow::Error| {
        ApiError::ServiceUnavailable(format!("{}: {error:#}", target.describe()))
    };
    *opened = Some(target.kind);
    let mut db = ctx.open_store(&target).map_err(unavailable)?;
    db::ping(&mut *db).map_err(unavailable)?;
    Ok(Response::ok::<()>(200, "Service healthy", None))
}

/// The request's `If-Match` for book `id`; without one, whether one is
/// required (a setting read only then).
fn precondition(
    ctx: &mut impl Context,
    head: &RequestHead,
    id: BookId,
) -> Result<Precondition, ApiError> {
    Ok(match head.header(IF_MATCH) {
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

// Routing (docs/api.md) answers two questions in the order the contract
// needs: is the path served at all (404 "Not found" otherwise, before any
// authentication), and, only once authentication has passed, does the path
// serve this method (405), and does it name a book (404 "Book not found").

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    IssueToken,
    CreateBook,
    ListBooks,
    GetBook(BookId),
    UpdateBook(BookId),
    DeleteBook(BookId),
}

/// A path the service serves, with the outcome for the request's method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub protected: bool,
    /// For log lines: never the path itself.
    pub pattern: &'static str,
    pub endpoint: Result<Endpoint, ApiError>,
}

const BOOK_ITEM_PREFIX: &str = "/book/";
/// Public, for load balancers and Kubernetes probes.
pub const HEALTH_PATH: &str = "/health";
pub const TOKEN_PATH: &str = "/token";
pub const IF_MATCH: &str = "if-match";
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The route pattern a path matches (for any method), for log lines.
pub fn pattern(path: &str) -> &'static str {
    route("", path).map_or("unmatched", |route| route.pattern)
}

/// Routes a request; `path` excludes the query string.
pub fn route(method: &str, path: &str) -> Result<Route, ApiError> {
    let only = |allowed: &'static str, endpoint: Endpoint| {
        if method == allowed {
            Ok(endpoint)
        } else {
            Err(ApiError::MethodNotAllowed(allowed))
        }
    };
    let (protected, pattern, endpoint) = match path {
        HEALTH_PATH => (false, HEALTH_PATH, only("GET", Endpoint::Health)),
        TOKEN_PATH => (false, TOKEN_PATH, only("POST", Endpoint::IssueToken)),
        "/book" => (true, "/book", only("POST", Endpoint::CreateBook)),
        "/books" => (true, "/books", only("GET", Endpoint::ListBooks)),
        _ => {
            let Some(id) = path.strip_prefix(BOOK_ITEM_PREFIX) else {
                return Err(ApiError::RouteNotFound);
            };
            let item = match method {
                "GET" => Ok(Endpoint::GetBook as fn(BookId) -> Endpoint),
                "PUT" => Ok(Endpoint::UpdateBook as fn(BookId) -> Endpoint),
                "DELETE" => Ok(Endpoint::DeleteBook as fn(BookId) -> Endpoint),
                _ => Err(ApiError::MethodNotAllowed("GET, PUT, DELETE")),
            };
            // An id that is not canonical names no book.
            let endpoint =
                item.and_then(|item| BookId::parse(id).map(item).ok_or(ApiError::BookNotFound));
            (true, "/book/{id}", endpoint)
        }
    };
    Ok(Route { protected, pattern, endpoint })
}

/// The path of a request target, without its query string, and the query
/// string after the first `?`, if any.
pub fn split_target(target: &str) -> (&str, Option<&str>) {
    target.split_once('?').map_or((target, None), |(path, query)| (path, Some(query)))
}

#[cfg(test)]
mod tests {
    //! What routing answers is tested through `handle` in the core's
    //! tests. Here, only what their harness bypasses: splitting a target.
    use super::*;

    #[test]
    fn query_strings_are_not_part_of_the_path() {
        assert_eq!(split_target("/books?limit=1&a=?"), ("/books", Some("limit=1&a=?")));
        assert_eq!(split_target("/book/1?"), ("/book/1", Some("")));
        assert_eq!(split_target("/books"), ("/books", None));
    }
}
