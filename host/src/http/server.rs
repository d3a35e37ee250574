//! The server: accepting on every serving thread, and each request from its
//! arrival to its answer.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use wasmtime::Store;
use wasmtime_wasi_http::handler::{
    ExpirationError, InstantiationError, Proxy, ProxyHandler, ProxyPre,
};
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiBody, WasiHttpView};

use super::p3::{Doomed, Instances, NoSlot, Reuse};
use super::request_body::{BodyDeadline, RequestBody};
use super::spin_headers::add_spin_headers;
use crate::manifest::Route;

const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// In-flight requests get this long to finish after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
pub const SLOT_WAIT: Duration = Duration::from_secs(5);
pub const DEFAULT_MAX_INSTANCES: u32 = 32;
/// Idle instances kept for reuse (only with `--max-instance-reuse` > 1).
pub const MAX_IDLE_INSTANCES: u32 = 32;
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// A serving thread's runtime (the main thread's too). Its blocking pool
/// (tokio's default bound, 512, as Spin's) runs the SQLite statements; a
/// running instance runs at most one, so `--max-instances` bounds the threads.
pub fn serving_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// One per core this process may run on, or `SPIN_LITE_THREADS` (1 to 64).
fn serving_threads() -> usize {
    std::env::var("SPIN_LITE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(64)))
}

async fn stop_signal(mut stopped: tokio::sync::watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Advances the engine's epoch every `EPOCH_TICK`: guest code yields that often.
pub fn start_epoch_ticker(engine: wasmtime::Engine) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            engine.increment_epoch();
        })
        .map(drop)
}

/// What Spin answers itself (trigger-http's `internal_error`, `not_found`):
/// a status, an empty body, no header but hyper's.
fn empty(status: StatusCode) -> Response<HyperOutgoingBody> {
    let mut r = Response::new(Full::new(Bytes::new()).map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = status;
    r
}

fn internal_error() -> Response<HyperOutgoingBody> {
    empty(StatusCode::INTERNAL_SERVER_ERROR)
}

pub type NewState<T> = Box<dyn Fn() -> T + Send + Sync>;

/// `--max-instance-reuse` (WASI 0.2), `--max-instances`,
/// `--request-timeout`, the `--*-instance-*` of WASI 0.3.
pub struct Limits {
    pub max_reuse: u32,
    pub max_instances: u32,
    pub request_timeout: Duration,
    pub reuse: Reuse,
}

fn stopped(method: &http::Method, path: &str, timeout: Duration) {
    eprintln!(
        "component stopped on {method} {path}: still running after {} s \
         (--request-timeout); its instance is discarded",
        timeout.as_secs_f64()
    );
}

/// A WASI 0.2 (`wasi:http/incoming-handler`) component is served here, an
/// instance per request by default; a WASI 0.3 one by a `ProxyHandler` per
/// serving thread (`p3.rs`).
pub struct Server<T: 'static> {
    pre: ProxyPre<T>,
    new_state: NewState<T>,
    route: Route,
    limits: Limits,
    idle: Mutex<Vec<Instance<T>>>,
    active: Arc<Semaphore>,
}

struct Instance<T: 'static> {
    store: Store<T>,
    proxy: wasmtime_wasi_http::p2::bindings::Proxy,
    served: u32,
}

