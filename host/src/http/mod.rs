//! Serving (wasi-http, `server`): a WASI 0.2 component in a fresh or an
//! idle instance per request, a WASI 0.3 one in instances reused as Spin
//! main reuses them (`p3`). A slow client holds only its connection's task,
//! never a slot or a thread (`request_body`; host/README.md, "Where it
//! differs"). One way: `server` uses `p3`, both this module's `Component`.

mod p3;
mod request_body;
mod server;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::Store;
use wasmtime_wasi_http::handler::{Proxy, ProxyPre};
use wasmtime_wasi_http::{Error, RequestOptions, Result, WasiBody, WasiHttpHooks};
use wasmtime_wasi_http::{ForbiddenHeaderFilter, DEFAULT_FORBIDDEN_HEADERS};

use crate::state::{Shared, State};

pub use p3::exports_wasi_0_3;
pub use server::{serving_runtime, start_epoch_ticker, App, Server};

pub const DEFAULT_MAX_INSTANCES: u32 = 32;
/// The pool's room for idle WASI 0.3 instances beyond `--max-instances`.
pub const MAX_IDLE_INSTANCES: u32 = 32;
const SLOT_WAIT: Duration = Duration::from_secs(5);

/// `--max-instances`, `--request-timeout` and WASI 0.3's
/// `--max-instance-reuse-count`,
/// `--max-instance-concurrent-reuse-count`, `--idle-instance-timeout`.
#[derive(Clone, Copy)]
pub struct Limits {
    pub max_instances: u32,
    pub request_timeout: Duration,
    pub reuse_count: u32,
    pub concurrent_reuse: u32,
    pub idle_timeout: Duration,
}

/// A component ready to instantiate, what its instances share, its limits.
struct Component {
    pre: ProxyPre<State>,
    shared: Arc<Shared>,
    limits: Limits,
    /// The pooling allocator's room: WASI 0.3 instances, busy or idle. A
    /// request waits for a request slot, never for an instance bound to it
    /// (an idle instance of another thread keeps its room until it expires).
    instances: Arc<Semaphore>,
}

impl Component {
    /// Room for one more WASI 0.3 instance, held while it lives.
    async fn instance_room(&self) -> wasmtime::Result<OwnedSemaphorePermit> {
        slot(&self.instances).await
    }

    /// A new store, its guest yielding every epoch tick, and the instance.
    async fn instantiate(&self) -> wasmtime::Result<(Store<State>, Proxy)> {
        let engine = match &self.pre {
            ProxyPre::P2(pre) => pre.engine(),
            ProxyPre::P3(pre) => pre.engine(),
        };
        let mut store = Store::new(engine, State::new(self.shared.clone()));
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let proxy = self.pre.instantiate_async(&mut store).await?;
        Ok((store, proxy))
    }
}

async fn slot(slots: &Arc<Semaphore>) -> wasmtime::Result<OwnedSemaphorePermit> {
    let slot = tokio::time::timeout(SLOT_WAIT, slots.clone().acquire_owned()).await;
    Ok(slot.map_err(|_| NoSlot)??)
}

/// Every slot (request or instance room) stayed taken for `SLOT_WAIT`.
#[derive(Debug)]
struct NoSlot;

impl std::fmt::Display for NoSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "every slot was busy for {} s", SLOT_WAIT.as_secs())
    }
}

impl std::error::Error for NoSlot {}

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
