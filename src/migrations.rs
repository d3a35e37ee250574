//! Versioned migrations: the numbered files of `migrations/sqlite/` and
//! `migrations/postgres/`, embedded in the component, applied in order and
//! recorded in a `schema_migrations` table.
//!
//! When they run: under Spin there is no start-up, so a store applies them
//! the first time a statement fails for want of a table or a column, then
//! runs the statement again (no extra statement on any other request);
//! `book-host` also applies them at start. `migrate` takes a lock first
//! (SQLite: the write lock of `BEGIN IMMEDIATE`; PostgreSQL: a transaction
//! advisory lock), reads what is recorded, and applies and records the rest
//! in the same transaction, so instances and replicas racing to migrate one
//! database apply each migration once. A database created before versioning
//! (tables, no `schema_migrations`) is brought under it: the first
//! migrations only create what is missing.

use anyhow::Context as _;

use crate::sql::Dialect;

/// One migration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    pub version: i64,
    /// The file name without `.sql`, e.g. `0001_books`.
    pub name: &'static str,
    pub sql: &'static str,
}

macro_rules! migration {
    ($dir:literal, $version:literal, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sql: include_str!(concat!("../migrations/", $dir, "/", $name, ".sql")),
        }
    };
}

const SQLITE: [Migration; 3] = [
    migration!("sqlite", 1, "0001_books"),
    migration!("sqlite", 2, "0002_login_failures"),
    migration!("sqlite", 3, "0003_login_attempts"),
];

const POSTGRES: [Migration; 3] = [
    migration!("postgres", 1, "0001_books"),
    migration!("postgres", 2, "0002_login_failures"),
    migration!("postgres", 3, "0003_login_attempts"),
];

/// The table that records what was applied.
const SCHEMA_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (\
     version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL)";

/// The versions recorded, one row per version.
pub const APPLIED_VERSIONS: &str = "SELECT version FROM schema_migrations ORDER BY version";

/// Every migration of a dialect, in order.
pub fn all(dialect: Dialect) -> &'static [Migration] {
    match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Postgres => &POSTGRES,
    }
}

/// A connection `migrate` can work through: statements without parameters.
pub trait SchemaConnection {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()>;
    /// The versions in `schema_migrations` (run `APPLIED_VERSIONS`).
    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>>;
}

/// Applies the migrations `connection` has not recorded, in one transaction
/// under a lock; returns the versions it applied (none when up to date).
pub fn migrate(
    connection: &mut dyn SchemaConnection,
    dialect: Dialect,
) -> anyhow::Result<Vec<i64>> {
    if dialect == Dialect::Sqlite {
        // WAL lets readers and a writer work at once and makes commits
        // cheaper; the setting is kept in the file. It cannot be changed
        // inside a transaction, nor while another connection holds the file,
        // so it is tried first and may fail: the next migration tries again.
        let _ = connection.execute("PRAGMA journal_mode = WAL");
    }
    let begin = match dialect {
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Postgres => "BEGIN",
    };
    connection.execute(begin)?;
    match apply_pending(connection, dialect) {
        Ok(applied) => {
            connection.execute("COMMIT")?;
            Ok(applied)
        }
        Err(error) => {
            let _ = connection.execute("ROLLBACK");
            Err(error)
        }
    }
}

fn apply_pending(
    connection: &mut dyn SchemaConnection,
    dialect: Dialect,
) -> anyhow::Result<Vec<i64>> {
    if dialect == Dialect::Postgres {
        // Held to the end of the transaction: one migrator at a time.
        connection.execute(&format!("SELECT pg_advisory_xact_lock({LOCK_KEY})"))?;
    }
    connection.execute(SCHEMA_MIGRATIONS)?;
    let recorded = connection.applied_versions()?;
    let mut applied = Vec::new();
    for migration in all(dialect) {
        if recorded.contains(&migration.version) {
            continue;
        }
        for statement in statements(migration.sql) {
            connection
                .execute(&statement)
                .with_context(|| format!("migration {}", migration.name))?;
        }
        connection.execute(&format!(
            "INSERT INTO schema_migrations (version, name) VALUES ({}, '{}')",
            migration.version, migration.name
        ))?;
        applied.push(migration.version);
    }
    Ok(applied)
}

/// The advisory lock of a PostgreSQL migration (any number all migrators of
/// this service agree on: "book" in ASCII).
const LOCK_KEY: i64 = 0x626f_6f6b;

