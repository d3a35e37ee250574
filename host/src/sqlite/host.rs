//! Where each label's file is, `fermyon:spin/sqlite@2.0.0` on
//! [`SqliteView`], and what the 3.1 room (`v3`) shares. As in Spin, each
//! statement runs on tokio's blocking pool:
//! SQLite's busy handler may sleep while another connection holds the lock,
//! and must not hold a serving thread that connection's `COMMIT` may need.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;
use wasmtime::component::{HasData, Resource, ResourceTable};

use super::databases::Connection;
use super::values::{run, SqlValue};
use crate::bindings::fermyon::spin::sqlite::{
    self, Error, HostConnection, QueryResult, RowResult, Value,
};

/// The manifest's grants and the files of the granted labels.
pub struct SqliteDbs {
    granted: Vec<String>,
    files: BTreeMap<String, Arc<Path>>,
}

impl SqliteDbs {
    /// `locations`: label -> file (`locations`).
    pub fn new(granted: &[String], locations: BTreeMap<String, PathBuf>) -> SqliteDbs {
        let files = locations.into_iter().filter(|(label, _)| granted.contains(label));
        let files = files.map(|(label, path)| (label, Arc::from(path))).collect();
        SqliteDbs { granted: granted.to_vec(), files }
    }
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    sqlite_database: BTreeMap<String, Database>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Database {
    #[serde(rename = "type")]
    kind: String,
    path: Option<PathBuf>,
}

/// Label -> database file, as Spin's runtime config says it:
/// `[sqlite_database.LABEL]` with `type = "spin"` and a `path` (relative to
/// the current directory, as in Spin); `default` is `<state-dir>/sqlite_db.db`
/// unless the file moves it.
pub fn locations(file: Option<&Path>, state_dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut locations = BTreeMap::from([("default".to_string(), state_dir.join("sqlite_db.db"))]);
    let Some(file) = file else {
        return Ok(locations);
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read runtime config {}", file.display()))?;
    let parsed: File = toml::from_str(&text)
        .with_context(|| format!("runtime config {} is not valid", file.display()))?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for (label, database) in parsed.sqlite_database {
        let path = match (database.kind.as_str(), database.path) {
            ("spin", Some(path)) => cwd.join(path),
            // Spin keeps such a database in memory (one per `open`).
            ("spin", None) => bail!(
                "runtime config: [sqlite_database.{label}] has no path (an in-memory \
                 database, which spin-lite does not provide)"
            ),
            (kind, _) => bail!(
                "runtime config: [sqlite_database.{label}] is of type {kind:?}; spin-lite \
                 provides only type = \"spin\""
            ),
        };
        locations.insert(label, path);
    }
    Ok(locations)
}

/// What `fermyon:spin/sqlite` and `spin:sqlite` see of an instance's state.
pub struct SqliteView<'a> {
    pub dbs: &'a SqliteDbs,
    pub table: &'a mut ResourceTable,
}

/// The interfaces' `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinSqlite;

impl HasData for SpinSqlite {
    type Data<'a> = SqliteView<'a>;
}

impl SqliteView<'_> {
    /// In Spin's order: not granted is `access-denied` (even with a
    /// location), granted without a location `no-such-database`. No I/O:
    /// the connection is made at its first statement.
    pub(super) fn open_connection<E>(
        &mut self,
        label: &str,
        [access_denied, no_such_database]: [E; 2],
    ) -> wasmtime::Result<Result<Resource<Connection>, E>> {
        if !self.dbs.granted.iter().any(|g| g == label) {
            return Ok(Err(access_denied));
        }
        Ok(match self.dbs.files.get(label) {
            Some(path) => Ok(self.table.push(Connection::new(path.clone()))?),
            None => Err(no_such_database),
        })
    }
}

/// One statement on the blocking pool: its columns and all its rows, or the
/// text of Spin's `io` error.
pub(super) async fn query_all<V: SqlValue>(
    conn: Connection,
    statement: String,
    params: Vec<V>,
) -> Result<(Vec<String>, Vec<Vec<V>>), String> {
    let ran = tokio::task::spawn_blocking(move || {
        let (mut columns, mut rows) = (Vec::new(), Vec::new());
        let push = |row| {
            rows.push(row);
            Ok(())
        };
        conn.blocking(|c| run(c, &statement, params, |names| columns = names, push))
            .and_then(|ran| ran)?;
        Ok((columns, rows))
    })
    .await;
    // Spin's words when the blocking task is lost (it panicked).
    ran.unwrap_or_else(|_| Err("internal runtime error".into()))
}

