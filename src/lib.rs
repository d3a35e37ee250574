//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin.
//!
//! The crate is a host-independent core that builds and is tested natively
//! (`app::handle` and everything it calls), plus, in the WebAssembly build
//! only, the Spin adapters in `spin`: the HTTP entry, the SQLite and
//! PostgreSQL stores and the configuration reader.

pub mod app;
pub mod auth;
pub mod books;
pub mod catalog;
pub mod client;
pub mod envelope;
pub mod error;
pub mod login_throttle;
pub mod password;
pub mod router;
pub mod schema;
pub mod settings;
pub mod store;
pub mod token;

#[cfg(target_arch = "wasm32")]
mod spin;

pub use app::{handle, Body, BodyError, Context, RequestHead, MAX_BODY_BYTES};
pub use envelope::Response;
pub use error::ApiError;
