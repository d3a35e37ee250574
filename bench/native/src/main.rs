//! `book-native`: the benchmark's native comparator. The same core as the
//! component (`book_catalog::handle`: router, handlers, tokens), served by a
//! small hyper server with native stores and no WebAssembly:
//!
//! - SQLite (an empty `DB_URL`): `<state dir>/sqlite_db.db` through the
//!   core's own rusqlite connection (`book_catalog::native`), a pool of
//!   reading connections and one writing connection;
//! - PostgreSQL (`DB_URL=postgres://...`): tokio-postgres, a pool of
//!   connections with their prepared statements.
//!
//! The store work is blocking (the core is synchronous), so each request that
//! needs the store takes a pooled connection on the async side and then runs
//! on tokio's blocking threads. Both run the core's store functions, SQL and
//! migrations (`book_catalog::db`); only connecting is here. The whole list
//! is written page by page as it is read (`books::rest_of_list`), as the
//! Spin adapter writes it; a page that fails cuts the connection.
//!
//! Configuration: the component's settings, from the environment.
//!
//! Usage: book-native [--listen 127.0.0.1:8080] [--state-dir .spin] [--pool 16]

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};
use book_catalog::books::model::BookId;
use book_catalog::db::migrations;
use book_catalog::db::native::{self, rusqlite};
use book_catalog::db::Connection;
use book_catalog::settings::{
    self, DbUrl, Setting, SettingSource, SettingUnavailable, StoreKind, DEFAULT_SQLITE_LABEL,
};
use book_catalog::{Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio::sync::mpsc;

mod pool;
mod postgres;

use pool::{Pool, Pooled};
use postgres::{connect_postgres, PgConnection, PgStore};

struct Options {
    listen: SocketAddr,
    state_dir: PathBuf,
    pool: usize,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut options =
        Options { listen: "127.0.0.1:8080".parse()?, state_dir: PathBuf::from(".spin"), pool: 16 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| anyhow!("{name} needs a value"));
        match arg.as_str() {
            "--listen" => options.listen = value("--listen")?.parse().context("--listen")?,
            "--state-dir" => options.state_dir = PathBuf::from(value("--state-dir")?),
            "--pool" => options.pool = value("--pool")?.parse().context("--pool")?,
            "-h" | "--help" => {
                println!("usage: book-native [--listen ADDR] [--state-dir DIR] [--pool N]");
                println!("env: SECRET_TOKEN, DB_URL (empty = SQLite in DIR), AUTH_USERNAME, AUTH_PASSWORD");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if options.pool == 0 {
        bail!("--pool must be at least 1");
    }
    Ok(options)
}

// ---------------------------------------------------------------- the core's Context

enum Stores {
    /// Readers share a pool; writes go through one connection, so writers
    /// queue on the async side instead of sleeping in SQLite's busy handler.
    Sqlite {
        readers: Arc<Pool<rusqlite::Connection>>,
        writer: Arc<Pool<rusqlite::Connection>>,
    },
    Postgres(Arc<Pool<PgConnection>>),
}

enum Lease {
    Sqlite(Pooled<rusqlite::Connection>),
    Postgres(Pooled<PgConnection>),
}

struct NativeContext {
    lease: Option<Lease>,
    runtime: Handle,
}

impl SettingSource for NativeContext {
    /// The environment only (no Spin variables here).
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        settings::resolve(setting, Ok(None), || std::env::var(setting.env_name()).ok())
    }

    fn log(&mut self, line: &str) {
        eprintln!("{line}");
    }
}

impl Context for NativeContext {
    fn now(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
    }

    fn open_store(&mut self, db_url: &DbUrl) -> anyhow::Result<Box<dyn Connection + '_>> {
        let runtime = self.runtime.clone();
        let default = db_url.kind == StoreKind::Postgres || db_url.address == DEFAULT_SQLITE_LABEL;
        let connection: Box<dyn Connection + '_> = match &mut self.lease {
            Some(Lease::Sqlite(connection)) if default && db_url.kind == StoreKind::Sqlite => {
                Box::new(&mut **connection)
            }
            Some(Lease::Postgres(connection)) if default && db_url.kind == StoreKind::Postgres => {
                Box::new(PgStore { connection, runtime })
            }
            _ => bail!("{} is not the store this server was started with", db_url.describe()),
        };
        Ok(connection)
    }
}

