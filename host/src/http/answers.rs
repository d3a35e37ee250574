//! What the host answers itself, as real Spin 4.0.2 does (its trigger-http
//! `internal_error` and `not_found`): a status with an empty body and no
//! header of the host's own (hyper adds `content-length: 0` and `date`).
//! That is a 500 for a component that trapped, failed or ran past the
//! deadline, a 404 for a path outside the route, and here also a 503 for a
//! request that found no instance slot in time (Spin has no slot limit).

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

pub fn empty(status: StatusCode) -> Response<HyperOutgoingBody> {
    let mut r = Response::new(Full::new(Bytes::new()).map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = status;
    r
}

/// A component that gave no answer (trap, error, deadline).
pub fn internal_error() -> Response<HyperOutgoingBody> {
    empty(StatusCode::INTERNAL_SERVER_ERROR)
}
