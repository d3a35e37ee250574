//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite, split by concern:
//!
//! - [`runtime_config`]: where each label's file is (`default`:
//!   `<state-dir>/sqlite_db.db`; others from `[sqlite_database.*]`);
//! - [`databases`]: the manifest's grants, the `connection` resource and the
//!   SQLite connection each one opens, as Spin's;
//! - [`values`]: values and errors to and from the interface's types;
//! - [`host`]: the interface the component calls, on its own view of the
//!   host state ([`SqliteView`]);

pub mod databases;
mod host;
mod runtime_config;
mod values;

pub use databases::SqliteDbs;
pub use host::{SpinSqlite, SqliteView};
pub use runtime_config::locations;
