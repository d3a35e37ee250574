//! The statements of the failed-login limit (`limit`), on the
//! `login_attempts` table of `migrations/`, each run here and its row read
//! back.

use anyhow::{anyhow, bail};

use super::limit::LoginAttempts;
use crate::db::{seconds, Column, Connection, Row, Sql, SqlParam};

/// The count stored for `client`, if any (possibly of a window that has
/// already ended).
pub async fn attempts(
    db: &mut impl Connection,
    client: &str,
) -> anyhow::Result<Option<LoginAttempts>> {
    let mut sql = Sql::read();
    let client = sql.bind(SqlParam::Text(client));
    sql.push(&format!("SELECT attempts, window_end FROM login_attempts WHERE client = {client}"));
    sql.run(db).await?.first().map(attempts_of).transpose()
}

/// Counts one login attempt of `client` before its password is checked, in
/// one statement, so concurrent attempts are counted one by one (a row lock
/// in PostgreSQL, the write lock in SQLite), each getting the count that
/// includes its own. A window that ended at or before `now` starts again:
/// count 1, ending at `now + window_seconds`, so a stale row never needs a
/// cleanup first. No arithmetic on parameters: PostgreSQL infers each one's
/// type from the column it meets.
pub async fn count_attempt(
    db: &mut impl Connection,
    client: &str,
    now: u64,
    window_seconds: u64,
) -> anyhow::Result<LoginAttempts> {
    let window_end = seconds(now.saturating_add(window_seconds));
    let mut sql = Sql::write();
    let client = sql.bind(SqlParam::Text(client));
    let now = sql.bind(SqlParam::Int64(seconds(now)));
    let end = sql.bind(SqlParam::Int64(window_end));
    sql.push(&format!(
        "INSERT INTO login_attempts AS a (client, attempts, window_end) VALUES ({client}, 1, {end}) \
         ON CONFLICT (client) DO UPDATE SET \
         attempts = CASE WHEN a.window_end > {now} THEN a.attempts + 1 ELSE 1 END, \
         window_end = CASE WHEN a.window_end > {now} THEN a.window_end ELSE {end} END \
         RETURNING attempts, window_end"
    ));
    let counted = sql.run(db).await?;
    attempts_of(counted.first().ok_or_else(|| anyhow!("the login-attempt upsert returned no row"))?)
}

/// Forgets `client`'s count (a successful login). (`RETURNING` so that
/// PostgreSQL runs it through `query` like every other statement.)
pub async fn clear_attempts(db: &mut impl Connection, client: &str) -> anyhow::Result<()> {
    let mut sql = Sql::write();
    let client = sql.bind(SqlParam::Text(client));
    sql.push(&format!("DELETE FROM login_attempts WHERE client = {client} RETURNING client"));
    sql.run(db).await.map(drop)
}

/// Deletes at most `limit` counts whose window ended at or before `now`,
/// found through the `window_end` index (no scan of the table).
pub async fn prune_attempts(db: &mut impl Connection, now: u64, limit: u32) -> anyhow::Result<()> {
    let mut sql = Sql::write();
    let now = sql.bind(SqlParam::Int64(seconds(now)));
    let limit = sql.bind(SqlParam::Int64(limit.into()));
    sql.push(&format!(
        "DELETE FROM login_attempts WHERE client IN \
         (SELECT client FROM login_attempts WHERE window_end <= {now} \
         ORDER BY window_end LIMIT {limit}) RETURNING client"
    ));
    sql.run(db).await.map(drop)
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
