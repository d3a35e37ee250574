//! What the host answers itself, in the service's envelope
//! (`book_catalog::Response`), so that a 500 or 503 from the host looks like
//! one from the component.

use book_catalog::ApiError;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

pub fn empty(status: StatusCode) -> Response<HyperOutgoingBody> {
    let mut r = Response::new(body(Bytes::new()));
    *r.status_mut() = status;
    r
}

fn body(bytes: Bytes) -> HyperOutgoingBody {
    Full::new(bytes).map_err(|e| match e {}).boxed_unsync()
}

/// The service's own 500 envelope, for a component that failed before
/// answering.
pub fn internal_error() -> Response<HyperOutgoingBody> {
    envelope(&ApiError::internal("the component gave no answer"))
}

/// The service's envelope for `error`, with the headers every response of
/// the service carries, for what the host answers itself.
pub fn envelope(error: &ApiError) -> Response<HyperOutgoingBody> {
    let answer = book_catalog::Response::error(error);
    let mut response = Response::new(body(Bytes::from(answer.body.clone())));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers() {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
