//! The statements of the failed-login limit (`limit`), on the
//! `login_attempts` table of `migrations/`, each run here and its row read
//! back.

use anyhow::{anyhow, bail};

use super::limit::LoginAttempts;
use crate::db::{rows, seconds, statement, Column, Connection, Row, SqlParam};

/// The count stored for `client`, if any (possibly of a window that has
/// already ended).
pub fn attempts(db: &mut dyn Connection, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
    let found = rows(db, |kind| {
        statement(
            kind,
            "SELECT attempts, window_end FROM login_attempts WHERE client = {1}",
            vec![SqlParam::Text(client)],
        )
    })?;
    found.first().map(attempts_of).transpose()
}

/// Counts one login attempt of `client` before its password is checked, in
/// one statement, so concurrent attempts are counted one by one (a row lock
/// in PostgreSQL, the write lock in SQLite), each getting the count that
/// includes its own. A window that ended at or before `now` starts again:
/// count 1, ending at `now + window_seconds`, so a stale row never needs a
/// cleanup first. No arithmetic on parameters: PostgreSQL infers each one's
/// type from the column it meets.
pub fn count_attempt(
    db: &mut dyn Connection,
    client: &str,
    now: u64,
    window_seconds: u64,
) -> anyhow::Result<LoginAttempts> {
    let counted = rows(db, |kind| {
        statement(
            kind,
            "INSERT INTO login_attempts AS a (client, attempts, window_end) VALUES ({1}, 1, {3}) \
             ON CONFLICT (client) DO UPDATE SET \
             attempts = CASE WHEN a.window_end > {2} THEN a.attempts + 1 ELSE 1 END, \
             window_end = CASE WHEN a.window_end > {2} THEN a.window_end ELSE {3} END \
             RETURNING attempts, window_end",
            vec![
                SqlParam::Text(client),
                SqlParam::Int64(seconds(now)),
                SqlParam::Int64(seconds(now.saturating_add(window_seconds))),
            ],
        )
    })?;
    attempts_of(counted.first().ok_or_else(|| anyhow!("the login-attempt upsert returned no row"))?)
}

/// Forgets `client`'s count (a successful login). (`RETURNING` so that
/// PostgreSQL runs it through `query` like every other statement.)
pub fn clear_attempts(db: &mut dyn Connection, client: &str) -> anyhow::Result<()> {
    rows(db, |kind| {
        statement(
            kind,
            "DELETE FROM login_attempts WHERE client = {1} RETURNING client",
            vec![SqlParam::Text(client)],
        )
    })
    .map(drop)
}

/// Deletes at most `limit` counts whose window ended at or before `now`,
/// found through the `window_end` index (no scan of the table).
pub fn prune_attempts(db: &mut dyn Connection, now: u64, limit: u32) -> anyhow::Result<()> {
    rows(db, |kind| {
        statement(
            kind,
            "DELETE FROM login_attempts WHERE client IN \
             (SELECT client FROM login_attempts WHERE window_end <= {1} \
             ORDER BY window_end LIMIT {2}) RETURNING client",
            vec![SqlParam::Int64(seconds(now)), SqlParam::Int64(limit.into())],
        )
    })
    .map(drop)
}

/// An `attempts, window_end` row; counts and times are never negative.
fn attempts_of(row: &Row) -> anyhow::Result<LoginAttempts> {
    if let [Column::Integer(count), Column::Integer(window_end)] = row.as_slice() {
        if let (Ok(count), Ok(window_end)) = (u64::try_from(*count), u64::try_from(*window_end)) {
            return Ok(LoginAttempts { count, window_end });
        }
    }
    bail!("unexpected login-attempt row: {row:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_counts_are_errors_not_values() {
        assert!(attempts_of(&vec![Column::Integer(-1), Column::Integer(900)]).is_err());
        assert!(attempts_of(&vec![Column::Integer(1), Column::Integer(900)]).is_ok());
    }
}
