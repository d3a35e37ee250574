//! Spin PostgreSQL (`fermyon:spin/postgres@2.0.0`, in every Spin since 2.0)
//! on tokio-postgres, split by concern:
//!
//! - [`allowed`]: `allowed_outbound_hosts` expanded, and what each entry
//!   admits;
//! - [`address`]: parsing an address and checking every host:port it would
//!   reach against those entries, as Spin does;
//! - [`pool`]: connections pooled per address (at most 64 in use), bounded
//!   connect and query time, broken connections evicted, a statement cache
//!   per connection;
//! - [`tls`]: `sslmode` as Spin 4.0.2 has it (certificates verified);
//! - [`values`]: parameters and column values to and from `rdbms-types`;
//! - [`host`]: the interface the component calls, on its own view of the
//!   host state ([`PgView`]), including the optional zero-row check
//!   (`spin-lite --pg-empty-query-error`);
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
mod tls;
mod values;

pub use allowed::OutboundHosts;
pub use host::{PgView, SpinPostgres};
pub use pool::PgPools;
