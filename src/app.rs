//! One request through the service, top to bottom: route, authenticate,
//! read the body within its limit, run the resource's handler, and turn any
//! error into its envelope. Everything host-specific comes in through the
//! host port (`port`).

use crate::books::changes::{self, ChangesQuery};
use crate::books::model::BookId;
use crate::books::query::BookQuery;
use crate::books::safe_writes::{IdempotencyKey, Precondition};
use crate::books::transfer::{self, Form};
use crate::db;
use crate::envelope::Response;
use crate::error::ApiError;
use crate::log::{self, RequestFields};
use crate::port::{self, open_store, read_body, BodyError, BodyStream, Context, RequestHead};
use crate::settings::{self, Role};
use crate::{books, cors, login, token};

/// A request served: its response, and what its log line
/// (`log::request`, written by the adapter once the response is sent) says
/// of it.
pub struct Served {
    pub response: Response,
    pub fields: RequestFields,
}

/// Serves one request. Never panics; every outcome is an envelope. A 500 or
/// 503 logs its reason.
pub async fn handle<C: Context>(
    ctx: &mut C,
    head: &RequestHead<'_>,
    body: impl BodyStream,
) -> Served {
    let route = route(head.method, head.path);
    let method = head.method.to_string();
    let mut fields = RequestFields { method, route: route.pattern, store: "none", account: None };
    // Only a browser sends `Origin`: other clients never read the setting.
    let cors = match head.header("origin") {
        Some(origin) => settings::cors_origins(ctx).map(|origins| origins.allow(&origin)),
        None => Ok(None),
    };
    let result = match &cors {
        Err(error) => Err(error.clone()),
        // A preflight from a listed origin never carries a token: it is
        // answered before authentication, with the path's methods.
        Ok(Some(_)) if head.method == "OPTIONS" && head.header(PREFLIGHT_METHOD).is_some() => {
            match route.endpoint {
                Err(ApiError::MethodNotAllowed(methods)) => Ok(cors::preflight(methods)),
                _ => Err(ApiError::RouteNotFound),
            }
        }
        Ok(_) => respond(ctx, head, body, route, &mut fields).await,
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

/// The contract's order of checks: the path (404, before any
/// authentication), the token, the method (405), the holder's role (403),
/// the book's id (404), then the endpoint's own.
async fn respond<C: Context>(
    ctx: &mut C,
    head: &RequestHead<'_>,
    body: impl BodyStream,
    route: Route,
    fields: &mut RequestFields,
) -> Result<Response, ApiError> {
    let mut key_owner = None;
    if route.protected {
        let holder = token::authorize(ctx, head.header("authorization").as_deref())?;
        fields.account = Some(holder.username.clone());
        let served = !matches!(route.endpoint, Err(ApiError::MethodNotAllowed(_)));
        if served && head.method != "GET" && holder.role == Role::Reader {
            return Err(ApiError::PermissionDenied);
        }
        key_owner = (!holder.pair).then_some(holder.username);
    }
    // Who writes, as the change log names them: the token's holder.
    let account = fields.account.clone().unwrap_or_default();
    let account = account.as_str();
    match route.endpoint? {
        Endpoint::Health => health(ctx, fields).await,
        // The login limit answers before the body is judged, so the body is
        // handed over read or failed.
        Endpoint::IssueToken => {
            let body = read(body, ApiError::InvalidLoginPayload).await;
            login::issue_token(ctx, head, body, fields).await
        }
        Endpoint::CreateBook => {
            let body = read(body, ApiError::InvalidBook).await?;
            let key = head.header(IDEMPOTENCY_KEY);
            let key = key.map(|key| IdempotencyKey::parse(&key)).transpose()?;
            let (now, history_days) = (ctx.now(), settings::history_days(ctx)?);
            let mut db = open_store(ctx, fields)?;
            let key_owner = key_owner.as_deref();
            let created =
                books::create(&mut db, &body, key.as_ref(), now, account, key_owner).await;
            books::pruned(&mut db, history_days, created).await
        }
        Endpoint::ListBooks => {
            // Parameters are judged before the store is opened.
            let query = BookQuery::parse(head.query)?;
            let listing = Form::accepted(head.header("accept").as_deref());
            books::list(open_store(ctx, fields)?, &query, listing).await
        }
        Endpoint::ImportBooks => {
            let key = head.header(IDEMPOTENCY_KEY);
            let key = key.map(|key| IdempotencyKey::parse(&key)).transpose()?;
            let key = key.map(|key| key.scoped_to(key_owner.as_deref()));
            let form = Form::of(head.header("content-type").as_deref());
            let (limit, now) = (settings::import_max_bytes(ctx)?, ctx.now());
            let history_days = settings::history_days(ctx)?;
            let mut db = open_store(ctx, fields)?;
            let to = transfer::Importing { form, limit, key: key.as_deref(), now, account };
            let imported = transfer::import(&mut db, body, to).await;
            books::pruned(&mut db, history_days, imported).await
        }
        Endpoint::GetBook(id) => books::get(&mut open_store(ctx, fields)?, id).await,
        Endpoint::UpdateBook(id) => {
            let body = read(body, ApiError::InvalidBook).await?;
            let precondition = precondition(ctx, head, id)?;
            let history_days = settings::history_days(ctx)?;
            let mut db = open_store(ctx, fields)?;
            let updated = books::update(&mut db, id, &precondition, &body, account).await;
            books::pruned(&mut db, history_days, updated).await
        }
        Endpoint::DeleteBook(id) => {
            let precondition = precondition(ctx, head, id)?;
            let history_days = settings::history_days(ctx)?;
            let mut db = open_store(ctx, fields)?;
            let deleted = books::delete(&mut db, id, &precondition, account).await;
            books::pruned(&mut db, history_days, deleted).await
        }
        Endpoint::RestoreBook(id) => {
            let history_days = settings::history_days(ctx)?;
            let mut db = open_store(ctx, fields)?;
            let restored = changes::restore(&mut db, id, account).await;
            books::pruned(&mut db, history_days, restored).await
        }
        Endpoint::BookHistory(id) => {
            let query = ChangesQuery::parse(head.query)?;
            changes::history(&mut open_store(ctx, fields)?, id, &query).await
        }
        Endpoint::Changes => {
            let query = ChangesQuery::parse(head.query)?;
            changes::feed(ctx, fields, &query).await
        }
    }
}

/// `GET /health`: 200 "Service healthy" when the configured store answers a
/// trivial query; otherwise 503 "Service unavailable", the reason in the log
/// only (a setting that cannot be read included: the store cannot be known).
async fn health(ctx: &mut impl Context, fields: &mut RequestFields) -> Result<Response, ApiError> {
    let database = settings::database(ctx).map_err(|error| match error {
        ApiError::Internal(detail) => ApiError::ServiceUnavailable(detail),
        other => other,
    })?;
    let unavailable = |error: anyhow::Error| {
        ApiError::ServiceUnavailable(format!("{}: {error:#}", database.describe()))
    };
    let mut db = port::connect(ctx, &database, fields).map_err(unavailable)?;
    db::ping(&mut db).await.map_err(unavailable)?;
    Response::ok(200, "Service healthy", &())
}

/// The request's precondition on book `id`; without `If-Match`, whether one
/// is required (a setting read only then).
fn precondition(
    ctx: &mut impl Context,
    head: &RequestHead,
    id: BookId,
) -> Result<Precondition, ApiError> {
    let if_match = head.header(IF_MATCH);
    let required = if_match.is_none() && settings::require_if_match(ctx)?;
    Ok(Precondition::of(if_match.as_deref(), id, required))
}

async fn read(body: impl BodyStream, unreadable: ApiError) -> Result<Vec<u8>, ApiError> {
    read_body(body, port::MAX_BODY_BYTES).await.map_err(|error| match error {
        BodyError::TooLarge => ApiError::BodyTooLarge,
        BodyError::Unreadable => unreadable,
    })
}

// Routing (docs/api.md) answers, once a request, in the order the contract
// needs: is the path served at all (404 "Not found" otherwise, before any
// authentication), and, only once authentication has passed, does the path
// serve this method (405), and does it name a book (404 "Book not found").

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    IssueToken,
    CreateBook,
    ListBooks,
    ImportBooks,
    GetBook(BookId),
    UpdateBook(BookId),
    DeleteBook(BookId),
    BookHistory(BookId),
    RestoreBook(BookId),
    Changes,
}

/// What a request's path and method route to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub protected: bool,
    /// For log lines: never the path itself (`unmatched` for a path the
    /// service does not serve).
    pub pattern: &'static str,
    pub endpoint: Result<Endpoint, ApiError>,
}

