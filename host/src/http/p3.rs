//! WASI 0.3 (`wasi:http/handler@0.3.0`): wasmtime-wasi-http's `ProxyHandler`
//! reuses instances as Spin main does, within spin-lite's bounds: a
//! request holds one of the `--max-instances` slots until its answer's head,
//! an instance room in the pooling allocator for its life (neither within
//! `SLOT_WAIT`: `NoSlot`, a 503), and a request past
//! `--request-timeout` fails (`ExpirationError`, a 500) and dooms its
//! instance, dropped once no other request is in it. A guest that loops
//! keeps the event loop from timing it out; the handler's outer check then
//! drops the instance a deadline after its latest request began.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::component::GuestTaskId;
use wasmtime::{Store, StoreContextMut};
use wasmtime_wasi_http::handler::{
    HandlerState, Instance, ShouldAccept, WorkerExpiration, WorkerState, WorkerStatus,
};
use wasmtime_wasi_http::WasiHttpView;

use super::{Component, Limits};
use crate::state::State;

/// Whether the component exports `wasi:http/handler@0.3.*` (WASI 0.3), from
/// its own exports (those of the components inside it do not count).
pub fn exports_wasi_0_3(component: &[u8]) -> bool {
    use wasmparser::Payload::{ComponentExportSection, ComponentSection, End, ModuleSection};
    let mut depth = 0;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload {
            Ok(ModuleSection { .. } | ComponentSection { .. }) => depth += 1,
            Ok(End(_)) => depth -= 1,
            Ok(ComponentExportSection(exports)) if depth == 0 => {
                let mut names = exports.into_iter().flatten().map(|e| e.name.name);
                if names.any(|name| name.starts_with("wasi:http/handler@0.3")) {
                    return true;
                }
            }
            Err(_) => return false,
            _ => {}
        }
    }
    false
}

/// A request's instance, once it has one: whether it ran out of time.
pub type Doomed = Arc<OnceLock<Arc<AtomicBool>>>;

/// The `ProxyHandler`'s state: one per serving thread, so a connection and
/// the instances serving it stay on one thread.
pub struct Instances {
    pub(super) component: Arc<Component>,
    /// Serving ended: the runtime drops the workers left, unfinished.
    pub(super) stopped: Arc<AtomicBool>,
}

impl Instances {
    pub fn stop(&self) {
        self.stopped.store(true, Relaxed);
    }
}

impl HandlerState for Instances {
    type StoreData = State;
    type WorkerExpiration = Expiration;
    type WorkerState = Worker;

    async fn instantiate(&self) -> wasmtime::Result<Instance<State, Expiration, Worker>> {
        let room = self.component.instance_room().await?;
        let (store, proxy) = self.component.instantiate().await?;
        let (limits, doomed) = (self.component.limits, Arc::new(AtomicBool::new(false)));
        let stopped = self.stopped.clone();
        let sleep = Box::pin(tokio::time::sleep(Duration::MAX));
        Ok(Instance {
            store,
            proxy,
            view: State::http,
            expiration: Expiration { limits, doomed: doomed.clone(), sleep },
            state: Worker { limits, doomed, stopped, _room: room },
        })
    }
}

pub struct Worker {
    limits: Limits,
    /// A request of this instance ran past its deadline.
    doomed: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
    _room: OwnedSemaphorePermit,
}

impl WorkerState for Worker {
    type StoreData = State;
    type RequestData = Doomed;

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= self.limits.reuse_count as usize {
            ShouldAccept::Never
        } else if concurrent >= self.limits.concurrent_reuse as usize {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    fn on_request_start(
        &self,
        _: StoreContextMut<'_, State>,
        request: Doomed,
        _: GuestTaskId,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
        let _ = request.set(self.doomed.clone());
        let (timeout, doomed) = (self.limits.request_timeout, self.doomed.clone());
        Box::pin(async move {
            tokio::time::sleep(timeout).await;
            doomed.store(true, Relaxed);
        })
    }

    fn drop(&self, _: Store<State>, result: wasmtime::Result<()>) {
        // A doomed instance's requests report why; at a stop, the runtime
        // drops a worker left (idle, or past the grace) as if it panicked.
        if let (Err(e), false, false) =
            (result, self.doomed.load(Relaxed), self.stopped.load(Relaxed))
        {
            eprintln!("component instance dropped: {e:?}");
        }
    }
}

/// Polled outside the instance's event loop, so it also fires while a guest
/// loops (and then dooms the instance).
pub struct Expiration {
    limits: Limits,
    doomed: Arc<AtomicBool>,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl WorkerExpiration for Expiration {
    fn poll(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        let me = self.get_mut();
        if status != WorkerStatus::Requests && me.doomed.load(Relaxed) {
            return Poll::Ready(());
        }
        let limit = match status {
            WorkerStatus::Idle => me.limits.idle_timeout,
            // Requests, or guest work after the last answer.
            _ => me.limits.request_timeout,
        };
        let Some(deadline) = start.checked_add(limit) else {
            return Poll::Pending;
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        if me.sleep.deadline() != deadline {
            me.sleep.as_mut().reset(deadline);
        }
        let expired = me.sleep.as_mut().poll(cx);
        if expired.is_ready() && status != WorkerStatus::Idle {
            me.doomed.store(true, Relaxed);
        }
        expired
    }
}
