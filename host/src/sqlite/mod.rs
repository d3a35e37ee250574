//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite, split by concern:
//!
//! - [`pool`]: the manifest's grants, the `default` database
//!   (`<state-dir>/sqlite_db.db`, as in Spin without runtime config), its
//!   pool of connections (checkout, checkin) and the `connection` resource;
//! - [`writer`]: the writer queue, one writing statement at a time;
//! - [`checkpointer`]: the thread that checkpoints the WAL beside the writers;
//! - [`values`]: values and errors to and from the interface's types;
//! - [`host`]: the interface the component calls, on its own view of the
//!   host state ([`SqliteView`]);
//! - [`startup`]: the start-up check of the database the component will
//!   open, and the migrations applied to it at start.

mod checkpointer;
mod host;
pub mod pool;
mod startup;
mod values;
mod writer;

pub use host::{SpinSqlite, SqliteView};
pub use pool::SqliteDbs;
pub use startup::{access_warnings, migrate_at_start, Chosen};