/// A body read (up to the limit) before the core runs.
enum ReadBody {
    Read(Bytes),
    TooLarge,
    Unreadable,
}

impl Body for ReadBody {
    fn read(self, limit: usize) -> Result<Vec<u8>, BodyError> {
        match self {
            ReadBody::Read(bytes) if bytes.len() <= limit => Ok(bytes.to_vec()),
            ReadBody::Read(_) | ReadBody::TooLarge => Err(BodyError::TooLarge),
            ReadBody::Unreadable => Err(BodyError::Unreadable),
        }
    }
}

struct Server {
    stores: Stores,
}

/// The whole list's body after its first page: each piece as a blocking
/// thread reads it (two pages ahead at most); an error ends the body
/// unfinished, so hyper cuts the connection.
struct Pieces(mpsc::Receiver<io::Result<Bytes>>);

impl hyper::body::Body for Pieces {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        self.0.poll_recv(cx).map(|piece| piece.map(|piece| piece.map(Frame::data)))
    }
}

/// Sends the pages after `after`, read on the request's connection, until
/// the body is complete or cut short, or the client has gone.
fn write_rest(
    mut context: NativeContext,
    mut after: BookId,
    pieces: mpsc::Sender<io::Result<Bytes>>,
) {
    loop {
        let (piece, next) = match book_catalog::books::rest_of_list(&mut context, after) {
            Ok((piece, next)) => (Ok(Bytes::from(piece)), next),
            Err(error) => {
                eprintln!("error: the list was cut short: {error}");
                (Err(io::Error::other("the list was cut short")), None)
            }
        };
        match (pieces.blocking_send(piece), next) {
            (Ok(()), Some(next)) => after = next,
            _ => return,
        }
    }
}

async fn serve(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Either<Full<Bytes>, Pieces>>, Infallible> {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    // Every header: the core reads those its endpoint needs (here there is
    // no peer address, so every login counts as the one client `unknown`).
    let headers: Vec<(String, Vec<u8>)> = parts
        .headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
        .collect();
    let mut authorization: Option<Vec<u8>> = None;
    for value in parts.headers.get_all(AUTHORIZATION) {
        let joined = authorization.get_or_insert_with(Vec::new);
        if !joined.is_empty() {
            joined.extend_from_slice(b", ");
        }
        joined.extend_from_slice(value.as_bytes());
    }
    let declared_too_large = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok())
        .is_some_and(|length| length > MAX_BODY_BYTES as u64);
    let body = if declared_too_large {
        ReadBody::TooLarge
    } else {
        match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(collected) => ReadBody::Read(collected.to_bytes()),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => ReadBody::TooLarge,
            Err(_) => ReadBody::Unreadable,
        }
    };

    // The book routes, the login (its failed-login count) and the health
    // check touch the store: take a connection for them here, waiting on the
    // async side rather than on a blocking thread.
    let lease = if path.starts_with("/book") || path == "/token" || path == "/health" {
        Some(match &server.stores {
            Stores::Sqlite { readers, writer } => Lease::Sqlite(if method == "GET" {
                readers.get().await
            } else {
                writer.get().await
            }),
            Stores::Postgres(pool) => Lease::Postgres(pool.get().await),
        })
    } else {
        None
    };
    let blocking = lease.is_some();
    let mut context = NativeContext { lease, runtime: Handle::current() };
    let run = move || {
        let head = RequestHead {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: authorization.as_deref(),
            origin: None,
            headers: &headers,
        };
        (book_catalog::handle(&mut context, &head, body).response, context)
    };
    // Store work blocks: it runs on tokio's blocking threads. The rest
    // (refusals, other paths) is cheap and stays on the async thread.
    let (mut response, context) = if blocking {
        match tokio::task::spawn_blocking(run).await {
            Ok((response, context)) => (response, Some(context)),
            Err(_) => (book_catalog::Response::internal_error(), None),
        }
    } else {
        (run().0, None)
    };

    let first = Bytes::from(std::mem::take(&mut response.body));
    let mut http = match (response.continues_after, context) {
        (Some(after), Some(context)) => {
            // The first page, then the rest as it is read.
            let (pieces, receiver) = mpsc::channel(2);
            let _ = pieces.try_send(Ok(first));
            tokio::task::spawn_blocking(move || write_rest(context, after, pieces));
            Response::new(Either::Right(Pieces(receiver)))
        }
        _ => Response::new(Either::Left(Full::new(first))),
    };
    *http.status_mut() = hyper::StatusCode::from_u16(response.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in response.headers() {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            http.headers_mut().append(name, value);
        }
    }
    Ok(http)
}

