//! The Spin adapters: the HTTP entry point, settings from Spin variables and
//! the environment, and the two stores, each only with its Cargo feature (a
//! variant imports no interface of the store it lacks).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::cell::OnceCell;
use std::io::Write;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use spin_sdk::http::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};
use spin_sdk::wit::wasi::http0_2_0::types::IncomingBody;
use wasi::io::streams::{OutputStream, StreamError};

use crate::app;
use crate::db::Connection;
use crate::envelope::Response;
use crate::port::{header_values, join_values, Body, BodyError, Context, RequestHead};
use crate::settings::{self, DbUrl, Setting, SettingSource, SettingUnavailable, StoreKind};

/// How much of the body one host call reads.
const READ_CHUNK_BYTES: u64 = 64 * 1024;

#[spin_sdk::http_component]
async fn handle_request(request: IncomingRequest, response_out: ResponseOutparam) {
    let started = Instant::now();
    let method = request.method().to_string();
    let target = request.path_with_query().unwrap_or_default();
    let (path, query) = app::split_target(&target);
    let headers = request.headers();
    // Every field in one host call: cheaper than asking for each by name.
    let fields = headers.entries();
    let named = |name| join_values(header_values(&fields, name));
    let (authorization, origin) = (named("authorization"), named("origin"));

    let head = RequestHead {
        method: &method,
        path,
        query,
        authorization: authorization.as_deref(),
        origin: origin.as_deref(),
        headers: &fields,
    };
    let body = RequestBody { headers, request };
    let mut ctx = SpinContext::default();
    let app::Served { response, fields } = app::handle(&mut ctx, &head, body);
    let status = response.status;
    send(&mut ctx, response_out, response);
    log(&crate::log::request(&fields, status, started.elapsed().as_micros()));
}