const BOOK_ITEM_PREFIX: &str = "/book/";
/// Public, for load balancers and Kubernetes probes.
pub const HEALTH_PATH: &str = "/health";
pub const TOKEN_PATH: &str = "/token";
pub const IF_MATCH: &str = "if-match";
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Routes a request; `path` excludes the query string.
pub fn route(method: &str, path: &str) -> Route {
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
        "/books" => {
            let endpoint = match method {
                "GET" => Ok(Endpoint::ListBooks),
                "POST" => Ok(Endpoint::ImportBooks),
                _ => Err(ApiError::MethodNotAllowed("GET, POST")),
            };
            (true, "/books", endpoint)
        }
        "/changes" => (true, "/changes", only("GET", Endpoint::Changes)),
        _ => match path.strip_prefix(BOOK_ITEM_PREFIX) {
            None => (false, "unmatched", Err(ApiError::RouteNotFound)),
            Some(rest) => {
                let (id, pattern, allowed) = match rest.split_once('/') {
                    Some((id, "history")) => (id, "/book/{id}/history", "GET"),
                    Some((id, "restore")) => (id, "/book/{id}/restore", "POST"),
                    // Any other path under /book/ is an id that is not
                    // canonical: it names no book.
                    _ => (rest, "/book/{id}", "GET, PUT, DELETE"),
                };
                let item: Result<fn(BookId) -> Endpoint, ApiError> = match (pattern, method) {
                    ("/book/{id}/history", "GET") => Ok(Endpoint::BookHistory),
                    ("/book/{id}/restore", "POST") => Ok(Endpoint::RestoreBook),
                    ("/book/{id}", "GET") => Ok(Endpoint::GetBook),
                    ("/book/{id}", "PUT") => Ok(Endpoint::UpdateBook),
                    ("/book/{id}", "DELETE") => Ok(Endpoint::DeleteBook),
                    _ => Err(ApiError::MethodNotAllowed(allowed)),
                };
                let endpoint =
                    item.and_then(|item| BookId::parse(id).map(item).ok_or(ApiError::BookNotFound));
                (true, pattern, endpoint)
            }
        },
    };
    Route { protected, pattern, endpoint }
}
