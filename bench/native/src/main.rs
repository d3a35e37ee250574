//! `book-native`: the benchmark's native comparator. The same core as the
//! component (`book_catalog::handle`: router, handlers, tokens), served by a
//! small hyper server with native stores and no WebAssembly:
//!
//! - SQLite (an empty `DB_URL`): `<state dir>/sqlite_db.db` through rusqlite,
//!   WAL, `synchronous=NORMAL`, a busy timeout, a pool of reading connections
//!   and one writing connection;
//! - PostgreSQL (`DB_URL=postgres://...`): tokio-postgres, a pool of
//!   connections with their prepared statements.
//!
//! The store work is blocking (the core is synchronous), so each request that
//! needs the store takes a pooled connection on the async side and then runs
//! on tokio's blocking threads. The stores issue the component's SQL.
//!
//! Configuration: the component's names, from the environment (SECRET_TOKEN,
//! DB_URL, AUTH_USERNAME, AUTH_PASSWORD).
//!
//! Usage: book-native [--listen 127.0.0.1:8080] [--state-dir .spin] [--pool 16]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};
use book_catalog::db_url::StoreTarget;
use book_catalog::migrations::{self, SchemaConnection};
use book_catalog::settings::{Setting, SettingUnavailable};
use book_catalog::sql::{Column, Dialect, SqlParam, Statement};
use book_catalog::sql_store::{SqlConnection, SqlStore};
use book_catalog::store::Database;
use book_catalog::{Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

struct Options {
    listen: SocketAddr,
    state_dir: PathBuf,
    pool: usize,
}

fn parse_options() -> anyhow::Result<Options> {
    let mut options = Options {
        listen: "127.0.0.1:8080".parse()?,
        state_dir: PathBuf::from(".spin"),
        pool: 16,
    };
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

/// The settings, read once from the environment.
struct Settings {
    values: HashMap<&'static str, String>,
}

impl Settings {
    fn from_env() -> Settings {
        let values = Setting::ALL
            .iter()
            .filter_map(|setting| {
                let value = std::env::var(setting.env_name()).ok()?;
                (!value.is_empty()).then_some((setting.env_name(), value))
            })
            .collect();
        Settings { values }
    }

    fn get(&self, setting: Setting) -> Option<String> {
        self.values.get(setting.env_name()).cloned()
    }
}

// ---------------------------------------------------------------- pool

/// A fixed set of connections; a request waits (asynchronously) for one.
struct Pool<T> {
    items: Mutex<Vec<T>>,
    available: Arc<Semaphore>,
}

struct Pooled<T: Send + 'static> {
    item: Option<T>,
    pool: Arc<Pool<T>>,
    _permit: OwnedSemaphorePermit,
}

impl<T: Send + 'static> Pool<T> {
    fn new(items: Vec<T>) -> Arc<Pool<T>> {
        let available = Arc::new(Semaphore::new(items.len()));
        Arc::new(Pool {
            items: Mutex::new(items),
            available,
        })
    }

    async fn get(self: &Arc<Self>) -> Pooled<T> {
        let permit = self
            .available
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let item = self.items.lock().unwrap().pop();
        Pooled {
            item,
            pool: self.clone(),
            _permit: permit,
        }
    }
}

impl<T: Send + 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        // Back in the pool before the permit (dropped after this) frees it.
        if let Some(item) = self.item.take() {
            self.pool.items.lock().unwrap().push(item);
        }
    }
}

impl<T: Send + 'static> std::ops::Deref for Pooled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item
            .as_ref()
            .expect("a pooled item is present until dropped")
    }
}

impl<T: Send + 'static> std::ops::DerefMut for Pooled<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.item
            .as_mut()
            .expect("a pooled item is present until dropped")
    }
}

// ---------------------------------------------------------------- SQLite

fn open_sqlite(path: &Path) -> anyhow::Result<rusqlite::Connection> {
    let connection =
        rusqlite::Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}

struct SqliteStore<'a> {
    connection: &'a mut rusqlite::Connection,
}

/// The schema as the component makes it: `migrations::migrate`.
impl SchemaConnection for SqliteStore<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        // `PRAGMA journal_mode` answers with a row: step through any.
        let mut prepared = self.connection.prepare(statement)?;
        let mut rows = prepared.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let mut statement = self.connection.prepare(migrations::APPLIED_VERSIONS)?;
        let versions = statement
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        Ok(versions)
    }
}

