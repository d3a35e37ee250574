//! Connections, pooled per address: at most 64 in use per address (Spin's
//! limit; a 65th `open` waits up to the connect timeout), connecting within
//! 5 s and each statement within 10 s, so an outage fails fast and a
//! recovered server is picked up. A connection that failed outside SQL, that
//! the server closed, or that may be inside a transaction is not reused.
//! Each keeps up to 64 prepared statements, forgotten on any SQL error (a
//! schema change may have invalidated them). Not `deadpool-postgres`: it
//! bounds no statement, its statement cache is unbounded, and it cannot tell
//! a connection broken by a timeout or left in a transaction from a healthy
//! one without a round trip per request.

use std::collections::HashMap;
use std::error::Error as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, RowStream, Statement};

use super::allowed::{parse_and_check, AllowedHost, CONNECT_TIMEOUT};

const MAX_CONNECTIONS: usize = 64;
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CACHED_STATEMENTS: usize = 64;

pub type BoxedParam = Box<dyn ToSql + Sync + Send>;

/// Spin's `error` cases (`host.rs` and `v4.rs` convert: this module, which
/// holds the resource types `bindings.rs` maps to, knows no WIT type).
#[derive(Debug)]
pub enum PoolError {
    ConnectionFailed(String),
    QueryFailed(String),
    /// Reported by the server: 4.2's `db-error`; 2.0 keeps the debug form.
    Db(Box<tokio_postgres::Error>),
    Other(String),
}

pub struct PgPools {
    allowed: Vec<AllowedHost>,
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    /// As Spin 4.0.2 (native-tls): under `prefer` and `require` the chain
    /// and host name are verified (`crate::tls`); a failed handshake is an
    /// error, never plain text. `disable` is plain text.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<PgClient>>,
    permits: Arc<Semaphore>,
}

pub struct PgClient {
    client: tokio_postgres::Client,
    statements: HashMap<String, Statement>,
    /// A connection that failed outside SQL (I/O, timeout) is not reused.
    broken: bool,
    /// Best guess whether a transaction is open (then it is not reused).
    in_transaction: bool,
}

impl PgPools {
    pub fn new(allowed: Vec<AllowedHost>) -> anyhow::Result<PgPools> {
        Ok(PgPools {
            allowed,
            pools: Mutex::new(HashMap::new()),
            tls: tokio_postgres_rustls::MakeRustlsConnect::new(
                (*crate::tls::verifying_client_config()?).clone(),
            ),
        })
    }

    pub async fn open(&self, address: &str) -> Result<Connection, PoolError> {
        let config =
            parse_and_check(address, &self.allowed).map_err(PoolError::ConnectionFailed)?;
        let pool = {
            let mut pools =
                self.pools.lock().map_err(|_| PoolError::Other("pool lock poisoned".into()))?;
            pools
                .entry(address.to_string())
                .or_insert_with(|| {
                    Arc::new(Pool {
                        config,
                        idle: Mutex::new(Vec::new()),
                        permits: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
                    })
                })
                .clone()
        };
        let permit = tokio::time::timeout(CONNECT_TIMEOUT, pool.permits.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| PoolError::ConnectionFailed("too many connections".into()))?;
        let idle = pool.idle.lock().ok().and_then(|mut idle| {
            idle.retain(|c| !c.client.is_closed());
            idle.pop()
        });
        let client = match idle {
            Some(client) => client,
            None => PgClient::new(connect(&pool.config, self.tls.clone()).await?),
        };
        let client = Arc::new(tokio::sync::Mutex::new(Some(client)));
        Ok(Connection { pool, client, _permit: permit })
    }
}

