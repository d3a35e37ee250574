//! The Spin adapters, WebAssembly only, one per world (Cargo feature `p3`
//! or `p2`): the HTTP entry point, settings from Spin variables and the
//! environment, and the two stores, each only with its Cargo feature (a
//! variant imports no interface of the store it lacks).

#[cfg(all(feature = "p2", feature = "p3"))]
compile_error!("a component has one world: build with the feature p3 or p2, not both");

#[cfg(feature = "p2")]
mod p2;
#[cfg(feature = "p3")]
mod p3;

#[cfg(feature = "postgres")]
use std::borrow::Cow;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(feature = "postgres")]
use crate::db::Column;
use crate::db::{Connection, Row, Statement, StoreError, StoreKind};
use crate::settings::{self, Database, Setting, SettingUnavailable};

/// One write per line, so that concurrent requests' lines never interleave.
fn log(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Why a response was not sent whole, for its log line.
enum Unsent {
    /// The client closed its connection first: not the service's failure.
    ClientLeft,
    /// The service's: a list its store cut short, a response the host refused.
    Failed(String),
}

impl Unsent {
    fn cut_short(error: crate::ApiError) -> Unsent {
        Unsent::Failed(format!("the list was cut short: {error}"))
    }

    fn log(&self, fields: &crate::log::RequestFields) {
        log(&match self {
            Unsent::ClientLeft => crate::log::client_left(fields),
            Unsent::Failed(reason) => crate::log::failure(fields, reason),
        });
    }
}

/// Unix time in seconds.
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

/// A setting from what its Spin variable gave: `Ok(None)` when the manifest
/// does not declare it for this component (the plain environment may still
/// set it), `Err` when its provider failed (a Vault it cannot reach): that is
/// never read as unset.
fn resolve(
    setting: Setting,
    variable: Result<Option<String>, String>,
) -> Result<Option<String>, SettingUnavailable> {
    settings::resolve(setting, variable, || std::env::var(setting.env_name()).ok())
}

/// A PostgreSQL statement as Spin's blocking `query` is sent it: wrapped so
/// that it yields at least one row whatever the data, unless it is written
/// so (a statement with data-modifying CTEs, which PostgreSQL allows only at
/// the top level). Spin 4.0.0 to 4.0.2 never return from a `query` that
/// yields none (Spin issue #3671), nor does Spin main's blocking 4.2 `query`
/// (observed). Data-modifying statements run once as CTEs too. The join
/// loses the CTE's order, so the outer query orders by the first column,
/// every statement's key (`id` for books, as lists need).
#[cfg(feature = "postgres")]
fn always_a_row<'a>(statement: &'a Statement) -> Cow<'a, str> {
    if statement.always_a_row {
        return Cow::Borrowed(&statement.sql);
    }
    Cow::Owned(format!(
        "WITH result AS ({}) \
         SELECT result.* FROM (VALUES (1)) AS one(k) LEFT JOIN result ON true ORDER BY 1",
        statement.sql
    ))
}

/// The rows of a query sent by `always_a_row`, without the row of NULLs that
/// stands for "no rows": a row whose first column is NULL is that row, as
/// every statement's first column is a NOT NULL key.
#[cfg(feature = "postgres")]
fn without_the_empty_row(rows: impl Iterator<Item = impl Iterator<Item = Column>>) -> Vec<Row> {
    let rows = rows.map(Iterator::collect::<Row>);
    rows.filter(|row| !matches!(row.first(), Some(Column::Null) | None)).collect()
}

