//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`) on rusqlite: where each label's
//! file is (`runtime_config`), the `connection` resource (`databases`, which
//! knows no WIT type), values (`values`) and the interface on its view (`host`).

pub mod databases;
mod host;
mod runtime_config;
mod values;

pub use host::{SpinSqlite, SqliteDbs, SqliteView};
pub use runtime_config::locations;