/// `connection`'s blocking functions alike in 2.0 and 3.1, then `$more`
/// (3.1's); the version's `sqlite`, `Error`, `Value`, `QueryResult`,
/// `RowResult` and `HostConnection` are in scope.
macro_rules! blocking {
    ($($more:tt)*) => {
        impl sqlite::Host for SqliteView<'_> {}

        impl HostConnection for SqliteView<'_> {
            async fn open(
                &mut self,
                database: String,
            ) -> wasmtime::Result<Result<Resource<Connection>, Error>> {
                self.open_connection(&database, [Error::AccessDenied, Error::NoSuchDatabase])
            }

            async fn execute(
                &mut self,
                this: Resource<Connection>,
                statement: String,
                parameters: Vec<Value>,
            ) -> wasmtime::Result<Result<QueryResult, Error>> {
                let conn = self.table.get(&this)?.clone();
                let (columns, rows) = match query_all(conn, statement, parameters).await {
                    Ok(ran) => ran,
                    Err(e) => return Ok(Err(Error::Io(e))),
                };
                let rows = rows.into_iter().map(|values| RowResult { values }).collect();
                Ok(Ok(QueryResult { columns, rows }))
            }

            async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
                self.table.delete(this)?;
                Ok(())
            }

            $($more)*
        }
    };
}
pub(super) use blocking;