impl<T: WasiHttpView + Send + 'static> Server<T> {
    pub fn new(pre: ProxyPre<T>, new_state: NewState<T>, route: Route, limits: Limits) -> Self {
        let slots = limits.max_instances as usize;
        Server {
            pre,
            new_state,
            route,
            limits,
            idle: Mutex::new(Vec::new()),
            active: Arc::new(Semaphore::new(slots)),
        }
    }

    /// One single-threaded runtime per core on the same listener: a
    /// connection and its instances stay on one thread. Against one
    /// multi-threaded runtime (`GET /book/{id}`, c16, SQLite): 116 -> 44 us
    /// of CPU and 2.64 -> 0.58 context switches a request. Returns once
    /// `shutdown` resolved and in-flight requests finished (or the grace).
    pub async fn serve(self: Arc<Self>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        let threads = serving_threads();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut others = Vec::new();
        let listener = match listener.into_std() {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("cannot share the listener: {e}");
                return;
            }
        };
        for index in 1..threads {
            let Ok(clone) = listener.try_clone() else {
                eprintln!("cannot share the listener: serving on {index} thread(s)");
                break;
            };
            let server = self.clone();
            let stopped = stopped.clone();
            let spawned =
                std::thread::Builder::new().name(format!("serve-{index}")).spawn(move || {
                    let served = serving_runtime().and_then(|runtime| {
                        runtime.block_on(async move {
                            let listener = TcpListener::from_std(clone)?;
                            server.accept_loop(listener, stop_signal(stopped)).await;
                            Ok(())
                        })
                    });
                    if let Err(e) = served {
                        eprintln!("serving thread {index}: {e}");
                    }
                });
            match spawned {
                Ok(handle) => others.push(handle),
                Err(e) => eprintln!("cannot start serving thread {index}: {e}"),
            }
        }
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("cannot serve: {e}");
                let _ = stop.send(true);
                return;
            }
        };
        let trigger = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        tokio::join!(self.accept_loop(listener, stop_signal(stopped)), trigger);
        for handle in others {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }

    async fn accept_loop(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) {
        let local = listener.local_addr().ok();
        let p3 =
            matches!(self.pre, ProxyPre::P3(_)).then(|| ProxyHandler::new(Instances(self.clone())));
        let graceful = GracefulShutdown::new();
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).keep_alive(true);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Out of file descriptors, say: back off, do not spin.
                        eprintln!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let (server, p3) = (self.clone(), p3.clone());
            let service = hyper::service::service_fn(move |req| {
                let (server, p3) = (server.clone(), p3.clone());
                async move { Ok::<_, Infallible>(server.handle(req, p3, peer, local).await) }
            });
            let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
            // A client's resets and timeouts concern only that client.
            tokio::spawn(async move {
                let _ = conn.await;
            });
        }
        drop(listener);
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
            eprintln!(
                "shutdown: gave up on in-flight requests after {} s",
                SHUTDOWN_GRACE.as_secs()
            );
        }
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        p3: Option<ProxyHandler<Instances<T>>>,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Response<HyperOutgoingBody> {
        let body_deadline = BodyDeadline::start();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let Some(path_info) = self.route.matches(&path) else {
            return empty(StatusCode::NOT_FOUND);
        };
        let (mut parts, body) = req.into_parts();
        // Before a slot is taken: a client that stalls holds none.
        let body = RequestBody::read_ahead(body, body_deadline).await;
        let full_url = add_spin_headers(&mut parts, &self.route, path_info, peer, local);
        if let Some(handler) = p3 {
            // As Spin: wasi:http 0.3 reads the scheme and authority from it.
            parts.uri = full_url.parse().unwrap_or(parts.uri);
            let req = Request::from_parts(parts, body.boxed_unsync());
            return self.handle_p3(&handler, req, &method, &path).await;
        }
        let req = Request::from_parts(parts, body);

        let permit =
            match tokio::time::timeout(SLOT_WAIT, self.active.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => return internal_error(),
                Err(_) => {
                    eprintln!("{method} {path}: {NoSlot}: answered 503");
                    return empty(StatusCode::SERVICE_UNAVAILABLE);
                }
            };
        let mut instance = match self.take_idle() {
            Some(i) => i,
            None => match self.instantiate_p2().await {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("cannot instantiate the component: {e:?}");
                    return internal_error();
                }
            },
        };

        let (sender, receiver) = tokio::sync::oneshot::channel();
        let data = instance.store.data_mut();
        let resources = data
            .http()
            .new_incoming_request(Scheme::Http, req)
            .and_then(|r| Ok((r, data.http().new_response_outparam(sender)?)));
        let (request, outparam) = match resources {
            Ok(pair) => pair,
            Err(e) => {
                eprintln!("cannot pass the request to the component: {e:?}");
                return internal_error();
            }
        };

        // Its own task: the guest may stream the body after the head.
        let server = self.clone();
        tokio::spawn(async move {
            let timeout = server.limits.request_timeout;
            let result = {
                let Instance { store, proxy, .. } = &mut instance;
                let call =
                    proxy.wasi_http_incoming_handler().call_handle(&mut *store, request, outparam);
                tokio::time::timeout(timeout, call).await
            };
            match result {
                Ok(Ok(())) => {
                    instance.served += 1;
                    server.recycle(instance);
                }
                // A trapped instance is never reused.
                Ok(Err(e)) => eprintln!("component failed on {method} {path}: {e:?}"),
                // Dropping the call stopped the guest; its instance goes too.
                Err(_) => stopped(&method, &path, timeout),
            }
            drop(permit);
        });

        match receiver.await {
            Ok(Ok(response)) => response,
            Ok(Err(code)) => {
                eprintln!("component answered with an error: {code:?}");
                internal_error()
            }
            // Trapped, timed out or set no response (the task logs why).
            Err(_) => internal_error(),
        }
    }

    /// A WASI 0.3 request, through this thread's handler; a failure answers
    /// as on the 0.2 path (503 without a slot, else a plain 500 and a log
    /// line that says why).
    async fn handle_p3(
        &self,
        handler: &ProxyHandler<Instances<T>>,
        req: Request<WasiBody>,
        method: &http::Method,
        path: &str,
    ) -> Response<HyperOutgoingBody> {
        let doomed = Doomed::default();
        let e = match handler.handle(doomed.clone(), req).await {
            Ok(response) => return response,
            Err(e) => e,
        };
        let timed_out = doomed.get().is_some_and(|doomed| doomed.load(Relaxed));
        if let Some(InstantiationError { error, .. }) =
            e.downcast_ref::<InstantiationError<Doomed>>()
        {
            if error.is::<NoSlot>() {
                eprintln!("{method} {path}: {error}: answered 503");
                return empty(StatusCode::SERVICE_UNAVAILABLE);
            }
            eprintln!("cannot instantiate the component: {error:?}");
        } else if e.is::<ExpirationError>() || timed_out {
            stopped(method, path, self.limits.request_timeout);
        } else {
            eprintln!("component failed on {method} {path}: {e:?}");
        }
        internal_error()
    }

    pub(super) fn slots(&self) -> Arc<Semaphore> {
        self.active.clone()
    }

    pub(super) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A new store, its guest yielding every epoch tick, and the instance.
    pub(super) async fn instantiate(&self) -> wasmtime::Result<(Store<T>, Proxy)> {
        let engine = match &self.pre {
            ProxyPre::P2(pre) => pre.engine(),
            ProxyPre::P3(pre) => pre.engine(),
        };
        let mut store = Store::new(engine, (self.new_state)());
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let proxy = self.pre.instantiate_async(&mut store).await?;
        Ok((store, proxy))
    }

    async fn instantiate_p2(&self) -> wasmtime::Result<Instance<T>> {
        match self.instantiate().await? {
            (store, Proxy::P2(proxy)) => Ok(Instance { store, proxy, served: 0 }),
            _ => Err(wasmtime::format_err!("not a WASI 0.2 component")),
        }
    }

    fn take_idle(&self) -> Option<Instance<T>> {
        if self.limits.max_reuse <= 1 {
            return None;
        }
        self.idle.lock().ok()?.pop()
    }

    fn recycle(&self, instance: Instance<T>) {
        if instance.served >= self.limits.max_reuse {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE_INSTANCES as usize {
                idle.push(instance);
            }
        }
    }
}
