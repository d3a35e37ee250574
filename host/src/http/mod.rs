//! Serving (wasi-http): one single-threaded runtime per core accepts from the
//! shared listener and hands each request to the component's
//! `wasi:http/incoming-handler`, in a fresh instance (Spin's isolation) or,
//! with `--max-instance-reuse N`, an idle one that has served fewer than N.
//! A slow client holds only its connection's task, never a slot or a thread:
//! the head must come within `HEADER_TIMEOUT`, the body is read ahead
//! (`request_body`) before a slot is taken, a request waiting `SLOT_WAIT` for
//! a slot answers 503, and one running past `--request-timeout` is stopped
//! (500, instance discarded). Guest code yields every `EPOCH_TICK`.

mod request_body;
mod server;
mod spin_headers;

use std::future::Future;

use wasmtime_wasi_http::{Error, RequestOptions, Result, WasiBody, WasiHttpHooks};

pub use server::{
    serving_runtime, start_epoch_ticker, Limits, Server, DEFAULT_MAX_INSTANCES, MAX_IDLE_INSTANCES,
};

/// The hooks trait wants a sender; no `wasi:http/outgoing-handler` is linked.
pub struct NoOutgoingHttp;

type Sent = Box<dyn Future<Output = Result<(), Error>> + Send>;

impl WasiHttpHooks for NoOutgoingHttp {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Sent,
    ) -> Box<dyn Future<Output = Result<(http::Response<WasiBody>, Sent)>> + Send> {
        Box::new(async { Err(Error::HttpRequestDenied) })
    }
}