async fn start(options: Options) -> anyhow::Result<()> {
    let db_url = std::env::var(Setting::DbUrl.env_name()).ok();
    let db_url = DbUrl::parse(db_url.as_deref()).map_err(|error| anyhow!("{error}"))?;
    let stores = match db_url.kind {
        StoreKind::Sqlite => {
            if db_url.address != DEFAULT_SQLITE_LABEL {
                bail!(
                    "only the default SQLite database is served natively, not {:?}",
                    db_url.address
                );
            }
            std::fs::create_dir_all(&options.state_dir)
                .with_context(|| format!("creating {}", options.state_dir.display()))?;
            let path = options.state_dir.join("sqlite_db.db");
            let mut first = native::open(&path)?;
            migrations::migrate(&mut first).context("migrating SQLite")?;
            let mut readers = Vec::with_capacity(options.pool);
            for _ in 0..options.pool {
                readers.push(native::open(&path)?);
            }
            Stores::Sqlite { readers: Pool::new(readers), writer: Pool::new(vec![first]) }
        }
        StoreKind::Postgres => {
            let url = &db_url.address;
            let mut first = connect_postgres(url).await?;
            let runtime = Handle::current();
            first = tokio::task::spawn_blocking(move || {
                let mut store = PgStore { connection: &mut first, runtime };
                migrations::migrate(&mut store).context("migrating PostgreSQL")?;
                anyhow::Ok(first)
            })
            .await??;
            let mut connections = vec![first];
            for _ in 1..options.pool {
                connections.push(connect_postgres(url).await?);
            }
            Stores::Postgres(Pool::new(connections))
        }
    };
    let server = Arc::new(Server { stores });

    let listener = TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("listening on {}", options.listen))?;
    eprintln!(
        "book-native: {} on http://{} (pool of {} connections)",
        db_url.describe(),
        listener.local_addr()?,
        options.pool
    );
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    eprintln!("error: accept: {error}");
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| serve(server.clone(), request));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

