//! What every store shares, knowing no resource: the `Connection` a
//! statement runs on (Spin's SQLite and PostgreSQL in `spin/`, rusqlite in
//! `native`), statements with bound values written once for both dialects,
//! the columns of their rows, and running them with the schema migrated on
//! first need (`migrations`).

pub mod migrations;
#[cfg(feature = "rusqlite")]
pub mod native;

use anyhow::{bail, Context as _};

use crate::settings::StoreKind;

/// A database connection. Connecting may be deferred to the first statement.
pub trait Connection {
    /// Which database it is, and so the dialect of its statements.
    fn kind(&self) -> StoreKind;
    /// Runs `statement` and returns its rows, in the statement's order.
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>>;
    /// Runs `sql`, which has no parameters and whose rows are not read:
    /// schema changes and transaction control.
    fn execute(&mut self, sql: &str) -> anyhow::Result<()>;
}

/// A borrowed connection is one too (a pooled connection lent to a request).
impl<C: Connection + ?Sized> Connection for &mut C {
    fn kind(&self) -> StoreKind {
        (**self).kind()
    }
    fn query(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        (**self).query(statement)
    }
    fn execute(&mut self, sql: &str) -> anyhow::Result<()> {
        (**self).execute(sql)
    }
}

/// A value bound to a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlParam<'a> {
    Text(&'a str),
    Int32(i32),
    Int64(i64),
}

/// A statement in the store's dialect and the values of its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub sql: String,
    pub params: Vec<SqlParam<'a>>,
    /// Written to return a row whatever the data, so a connection need not
    /// make sure it does (PostgreSQL's zero-row hang: `spin/postgres.rs`).
    pub always_a_row: bool,
}

/// A statement being written: text with `{n}` for the `n`-th bound value,
/// turned into the store's placeholders (`?n` or `$n`) by `build`.
#[derive(Debug, Default)]
pub struct Sql<'a> {
    pub text: String,
    params: Vec<SqlParam<'a>>,
}

impl<'a> Sql<'a> {
    pub fn new(text: impl Into<String>) -> Sql<'a> {
        Sql {
            text: text.into(),
            params: Vec::new(),
        }
    }

    /// Binds `value`, returning the placeholder to write where it goes.
    pub fn bind(&mut self, value: SqlParam<'a>) -> String {
        self.params.push(value);
        format!("{{{}}}", self.params.len())
    }

    /// `text` with `value` bound in place of its one `{}`.
    pub fn push_bound(&mut self, text: &str, value: SqlParam<'a>) {
        let placeholder = self.bind(value);
        self.text.push_str(&text.replacen("{}", &placeholder, 1));
    }

    pub fn build(self, kind: StoreKind) -> Statement<'a> {
        let mut sql = self.text;
        // From the last, so that `{1}` is never replaced inside `{10}`.
        for n in (1..=self.params.len()).rev() {
            let placeholder = match kind {
                StoreKind::Sqlite => format!("?{n}"),
                StoreKind::Postgres => format!("${n}"),
            };
            sql = sql.replace(&format!("{{{n}}}"), &placeholder);
        }
        Statement {
            sql,
            params: self.params,
            always_a_row: false,
        }
    }
}

/// A statement whose values are all given up front.
pub fn statement<'a>(kind: StoreKind, text: &str, params: Vec<SqlParam<'a>>) -> Statement<'a> {
    let mut sql = Sql::new(text);
    sql.params = params;
    sql.build(kind)
}

/// A column of a result row, as each connection hands it over (SQLite
/// INTEGER and PostgreSQL INTEGER/BIGINT are all `Integer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    Integer(i64),
    Text(String),
    Null,
    /// Any other type: never in a row our statements return.
    Other,
}

pub type Row = Vec<Column>;

/// Seconds as stored: SQLite INTEGER and PostgreSQL BIGINT are signed.
pub fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Runs a statement. A missing table or column means the database is behind
/// this build's schema: migrate it and run the statement again. Under Spin
/// there is no start-up, so this is where a database is first migrated; the
/// usual path costs no schema check at all.
pub fn rows<'a>(
    db: &mut dyn Connection,
    statement: impl Fn(StoreKind) -> Statement<'a>,
) -> anyhow::Result<Vec<Row>> {
    let statement = statement(db.kind());
    match db.query(&statement) {
        Err(error) if migrations::schema_is_behind(db.kind(), &error) => {
            migrations::migrate(db).context("migrating the database")?;
            db.query(&statement)
        }
        result => result,
    }
}

/// Runs `work` in one SQLite transaction that takes the write lock first,
/// committed if it succeeds and rolled back if not. A database behind this
/// build's schema is migrated, and `work` runs again.
pub fn in_transaction<T>(
    db: &mut dyn Connection,
    work: impl Fn(&mut dyn Connection) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut migrated = false;
    loop {
        db.execute("BEGIN IMMEDIATE")?;
        match work(db) {
            Ok(value) => {
                db.execute("COMMIT")?;
                return Ok(value);
            }
            Err(error) => {
                let _ = db.execute("ROLLBACK");
                if migrated || !migrations::schema_is_behind(db.kind(), &error) {
                    return Err(error);
                }
                migrations::migrate(db).context("migrating the database")?;
                migrated = true;
            }
        }
    }
}

/// `GET /health`: connects (or takes a pooled connection) and runs the most
/// trivial query.
pub fn ping(db: &mut dyn Connection) -> anyhow::Result<()> {
    match rows(db, |kind| statement(kind, "SELECT 1 AS ok", Vec::new()))?.as_slice() {
        [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
        other => bail!("SELECT 1 returned {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_or_more_placeholders_are_not_confused() {
        let texts: Vec<String> = (1..=11).map(|n| n.to_string()).collect();
        let mut sql = Sql::default();
        let placeholders: Vec<String> = texts.iter().map(|t| sql.bind(SqlParam::Text(t))).collect();
        sql.text = placeholders.join(",");
        assert_eq!(
            sql.build(StoreKind::Postgres).sql,
            "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11"
        );
    }
}
