//! Spin PostgreSQL (`fermyon:spin/postgres@2.0.0`, in every Spin since 2.0)
//! on tokio-postgres: `allowed_outbound_hosts` (`allowed`), addresses
//! checked against it (`address`), the pool (`pool`), values (`values`) and
//! the interface on its view, with the zero-row check (`host`).
//!
//! Error texts follow Spin's: a failed statement is `query-failed` carrying
//! tokio-postgres' debug form of the error (so a server error shows its
//! SQLSTATE, e.g. `SqlState(E42P01)`). No message ever carries the password.

// The WIT `error` type is large by design; results carry it as Spin's do.
#![allow(clippy::result_large_err)]

mod address;
mod allowed;
mod host;
pub mod pool;
mod values;

pub use allowed::OutboundHosts;
pub use host::{PgView, SpinPostgres};
pub use pool::PgPools;