/// The statements of a migration file: `--` comments dropped, split on `;`.
/// Our migration files hold no string literals, so this needs no SQL parser.
pub fn statements(migration: &str) -> Vec<String> {
    let code: Vec<&str> = migration
        .lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .collect();
    code.join("\n")
        .split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_numbered_in_order_and_named_by_their_file() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            for (index, migration) in all(dialect).iter().enumerate() {
                let version = i64::try_from(index).unwrap() + 1;
                assert_eq!(migration.version, version, "{}", migration.name);
                assert!(
                    migration.name.starts_with(&format!("{version:04}_")),
                    "{}",
                    migration.name
                );
                assert!(!statements(migration.sql).is_empty(), "{}", migration.name);
            }
        }
        let names = |d| all(d).iter().map(|m| m.name).collect::<Vec<_>>();
        assert_eq!(names(Dialect::Sqlite), names(Dialect::Postgres));
    }

    #[test]
    fn every_file_in_the_folders_is_embedded() {
        for (dir, dialect) in [("sqlite", Dialect::Sqlite), ("postgres", Dialect::Postgres)] {
            let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/").to_string() + dir;
            let mut files: Vec<String> = std::fs::read_dir(&folder)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            let embedded: Vec<String> = all(dialect)
                .iter()
                .map(|m| format!("{}.sql", m.name))
                .collect();
            assert_eq!(files, embedded, "{folder}");
        }
    }

    #[test]
    fn statements_drop_comments_and_split() {
        assert_eq!(
            statements("-- a comment; with a semicolon\nCREATE TABLE a (x INT); -- x\n\nSELECT 1;"),
            ["CREATE TABLE a (x INT)", "SELECT 1"]
        );
    }

    /// Records what it is asked to run; `recorded` plays schema_migrations.
    struct Script {
        ran: Vec<String>,
        recorded: Vec<i64>,
        fail_on: Option<&'static str>,
    }

    impl SchemaConnection for Script {
        fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
            if self.fail_on.is_some_and(|bad| statement.contains(bad)) {
                anyhow::bail!("refused: {statement}");
            }
            self.ran.push(statement.to_string());
            Ok(())
        }
        fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
            Ok(self.recorded.clone())
        }
    }

    #[test]
    fn only_what_is_not_recorded_is_applied_under_a_lock() {
        let mut script = Script {
            ran: Vec::new(),
            recorded: vec![1, 2],
            fail_on: None,
        };
        assert_eq!(migrate(&mut script, Dialect::Postgres).unwrap(), [3]);
        assert_eq!(script.ran[0], "BEGIN");
        assert!(script.ran[1].starts_with("SELECT pg_advisory_xact_lock("));
        assert!(script.ran[2].starts_with("CREATE TABLE IF NOT EXISTS schema_migrations"));
        assert!(script.ran.iter().any(|s| s.contains("login_attempts")));
        assert!(!script
            .ran
            .iter()
            .any(|s| s.contains("CREATE TABLE IF NOT EXISTS books")));
        assert_eq!(
            script.ran[script.ran.len() - 2],
            "INSERT INTO schema_migrations (version, name) VALUES (3, '0003_login_attempts')"
        );
        assert_eq!(script.ran.last().unwrap(), "COMMIT");
        // Up to date: nothing applied, nothing recorded.
        let mut current = Script {
            ran: Vec::new(),
            recorded: vec![1, 2, 3],
            fail_on: None,
        };
        assert!(migrate(&mut current, Dialect::Sqlite).unwrap().is_empty());
        assert_eq!(
            current.ran,
            [
                "PRAGMA journal_mode = WAL",
                "BEGIN IMMEDIATE",
                SCHEMA_MIGRATIONS,
                "COMMIT"
            ]
        );
    }

    #[test]
    fn a_failing_migration_is_rolled_back_and_recorded_nowhere() {
        let mut script = Script {
            ran: Vec::new(),
            recorded: Vec::new(),
            fail_on: Some("login_attempts"),
        };
        let error = migrate(&mut script, Dialect::Sqlite).unwrap_err();
        assert!(
            format!("{error:#}").contains("0003_login_attempts"),
            "{error:#}"
        );
        assert_eq!(script.ran.last().unwrap(), "ROLLBACK");
        assert!(!script.ran.iter().any(|s| s.contains("VALUES (3,")));
    }
}
