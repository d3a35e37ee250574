//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin.
//!
//! A host-independent core that builds and is tested natively. One request
//! reads top to bottom: `spin/mod.rs` (the Spin entry) -> `app` (route,
//! authenticate, read the body, dispatch) -> a resource (`books`, `login`)
//! -> its statements (`books/sql.rs`, `login/sql.rs`) -> `db` -> the
//! connection (`spin/sqlite.rs`, `spin/postgres.rs`).
//!
//! - `app`: one request through the service, and its routes;
//! - `books`: the book endpoints, their rules (`model`), catalog queries
//!   (`query`), safe writes (`safe_writes`) and statements (`sql`);
//! - `login`: `POST /token`, who the client is (`client`), the failed-login
//!   limit (`limit`), the configured password (`password`), its statements;
//! - `token`: HS256 tokens, issued and checked on every protected route;
//! - `cors`: which browser origins may call the API, and the preflight;
//! - `port`: what the core needs from its host (`Context`, bodies, the
//!   request head);
//! - `settings`: every setting, the only module that names one;
//! - `db`: connections, statements and rows, migrations, and (feature
//!   `rusqlite`, native builds only) an in-process SQLite for the tests and
//!   the native benchmark; it knows no resource;
//! - `envelope`, `error`, `log`: the response envelope, the one error type,
//!   the log lines.
//!
//! And, in the WebAssembly build only, the Spin adapters in `spin`: the HTTP
//! entry, the SQLite and PostgreSQL connections and the settings source.

pub mod app;
pub mod books;
pub mod cors;
pub mod db;
pub mod envelope;
pub mod error;
pub mod log;
pub mod login;
pub mod port;
pub mod settings;
pub mod token;

#[cfg(target_arch = "wasm32")]
mod spin;

pub use app::handle;
pub use envelope::Response;
pub use error::ApiError;
pub use port::{Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
