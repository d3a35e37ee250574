//! Spin PostgreSQL (`fermyon:spin/postgres@2.0.0`,
//! `spin:postgres/postgres@4.2.0`) on tokio-postgres:
//! `allowed_outbound_hosts` and the addresses checked against it
//! (`allowed`), the pool (`pool`), values (`values`) and the interfaces
//! (`host`, `v4`). As in Spin, a failed statement is `query-failed` with
//! tokio-postgres' debug form of the error (its SQLSTATE, e.g.
//! `SqlState(E42P01)`); no message carries the password.

// The WIT `error` type is large by design; results carry it as Spin's do.
#![allow(clippy::result_large_err)]

mod allowed;
mod host;
pub mod pool;
mod v4;
mod values;

pub use allowed::postgres_hosts;
pub use host::{PgView, SpinPostgres};
pub use pool::PgPools;
