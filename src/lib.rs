//! # Book Catalog Service
//!
//! An HTTP/JSON API for book records behind HS256 token login, built as a
//! WebAssembly component for Spin: a host-independent core that builds and
//! is tested natively, and (WebAssembly only) the Spin adapters in `spin`,
//! one per world. One request reads top to bottom: `spin/p3/mod.rs` (or
//! `spin/p2/mod.rs`) -> `app` -> a resource (`books`, `login`) -> its
//! `sql.rs` -> `db` -> the connection in `spin/`.

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
// spin-sdk 5.2's `#[http_component]` writes `::spin_sdk::...` paths.
#[cfg(all(target_arch = "wasm32", feature = "p2"))]
extern crate spin_sdk_p2 as spin_sdk;

pub use app::handle;
pub use envelope::{Body, Response};
pub use error::ApiError;
pub use port::{BodyError, BodyStream, Context, RequestHead, MAX_BODY_BYTES};

/// Runs a future whose every step is ready at once (rusqlite's, in tests).
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}
