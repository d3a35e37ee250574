//! What the SQLite room does at start: the check that the database the
//! component will open is one it may open (decided by `pool::admit`, as
//! every `open` is), and the component's migrations applied to it.

use anyhow::Context as _;
use book_catalog::migrations::{self, SchemaConnection};
use book_catalog::sql::Dialect;

use super::pool::{admit, Refused, SqliteDbs, DEFAULT_LABEL};

/// The database the component will open, and the service's words for the
/// warning (`startup` knows the setting that chose it).
pub struct Chosen<'a> {
    pub label: &'a str,
    /// The warning's start, e.g. `DB_URL names the SQLite database "x"`.
    pub by: &'a str,
    /// The fix besides the manifest's, e.g. `set DB_URL=sqlite://default`.
    pub or_else: &'a str,
}

/// Warnings (without the `warning: ` prefix), each with its exact fix, when
/// every `open` of the chosen database will fail; `granted` is the
/// manifest's `sqlite_databases` of `[component.{component}]`.
pub fn access_warnings(chosen: &Chosen, granted: &[String], component: &str) -> Vec<String> {
    let Chosen { label, by, or_else } = chosen;
    match admit(granted, label) {
        Ok(()) => Vec::new(),
        Err(Refused::AccessDenied) => vec![format!(
            "{by}, which the manifest does not grant (sqlite_databases = {granted:?}): every \
             request that needs the store will answer 500 and GET /health 503. Fix: add \
             {label:?} to sqlite_databases of [component.{component}] in the manifest, or \
             {or_else}"
        )],
        Err(Refused::NoSuchDatabase) => vec![format!(
            "{by}: this host only has a location for {DEFAULT_LABEL:?} \
             (<state-dir>/sqlite_db.db), so requests will answer 500. Fix: {or_else} here; \
             under Spin, give {label:?} a location in a runtime-config file \
             (deploy/runtime-config/)"
        )],
    }
}

/// Applies the component's migrations (`book_catalog::migrations`) to the
/// database `label`, through a pooled connection (its busy wait, WAL);
/// returns the versions applied. `None`: the component may not open it (the
/// access check says why), so nothing was tried. Blocking.
pub fn migrate_at_start(dbs: &SqliteDbs, label: &str) -> Option<anyhow::Result<Vec<i64>>> {
    let db = dbs.open(label).ok()?;
    let conn = match db.checkout() {
        Ok(conn) => conn,
        Err(e) => return Some(Err(anyhow::anyhow!("{e}"))),
    };
    let result = migrations::migrate(&mut Schema(&conn), Dialect::Sqlite);
    db.checkin(conn);
    Some(result)
}

/// A connection as `migrations::migrate` works through it.
struct Schema<'a>(&'a rusqlite::Connection);

impl SchemaConnection for Schema<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        // Not cached: each runs once. Some return a row (PRAGMA journal_mode).
        let mut stmt = self.0.prepare(statement)?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let mut stmt = self.0.prepare(migrations::APPLIED_VERSIONS)?;
        let versions = stmt.query_map([], |row| row.get::<_, i64>(0))?;
        versions
            .collect::<Result<_, _>>()
            .context("reading schema_migrations")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen<'a>(label: &'a str) -> Chosen<'a> {
        Chosen {
            label,
            by: "the test chose it",
            or_else: "choose another",
        }
    }

    #[test]
    fn warnings_follow_what_open_will_answer() {
        let granted = ["default".to_string(), "archive".to_string()];
        assert!(access_warnings(&chosen("default"), &granted, "c").is_empty());
        let w = access_warnings(&chosen("archive"), &granted, "c");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("the test chose it: this host only has a location for \"default\"")
        );
        assert!(w[0].contains("Fix: choose another here"), "{}", w[0]);
        let w = access_warnings(&chosen("default"), &[], "c");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("does not grant (sqlite_databases = [])"),
            "{}",
            w[0]
        );
        assert!(
            w[0].ends_with("Fix: add \"default\" to sqlite_databases of [component.c] in the manifest, or choose another"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn migrates_once_and_only_what_it_may_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sqlite_db.db");
        let dbs = SqliteDbs::new(&["default".into()], path.clone());
        assert!(migrate_at_start(&dbs, "other").is_none());
        assert_eq!(
            migrate_at_start(&dbs, "default").unwrap().unwrap(),
            [1, 2, 3]
        );
        assert!(migrate_at_start(&dbs, "default")
            .unwrap()
            .unwrap()
            .is_empty());
        let conn = rusqlite::Connection::open(&path).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('books', 'login_attempts')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 2);
        let denied = SqliteDbs::new(&[], dir.path().join("denied.db"));
        assert!(migrate_at_start(&denied, "default").is_none());
        assert!(!dir.path().join("denied.db").exists());
    }
}
