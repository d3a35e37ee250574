//! wasi-http's hooks for the guest's outgoing requests.

use std::future::Future;

use wasmtime_wasi_http::{Error, RequestOptions, Result, WasiBody, WasiHttpHooks};

/// Our world imports no `wasi:http/outgoing-handler`; this only satisfies
/// the hooks trait (nothing links a way to call it).
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