blocking!();

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// `default` granted, at `file`.
    fn databases(file: PathBuf) -> SqliteDbs {
        SqliteDbs::new(&["default".to_string()], BTreeMap::from([("default".to_string(), file)]))
    }

    async fn open(view: &mut SqliteView<'_>) -> Resource<Connection> {
        view.open("default".into()).await.unwrap().unwrap()
    }

    type Conn = Resource<Connection>;

    async fn exec(
        view: &mut SqliteView<'_>,
        conn: &Conn,
        sql: &str,
        p: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        view.execute(Resource::new_borrow(conn.rep()), sql.into(), p).await.unwrap()
    }

    /// The first column of each row of `sql`, which must succeed.
    async fn ok(view: &mut SqliteView<'_>, conn: &Conn, sql: &str) -> Vec<Value> {
        let rows = exec(view, conn, sql, vec![]).await.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        rows.rows.into_iter().map(|mut row| row.values.remove(0)).collect()
    }

    /// Each `open` is a new connection with rusqlite's defaults and no
    /// PRAGMA of the host's; values go both ways; errors are Spin's `io`.
    #[tokio::test]
    async fn each_open_is_a_connection_of_its_own_with_rusqlites_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let dbs = databases(dir.path().join("state/sqlite_db.db"));
        let mut table = ResourceTable::new();
        let mut view = SqliteView { dbs: &dbs, table: &mut table };
        let conn = open(&mut view).await;
        let mode = ok(&mut view, &conn, "PRAGMA journal_mode").await;
        assert!(matches!(&mode[..], [Value::Text(m)] if m == "delete"), "{mode:?}");
        let timeout = ok(&mut view, &conn, "PRAGMA busy_timeout").await;
        assert!(matches!(timeout[..], [Value::Integer(5_000)]), "{timeout:?}");
        assert!(dir.path().join("state/sqlite_db.db").exists());

        let err = exec(&mut view, &conn, "SELECT * FROM items", vec![]).await;
        assert!(matches!(&err, Err(Error::Io(m)) if m == "no such table: items"), "{err:?}");
        let create = "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)";
        ok(&mut view, &conn, create).await;
        let row = || {
            use Value::*;
            vec![Integer(-7), Real(1.5), Text("x".into()), Blob(vec![1, 2]), Null]
        };
        exec(&mut view, &conn, "INSERT INTO t VALUES (?, ?, ?, ?, ?)", row()).await.unwrap();
        let r = exec(&mut view, &conn, "SELECT * FROM t", vec![]).await.unwrap();
        assert_eq!(r.columns, vec!["i", "r", "s", "b", "n"]);
        assert_eq!(format!("{:?}", r.rows[0].values), format!("{:?}", row()));
        assert_eq!(r.rows.len(), 1);

        // A PRAGMA the component runs lasts as long as its connection.
        ok(&mut view, &conn, "PRAGMA busy_timeout = 2").await;
        let timeout = ok(&mut view, &conn, "PRAGMA busy_timeout").await;
        assert!(matches!(timeout[..], [Value::Integer(2)]), "{timeout:?}");
        let again = open(&mut view).await;
        let timeout = ok(&mut view, &again, "PRAGMA busy_timeout").await;
        assert!(matches!(timeout[..], [Value::Integer(5_000)]), "{timeout:?}");

        // A folder that cannot be made is an `io` error.
        std::fs::write(dir.path().join("file"), "").unwrap();
        let dbs = databases(dir.path().join("file/x.db"));
        let mut view = SqliteView { dbs: &dbs, table: &mut table };
        let conn = open(&mut view).await;
        let err = exec(&mut view, &conn, "SELECT 1", vec![]).await;
        assert!(matches!(&err, Err(Error::Io(m)) if m.starts_with("cannot create")), "{err:?}");
    }

    /// On one thread: a write waiting in the busy handler for a transaction's
    /// lock leaves the thread to that transaction's `COMMIT` (run inline it
    /// would fail after 5 s). A lock held past the busy timeout reads as
    /// Spin's `database is locked`; a transaction left open rolls back with
    /// its resource.
    #[tokio::test]
    async fn a_writer_waiting_for_the_lock_holds_no_serving_thread() {
        let dir = tempfile::tempdir().unwrap();
        let dbs = databases(dir.path().join("state/sqlite_db.db"));
        let (mut first_table, mut second_table) = (ResourceTable::new(), ResourceTable::new());
        let mut first = SqliteView { dbs: &dbs, table: &mut first_table };
        let mut second = SqliteView { dbs: &dbs, table: &mut second_table };
        let (a, b) = (open(&mut first).await, open(&mut second).await);
        ok(&mut first, &a, "CREATE TABLE t (i INTEGER)").await;
        ok(&mut first, &a, "BEGIN IMMEDIATE").await;
        ok(&mut first, &a, "INSERT INTO t VALUES (1)").await;

        let started = Instant::now();
        tokio::join!(ok(&mut second, &b, "INSERT INTO t VALUES (2)"), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            ok(&mut first, &a, "COMMIT").await
        });
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(3), "{waited:?}");

        ok(&mut first, &a, "BEGIN IMMEDIATE").await;
        ok(&mut first, &a, "INSERT INTO t VALUES (3)").await;
        ok(&mut second, &b, "PRAGMA busy_timeout = 1").await;
        let locked = exec(&mut second, &b, "INSERT INTO t VALUES (4)", vec![]).await;
        assert!(matches!(&locked, Err(Error::Io(m)) if m == "database is locked"), "{locked:?}");
        HostConnection::drop(&mut first, a).await.unwrap();
        ok(&mut second, &b, "PRAGMA busy_timeout = 5000").await;
        ok(&mut second, &b, "INSERT INTO t VALUES (5)").await;
        let rows = ok(&mut second, &b, "SELECT i FROM t ORDER BY i").await;
        let expected = [Value::Integer(1), Value::Integer(2), Value::Integer(5)];
        assert_eq!(format!("{rows:?}"), format!("{expected:?}"));
    }

    #[test]
    fn labels_from_the_file_may_move_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let file = dir.path().join("rc.toml");
        let cwd = std::env::current_dir().unwrap();
        std::fs::write(
            &file,
            "[sqlite_database.archive]\ntype = \"spin\"\npath = \"a/archive.db\"\n\
             [sqlite_database.default]\ntype = \"spin\"\npath = \"/abs/main.db\"\n",
        )
        .unwrap();
        let both = locations(Some(&file), &state).unwrap();
        assert_eq!(both["archive"], cwd.join("a/archive.db"));
        assert_eq!(both["default"], PathBuf::from("/abs/main.db"));

        for bad in [
            "[sqlite_database.x]\ntype = \"spin\"\n",
            "[sqlite_database.x]\ntype = \"libsql\"\nurl = \"https://h\"\ntoken = \"t\"\n",
            "[sqlite_database.x]\ntype = \"spin\"\npath = \"p\"\nsize = 1\n",
        ] {
            std::fs::write(&file, bad).unwrap();
            assert!(locations(Some(&file), &state).is_err(), "{bad}");
        }
    }
}
