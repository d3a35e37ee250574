//! Spin SQLite (`fermyon:spin/sqlite@2.0.0`, `spin:sqlite/sqlite@3.1.0`) on
//! rusqlite: the `connection` resource (`databases`, which knows no WIT
//! type), values and statements for both versions (`values`), where each
//! label's file is and the interfaces on their view (`host`, `v3`).

pub mod databases;
mod host;
mod v3;
mod values;

pub use host::{locations, SpinSqlite, SqliteDbs, SqliteView};
