//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite, split by concern:
//!
//! - [`runtime_config`]: where each label's file is (`default`:
//!   `<state-dir>/sqlite_db.db`; others from `[sqlite_database.*]`);
//! - [`pool`]: the manifest's grants, the databases, their pools of
//!   connections (checkout, checkin) and the `connection` resource;
//! - [`writer`]: the writer queue, one writing statement at a time;
//! - [`checkpointer`]: the thread that checkpoints the WAL beside the writers;
//! - [`values`]: values and errors to and from the interface's types;
//! - [`host`]: the interface the component calls, on its own view of the
//!   host state ([`SqliteView`]);

mod checkpointer;
mod host;
pub mod pool;
mod runtime_config;
mod values;
mod writer;

pub use host::{SpinSqlite, SqliteView};
pub use pool::SqliteDbs;
pub use runtime_config::locations;