fn main() {
    let result = parse_options().and_then(|options| {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(start(options))
    });
    if let Err(error) = result {
        eprintln!("book-native: {}", settings::redact_password(&format!("{error:#}")));
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use book_catalog::books::model::{Book, BookChanges, BookId, NewBook};
    use book_catalog::books::query::BookQuery;
    use book_catalog::books::safe_writes::etag;
    use book_catalog::books::sql::{self as store, Keyed};
    use book_catalog::db;
    use book_catalog::login::sql as attempts;
    use book_catalog::Response;

    /// The core's statements on PostgreSQL, through this server's connection:
    /// a fresh schema is migrated lazily by the first statement (as under
    /// Spin), then each store function runs once.
    #[test]
    #[ignore = "needs PostgreSQL: make test runs it"]
    fn the_core_statements_run_on_postgresql() {
        let url = std::env::var("BOOK_NATIVE_TEST_PG_URL")
            .expect("BOOK_NATIVE_TEST_PG_URL names a PostgreSQL database");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut connection = runtime.block_on(connect_postgres(&url)).unwrap();
        let mut db = PgStore { connection: &mut connection, runtime: runtime.handle().clone() };
        let schema = format!("core_test_{}", std::process::id());
        db.execute(&format!("CREATE SCHEMA {schema}; SET search_path TO {schema}")).unwrap();

        assert!(store::list(&mut db, None, 10).unwrap().is_empty(), "migrated lazily");
        let book =
            |title: &str| NewBook { title: title.into(), author: "Ann Author".into(), year: 1999 };
        let dune = store::create(&mut db, &book("Dune")).unwrap();
        let emma = store::create(&mut db, &book("Emma")).unwrap();
        assert_eq!(store::get(&mut db, dune.id).unwrap(), Some(dune.clone()));
        let missing = BookId::new(999).unwrap();
        assert_eq!(store::get(&mut db, missing).unwrap(), None);
        let query = BookQuery::parse(Some("title=dU&author=ANN&limit=1")).unwrap();
        assert_eq!(store::page(&mut db, &query).unwrap(), std::slice::from_ref(&dune));
        let changes = BookChanges { year: Some(1965), ..BookChanges::default() };
        let stale = store::update(&mut db, dune.id, &changes, Some(&[2])).unwrap();
        assert_eq!(stale, None, "not at version 2");
        let updated = store::update(&mut db, dune.id, &changes, Some(&[1])).unwrap().unwrap();
        assert_eq!((updated.year, updated.version), (1965, 2));
        assert!(!store::delete(&mut db, emma.id, Some(&[])).unwrap());
        assert!(store::delete(&mut db, emma.id, None).unwrap());
        assert!(!store::delete(&mut db, emma.id, None).unwrap());
        // A keyed create: once (under an id reserved by the look-up), then
        // what the key holds; the key pruned a day later.
        let answer = |book: Book| {
            let tag = etag(book.id, book.version);
            Response::ok(201, "Book created successfully", Some(book)).with_header("etag", tag)
        };
        let once = |db: &mut PgStore, key, title, now| {
            let book = book(title);
            store::create_once(db, key, &book.fingerprint(), &book, answer, now).unwrap()
        };
        let Keyed::Created(kept) = once(&mut db, "k", "Kept", 1_000) else {
            panic!("a new key creates")
        };
        let Keyed::Used { fingerprint, first } = once(&mut db, "k", "Other", 2_000) else {
            panic!("a used key answers what it holds")
        };
        assert_eq!((fingerprint, &first), (book("Kept").fingerprint(), &kept));
        once(&mut db, "later", "Later", 1_000 + 86_400);
        let Keyed::Created(fresh) = once(&mut db, "k", "Kept", 90_000) else {
            panic!("a pruned key creates anew")
        };
        assert_ne!(fresh.header("etag"), kept.header("etag"));
        db::ping(&mut db).unwrap();

        let counted = attempts::count_attempt(&mut db, "c", 1_000, 60).unwrap();
        let again = attempts::count_attempt(&mut db, "c", 1_001, 60).unwrap();
        assert_eq!((counted.count, again.count, again.window_end), (1, 2, 1_060));
        assert_eq!(attempts::attempts(&mut db, "c").unwrap(), Some(again));
        attempts::prune_attempts(&mut db, 1_060, 100).unwrap();
        assert_eq!(attempts::attempts(&mut db, "c").unwrap(), None);
        attempts::count_attempt(&mut db, "d", 1_000, 60).unwrap();
        attempts::clear_attempts(&mut db, "d").unwrap();
        assert_eq!(attempts::attempts(&mut db, "d").unwrap(), None);
        assert_eq!(migrations::migrate(&mut db).unwrap(), Vec::<i64>::new());

        db.execute(&format!("DROP SCHEMA {schema} CASCADE")).unwrap();
    }
}
