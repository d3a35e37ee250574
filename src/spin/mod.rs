//! The Spin adapters: the HTTP entry point, configuration from Spin
//! variables and the component environment, and the two stores.

// Each store is in the build only with its Cargo feature, so that a variant
// imports no interface of the store it lacks.
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::io::Write;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use spin_sdk::http::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};
use spin_sdk::wit::wasi::http0_2_0::types::IncomingBody;
use wasi::io::streams::StreamError;

use crate::app::{self, Body, BodyError, Context, RequestHead};
use crate::envelope::{Response, CONTENT_TYPE};
use crate::router;
use crate::settings::{self, Setting};
use crate::store::{BookStore, StoreTarget};

/// How much of the body one host call reads.
const READ_CHUNK_BYTES: u64 = 64 * 1024;

#[spin_sdk::http_component]
async fn handle_request(request: IncomingRequest, response_out: ResponseOutparam) {
    let started = Instant::now();
    let method = request.method().to_string();
    let target = request.path_with_query().unwrap_or_default();
    let path = router::path_of(&target);
    let headers = request.headers();
    let authorization = joined_header(&headers, "authorization");
    let declared_length = joined_header(&headers, "content-length")
        .and_then(|value| std::str::from_utf8(&value).ok()?.trim().parse::<u64>().ok());
    // The login throttle's client: Spin's peer address, and X-Forwarded-For
    // for deployments behind a proxy (used only when trusted). Only a login
    // needs them, so other requests skip the two header reads.
    let login = path == "/token";
    let mut context = SpinContext {
        client_addr: login
            .then(|| joined_header(&headers, "spin-client-addr"))
            .flatten(),
        forwarded_for: login
            .then(|| joined_header(&headers, "x-forwarded-for"))
            .flatten(),
    };
    drop(headers);

    let head = RequestHead {
        method: &method,
        path,
        query: router::query_of(&target),
        authorization: authorization.as_deref(),
    };
    let body = RequestBody {
        request,
        declared_length,
    };
    let response = app::handle(&mut context, &head, body);

    let status = response.status;
    send(response_out, response).await;
    log(&format!(
        "{method} {path} {status} {}us",
        started.elapsed().as_micros()
    ));
}

/// All values of a header, joined with ", " as HTTP combines repeated fields.
fn joined_header(headers: &Fields, name: &str) -> Option<Vec<u8>> {
    let values = headers.get(name);
    let mut values = values.into_iter();
    let mut joined = values.next()?;
    for value in values {
        joined.extend_from_slice(b", ");
        joined.extend_from_slice(&value);
    }
    Some(joined)
}

async fn send(response_out: ResponseOutparam, response: Response) {
    let mut headers = vec![("content-type".to_string(), CONTENT_TYPE.as_bytes().to_vec())];
    if let Some(allow) = response.allow {
        headers.push(("allow".to_string(), allow.as_bytes().to_vec()));
    }
    if let Some(link) = &response.link {
        headers.push(("link".to_string(), link.as_bytes().to_vec()));
    }
    if let Some(seconds) = response.retry_after {
        headers.push(("retry-after".to_string(), seconds.to_string().into_bytes()));
    }
    let Ok(fields) = Fields::from_list(&headers) else {
        log("error: could not build response headers");
        return;
    };
    let outgoing = OutgoingResponse::new(fields);
    if outgoing.set_status_code(response.status).is_err() {
        log("error: could not set the response status");
        return;
    }
    if let Err(error) = response_out.set_with_body(outgoing, response.body).await {
        log(&format!(
            "error: could not send the response body: {error:?}"
        ));
    }
}

/// One write per line, so concurrent instances' lines never interleave.
fn log(line: &str) {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The request body, streamed from the host and cut off past the limit.
struct RequestBody {
    request: IncomingRequest,
    declared_length: Option<u64>,
}

impl Body for RequestBody {
    fn read(self, limit: usize) -> Result<Vec<u8>, BodyError> {
        // A declared length over the limit is refused before reading a byte.
        if self
            .declared_length
            .is_some_and(|length| length > limit as u64)
        {
            return Err(BodyError::TooLarge);
        }
        let incoming: IncomingBody = self.request.consume().map_err(|()| BodyError::Unreadable)?;
        let stream = incoming.stream().map_err(|()| BodyError::Unreadable)?;
        let mut body = Vec::new();
        loop {
            match stream.blocking_read(READ_CHUNK_BYTES) {
                Ok(chunk) => {
                    if body.len() + chunk.len() > limit {
                        return Err(BodyError::TooLarge);
                    }
                    body.extend_from_slice(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(BodyError::Unreadable),
            }
        }
        drop(stream);
        drop(incoming);
        Ok(body)
    }
}

/// Spin as the core's `Context`.
struct SpinContext {
    client_addr: Option<Vec<u8>>,
    forwarded_for: Option<Vec<u8>>,
}

/// Settings as this instance first read them. An instance serves one
/// request under Spin's WASI 0.2 model; where a host reuses instances, the
/// configuration of a running app does not change, so each is read once.
static SETTINGS: [OnceLock<Option<String>>; Setting::ALL.len()] =
    [const { OnceLock::new() }; Setting::ALL.len()];

impl Context for SpinContext {
    fn setting(&mut self, setting: Setting) -> Option<String> {
        SETTINGS[setting as usize]
            .get_or_init(|| {
                let variable = spin_sdk::variables::get(setting.variable_name()).ok();
                settings::resolve(variable, || std::env::var(setting.env_name()).ok())
            })
            .clone()
    }

    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs())
    }

    fn open_store(&mut self, target: &StoreTarget) -> anyhow::Result<Box<dyn BookStore + '_>> {
        match target {
            #[cfg(feature = "sqlite")]
            StoreTarget::Sqlite(label) => Ok(Box::new(sqlite::SqliteStore::new(label))),
            #[cfg(feature = "postgres")]
            StoreTarget::Postgres(url) => Ok(Box::new(postgres::PostgresStore::new(url))),
            #[allow(unreachable_patterns)]
            other => Err(anyhow::anyhow!(other.kind().missing_build_message())),
        }
    }

    fn log(&mut self, line: &str) {
        log(line);
    }

    fn client_addr(&self) -> Option<&[u8]> {
        self.client_addr.as_deref()
    }

    fn forwarded_for(&self) -> Option<&[u8]> {
        self.forwarded_for.as_deref()
    }
}