/// Writes the response. A body the host takes in one write (wasmtime's
/// wasi-http buffers a chunk of up to 1 MiB) is written and finished before
/// the response is handed over, so the host sends head and body at once:
/// handed over first, the head left alone and the rest, a small second TCP
/// segment, could wait for the client's delayed ACK (40 ms on Linux). The
/// whole catalog's list is written page by page as it is read
/// (`books::rest_of_list`); a page that fails leaves the body unfinished,
/// so the client sees the connection cut, never a well-formed partial list.
fn send(ctx: &mut SpinContext, response_out: ResponseOutparam, response: Response) {
    let headers: Vec<(String, Vec<u8>)> = response
        .headers()
        .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
        .collect();
    let Ok(fields) = Fields::from_list(&headers) else {
        log("error: could not build response headers");
        return;
    };
    let outgoing = OutgoingResponse::new(fields);
    if outgoing.set_status_code(response.status).is_err() {
        log("error: could not set the response status");
        return;
    }
    let (Ok(body), bytes) = (outgoing.body(), &response.body) else {
        log("error: could not open the response body");
        return;
    };
    let Ok(stream) = body.write() else {
        log("error: could not open the response body");
        return;
    };
    let at_once = response.continues_after.is_none()
        && stream.check_write().is_ok_and(|room| room >= bytes.len() as u64);
    let pending = if at_once {
        Some((response_out, outgoing))
    } else {
        response_out.set(outgoing);
        None
    };
    let written = if at_once {
        // Room for it all: no wait for the host, which has no response yet.
        stream.write(bytes).and_then(|()| stream.flush())
    } else {
        let mut written = write_all(&stream, bytes);
        let mut next = response.continues_after;
        while let (Ok(()), Some(after)) = (&written, next) {
            match crate::books::rest_of_list(ctx, after) {
                Ok((piece, rest)) => {
                    written = write_all(&stream, &piece);
                    next = rest;
                }
                Err(error) => {
                    log(&format!("error: the list was cut short: {error}"));
                    // Not finished: the host tells the client the body is incomplete.
                    return;
                }
            }
        }
        written
    };
    drop(stream);
    // A body not finished tells the host it was cut short.
    let finished = written.is_ok() && OutgoingBody::finish(body, None).is_ok();
    if let Some((response_out, outgoing)) = pending {
        response_out.set(outgoing);
    }
    match written {
        Err(error) => log(&format!("error: could not send the response body: {error:?}")),
        Ok(()) if !finished => log("error: could not finish the response body"),
        Ok(()) => {}
    }
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

/// One write per line, so concurrent instances' lines never interleave.
fn log(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// The request body, streamed from the host and cut off past the limit.
struct RequestBody {
    /// The request's header fields (a child of `request`, dropped first):
    /// `Content-Length` is read only when the body is.
    headers: Fields,
    request: IncomingRequest,
}

impl Body for RequestBody {
    fn read(self, limit: usize) -> Result<Vec<u8>, BodyError> {
        let declared = join_values(self.headers.get("content-length"))
            .and_then(|value| std::str::from_utf8(&value).ok()?.trim().parse::<u64>().ok());
        // A declared length far over the limit is refused before reading a
        // byte. One a few times the limit is read to its end and dropped:
        // Spin closes the connection on an answer sent before the body was
        // read, and an honest client still sending it would see a broken
        // pipe instead of its 413.
        if declared.is_some_and(|length| length > 4 * limit as u64) {
            return Err(BodyError::TooLarge);
        }
        let incoming: IncomingBody = self.request.consume().map_err(|()| BodyError::Unreadable)?;
        let stream = incoming.stream().map_err(|()| BodyError::Unreadable)?;
        let mut body = Vec::new();
        let (mut read, mut over) = (0u64, false);
        loop {
            match stream.blocking_read(READ_CHUNK_BYTES) {
                Ok(chunk) => {
                    read += chunk.len() as u64;
                    if over || body.len() + chunk.len() > limit {
                        if declared.is_none() {
                            return Err(BodyError::TooLarge);
                        }
                        over = true;
                        body = Vec::new();
                    } else {
                        body.extend_from_slice(&chunk);
                    }
                    // All the declared bytes: the end needs no more host call.
                    if declared == Some(read) {
                        break;
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(BodyError::Unreadable),
            }
        }
        drop(stream);
        drop(incoming);
        if over {
            return Err(BodyError::TooLarge);
        }
        Ok(body)
    }
}

/// Spin as the core's `Context`, for one request.
#[derive(Default)]
struct SpinContext {
    /// The request's time: one host call however often it is asked for.
    now: OnceCell<u64>,
}

/// Settings as this instance first read them. An instance serves one
/// request under Spin's WASI 0.2 model; where a host reuses instances, the
/// configuration of a running app does not change, so each is read once.
type CachedSetting = OnceLock<Result<Option<String>, SettingUnavailable>>;
static SETTINGS: [CachedSetting; Setting::ALL.len()] =
    [const { OnceLock::new() }; Setting::ALL.len()];

/// A Spin variable: `Ok(None)` when the manifest does not declare it for
/// this component (the plain environment may still set it), `Err` when its
/// provider failed (a Vault it cannot reach): that is never read as unset.
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
        SETTINGS[setting as usize]
            .get_or_init(|| {
                settings::resolve(setting, variable(setting.variable_name()), || {
                    std::env::var(setting.env_name()).ok()
                })
            })
            .clone()
    }

    fn log(&mut self, line: &str) {
        log(line);
    }
}

impl Context for SpinContext {
    fn now(&self) -> u64 {
        *self.now.get_or_init(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
        })
    }

    fn open_store(&mut self, database: &DbUrl) -> anyhow::Result<Box<dyn Connection + '_>> {
        match database.kind {
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite => Ok(Box::new(sqlite::SqliteConnection::new(
                &database.address,
                database.synchronous,
            ))),
            #[cfg(feature = "postgres")]
            StoreKind::Postgres => Ok(Box::new(postgres::PostgresConnection::new(database))),
            #[allow(unreachable_patterns)]
            kind => Err(anyhow::anyhow!(kind.missing_build_message())),
        }
    }
}
