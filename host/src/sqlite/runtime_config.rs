//! Where each SQLite database lives, as Spin's runtime config says it:
//! `[sqlite_database.LABEL]` with `type = "spin"` and a `path` (relative to
//! the current directory, as in Spin); `default` is `<state-dir>/sqlite_db.db`
//! unless the file moves it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;

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

/// Label -> database file.
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

#[cfg(test)]
mod tests {
    use super::*;

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
