//! The HTTP side: hyper accepts requests and hands each one to the component's
//! `wasi:http/incoming-handler`, in a fresh instance (Spin's isolation) or, with
//! `--max-instance-reuse N`, in an idle instance that has served fewer than N.
//!
//! One single-threaded tokio runtime per core, all accepting from the same
//! listener: a connection, the instances serving its requests and their
//! SQLite statements stay on one thread (measured: see the README's
//! performance section).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use wasmtime::Store;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyPre};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::WasiHttpView;

use crate::manifest::Route;
use crate::state::{DbCalls, Shared, State};

/// A client must send its request headers within this time.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// ... and its whole body within this time.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// In-flight requests get this long to finish after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Instances running at once; more requests wait for a slot.
pub const MAX_ACTIVE_INSTANCES: u32 = 32;
/// Idle instances kept for reuse (only with `--max-instance-reuse` > 1).
pub const MAX_IDLE_INSTANCES: u32 = 32;
/// Blocking threads per runtime. Statements run inline on the serving
/// threads; the blocking pool only closes connections left in a transaction.
pub const MAX_BLOCKING_THREADS_PER_RUNTIME: usize = 4;

/// Serving threads: one per core this process may run on, or
/// `BOOK_HOST_THREADS` (1 to 64).
fn serving_threads() -> usize {
    std::env::var("BOOK_HOST_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(64)))
}

/// Resolves once the serving threads are told to stop (or the sender is gone).
async fn stop_signal(mut stopped: tokio::sync::watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

const INTERNAL_ERROR: &str = r#"{"status":500,"message":"Internal server error","data":null}"#;

pub struct Server {
    pre: ProxyPre<State>,
    shared: Arc<Shared>,
    route: Route,
    max_reuse: u32,
    idle: Mutex<Vec<Instance>>,
    active: Arc<Semaphore>,
}

struct Instance {
    store: Store<State>,
    proxy: Proxy,
    served: u32,
}

impl Server {
    pub fn new(pre: ProxyPre<State>, shared: Arc<Shared>, route: Route, max_reuse: u32) -> Server {
        Server {
            pre,
            shared,
            route,
            max_reuse,
            idle: Mutex::new(Vec::new()),
            active: Arc::new(Semaphore::new(MAX_ACTIVE_INSTANCES as usize)),
        }
    }

    /// Serves on one single-threaded runtime per core, every runtime
    /// accepting from the same listener: a request runs on one thread from
    /// accept to response (the connection, the instance and its SQLite calls),
    /// so nothing wakes another thread on the way. Returns once `shutdown` has
    /// resolved and in-flight requests have finished (up to a grace period).
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
            let spawned = std::thread::Builder::new()
                .name(format!("serve-{index}"))
                .spawn(move || {
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .max_blocking_threads(MAX_BLOCKING_THREADS_PER_RUNTIME)
                        .build()
                    {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            eprintln!("cannot start serving thread {index}: {e}");
                            return;
                        }
                    };
                    runtime.block_on(async move {
                        match TcpListener::from_std(clone) {
                            Ok(listener) => {
                                server.accept_loop(listener, stop_signal(stopped)).await
                            }
                            Err(e) => eprintln!("serving thread {index}: {e}"),
                        }
                    });
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

    /// Accepts connections on this thread's runtime until `shutdown`
    /// resolves, then lets in-flight requests finish (up to a grace period).
    async fn accept_loop(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) {
        let local = listener.local_addr().ok();
        let graceful = GracefulShutdown::new();
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .keep_alive(true);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // E.g. out of file descriptors: back off instead of spinning.
                        eprintln!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let server = self.clone();
            let service = hyper::service::service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(server.handle(req, peer, local).await) }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let conn = graceful.watch(conn);
            // Client-side errors (resets, timeouts) only concern that client.
            tokio::spawn(async move {
                let _ = conn.await;
            });
        }
        drop(listener);
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            eprintln!(
                "shutdown: gave up on in-flight requests after {} s",
                SHUTDOWN_GRACE.as_secs()
            );
        }
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Response<HyperOutgoingBody> {
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let Some(path_info) = self.route.matches(&path) else {
            return empty(StatusCode::NOT_FOUND);
        };
        let req = self.spin_request(req, path_info.to_string(), peer, local);

        // Waits (rather than failing) when every instance slot is busy.
        let Ok(permit) = self.active.clone().acquire_owned().await else {
            return internal_error();
        };
        let mut instance = match self.take_idle() {
            Some(i) => i,
            None => match self.instantiate().await {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("cannot instantiate the component: {e:?}");
                    return internal_error();
                }
            },
        };

        let (sender, receiver) = tokio::sync::oneshot::channel();
        let data = instance.store.data_mut();
        data.calls = DbCalls::default();
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

        // The guest runs in its own task so it may keep streaming the body
        // after it has handed over the response head.
        let server = self.clone();
        tokio::spawn(async move {
            let Instance { store, proxy, .. } = &mut instance;
            let result = proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut *store, request, outparam)
                .await;
            if server.shared.count_db_calls {
                let c = store.data().calls;
                eprintln!(
                    "db-calls method={method} path={path} open={} execute={} query={}",
                    c.open, c.execute, c.query
                );
            }
            match result {
                Ok(()) => {
                    instance.served += 1;
                    server.recycle(instance);
                }
                // A trapped instance is never reused.
                Err(e) => eprintln!("component failed on {method} {path}: {e:?}"),
            }
            drop(permit);
        });

        match receiver.await {
            Ok(Ok(response)) => response,
            Ok(Err(code)) => {
                eprintln!("component answered with an error: {code:?}");
                internal_error()
            }
            // The guest trapped or returned without setting a response
            // (the task logs why).
            Err(_) => internal_error(),
        }
    }

    /// Adds the headers Spin gives a component and bounds the body read time.
    fn spin_request(
        &self,
        req: Request<Incoming>,
        path_info: String,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Request<DeadlineBody> {
        let (mut parts, body) = req.into_parts();
        let headers = &mut parts.headers;
        if !headers.contains_key(http::header::HOST) {
            // HTTP/1.0 clients may omit Host; wasi-http needs an authority.
            let host = local.map_or_else(|| "localhost".to_string(), |a| a.to_string());
            if let Ok(v) = HeaderValue::from_str(&host) {
                headers.insert(http::header::HOST, v);
            }
        }
        let host = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost")
            .to_string();
        let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let base = if self.route.base.is_empty() {
            "/"
        } else {
            &self.route.base
        };
        let spin_headers = [
            ("spin-full-url", format!("http://{host}{path_and_query}")),
            ("spin-path-info", path_info),
            ("spin-matched-route", self.route.raw.clone()),
            ("spin-raw-component-route", self.route.raw.clone()),
            ("spin-component-route", self.route.base.clone()),
            ("spin-base-path", base.to_string()),
            ("spin-client-addr", peer.to_string()),
        ];
        for (name, value) in spin_headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(name, v);
            } else {
                headers.remove(name);
            }
        }
        Request::from_parts(parts, DeadlineBody::new(body, BODY_TIMEOUT))
    }

    async fn instantiate(&self) -> wasmtime::Result<Instance> {
        let mut store = Store::new(self.pre.engine(), State::new(self.shared.clone()));
        let proxy = self.pre.instantiate_async(&mut store).await?;
        Ok(Instance {
            store,
            proxy,
            served: 0,
        })
    }

    fn take_idle(&self) -> Option<Instance> {
        if self.max_reuse <= 1 {
            return None;
        }
        self.idle.lock().ok()?.pop()
    }

    fn recycle(&self, instance: Instance) {
        if instance.served >= self.max_reuse {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE_INSTANCES as usize {
                idle.push(instance);
            }
        }
    }
}