/// `bind` and `column` for an SDK's SQLite `Value` (spin-sdk 5 and 7 name
/// its variants alike).
#[cfg(feature = "sqlite")]
macro_rules! sqlite_values {
    ($value:ident) => {
        fn bind(params: &[crate::db::SqlParam]) -> Vec<$value> {
            use crate::db::SqlParam;
            let value = |param: &SqlParam| match *param {
                SqlParam::Text(text) => $value::Text(text.to_string()),
                SqlParam::Int32(value) => $value::Integer(value.into()),
                SqlParam::Int64(value) => $value::Integer(value),
            };
            params.iter().map(value).collect()
        }

        fn column(value: $value) -> crate::db::Column {
            use crate::db::Column;
            match value {
                $value::Integer(value) => Column::Integer(value),
                $value::Text(text) => Column::Text(text),
                $value::Null => Column::Null,
                $value::Real(_) | $value::Blob(_) => Column::Other,
            }
        }
    };
}
#[cfg(feature = "sqlite")]
use sqlite_values;

/// `bind` and `column` for an SDK's PostgreSQL `ParameterValue` and
/// `DbValue` (spin-sdk 5 and 7 name the variants used alike).
#[cfg(feature = "postgres")]
macro_rules! postgres_values {
    ($parameter:ident, $value:ident) => {
        fn bind(params: &[crate::db::SqlParam]) -> Vec<$parameter> {
            use crate::db::SqlParam;
            let value = |param: &SqlParam| match *param {
                SqlParam::Text(text) => $parameter::Str(text.to_string()),
                SqlParam::Int32(value) => $parameter::Int32(value),
                SqlParam::Int64(value) => $parameter::Int64(value),
            };
            params.iter().map(value).collect()
        }

        fn column(value: $value) -> crate::db::Column {
            use crate::db::Column;
            match value {
                $value::Int32(value) => Column::Integer(value.into()),
                $value::Int64(value) => Column::Integer(value),
                $value::Str(text) => Column::Text(text),
                $value::DbNull => Column::Null,
                _ => Column::Other,
            }
        }
    };
}
#[cfg(feature = "postgres")]
use postgres_values;

/// A connection of a world's adapter, made for `database` (connecting may
/// wait for the first statement), or why this build cannot.
trait Open: Sized {
    fn open(database: &Database) -> anyhow::Result<Self>;
}

/// The store `database` names, of the adapter's connections.
fn connect<S: Open, P: Open>(database: &Database) -> anyhow::Result<Store<S, P>> {
    Ok(match database.kind {
        StoreKind::Sqlite => Store::Sqlite(S::open(database)?),
        StoreKind::Postgres => Store::Postgres(P::open(database)?),
    })
}

/// The store a request opened, of either kind: each adapter's
/// `Context::Store`, over its two connections.
#[cfg_attr(not(all(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub enum Store<S, P> {
    Sqlite(S),
    Postgres(P),
}

impl<S: Connection, P: Connection> Connection for Store<S, P> {
    fn kind(&self) -> StoreKind {
        match self {
            Store::Sqlite(_) => StoreKind::Sqlite,
            Store::Postgres(_) => StoreKind::Postgres,
        }
    }
    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        match self {
            Store::Sqlite(db) => db.query(statement).await,
            Store::Postgres(db) => db.query(statement).await,
        }
    }
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(db) => db.execute(sql).await,
            Store::Postgres(db) => db.execute(sql).await,
        }
    }
    async fn prepare_write(&mut self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(db) => db.prepare_write().await,
            Store::Postgres(db) => db.prepare_write().await,
        }
    }
    async fn pause(&mut self, duration: Duration) {
        match self {
            Store::Sqlite(db) => db.pause(duration).await,
            Store::Postgres(db) => db.pause(duration).await,
        }
    }
}

/// The connection of a store this build does not contain: there is none.
#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
pub enum NotBuilt {}

#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
impl Open for NotBuilt {
    fn open(database: &Database) -> anyhow::Result<Self> {
        Err(anyhow::anyhow!(database.kind.missing_build_message()))
    }
}

#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
impl Connection for NotBuilt {
    fn kind(&self) -> StoreKind {
        match *self {}
    }
    async fn query(&mut self, _: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        match *self {}
    }
    async fn execute(&mut self, _: &str) -> Result<(), StoreError> {
        match *self {}
    }
    async fn pause(&mut self, _: Duration) {
        match *self {}
    }
}