/// Its task ends when the server or the client goes away (`is_closed`).
async fn connect(
    config: &tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
) -> Result<tokio_postgres::Client, PoolError> {
    let (client, connection) =
        match tokio::time::timeout(CONNECT_TIMEOUT, config.connect(tls)).await {
            Err(_) => return Err(PoolError::ConnectionFailed("timed out connecting".into())),
            Ok(Err(e)) => return Err(PoolError::ConnectionFailed(error_text(&e))),
            Ok(Ok(pair)) => pair,
        };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// tokio-postgres' message plus its cause (e.g. "Connection refused").
fn error_text(e: &tokio_postgres::Error) -> String {
    match e.source() {
        Some(src) if !e.to_string().contains(&src.to_string()) => format!("{e}: {src}"),
        _ => e.to_string(),
    }
}

/// As Spin, a failed statement: the error's debug form, which holds the
/// server's SQLSTATE (`code: SqlState(E42P01)`), message and detail.
pub fn query_failed(e: tokio_postgres::Error) -> PoolError {
    match e.as_db_error() {
        Some(_) => PoolError::Db(Box::new(e)),
        None => PoolError::QueryFailed(format!("{e:?}")),
    }
}

/// The `connection-builder` resource: its address (`set-ca-root` is
/// refused: the system's roots are the only ones).
pub struct Builder(pub String);

/// A pooled client, shared with the statements of it under way (an async
/// call runs without the instance's state).
pub type Shared = Arc<tokio::sync::Mutex<Option<PgClient>>>;

/// The `connection` resource: a pooled client and its place in the pool.
pub struct Connection {
    pool: Arc<Pool>,
    pub client: Shared,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Still in use by a statement under way: closed after it.
        let Some(client) = Arc::get_mut(&mut self.client).and_then(|c| c.get_mut().take()) else {
            return;
        };
        if client.broken || client.in_transaction || client.client.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.pool.idle.lock() {
            if idle.len() < MAX_CONNECTIONS {
                idle.push(client);
            }
        }
    }
}

pub enum Kind {
    Query,
    Execute,
    /// The rows as they come (`query-async`).
    Stream,
}

pub enum Outcome {
    Rows(Vec<Row>),
    Count(u64),
    Stream(RowStream),
}

/// Runs `sql` on `client` within `QUERY_TIMEOUT`. The client is broken by
/// anything but a server-reported SQL error, which forgets the cached
/// statements (a schema change may have invalidated them).
pub async fn run(
    client: Shared,
    sql: &str,
    params: Vec<BoxedParam>,
    kind: Kind,
) -> Result<Outcome, PoolError> {
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
    let mut client = client.lock().await;
    let Some(pg) = client.as_mut() else {
        return Err(PoolError::ConnectionFailed("connection is closed".into()));
    };
    let ran = tokio::time::timeout(QUERY_TIMEOUT, async {
        let stmt = pg.statement(sql).await?;
        let c = &pg.client;
        Ok::<_, tokio_postgres::Error>(match kind {
            Kind::Query => Outcome::Rows(c.query(&stmt, &params).await?),
            Kind::Execute => Outcome::Count(c.execute(&stmt, &params).await?),
            Kind::Stream => Outcome::Stream(c.query_raw(&stmt, params.iter().copied()).await?),
        })
    });
    match ran.await {
        Ok(Ok(out)) => {
            pg.in_transaction = in_transaction_after(pg.in_transaction, sql);
            Ok(out)
        }
        Ok(Err(e)) => {
            match e.as_db_error() {
                Some(_) => pg.statements.clear(),
                None => pg.broken = true,
            }
            Err(query_failed(e))
        }
        Err(_) => {
            pg.broken = true;
            Err(PoolError::QueryFailed(format!(
                "query timed out after {} s",
                QUERY_TIMEOUT.as_secs()
            )))
        }
    }
}

impl PgClient {
    fn new(client: tokio_postgres::Client) -> PgClient {
        PgClient { client, statements: HashMap::new(), broken: false, in_transaction: false }
    }

    async fn statement(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await?;
        if self.statements.len() >= MAX_CACHED_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

/// Best-effort transaction tracking from the statement's first words.
fn in_transaction_after(before: bool, sql: &str) -> bool {
    let mut words = sql.split_whitespace().map(|w| w.trim_end_matches(';').to_ascii_uppercase());
    match words.next().as_deref() {
        Some("BEGIN" | "START") => true,
        Some("COMMIT" | "END" | "ABORT") => false,
        Some("ROLLBACK") => words.next().as_deref() == Some("TO") && before,
        _ => before,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_tracking() {
        let after = |sqls: &[&str]| sqls.iter().fold(false, |t, s| in_transaction_after(t, s));
        assert!(after(&["begin;", "insert into t values (1)"]));
        assert!(!after(&["BEGIN", "COMMIT"]));
        assert!(after(&["BEGIN", "ROLLBACK TO SAVEPOINT a"]));
        assert!(!after(&["BEGIN", "rollback"]));
        assert!(!after(&["select 1"]));
    }
}