fn empty(status: StatusCode) -> Response<HyperOutgoingBody> {
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
    let mut r = Response::new(body(Bytes::from_static(INTERNAL_ERROR.as_bytes())));
    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// What of a request body the component left unread is still read, and
/// discarded, before the connection closes (a "lingering close", as web
/// servers do). Closing a socket that holds unread data resets it, so a
/// client still sending, say a body over the 1 MiB limit that the component
/// refused from its Content-Length, would get "broken pipe" instead of the
/// 413 (seen in about 1 of 300 such requests under load).
const LINGER_MAX_BYTES: usize = 4 << 20;
const LINGER_TIME: Duration = Duration::from_secs(2);

/// The request body, failing once `limit` has passed since the request
/// arrived, so a stalled upload cannot hold an instance forever.
pub struct DeadlineBody {
    /// `None` once dropped into `linger`.
    inner: Option<Incoming>,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl DeadlineBody {
    fn new(inner: Incoming, limit: Duration) -> DeadlineBody {
        DeadlineBody {
            inner: Some(inner),
            deadline: Box::pin(tokio::time::sleep(limit)),
        }
    }
}

impl Drop for DeadlineBody {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        // Nothing left, or more announced than lingering would read: close.
        if body.is_end_stream() || body.size_hint().lower() > LINGER_MAX_BYTES as u64 {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(body));
        }
    }
}

/// Reads and discards the rest of a body, within the lingering bounds.
async fn linger(mut body: Incoming) {
    let discard = async {
        let mut read = 0;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > LINGER_MAX_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, discard).await;
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(frame) = Pin::new(inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Some(Err(wasmtime_wasi_http::Error::ConnectionReadTimeout)))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}
