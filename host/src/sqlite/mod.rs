//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`, `spin:sqlite/sqlite@3.1.0`) on
//! rusqlite: where each label's file is (`runtime_config`), the `connection`
//! resource (`databases`, which knows no WIT type), values and statements
//! for both versions (`values`) and the interfaces on their view (`host`,
//! `v3`).

pub mod databases;
mod host;
mod runtime_config;
mod v3;
mod values;

pub use host::{SpinSqlite, SqliteDbs, SqliteView};
pub use runtime_config::locations;
