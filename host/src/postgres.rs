//! Spin PostgreSQL (`spin:postgres/postgres@4.0.0`) on tokio-postgres.
//!
//! Like Spin: every host:port of an address must match an
//! `allowed_outbound_hosts` entry `postgres://host:port` (no port = 5432, host
//! strings compared literally); connections are pooled per address (at most
//! 64 in use). TLS follows libpq's `sslmode`: `disable` is plain; `prefer`
//! (the default) uses TLS when the server offers it and `require` insists on
//! it, both without checking the certificate (as libpq does);
//! `verify-ca`/`verify-full` require TLS with a certificate valid for the host
//! under the Mozilla (webpki) roots. Connect and query time are bounded so an
//! outage fails fast and a recovered server is picked up again.

// The WIT `error` type is large by design; results carry it as Spin's do.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::error::Error as _;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::config::Host;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Row, Statement};
use wasmtime::component::Resource;

use crate::bindings::spin::postgres::postgres::{
    self, Column, DbDataType, DbError, DbValue, Error, HostConnection, Interval, ParameterValue,
    QueryError, RowSet,
};
use crate::state::State;

const DEFAULT_PORT: u16 = 5432;
const MAX_CONNECTIONS: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CACHED_STATEMENTS: usize = 64;

// ---------------------------------------------------------------------------
// allowed_outbound_hosts

