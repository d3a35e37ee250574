//! The component's migrations applied at start to the store it will use, as
//! the start-up sources see it: the SQLite database `DB_URL` names (or
//! `default`, when it is empty), if the manifest grants it and this host
//! has its location; or the PostgreSQL database it names, if
//! `allowed_outbound_hosts` admits it. The rooms apply them
//! (`sqlite::migrate_at_start`, `postgres::migrate_at_start`); this chooses
//! the store and says what happened in one line. A failure is a warning:
//! the host serves anyway, and the component applies them itself on its
//! first schema error.

use book_catalog::db_url::{redact_password, StoreTarget};
use book_catalog::migrations::all;
use book_catalog::settings::Setting;
use book_catalog::sql::Dialect;

use super::ComponentSettings;
use crate::postgres::{self, PgPools};
use crate::sqlite::{self, SqliteDbs};

/// Applies the migrations and prints the outcome: `Migrations: applied 1,
/// 2, 3`, `Migrations: up to date (3)`, or a warning with the reason (never
/// a password). Prints nothing when the store is one the component will be
/// refused (the start-up report already warned about it). With variables
/// providers the store setting may be one only they know: then nothing is
/// migrated at start, rather than a store the component will not use.
pub async fn migrate(settings: &ComponentSettings<'_>, sqlite: &SqliteDbs, pools: &PgPools) {
    if settings.has_providers() {
        println!(
            "Migrations: not at start (settings may come from a variables provider); the \
             component applies them on its first use of the store"
        );
        return;
    }
    let target = match StoreTarget::from_db_url(settings.get(Setting::DbUrl).as_deref()) {
        Ok(target) => target,
        // An unsupported DB_URL: the store line already says so.
        Err(_) => return,
    };
    let (dialect, outcome) = match &target {
        StoreTarget::Sqlite(label) => (Dialect::Sqlite, sqlite::migrate_at_start(sqlite, label)),
        StoreTarget::Postgres(url) => (
            Dialect::Postgres,
            postgres::migrate_at_start(pools, url).await,
        ),
    };
    match outcome.map(|outcome| outcome_line(&target, dialect, outcome)) {
        Some(Ok(line)) => println!("{line}"),
        Some(Err(warning)) => eprintln!("warning: {warning}"),
        None => {}
    }
}

/// The line for what `migrate` did; `Err` holds a warning.
fn outcome_line(
    target: &StoreTarget,
    dialect: Dialect,
    outcome: anyhow::Result<Vec<i64>>,
) -> Result<String, String> {
    match outcome {
        Ok(applied) if applied.is_empty() => {
            let latest = all(dialect).last().map_or(0, |m| m.version);
            Ok(format!("Migrations: up to date ({latest})"))
        }
        Ok(applied) => {
            let versions: Vec<String> = applied.iter().map(i64::to_string).collect();
            Ok(format!("Migrations: applied {}", versions.join(", ")))
        }
        Err(error) => Err(format!(
            "the migrations could not be applied at start to the {}: {}; serving anyway \
             (the component applies them on its first schema error)",
            target.describe(),
            redact_password(&format!("{error:#}"))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_for_each_outcome_and_never_a_password() {
        let pg = StoreTarget::Postgres("postgres://u:secretpw@h/d".into());
        assert_eq!(
            outcome_line(&pg, Dialect::Postgres, Ok(vec![1, 2, 3])).unwrap(),
            "Migrations: applied 1, 2, 3"
        );
        assert_eq!(
            outcome_line(&pg, Dialect::Postgres, Ok(Vec::new())).unwrap(),
            format!("Migrations: up to date ({})", all(Dialect::Postgres).len())
        );
        let error = anyhow::anyhow!("cannot reach postgres://u:secretpw@h/d");
        let warning = outcome_line(&pg, Dialect::Postgres, Err(error)).unwrap_err();
        assert!(
            warning.contains("PostgreSQL postgres://u:***@h/d"),
            "{warning}"
        );
        assert!(!warning.contains("secretpw"), "{warning}");
        assert!(warning.contains("serving anyway"), "{warning}");
    }
}
