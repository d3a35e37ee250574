//! Spin PostgreSQL (`fermyon:spin/postgres@2.0.0`, in every Spin since 2.0)
//! on tokio-postgres, split by concern:
//!
//! - [`address`]: parsing an address and checking every host:port it would
//!   reach against `allowed_outbound_hosts`, as Spin does;
//! - [`pool`]: connections pooled per address (at most 64 in use), bounded
//!   connect and query time, broken connections evicted, a statement cache
//!   per connection;
//! - [`tls`]: `sslmode` as Spin 4.0.2 has it (certificates verified);
//! - [`values`]: parameters and column values to and from `rdbms-types`;
//! - [`host`]: the `connection` resource the component calls, including the
//!   optional zero-row check (`book-host --pg-empty-query-error`).
//!
//! Error texts follow Spin's: a failed statement is `query-failed` carrying
//! tokio-postgres' debug form of the error (so a server error shows its
//! SQLSTATE, e.g. `SqlState(E42P01)`). No message ever carries the password.

// The WIT `error` type is large by design; results carry it as Spin's do.
#![allow(clippy::result_large_err)]

mod address;
mod host;
mod pool;
mod tls;
mod values;

pub use address::{parse as parse_address, targets as address_targets, AllowedHost};
pub use pool::{Connection, PgPools};
