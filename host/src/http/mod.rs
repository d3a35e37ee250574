//! Serving (wasi-http, `server`): a WASI 0.2 component in a fresh or an
//! idle instance per request, a WASI 0.3 one in instances reused as Spin
//! main reuses them (`p3`). A slow client holds only its connection's task,
//! never a slot or a thread (`request_body`; host/README.md, "Where it
//! differs").

mod p3;
mod request_body;
mod server;

use std::future::Future;
use std::sync::Arc;

use wasmtime_wasi_http::{Error, RequestOptions, Result, WasiBody, WasiHttpHooks};
use wasmtime_wasi_http::{ForbiddenHeaderFilter, DEFAULT_FORBIDDEN_HEADERS};

pub use p3::exports_wasi_0_3;
pub use server::{
    serving_runtime, start_epoch_ticker, App, Limits, Server, DEFAULT_MAX_INSTANCES,
    MAX_IDLE_INSTANCES,
};

/// The hooks trait wants a sender; no `wasi:http/outgoing-handler` is linked.
pub struct NoOutgoingHttp;

type Sent = Box<dyn Future<Output = Result<(), Error>> + Send>;

impl WasiHttpHooks for NoOutgoingHttp {
    /// A WASI 0.3 request keeps its `host`, as in Spin main (wasmtime 48
    /// strips it from incoming requests with the other forbidden headers).
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(|name| *name != http::header::HOST && DEFAULT_FORBIDDEN_HEADERS.contains(name))
    }

    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Sent,
    ) -> Box<dyn Future<Output = Result<(http::Response<WasiBody>, Sent)>> + Send> {
        Box::new(async { Err(Error::HttpRequestDenied) })
    }
}