fn sqlite_value(param: &SqlParam) -> rusqlite::types::Value {
    match *param {
        SqlParam::Text(text) => rusqlite::types::Value::Text(text.to_string()),
        SqlParam::Int32(value) => rusqlite::types::Value::Integer(value.into()),
        SqlParam::Int64(value) => rusqlite::types::Value::Integer(value),
    }
}

/// A row as the shared readers of `sql` take it.
fn sqlite_columns(row: &rusqlite::Row) -> rusqlite::Result<Vec<Column>> {
    use rusqlite::types::ValueRef;
    (0..row.as_ref().column_count())
        .map(|i| {
            Ok(match row.get_ref(i)? {
                ValueRef::Integer(value) => Column::Integer(value),
                ValueRef::Text(text) => Column::Text(String::from_utf8_lossy(text).into_owned()),
                ValueRef::Null => Column::Null,
                ValueRef::Real(_) | ValueRef::Blob(_) => Column::Other,
            })
        })
        .collect()
}

impl SqlConnection for SqliteStore<'_> {
    const DIALECT: Dialect = Dialect::Sqlite;

    /// Runs a statement, every row stepped through (so a `DELETE ...
    /// RETURNING` completes).
    fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let values: Vec<rusqlite::types::Value> =
            statement.params.iter().map(sqlite_value).collect();
        let mut prepared = self.connection.prepare_cached(&statement.sql)?;
        let rows = prepared
            .query_map(rusqlite::params_from_iter(values), sqlite_columns)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

// ---------------------------------------------------------------- PostgreSQL

/// One PostgreSQL connection and the statements prepared on it.
struct PgConnection {
    client: tokio_postgres::Client,
    statements: HashMap<String, tokio_postgres::Statement>,
}

async fn connect_postgres(url: &str) -> anyhow::Result<PgConnection> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("error: PostgreSQL connection: {error}");
        }
    });
    Ok(PgConnection {
        client,
        statements: HashMap::new(),
    })
}

/// The store on a pooled connection, used from a blocking thread: each query
/// is driven to completion on the runtime with `Handle::block_on`.
struct PgStore<'a> {
    connection: &'a mut PgConnection,
    runtime: Handle,
}

type PgParam<'p> = &'p (dyn tokio_postgres::types::ToSql + Sync);

/// Borrows a shared-SQL value as a tokio-postgres parameter.
fn pg_param<'p>(param: &'p SqlParam) -> PgParam<'p> {
    match param {
        SqlParam::Text(text) => text,
        SqlParam::Int32(value) => value,
        SqlParam::Int64(value) => value,
    }
}

/// A row as the shared readers of `sql` take it.
fn pg_columns(row: &tokio_postgres::Row) -> anyhow::Result<Vec<Column>> {
    use tokio_postgres::types::Type;
    (0..row.len())
        .map(|i| {
            let column = match *row.columns()[i].type_() {
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)?
                    .map(|v| Column::Integer(v.into())),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Column::Integer),
                Type::TEXT | Type::VARCHAR => {
                    row.try_get::<_, Option<String>>(i)?.map(Column::Text)
                }
                _ => Some(Column::Other),
            };
            Ok(column.unwrap_or(Column::Null))
        })
        .collect()
}

impl SqlConnection for PgStore<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        let params: Vec<PgParam> = statement.params.iter().map(pg_param).collect();
        let PgConnection { client, statements } = &mut *self.connection;
        let sql = &statement.sql;
        let rows = self
            .runtime
            .block_on(async {
                let prepared = match statements.get(sql) {
                    Some(prepared) => prepared.clone(),
                    None => {
                        let prepared = client.prepare(sql).await?;
                        statements.insert(sql.clone(), prepared.clone());
                        prepared
                    }
                };
                client.query(&prepared, &params).await
            })
            .map_err(|error| anyhow!("PostgreSQL: {error}"))?;
        rows.iter().map(pg_columns).collect()
    }
}

/// The schema as the component makes it: `migrations::migrate`.
impl SchemaConnection for PgStore<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        let client = &self.connection.client;
        self.runtime
            .block_on(client.batch_execute(statement))
            .with_context(|| format!("PostgreSQL: {statement}"))
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let client = &self.connection.client;
        let rows = self
            .runtime
            .block_on(client.query(migrations::APPLIED_VERSIONS, &[]))?;
        rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }
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
    settings: Arc<Settings>,
    lease: Option<Lease>,
    runtime: Handle,
}

