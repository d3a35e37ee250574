//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin: a host-independent core that builds and
//! is tested natively, and (WebAssembly only) the Spin adapters in `spin`.
//! One request reads top to bottom: `spin/mod.rs` -> `app` -> a resource
//! (`books`, `login`) -> its `sql.rs` -> `db` -> the connection in `spin/`.

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