/// One `allowed_outbound_hosts` entry that can admit PostgreSQL addresses.
#[derive(Debug, Clone, PartialEq)]
pub enum AllowedHost {
    /// `insecure:allow-all`, or `*://*:*`.
    Any,
    Host {
        host: HostPattern,
        port: PortPattern,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum HostPattern {
    Any,
    /// `*.example.com`: any subdomain.
    Suffix(String),
    Exact(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PortPattern {
    Any,
    Range(u16, u16),
}

impl AllowedHost {
    /// Parses an (already template-expanded) entry. `Ok(None)`: an entry for
    /// another scheme (e.g. `https://...`), irrelevant here.
    pub fn parse(entry: &str) -> Result<Option<AllowedHost>, String> {
        if entry == "insecure:allow-all" {
            return Ok(Some(AllowedHost::Any));
        }
        let Some((scheme, rest)) = entry.split_once("://") else {
            return Err(format!("{entry:?} is not scheme://host[:port]"));
        };
        if !matches!(scheme, "postgres" | "postgresql" | "*") {
            return Ok(None);
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '@', '?', '#']) {
            return Err(format!("{entry:?} must be scheme://host[:port] only"));
        }
        let (host, port) = split_host_port(rest);
        let port = match port {
            None => PortPattern::Range(DEFAULT_PORT, DEFAULT_PORT),
            Some("*") => PortPattern::Any,
            Some(p) => match p.split_once("..") {
                Some((a, b)) => match (a.parse(), b.parse()) {
                    (Ok(a), Ok(b)) => PortPattern::Range(a, b),
                    _ => return Err(format!("{entry:?} has an invalid port range")),
                },
                None => match p.parse() {
                    Ok(p) => PortPattern::Range(p, p),
                    Err(_) => return Err(format!("{entry:?} has an invalid port")),
                },
            },
        };
        let host = host.to_ascii_lowercase();
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(suffix) = host.strip_prefix("*.") {
            HostPattern::Suffix(format!(".{suffix}"))
        } else {
            HostPattern::Exact(host)
        };
        if host == HostPattern::Any && port == PortPattern::Any && scheme == "*" {
            return Ok(Some(AllowedHost::Any));
        }
        Ok(Some(AllowedHost::Host { host, port }))
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            AllowedHost::Any => true,
            AllowedHost::Host { host: hp, port: pp } => {
                let host = host.to_ascii_lowercase();
                let host_ok = match hp {
                    HostPattern::Any => true,
                    HostPattern::Suffix(s) => host.ends_with(s.as_str()),
                    HostPattern::Exact(h) => *h == host,
                };
                let port_ok = match pp {
                    PortPattern::Any => true,
                    PortPattern::Range(a, b) => (*a..=*b).contains(&port),
                };
                host_ok && port_ok
            }
        }
    }
}

/// `host:port`, `[v6]:port`, `host`: brackets removed from IPv6 literals.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(v6) = s.strip_prefix('[') {
        if let Some((host, rest)) = v6.split_once(']') {
            return (host, rest.strip_prefix(':'));
        }
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

fn display_host(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Parses an address (URL or key=value) and checks every host:port it
/// would connect to. Messages never contain the password.
fn parse_and_check(
    address: &str,
    allowed: &[AllowedHost],
) -> Result<(tokio_postgres::Config, bool), String> {
    // tokio-postgres knows disable/prefer/require; verify-* is require plus
    // certificate checks, done by our TLS config.
    let mut verify = false;
    let mut address = address.to_string();
    for mode in ["sslmode=verify-full", "sslmode=verify-ca"] {
        if address.contains(mode) {
            verify = true;
            address = address.replace(mode, "sslmode=require");
        }
    }
    let mut config =
        tokio_postgres::Config::from_str(&address).map_err(|e| format!("invalid address: {e}"))?;
    config.connect_timeout(CONNECT_TIMEOUT);

    let ports = config.get_ports();
    let port_of = |i: usize| match ports.len() {
        0 => DEFAULT_PORT,
        1 => ports[0],
        _ => ports.get(i).copied().unwrap_or(DEFAULT_PORT),
    };
    let mut targets: Vec<(String, u16)> = Vec::new();
    for (i, host) in config.get_hosts().iter().enumerate() {
        match host {
            Host::Tcp(h) => targets.push((h.clone(), port_of(i))),
            #[cfg(unix)]
            Host::Unix(path) => {
                return Err(format!(
                    "address postgres://{} is not permitted",
                    path.display()
                ))
            }
        }
    }
    for (i, ip) in config.get_hostaddrs().iter().enumerate() {
        targets.push((ip.to_string(), port_of(i)));
    }
    if targets.is_empty() {
        return Err("address has no host".into());
    }
    for (host, port) in &targets {
        if !allowed.iter().any(|a| a.allows(host, *port)) {
            return Err(format!(
                "address postgres://{}:{port} is not permitted",
                display_host(host)
            ));
        }
    }
    Ok((config, verify))
}

// ---------------------------------------------------------------------------
// Pools

pub struct PgPools {
    allowed: Vec<AllowedHost>,
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    tls_verify: ClientConfig,
    tls_encrypt_only: ClientConfig,
}

struct Pool {
    config: tokio_postgres::Config,
    verify: bool,
    idle: Mutex<Vec<PgClient>>,
    permits: Arc<Semaphore>,
}

struct PgClient {
    client: tokio_postgres::Client,
    statements: HashMap<String, Statement>,
    /// A connection that failed outside SQL (I/O, timeout) is not reused.
    broken: bool,
    /// Best guess whether a transaction is open (then it is not reused).
    in_transaction: bool,
}

impl PgPools {
    pub fn new(allowed: Vec<AllowedHost>) -> anyhow::Result<PgPools> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls_verify = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tls_encrypt_only = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth();
        Ok(PgPools {
            allowed,
            pools: Mutex::new(HashMap::new()),
            tls_verify,
            tls_encrypt_only,
        })
    }

    async fn open(&self, address: &str) -> Result<Connection, Error> {
        let (config, verify) =
            parse_and_check(address, &self.allowed).map_err(Error::ConnectionFailed)?;
        let pool = {
            let mut pools = self
                .pools
                .lock()
                .map_err(|_| Error::Other("pool lock poisoned".into()))?;
            pools
                .entry(address.to_string())
                .or_insert_with(|| {
                    Arc::new(Pool {
                        config,
                        verify,
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
            .ok_or_else(|| Error::ConnectionFailed("too many connections".into()))?;
        let idle = pool.take_idle();
        let client = match idle {
            Some(client) => client,
            None => self.connect(&pool).await?,
        };
        Ok(Connection {
            pool,
            client: Some(client),
            _permit: permit,
        })
    }

    async fn connect(&self, pool: &Pool) -> Result<PgClient, Error> {
        let tls = if pool.verify {
            &self.tls_verify
        } else {
            &self.tls_encrypt_only
        };
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls.clone());
        let (client, connection) =
            match tokio::time::timeout(CONNECT_TIMEOUT, pool.config.connect(tls)).await {
                Err(_) => return Err(Error::ConnectionFailed("timed out connecting".into())),
                Ok(Err(e)) => return Err(Error::ConnectionFailed(error_text(&e))),
                Ok(Ok(pair)) => pair,
            };
        // The connection task ends when the server or the client goes away;
        // `Client::is_closed` then tells the pool not to reuse it.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(PgClient {
            client,
            statements: HashMap::new(),
            broken: false,
            in_transaction: false,
        })
    }
}

impl Pool {
    fn take_idle(&self) -> Option<PgClient> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(client) = idle.pop() {
            if !client.client.is_closed() {
                return Some(client);
            }
        }
        None
    }
}

/// tokio-postgres' message plus its cause (e.g. "Connection refused").
fn error_text(e: &tokio_postgres::Error) -> String {
    match e.source() {
        Some(src) if !e.to_string().contains(&src.to_string()) => format!("{e}: {src}"),
        _ => e.to_string(),
    }
}

/// `prefer`/`require`: encrypt, but accept any certificate (libpq's meaning
/// of these modes); signatures are still checked so the handshake is sound.
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

// ---------------------------------------------------------------------------
// The connection resource

pub struct Connection {
    pool: Arc<Pool>,
    client: Option<PgClient>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Connection {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
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

impl Connection {
    fn client(&mut self) -> Result<&mut PgClient, Error> {
        self.client
            .as_mut()
            .ok_or_else(|| Error::ConnectionFailed("connection is closed".into()))
    }
}

impl PgClient {
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

    /// Runs one statement with a deadline; marks the client broken on
    /// anything but a server-reported SQL error, and forgets cached
    /// statements on SQL errors (a schema change may have invalidated them).
    async fn run(
        &mut self,
        sql: &str,
        params: &[ParameterValue],
        kind: Kind,
    ) -> Result<(Outcome, Statement), Error> {
        let boxed = params
            .iter()
            .map(to_sql)
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::BadParameter)?;
        let refs: Vec<&(dyn ToSql + Sync)> = boxed
            .iter()
            .map(|b| b.as_ref() as &(dyn ToSql + Sync))
            .collect();
        let work = async {
            let stmt = self.statement(sql).await?;
            let out = match kind {
                Kind::Query => Outcome::Rows(self.client.query(&stmt, &refs).await?),
                Kind::Execute => Outcome::Count(self.client.execute(&stmt, &refs).await?),
            };
            Ok::<_, tokio_postgres::Error>((out, stmt))
        };
        let result = tokio::time::timeout(QUERY_TIMEOUT, work).await;
        match result {
            Ok(Ok(out)) => {
                self.in_transaction = in_transaction_after(self.in_transaction, sql);
                Ok(out)
            }
            Ok(Err(e)) => {
                if e.as_db_error().is_some() {
                    self.statements.clear();
                } else {
                    self.broken = true;
                }
                Err(query_error(&e))
            }
            Err(_) => {
                self.broken = true;
                Err(Error::QueryFailed(QueryError::Text(format!(
                    "query timed out after {} s",
                    QUERY_TIMEOUT.as_secs()
                ))))
            }
        }
    }
}

enum Kind {
    Query,
    Execute,
}

enum Outcome {
    Rows(Vec<Row>),
    Count(u64),
}

/// Best-effort transaction tracking from the statement's first words.
fn in_transaction_after(before: bool, sql: &str) -> bool {
    let mut words = sql
        .split_whitespace()
        .map(|w| w.trim_end_matches(';').to_ascii_uppercase());
    match words.next().as_deref() {
        Some("BEGIN" | "START") => true,
        Some("COMMIT" | "END" | "ABORT") => false,
        Some("ROLLBACK") => words.next().as_deref() == Some("TO") && before,
        _ => before,
    }
}

fn query_error(e: &tokio_postgres::Error) -> Error {
    let Some(db) = e.as_db_error() else {
        return Error::QueryFailed(QueryError::Text(error_text(e)));
    };
    let mut extras = Vec::new();
    for (k, v) in [
        ("schema", db.schema()),
        ("table", db.table()),
        ("column", db.column()),
        ("constraint", db.constraint()),
        ("hint", db.hint()),
    ] {
        if let Some(v) = v {
            extras.push((k.to_string(), v.to_string()));
        }
    }
    Error::QueryFailed(QueryError::DbError(DbError {
        as_text: db.to_string(),
        severity: db.severity().to_string(),
        code: db.code().code().to_string(),
        message: db.message().to_string(),
        detail: db.detail().map(String::from),
        extras,
    }))
}

// ---------------------------------------------------------------------------
// Values

/// SQL NULL for a parameter of any type.
#[derive(Debug)]
struct Null;

impl ToSql for Null {
    fn to_sql(
        &self,
        _: &Type,
        _: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(IsNull::Yes)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

/// PostgreSQL `interval`: microseconds, days, months on the wire.
#[derive(Debug)]
struct PgInterval(Interval);

impl ToSql for PgInterval {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0.micros.to_be_bytes());
        out.extend_from_slice(&self.0.days.to_be_bytes());
        out.extend_from_slice(&self.0.months.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    to_sql_checked!();
}

impl<'a> FromSql<'a> for PgInterval {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let bytes: [u8; 16] = raw.try_into()?;
        let (micros, rest) = bytes.split_at(8);
        let (days, months) = rest.split_at(4);
        Ok(PgInterval(Interval {
            micros: i64::from_be_bytes(micros.try_into()?),
            days: i32::from_be_bytes(days.try_into()?),
            months: i32::from_be_bytes(months.try_into()?),
        }))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

/// Any other column type: its raw wire bytes (`db-value::unsupported`).
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

type BoxedParam = Box<dyn ToSql + Sync + Send>;

fn to_sql(p: &ParameterValue) -> Result<BoxedParam, String> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};
    let date = |(y, m, d): (i32, u8, u8)| {
        NaiveDate::from_ymd_opt(y, m.into(), d.into())
            .ok_or_else(|| format!("invalid date {y}-{m}-{d}"))
    };
    let time = |(h, m, s, ns): (u8, u8, u8, u32)| {
        NaiveTime::from_hms_nano_opt(h.into(), m.into(), s.into(), ns)
            .ok_or_else(|| format!("invalid time {h}:{m}:{s}.{ns}"))
    };
    Ok(match p {
        ParameterValue::Boolean(v) => Box::new(*v),
        ParameterValue::Int8(v) => Box::new(*v),
        ParameterValue::Int16(v) => Box::new(*v),
        ParameterValue::Int32(v) => Box::new(*v),
        ParameterValue::Int64(v) => Box::new(*v),
        ParameterValue::Floating32(v) => Box::new(*v),
        ParameterValue::Floating64(v) => Box::new(*v),
        ParameterValue::Str(v) => Box::new(v.clone()),
        ParameterValue::Binary(v) => Box::new(v.clone()),
        ParameterValue::Date(d) => Box::new(date(*d)?),
        ParameterValue::Time(t) => Box::new(time(*t)?),
        ParameterValue::Datetime((y, mo, d, h, mi, s, ns)) => Box::new(NaiveDateTime::new(
            date((*y, *mo, *d))?,
            time((*h, *mi, *s, *ns))?,
        )),
        ParameterValue::Timestamp(secs) => Box::new(
            DateTime::from_timestamp(*secs, 0)
                .ok_or_else(|| format!("invalid timestamp {secs}"))?,
        ),
        ParameterValue::Uuid(s) => {
            Box::new(uuid::Uuid::parse_str(s).map_err(|e| format!("invalid uuid: {e}"))?)
        }
        ParameterValue::Jsonb(bytes) => Box::new(
            serde_json::from_slice::<serde_json::Value>(bytes)
                .map_err(|e| format!("invalid jsonb: {e}"))?,
        ),
        ParameterValue::Decimal(s) => Box::new(decimal(s)?),
        ParameterValue::ArrayInt32(v) => Box::new(v.clone()),
        ParameterValue::ArrayInt64(v) => Box::new(v.clone()),
        ParameterValue::ArrayStr(v) => Box::new(v.clone()),
        ParameterValue::ArrayDecimal(v) => Box::new(
            v.iter()
                .map(|d| d.as_deref().map(decimal).transpose())
                .collect::<Result<Vec<_>, _>>()?,
        ),
        ParameterValue::Interval(i) => Box::new(PgInterval(*i)),
        ParameterValue::DbNull => Box::new(Null),
        ParameterValue::RangeInt32(_)
        | ParameterValue::RangeInt64(_)
        | ParameterValue::RangeDecimal(_) => {
            return Err("range parameters are not supported".into())
        }
    })
}

fn decimal(s: &str) -> Result<rust_decimal::Decimal, String> {
    rust_decimal::Decimal::from_str_exact(s)
        .or_else(|_| rust_decimal::Decimal::from_scientific(s))
        .map_err(|e| format!("invalid decimal {s:?}: {e}"))
}

fn data_type(ty: &Type) -> DbDataType {
    match *ty {
        Type::BOOL => DbDataType::Boolean,
        Type::BYTEA => DbDataType::Binary,
        Type::FLOAT4 => DbDataType::Floating32,
        Type::FLOAT8 => DbDataType::Floating64,
        Type::INT2 => DbDataType::Int16,
        Type::INT4 => DbDataType::Int32,
        Type::INT8 => DbDataType::Int64,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => DbDataType::Str,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => DbDataType::Datetime,
        Type::DATE => DbDataType::Date,
        Type::TIME => DbDataType::Time,
        Type::UUID => DbDataType::Uuid,
        Type::JSONB => DbDataType::Jsonb,
        Type::NUMERIC => DbDataType::Decimal,
        Type::INT4_ARRAY => DbDataType::ArrayInt32,
        Type::INT8_ARRAY => DbDataType::ArrayInt64,
        Type::NUMERIC_ARRAY => DbDataType::ArrayDecimal,
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY => DbDataType::ArrayStr,
        Type::INTERVAL => DbDataType::Interval,
        _ => DbDataType::Other(ty.name().to_string()),
    }
}

fn get<'a, T: FromSql<'a>>(
    row: &'a Row,
    i: usize,
    wrap: impl FnOnce(T) -> DbValue,
) -> Result<DbValue, String> {
    match row.try_get::<_, Option<T>>(i) {
        Ok(Some(v)) => Ok(wrap(v)),
        Ok(None) => Ok(DbValue::DbNull),
        Err(e) => Err(format!("column {i}: {e}")),
    }
}

fn db_value(row: &Row, i: usize, ty: &Type) -> Result<DbValue, String> {
    use chrono::{Datelike, NaiveDateTime, Timelike};
    let date = |d: chrono::NaiveDate| (d.year(), d.month() as u8, d.day() as u8);
    let time = |t: chrono::NaiveTime| {
        (
            t.hour() as u8,
            t.minute() as u8,
            t.second() as u8,
            t.nanosecond(),
        )
    };
    let datetime = |dt: NaiveDateTime| {
        let (y, mo, d) = date(dt.date());
        let (h, mi, s, ns) = time(dt.time());
        DbValue::Datetime((y, mo, d, h, mi, s, ns))
    };
    match *ty {
        Type::BOOL => get(row, i, DbValue::Boolean),
        Type::BYTEA => get(row, i, DbValue::Binary),
        Type::FLOAT4 => get(row, i, DbValue::Floating32),
        Type::FLOAT8 => get(row, i, DbValue::Floating64),
        Type::INT2 => get(row, i, DbValue::Int16),
        Type::INT4 => get(row, i, DbValue::Int32),
        Type::INT8 => get(row, i, DbValue::Int64),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => get(row, i, DbValue::Str),
        Type::TIMESTAMP => get(row, i, datetime),
        Type::TIMESTAMPTZ => get(row, i, |v: chrono::DateTime<chrono::Utc>| {
            datetime(v.naive_utc())
        }),
        Type::DATE => get(row, i, |v| DbValue::Date(date(v))),
        Type::TIME => get(row, i, |v| DbValue::Time(time(v))),
        Type::UUID => get(row, i, |v: uuid::Uuid| DbValue::Uuid(v.to_string())),
        Type::JSONB => get(row, i, |v: serde_json::Value| {
            DbValue::Jsonb(serde_json::to_vec(&v).unwrap_or_default())
        }),
        Type::NUMERIC => get(row, i, |v: rust_decimal::Decimal| {
            DbValue::Decimal(v.to_string())
        }),
        Type::INT4_ARRAY => get(row, i, DbValue::ArrayInt32),
        Type::INT8_ARRAY => get(row, i, DbValue::ArrayInt64),
        Type::NUMERIC_ARRAY => get(row, i, |v: Vec<Option<rust_decimal::Decimal>>| {
            DbValue::ArrayDecimal(v.into_iter().map(|d| d.map(|d| d.to_string())).collect())
        }),
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY => {
            get(row, i, DbValue::ArrayStr)
        }
        Type::INTERVAL => get(row, i, |v: PgInterval| DbValue::Interval(v.0)),
        _ => get(row, i, |v: Raw| DbValue::Unsupported(v.0)),
    }
}

// ---------------------------------------------------------------------------
// Host implementation

impl postgres::Host for State {}

impl HostConnection for State {
    async fn open(
        &mut self,
        address: String,
    ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
        self.calls.open += 1;
        let shared = self.shared.clone();
        match shared.postgres.open(&address).await {
            Ok(conn) => Ok(Ok(self.table.push(conn)?)),
            Err(e) => Ok(Err(e)),
        }
    }

    async fn query(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<RowSet, Error>> {
        self.calls.query += 1;
        let client = match self.table.get_mut(&this)?.client() {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let (rows, stmt) = match client.run(&statement, &params, Kind::Query).await {
            Ok((Outcome::Rows(rows), stmt)) => (rows, stmt),
            Ok((Outcome::Count(_), _)) => return Ok(Err(Error::Other("unexpected result".into()))),
            Err(e) => return Ok(Err(e)),
        };
        let columns: Vec<Column> = stmt
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name().to_string(),
                data_type: data_type(c.type_()),
            })
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut values = Vec::with_capacity(columns.len());
            for (i, col) in stmt.columns().iter().enumerate() {
                match db_value(row, i, col.type_()) {
                    Ok(v) => values.push(v),
                    Err(e) => return Ok(Err(Error::ValueConversionFailed(e))),
                }
            }
            out.push(values);
        }
        Ok(Ok(RowSet { columns, rows: out }))
    }

    async fn execute(
        &mut self,
        this: Resource<Connection>,
        statement: String,
        params: Vec<ParameterValue>,
    ) -> wasmtime::Result<Result<u64, Error>> {
        self.calls.execute += 1;
        let client = match self.table.get_mut(&this)?.client() {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        Ok(match client.run(&statement, &params, Kind::Execute).await {
            Ok((Outcome::Count(n), _)) => Ok(n),
            Ok((Outcome::Rows(_), _)) => Err(Error::Other("unexpected result".into())),
            Err(e) => Err(e),
        })
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        // Dropping the resource returns a healthy connection to the pool.
        self.table.delete(this)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> Vec<AllowedHost> {
        entries
            .iter()
            .filter_map(|e| AllowedHost::parse(e).unwrap())
            .collect()
    }

    fn check(address: &str, entries: &[&str]) -> Result<(), String> {
        parse_and_check(address, &allowed(entries)).map(|_| ())
    }

    #[test]
    fn host_and_port_must_match() {
        let ours = ["postgres://127.0.0.1:5432"];
        assert!(check("postgres://u:p@127.0.0.1:5432/db", &ours).is_ok());
        assert!(
            check("postgres://u:p@127.0.0.1/db", &ours).is_ok(),
            "no port means 5432"
        );
        assert!(check("host=127.0.0.1 user=u password=p dbname=db", &ours).is_ok());
        assert_eq!(
            check("postgres://u:p@127.0.0.1:5433/db", &ours).unwrap_err(),
            "address postgres://127.0.0.1:5433 is not permitted"
        );
        assert_eq!(
            check("postgres://u:p@localhost:5432/db", &ours).unwrap_err(),
            "address postgres://localhost:5432 is not permitted"
        );
        assert!(check("postgres://u:p@localhost/db", &["postgres://localhost"]).is_ok());
        // Every host of a multi-host address is checked.
        assert!(check("host=127.0.0.1,evil user=u", &ours).is_err());
        // hostaddr is where the connection really goes.
        assert!(check("host=127.0.0.1 hostaddr=10.0.0.1 user=u", &ours).is_err());
    }

    #[test]
    fn wildcards_and_other_schemes() {
        assert!(check(
            "postgres://db.example.com:5432",
            &["postgres://*.example.com:5432"]
        )
        .is_ok());
        assert!(check(
            "postgres://example.com:5432",
            &["postgres://*.example.com:5432"]
        )
        .is_err());
        assert!(check("postgres://h:6000", &["postgres://h:*"]).is_ok());
        assert!(check("postgres://h:6000", &["postgres://h:5000..7000"]).is_ok());
        assert!(check("postgres://h:6000", &["*://*:*"]).is_ok());
        assert!(check("postgres://h:6000", &["https://h:6000"]).is_err());
        assert!(check("postgres://[::1]:5432", &["postgres://[::1]:5432"]).is_ok());
        assert!(AllowedHost::parse("postgres://u:p@h:1").is_err());
        assert!(AllowedHost::parse("h:1").is_err());
    }

    #[test]
    fn messages_never_carry_the_password() {
        for address in [
            "postgres://user:s3cr3t@10.1.1.1:5432/db",
            "postgresql://user:s3cr3t@10.1.1.1/db?sslmode=require",
            "host=10.1.1.1 user=user password=s3cr3t",
            "postgres://user:s3cr3t@10.1.1.1:5432/db?bogus=1",
            "postgres://user:s3cr3t@/db",
        ] {
            let err = check(address, &["postgres://127.0.0.1:5432"]).unwrap_err();
            assert!(!err.contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn verify_modes_become_require() {
        let (config, verify) = parse_and_check(
            "postgres://h/db?sslmode=verify-full",
            &allowed(&["postgres://h"]),
        )
        .unwrap();
        assert!(verify);
        assert_eq!(
            config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        let (_, verify) = parse_and_check("postgres://h/db", &allowed(&["postgres://h"])).unwrap();
        assert!(!verify);
    }

    #[test]
    fn transaction_tracking() {
        let after = |sqls: &[&str]| sqls.iter().fold(false, |t, s| in_transaction_after(t, s));
        assert!(after(&["begin;", "insert into t values (1)"]));
        assert!(!after(&["BEGIN", "COMMIT"]));
        assert!(after(&["BEGIN", "ROLLBACK TO SAVEPOINT a"]));
        assert!(!after(&["BEGIN", "rollback"]));
        assert!(!after(&["select 1"]));
    }

    #[test]
    fn parameters_convert() {
        assert!(to_sql(&ParameterValue::Decimal("12.50".into())).is_ok());
        assert!(to_sql(&ParameterValue::Decimal("x".into())).is_err());
        assert!(to_sql(&ParameterValue::Date((2024, 2, 30))).is_err());
        assert!(to_sql(&ParameterValue::Uuid("not-a-uuid".into())).is_err());
        assert!(to_sql(&ParameterValue::RangeInt32((None, None))).is_err());
        assert!(to_sql(&ParameterValue::DbNull).is_ok());
    }
}
