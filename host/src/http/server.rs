//! The server: accepting on every serving thread, and each request from its
//! arrival (and the headers Spin gives a component with it) to its answer.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use wasmtime::error::Context as _;
use wasmtime_wasi_http::handler::{
    ExpirationError, InstantiationError, Proxy, ProxyHandler, ProxyPre,
};
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::WasiHttpView;

use super::p3::{Doomed, Instances};
use super::request_body::RequestBody;
use super::{slot, Component, Limits, NoSlot, MAX_IDLE_INSTANCES};
use crate::manifest::Route;
use crate::state::{Shared, State};

const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// In-flight requests get this long to finish after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
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

fn stopped(method: &Method, path: &str, timeout: Duration) {
    eprintln!(
        "component stopped on {method} {path}: still running after {} s \
         (--request-timeout); its instance is discarded",
        timeout.as_secs_f64()
    );
}

/// Adds the headers Spin gives a component. Like Spin, after the client's
/// own: a client that sends `spin-client-addr` cannot replace the
/// platform's, which is the last value. Returns the full URL.
fn add_spin_headers(
    parts: &mut Parts,
    route: &Route,
    path_info: &str,
    peer: SocketAddr,
    local: Option<SocketAddr>,
) -> String {
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
    let full_url = format!("http://{host}{path_and_query}");
    let spin_headers = [
        ("spin-path-info", path_info.to_string()),
        ("spin-full-url", full_url.clone()),
        ("spin-matched-route", route.raw.clone()),
        ("spin-base-path", "/".to_string()),
        ("spin-raw-component-route", route.raw.clone()),
        ("spin-component-route", route.base.clone()),
        ("spin-client-addr", peer.to_string()),
    ];
    for (name, value) in spin_headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(HeaderName::from_static(name), value);
        }
    }
    full_url
}

/// One component on its route, with slots and a pool of its own. A WASI 0.2
/// (`wasi:http/incoming-handler`) component is served here, an instance per
/// request, as Spin does; a WASI 0.3 one by a `ProxyHandler` per serving
/// thread (`p3.rs`).
pub struct Server {
    component: Arc<Component>,
    route: Route,
    /// Requests served at once (`--max-instances`): a WASI 0.2 request has
    /// an instance of its own.
    requests: Arc<Semaphore>,
}

/// Every HTTP component of the app, the most specific route first (the
/// manifest's order): a request goes to the first whose route matches, as
/// Spin routes it, else 404.
pub struct App(pub Vec<Arc<Server>>);

impl App {
    /// One single-threaded runtime per core on the same listener: a
    /// connection and its instances stay on one thread. Against one
    /// multi-threaded runtime (`GET /book/{id}`, c16, SQLite): 116 -> 44 us
    /// of CPU and 2.64 -> 0.58 context switches a request. Returns once
    /// `shutdown` resolved and in-flight requests finished (or the grace).
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let (stop, stopped) = watch::channel(false);
        let listener = listener.into_std()?;
        let mut others = Vec::new();
        for index in 1..serving_threads() {
            let Ok(listener) = listener.try_clone() else {
                eprintln!("cannot share the listener: serving on {index} thread(s)");
                break;
            };
            let (app, stopped) = (self.clone(), stopped.clone());
            let serve = move || {
                let served = serving_runtime().and_then(|runtime| {
                    runtime.block_on(async move {
                        app.accept_loop(TcpListener::from_std(listener)?, stopped).await;
                        Ok(())
                    })
                });
                if let Err(e) = served {
                    eprintln!("serving thread {index}: {e}");
                }
            };
            match std::thread::Builder::new().name(format!("serve-{index}")).spawn(serve) {
                Ok(handle) => others.push(handle),
                Err(e) => eprintln!("cannot start serving thread {index}: {e}"),
            }
        }
        let listener = TcpListener::from_std(listener)?;
        let trigger = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        tokio::join!(self.accept_loop(listener, stopped), trigger);
        for handle in others {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
        Ok(())
    }

    async fn accept_loop(self: Arc<Self>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
        let local = listener.local_addr().ok();
        let handlers: Arc<[_]> = self.0.iter().map(|server| server.proxy_handler()).collect();
        let graceful = GracefulShutdown::new();
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).keep_alive(true);
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
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let _ = stream.set_nodelay(true);
            let (app, handlers) = (self.clone(), handlers.clone());
            let service = hyper::service::service_fn(move |req| {
                let (app, handlers) = (app.clone(), handlers.clone());
                async move { Ok::<_, Infallible>(app.handle(req, &handlers, peer, local).await) }
            });
            let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
            // A client's resets and timeouts concern only that client.
            tokio::spawn(async move {
                let _ = conn.await;
            });
        }
        drop(listener);
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
            let grace = SHUTDOWN_GRACE.as_secs();
            eprintln!("shutdown: gave up on in-flight requests after {grace} s");
        }
        handlers.iter().flatten().for_each(|handler| handler.state().stop());
    }

    async fn handle(
        &self,
        req: Request<Incoming>,
        handlers: &[Option<ProxyHandler<Instances>>],
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Response<HyperOutgoingBody> {
        let path = req.uri().path();
        match self.0.iter().position(|server| server.route.matches(path).is_some()) {
            Some(i) => self.0[i].clone().handle(req, handlers[i].clone(), peer, local).await,
            None => empty(StatusCode::NOT_FOUND),
        }
    }
}

