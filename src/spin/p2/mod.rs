//! The WASI 0.2 adapter (spin-sdk 5.2, `fermyon:spin/*@2.0.0`): for SpinKube
//! and Spin 2.6 to 4.0, where every request gets an instance of its own.
//! So nothing is kept between requests: each opens its store and reads the
//! settings it needs, each read a host call.

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::cell::OnceCell;
use std::time::Instant;

use futures::StreamExt;
use spin_sdk::http::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};
use spin_sdk::wit::wasi::http0_2_0::types::{IncomingBody, InputStream};
use wasi::io::streams::{OutputStream, StreamError};

use super::{log, resolve, unix_now, Store, Unsent};
use crate::envelope::{Body, Response};
use crate::port::{join_values, split_target, BodyError, BodyStream, Context, RequestHead};
use crate::settings::{Database, Setting, SettingSource, SettingUnavailable};
use crate::{app, log as lines};

/// How much of the body one host call reads.
const READ_CHUNK_BYTES: u64 = 64 * 1024;

#[spin_sdk::http_component]
async fn handle_request(request: IncomingRequest, response_out: ResponseOutparam) {
    let started = Instant::now();
    let method = request.method().to_string();
    let target = request.path_with_query().unwrap_or_default();
    let (path, query) = split_target(&target);
    // Every field in one host call: cheaper than asking for each by name.
    let headers = request.headers().entries();
    let head = RequestHead { method: &method, path, query, headers: &headers };
    let body = RequestBody::new(request, &headers);
    let mut ctx = SpinContext::default();
    let app::Served { response, fields } = app::handle(&mut ctx, &head, body).await;
    let status = response.status;
    if let Err(unsent) = send(response_out, response).await {
        unsent.log(&fields);
    }
    log(&lines::request(&fields, status, started.elapsed().as_micros()));
}

/// Writes the response. A body the host takes in one write (wasmtime's
/// wasi-http buffers a chunk of up to 1 MiB) is written and finished before
/// the response is handed over, so the host sends head and body at once:
/// handed over first, the head left alone and the rest, a small second TCP
/// segment, could wait for the client's delayed ACK (40 ms on Linux). A
/// streamed list is written piece by piece; a piece that fails leaves the
/// body unfinished, so the client sees the connection cut. Once the response
/// is handed over, a write that fails is the client gone.
async fn send(response_out: ResponseOutparam, response: Response) -> Result<(), Unsent> {
    let headers: Vec<(String, Vec<u8>)> = response
        .headers()
        .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
        .collect();
    let failed = |reason: &str| Unsent::Failed(reason.to_string());
    let fields =
        Fields::from_list(&headers).map_err(|_| failed("could not build response headers"))?;
    let outgoing = OutgoingResponse::new(fields);
    outgoing.set_status_code(response.status).map_err(|()| failed("could not set the status"))?;
    let body = outgoing.body().map_err(|()| failed("could not open the response body"))?;
    let stream = body.write().map_err(|()| failed("could not open the response body"))?;
    let written = match response.body {
        Body::Bytes(bytes) if stream.check_write().is_ok_and(|room| room >= bytes.len() as u64) => {
            // Room for it all: no wait for the host, which has no response yet.
            let written = stream.write(&bytes).and_then(|()| stream.flush());
            drop(stream);
            let finished = written.is_ok() && OutgoingBody::finish(body, None).is_ok();
            response_out.set(outgoing);
            return if finished {
                Ok(())
            } else {
                Err(Unsent::Failed(format!("could not send the body: {written:?}")))
            };
        }
        Body::Bytes(bytes) => {
            response_out.set(outgoing);
            write_all(&stream, &bytes)
        }
        Body::Pieces(mut pieces) => {
            response_out.set(outgoing);
            let mut written = Ok(());
            while let (Ok(()), Some(piece)) = (&written, pieces.next().await) {
                match piece {
                    Ok(piece) => written = write_all(&stream, &piece),
                    // Not finished: the host tells the client the body is incomplete.
                    Err(error) => return Err(Unsent::cut_short(error)),
                }
            }
            written
        }
    };
    drop(stream);
    written.map_err(|_| Unsent::ClientLeft)?;
    OutgoingBody::finish(body, None).map_err(|_| Unsent::ClientLeft)
}

/// Writes `bytes` as fast as the host takes them.
fn write_all(stream: &OutputStream, mut bytes: &[u8]) -> Result<(), StreamError> {
    while !bytes.is_empty() {
        let room = stream.check_write()?;
        if room == 0 {
            stream.subscribe().block();
            continue;
        }
        let (now, rest) = bytes.split_at(bytes.len().min(room as usize));
        stream.write(now)?;
        bytes = rest;
    }
    stream.blocking_flush()
}

/// The request body, streamed from the host once an endpoint reads it.
struct RequestBody {
    declared: Option<u64>,
    request: Option<IncomingRequest>,
    /// Once reading began (the stream is a child of the body: dropped first).
    reading: Option<(InputStream, IncomingBody)>,
}

impl RequestBody {
    fn new(request: IncomingRequest, headers: &[(String, Vec<u8>)]) -> RequestBody {
        let length = join_values(crate::port::header_values(headers, "content-length"));
        let declared =
            length.and_then(|value| std::str::from_utf8(&value).ok()?.trim().parse().ok());
        RequestBody { declared, request: Some(request), reading: None }
    }
}

impl BodyStream for RequestBody {
    fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        if let Some(request) = self.request.take() {
            let body = request.consume().map_err(|()| BodyError::Unreadable)?;
            let stream = body.stream().map_err(|()| BodyError::Unreadable)?;
            self.reading = Some((stream, body));
        }
        let Some((stream, _)) = &self.reading else { return Ok(None) };
        match stream.blocking_read(READ_CHUNK_BYTES) {
            Ok(chunk) => Ok(Some(chunk)),
            Err(StreamError::Closed) => Ok(None),
            Err(StreamError::LastOperationFailed(_)) => Err(BodyError::Unreadable),
        }
    }
}

/// Spin as the core's `Context`, for one request.
#[derive(Default)]
struct SpinContext {
    /// The request's time and settings: one host call however often each
    /// is asked for.
    now: OnceCell<u64>,
    settings: [OnceCell<Result<Option<String>, SettingUnavailable>>; Setting::ALL.len()],
}

#[cfg(feature = "sqlite")]
type Sqlite = sqlite::SqliteConnection;
#[cfg(not(feature = "sqlite"))]
type Sqlite = super::NotBuilt;
#[cfg(feature = "postgres")]
type Postgres = postgres::PostgresConnection;
#[cfg(not(feature = "postgres"))]
type Postgres = super::NotBuilt;

/// A Spin variable, as `resolve` takes it.
fn variable(name: &str) -> Result<Option<String>, String> {
    use spin_sdk::variables::Error;
    match spin_sdk::variables::get(name) {
        Ok(value) => Ok(Some(value)),
        Err(Error::Undefined(_)) => Ok(None),
        Err(Error::Provider(reason)) => Err(format!("the variables provider failed: {reason}")),
        Err(Error::InvalidName(reason)) => Err(format!("invalid variable name: {reason}")),
        Err(Error::Other(reason)) => Err(reason),
    }
}

impl SettingSource for SpinContext {
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        let read = || resolve(setting, variable(setting.variable_name()));
        self.settings[setting as usize].get_or_init(read).clone()
    }

    fn log(&mut self, line: &str) {
        log(line);
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
        std::thread::sleep(duration);
    }
}
