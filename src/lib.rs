//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin.
//!
//! A host-independent core that builds and is tested natively, imports
//! flowing one way (each module uses only those above it in this list):
//!
//! - `error`, `envelope`: the one error type and the response it maps to;
//! - `settings`, `db_url`: the settings, their names and precedence, and
//!   the store setting `DB_URL`;
//! - `model`: the book, its id and its rules;
//! - `query`: catalog queries on `GET /books`;
//! - `store`: what the handlers ask of a database;
//! - `sql`, `sql_store`, `migrations`: every statement, in one dialect
//!   type, and its rows read back; the stores on any SQL connection; the
//!   versioned schema;
//! - `port`: what the core needs from its host (`Context`, bodies, the
//!   request head);
//! - `token`, `password`, `client`, `login_limit`: tokens, credentials, who
//!   the client is, the failed-login limit;
//! - `router`, `handlers`, `app`: routing, one handler module per resource,
//!   and the dispatch (`handle`).
//!
//! And, in the WebAssembly build only, the Spin adapters in `spin`: the HTTP
//! entry, the SQLite and PostgreSQL stores and the settings reader.

pub mod app;
pub mod client;
pub mod db_url;
pub mod envelope;
pub mod error;
pub mod handlers;
pub mod login_limit;
pub mod migrations;
pub mod model;
pub mod password;
pub mod port;
pub mod query;
pub mod router;
pub mod settings;
pub mod sql;
pub mod sql_store;
pub mod store;
pub mod token;

#[cfg(target_arch = "wasm32")]
mod spin;

pub use app::handle;
pub use envelope::Response;
pub use error::ApiError;
pub use port::{Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