impl Server {
    pub fn new(pre: ProxyPre<State>, shared: Arc<Shared>, route: Route, limits: Limits) -> Self {
        let requests = Arc::new(Semaphore::new(limits.max_instances as usize));
        let room = limits.max_instances + MAX_IDLE_INSTANCES;
        let instances = Arc::new(Semaphore::new(room as usize));
        let component = Arc::new(Component { pre, shared, limits, instances });
        Server { component, route, requests }
    }

    /// A serving thread's handler of WASI 0.3 instances (none for WASI 0.2).
    fn proxy_handler(self: &Arc<Self>) -> Option<ProxyHandler<Instances>> {
        let instances = Instances { component: self.component.clone(), stopped: Arc::default() };
        matches!(self.component.pre, ProxyPre::P3(_)).then(|| ProxyHandler::new(instances))
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        p3: Option<ProxyHandler<Instances>>,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Response<HyperOutgoingBody> {
        let arrived = tokio::time::Instant::now();
        let (method, path) = (req.method().clone(), req.uri().path().to_string());
        let Some(path_info) = self.route.matches(&path) else {
            return empty(StatusCode::NOT_FOUND);
        };
        let (mut parts, body) = req.into_parts();
        // Before a slot is taken: a client that stalls holds none.
        let body = RequestBody::read_ahead(body, arrived).await;
        let full_url = add_spin_headers(&mut parts, &self.route, path_info, peer, local);
        let doomed = Doomed::default();
        let answered = match (p3, slot(&self.requests).await) {
            (_, Err(e)) => Err(e),
            (Some(handler), Ok(_slot)) => {
                // As Spin: wasi:http 0.3 reads the scheme and authority from it.
                parts.uri = full_url.parse().unwrap_or(parts.uri);
                let req = Request::from_parts(parts, body.boxed_unsync());
                handler.handle(doomed.clone(), req).await
            }
            (None, Ok(slot)) => {
                self.handle_p2(Request::from_parts(parts, body), slot, &method, &path).await
            }
        };
        let e = match answered {
            Ok(response) => return response,
            Err(e) => e,
        };
        // A failure: 503 without a slot, else a plain 500 and a log line.
        let instantiating = e.downcast_ref::<InstantiationError<Doomed>>().map(|i| &i.error);
        if e.is::<NoSlot>() || instantiating.is_some_and(|e| e.is::<NoSlot>()) {
            eprintln!("{method} {path}: {NoSlot}: answered 503");
            return empty(StatusCode::SERVICE_UNAVAILABLE);
        }
        if let Some(error) = instantiating {
            eprintln!("cannot instantiate the component: {error:?}");
        } else if e.is::<ExpirationError>() || doomed.get().is_some_and(|d| d.load(Relaxed)) {
            stopped(&method, &path, self.component.limits.request_timeout);
        } else {
            eprintln!("component failed on {method} {path}: {e:?}");
        }
        empty(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// A WASI 0.2 request, in a new instance called in a task of its own
    /// (holding the request's slot): the guest may stream the body after the
    /// head.
    async fn handle_p2(
        self: &Arc<Self>,
        req: Request<RequestBody>,
        permit: OwnedSemaphorePermit,
        method: &Method,
        path: &str,
    ) -> wasmtime::Result<Response<HyperOutgoingBody>> {
        let (mut store, proxy) =
            match self.component.instantiate().await.context("cannot instantiate the component")? {
                (store, Proxy::P2(proxy)) => (store, proxy),
                _ => wasmtime::bail!("not a WASI 0.2 component"),
            };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let mut http = store.data_mut().http();
        let request = http.new_incoming_request(Scheme::Http, req)?;
        let outparam = http.new_response_outparam(sender)?;
        let (method, path, server) = (method.clone(), path.to_string(), self.clone());
        tokio::spawn(async move {
            let timeout = server.component.limits.request_timeout;
            let call =
                proxy.wasi_http_incoming_handler().call_handle(&mut store, request, outparam);
            match tokio::time::timeout(timeout, call).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("component failed on {method} {path}: {e:?}"),
                // Dropping the call stopped the guest.
                Err(_) => stopped(&method, &path, timeout),
            }
            drop(permit);
        });
        match receiver.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(code)) => wasmtime::bail!("the component answered with an error: {code:?}"),
            // Trapped, timed out or set no response (the task logs why).
            Err(_) => Ok(empty(StatusCode::INTERNAL_SERVER_ERROR)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_headers_come_last_and_host_is_filled_in() {
        let route = Route { raw: "/api/...".into(), base: "/api".into(), wildcard: true };
        let req = http::Request::builder().uri("/api/items?x=1");
        let req = req.header("spin-client-addr", "6.6.6.6:1").body(()).unwrap();
        let (mut parts, ()) = req.into_parts();
        let peer = "10.0.0.1:4000".parse().unwrap();
        add_spin_headers(
            &mut parts,
            &route,
            "/items",
            peer,
            Some("127.0.0.1:8080".parse().unwrap()),
        );
        let h = &parts.headers;
        let values = |name: &str| -> Vec<&str> {
            h.get_all(name).iter().map(|v| v.to_str().unwrap()).collect()
        };
        assert_eq!(values("host"), ["127.0.0.1:8080"]);
        assert_eq!(values("spin-client-addr"), ["6.6.6.6:1", "10.0.0.1:4000"]);
        assert_eq!(values("spin-full-url"), ["http://127.0.0.1:8080/api/items?x=1"]);
        assert_eq!(values("spin-path-info"), ["/items"]);
        assert_eq!(values("spin-component-route"), ["/api"]);
        assert_eq!(values("spin-matched-route"), ["/api/..."]);
    }
}
