//! One request through the service: route, authenticate, read the body
//! within its limit, run the handler, and turn any error into its envelope.
//! Everything host-specific comes in through the host port (`port`).

use crate::envelope::Response;
use crate::error::ApiError;
use crate::handlers::{auth, books, health, login};
use crate::port::{open_configured_store, Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
use crate::query::BookQuery;
use crate::router::{self, Endpoint};

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
        Endpoint::Health => health::health(ctx),
        // The login limit answers before the body is judged, so the body is
        // handed over read or failed.
        Endpoint::IssueToken => {
            login::issue_token(ctx, head, read_body(body, ApiError::InvalidLoginPayload))
        }
        Endpoint::CreateBook => {
            let body = read_body(body, ApiError::InvalidBook)?;
            books::create(&mut *open_configured_store(ctx)?, &body)
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
            books::update(&mut *open_configured_store(ctx)?, id, &body)
        }
        Endpoint::DeleteBook(id) => {
            let id = id.ok_or(ApiError::BookNotFound)?;
            books::delete(&mut *open_configured_store(ctx)?, id)
        }
    }
}

fn read_body(body: impl Body, unreadable: ApiError) -> Result<Vec<u8>, ApiError> {
    body.read(MAX_BODY_BYTES).map_err(|error| match error {
        BodyError::TooLarge => ApiError::BodyTooLarge,
        BodyError::Unreadable => unreadable,
    })
}
