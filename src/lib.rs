//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin.
//!
//! A host-independent core that builds and is tested natively, imports
//! flowing one way (each module uses only those above it in this list):
//!
//! - `log`: the component's log lines (logfmt);
//! - `error`, `envelope`: the one error type and the response it maps to;
//! - `model`: the book, its id and its rules;
//! - `query`: catalog queries on `GET /books`;
//! - `safe_writes`: versions, ETags, `If-Match` and idempotency keys;
//! - `client`, `password`, `login_limit`, `token`: who the client is, the
//!   configured password and its check, the failed-login limit's rules,
//!   tokens;
//! - `settings`: every setting, the only module that names one: where it is
//!   read, its default, parsing and warnings, and which store to open
//!   (`StoreKind`, `DbUrl`);
//! - `sql`, `migrations`, `store`: every statement, its rows read back and
//!   the `Connection` that runs it; the versioned schema; what the handlers
//!   ask of a database, written once over a `Connection`, migrating lazily;
//! - `native` (feature `rusqlite`, native builds only): an in-process SQLite
//!   `Connection`, for the tests and the native benchmark;
//! - `port`: what the core needs from its host (`Context`, bodies, the
//!   request head);
//! - `router`, `handlers`, `app`: routing, one handler module per resource,
//!   and the dispatch (`handle`).
//!
//! And, in the WebAssembly build only, the Spin adapters in `spin`: the HTTP
//! entry, the SQLite and PostgreSQL connections and the settings source.

pub mod app;
pub mod client;
pub mod envelope;
pub mod error;
pub mod handlers;
pub mod log;
pub mod login_limit;
pub mod migrations;
pub mod model;
#[cfg(feature = "rusqlite")]
pub mod native;
pub mod password;
pub mod port;
pub mod query;
pub mod router;
pub mod safe_writes;
pub mod settings;
pub mod sql;
pub mod store;
pub mod token;

#[cfg(target_arch = "wasm32")]
mod spin;

pub use app::handle;
pub use envelope::Response;
pub use error::ApiError;
pub use port::{Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
