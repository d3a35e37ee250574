//! The WASI 0.3 adapter (spin-sdk 7, `#[http_service]`,
//! `wasi:http/handler@0.3.0`, `spin:*@3`/`@4`): for Spin 4.1 and later and
//! Akamai Functions. Spin reuses an instance for many requests, up to 16 at
//! once; what the instance keeps between them (`instance`) never changes an
//! answer.

mod instance;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::cell::OnceCell;
use std::rc::Rc;
use std::time::Instant;

use futures::StreamExt;
use spin_sdk::http::body::IncomingBodyExt;
use spin_sdk::http::Request;
use spin_sdk::wasip3::http::types::{ErrorCode, Fields, Response as WasiResponse};
use spin_sdk::wasip3::wit_bindgen::{yield_async, StreamWriter};
use spin_sdk::wasip3::{spawn, wit_future, wit_stream};

use super::{log, unix_now, Store, Unsent};
use crate::app::{self, Served};
use crate::envelope::Body;
use crate::error::ApiError;
use crate::log as lines;
use crate::port::RequestHead;
use crate::port::{header_values, join_values, split_target, BodyError, BodyStream, Context};
use crate::settings::{
    read_accounts, Accounts, Database, Setting, SettingSource, SettingUnavailable,
};

#[spin_sdk::http_service]
async fn handle_request(request: Request) -> Result<WasiResponse, ErrorCode> {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let target = request.uri().path_and_query().map_or("/", |target| target.as_str()).to_string();
    let (path, query) = split_target(&target);
    let headers: Vec<(String, Vec<u8>)> = request
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
        .collect();
    let head = RequestHead { method: &method, path, query, headers: &headers };
    let length = join_values(header_values(&headers, "content-length"));
    let declared = length.and_then(|value| std::str::from_utf8(&value).ok()?.trim().parse().ok());
    let body = RequestBody { declared, body: request.into_body().stream() };
    let mut ctx = SpinContext { settings: instance::settings().await, now: OnceCell::new() };
    let served = app::handle(&mut ctx, &head, body).await;
    send(served, started)
}

/// Hands the response to Spin and writes its body after it, on a task of its
/// own; then the request's log line. A streamed list that fails ends the body
/// with an error, so the client sees it cut, never a well-formed partial list.
fn send(served: Served, started: Instant) -> Result<WasiResponse, ErrorCode> {
    let Served { response, fields } = served;
    let mut headers: Vec<(String, Vec<u8>)> = response
        .headers()
        .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
        .collect();
    if let Body::Bytes(bytes) = &response.body {
        // Known up front: the host sends it whole, not chunked.
        headers.push(("content-length".to_string(), bytes.len().to_string().into_bytes()));
    }
    let status = response.status;
    let headers = Fields::from_list(&headers)
        .map_err(|error| ErrorCode::InternalError(Some(format!("response headers: {error:?}"))))?;
    let (mut writer, contents) = wit_stream::new::<u8>();
    let (result, trailers) = wit_future::new(|| Err(ErrorCode::InternalError(None)));
    let (wasi_response, _) = WasiResponse::new(headers, Some(contents), trailers);
    let _ = wasi_response.set_status_code(status);
    spawn(async move {
        let written = write_body(&mut writer, response.body).await;
        drop(writer);
        let outcome = match written {
            Ok(()) => Ok(None),
            Err(unsent) => {
                unsent.log(&fields);
                Err(ErrorCode::InternalError(None))
            }
        };
        let _ = result.write(outcome).await;
        log(&lines::request(&fields, status, started.elapsed().as_micros()));
    });
    Ok(wasi_response)
}

async fn write_body(writer: &mut StreamWriter<u8>, body: Body) -> Result<(), Unsent> {
    let unread = |rest: Vec<u8>| if rest.is_empty() { Ok(()) } else { Err(Unsent::ClientLeft) };
    match body {
        Body::Bytes(bytes) => unread(writer.write_all(bytes).await),
        Body::Pieces(mut pieces) => {
            while let Some(piece) = pieces.next().await {
                let piece = piece.map_err(Unsent::cut_short)?;
                unread(writer.write_all(piece).await)?;
                // A page is read by a blocking call, and a fast client takes
                // each piece at once: without this the instance's other
                // requests would wait for the whole list (seconds).
                yield_async().await;
            }
            Ok(())
        }
    }
}

/// The request body as Spin streams it.
struct RequestBody<S> {
    declared: Option<u64>,
    body: S,
}

impl<S, T, E> BodyStream for RequestBody<S>
where
    S: futures::Stream<Item = Result<T, E>> + Unpin,
    T: AsRef<[u8]>,
{
    fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        match self.body.next().await {
            Some(Ok(chunk)) => Ok(Some(chunk.as_ref().to_vec())),
            Some(Err(_)) => Err(BodyError::Unreadable),
            None => Ok(None),
        }
    }
}

/// Spin as the core's `Context`, for one request.
struct SpinContext {
    settings: Rc<instance::Settings>,
    /// The request's time: one host call however often it is asked for.
    now: OnceCell<u64>,
}

#[cfg(feature = "sqlite")]
type Sqlite = sqlite::SqliteConnection;
#[cfg(not(feature = "sqlite"))]
type Sqlite = super::NotBuilt;
#[cfg(feature = "postgres")]
type Postgres = postgres::PostgresConnection;
#[cfg(not(feature = "postgres"))]
type Postgres = super::NotBuilt;

impl SettingSource for SpinContext {
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        self.settings.get(setting)
    }

    fn log(&mut self, line: &str) {
        log(line);
    }

    /// Parsed once per settings the instance reads, never per request.
    fn accounts(&mut self) -> Result<Rc<Accounts>, ApiError> {
        let settings = self.settings.clone();
        settings.accounts.get_or_init(|| read_accounts(self).map(Rc::new)).clone()
    }
}

impl Context for SpinContext {
    type Store = Store<Sqlite, Postgres>;

    fn now(&self) -> u64 {
        *self.now.get_or_init(unix_now)
    }

    fn connect(&mut self, database: &Database) -> anyhow::Result<Self::Store> {
        super::connect(database)
    }

    async fn pause(&mut self, duration: std::time::Duration) {
        spin_sdk::wasip3::clocks::monotonic_clock::wait_for(duration.as_nanos() as u64).await;
    }
}
