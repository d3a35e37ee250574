//! The Spin database calls one request makes (`SPIN_LITE_COUNT_DB_CALLS=1`
//! logs them): counted by the SQLite and PostgreSQL interfaces, reset and
//! read by the instance state. A leaf, so that the rooms that count and the
//! state that owns the counter both import it and neither imports the other.

/// Spin database host calls made while serving one request.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbCalls {
    pub open: u32,
    pub execute: u32,
    pub query: u32,
}