impl Context for NativeContext {
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        Ok(self.settings.get(setting))
    }

    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs())
    }

    fn open_store(&mut self, target: &StoreTarget) -> anyhow::Result<Box<dyn Database + '_>> {
        let runtime = self.runtime.clone();
        let wanted = match target {
            StoreTarget::Sqlite(label) => label == book_catalog::db_url::DEFAULT_SQLITE_LABEL,
            StoreTarget::Postgres(_) => true,
        };
        let store: Box<dyn Database + '_> = match &mut self.lease {
            Some(Lease::Sqlite(connection))
                if wanted && matches!(target, StoreTarget::Sqlite(_)) =>
            {
                Box::new(SqlStore(SqliteStore { connection }))
            }
            Some(Lease::Postgres(connection))
                if wanted && matches!(target, StoreTarget::Postgres(_)) =>
            {
                Box::new(SqlStore(PgStore {
                    connection,
                    runtime,
                }))
            }
            _ => bail!(
                "{} is not the store this server was started with",
                target.describe()
            ),
        };
        Ok(store)
    }

    fn log(&mut self, line: &str) {
        eprintln!("{line}");
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
    settings: Arc<Settings>,
    stores: Stores,
}

async fn serve(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    // As the component: a login reads the client's headers (here there is no
    // peer address, so every login counts as the one client `unknown`).
    let headers: Vec<(String, Vec<u8>)> = if book_catalog::router::reads_headers(&path) {
        parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
            .collect()
    } else {
        Vec::new()
    };
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
    let mut context = NativeContext {
        settings: server.settings.clone(),
        lease,
        runtime: Handle::current(),
    };
    let run = move || {
        let head = RequestHead {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: authorization.as_deref(),
            headers: &headers,
        };
        book_catalog::handle(&mut context, &head, body)
    };
    // Store work blocks: it runs on tokio's blocking threads. The rest
    // (refusals, other paths) is cheap and stays on the async thread.
    let mut response = if blocking {
        tokio::task::spawn_blocking(run)
            .await
            .unwrap_or_else(|_| book_catalog::Response::internal_error())
    } else {
        run()
    };

    let mut http = Response::new(Full::new(Bytes::from(std::mem::take(&mut response.body))));
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
    let settings = Arc::new(Settings::from_env());
    let target = StoreTarget::from_db_url(settings.get(Setting::DbUrl).as_deref())
        .map_err(|error| anyhow!("{error}"))?;
    let stores = match &target {
        StoreTarget::Sqlite(label) => {
            if label != book_catalog::db_url::DEFAULT_SQLITE_LABEL {
                bail!("only the default SQLite database is served natively, not {label:?}");
            }
            std::fs::create_dir_all(&options.state_dir)
                .with_context(|| format!("creating {}", options.state_dir.display()))?;
            let path = options.state_dir.join("sqlite_db.db");
            let mut first = open_sqlite(&path)?;
            let mut store = SqliteStore {
                connection: &mut first,
            };
            migrations::migrate(&mut store, Dialect::Sqlite).context("migrating SQLite")?;
            let mut readers = Vec::with_capacity(options.pool);
            for _ in 0..options.pool {
                readers.push(open_sqlite(&path)?);
            }
            Stores::Sqlite {
                readers: Pool::new(readers),
                writer: Pool::new(vec![first]),
            }
        }
        StoreTarget::Postgres(url) => {
            let mut first = connect_postgres(url).await?;
            let runtime = Handle::current();
            first = tokio::task::spawn_blocking(move || {
                let mut store = PgStore {
                    connection: &mut first,
                    runtime,
                };
                migrations::migrate(&mut store, Dialect::Postgres)
                    .context("migrating PostgreSQL")?;
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
    let server = Arc::new(Server { settings, stores });

    let listener = TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("listening on {}", options.listen))?;
    eprintln!(
        "book-native: {} on http://{} (pool of {} connections)",
        target.describe(),
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
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn main() {
    let result = parse_options().and_then(|options| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(start(options))
    });
    if let Err(error) = result {
        eprintln!(
            "book-native: {}",
            book_catalog::db_url::redact_password(&format!("{error:#}"))
        );
        std::process::exit(1);
    }
}
