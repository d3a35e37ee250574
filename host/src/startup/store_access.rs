//! A start-up check of the store the component will use: when `db_url` (or
//! `DB_URL`) names a PostgreSQL server whose `host:port` no
//! `allowed_outbound_hosts` entry admits, or a SQLite database the manifest
//! does not grant, every request that needs the store would answer 500 (and
//! `GET /health` 503) with the reason only in the log. Say so once at start,
//! with the exact fix. The rooms decide, exactly as their connections will
//! (`sqlite::access_warnings`, `postgres::admission_warnings`); this reads
//! the setting as the component does and words what is the service's. Like
//! Spin, the host keeps serving either way.

use book_catalog::db_url::StoreTarget;
use book_catalog::settings::Setting;

use super::ComponentSettings;
use crate::manifest::Manifest;
use crate::postgres::{self, OutboundHosts};
use crate::sqlite::{self, Chosen};

/// Warnings (without the `warning: ` prefix) about a store the component
/// will be refused. Never contains a password.
pub fn store_access_warnings(
    manifest: &Manifest,
    outbound: &OutboundHosts,
    settings: &ComponentSettings,
) -> Vec<String> {
    let setting = Setting::DbUrl;
    let db_url = settings.get(setting);
    match StoreTarget::from_db_url(db_url.as_deref()) {
        Ok(StoreTarget::Postgres(url)) => {
            postgres::admission_warnings(&url, outbound, setting.env_name())
        }
        Ok(StoreTarget::Sqlite(label)) => {
            let (by, or_else) = match db_url {
                None => (
                    format!(
                        "no {} / {} is set, so the component uses the SQLite database {label:?}",
                        setting.variable_name(),
                        setting.env_name()
                    ),
                    format!(
                        "set SPIN_VARIABLE_{}=postgres://USER:PASSWORD@HOST:PORT/DATABASE (and \
                         SPIN_VARIABLE_DB_HOST=HOST:PORT)",
                        setting.env_name()
                    ),
                ),
                Some(_) => (
                    format!("{} names the SQLite database {label:?}", setting.env_name()),
                    format!("set {}=sqlite://default", setting.env_name()),
                ),
            };
            let chosen = Chosen {
                label: &label,
                by: &by,
                or_else: &or_else,
            };
            sqlite::access_warnings(&chosen, &manifest.sqlite_databases, &manifest.component_id)
        }
        // An unsupported DB_URL: the store line already says so.
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::startup::outbound_hosts;
    use crate::startup::tests::{spin_toml_vars, vars_of};
    use crate::variables::Variables;

    const PASSWORD: &str = "pw-never-shown";

    fn manifest(text: &str) -> Manifest {
        Manifest::parse(text, PathBuf::from(".")).unwrap()
    }

    fn spin_toml() -> Manifest {
        manifest(include_str!("../../../spin.toml"))
    }

    fn vars(manifest: &Manifest, pairs: &[(&str, &str)]) -> Variables {
        vars_of(manifest, pairs)
    }

    /// `store_access_warnings` with `DB_URL` in the component's environment.
    fn warnings(m: &Manifest, v: &Variables, env: &[(String, String)]) -> Vec<String> {
        store_access_warnings(
            m,
            &outbound_hosts(m, v),
            &ComponentSettings::new(v, env.to_vec()),
        )
    }

    fn env(db_url: &str) -> Vec<(String, String)> {
        vec![("DB_URL".to_string(), db_url.to_string())]
    }

    fn warnings_for(db_url: &str, variables: &[(&str, &str)]) -> Vec<String> {
        let (m, v) = spin_toml_vars(variables);
        let w = warnings(&m, &v, &env(db_url));
        for line in &w {
            assert!(!line.contains(PASSWORD), "{line}");
        }
        w
    }

    #[test]
    fn a_postgres_port_the_manifest_does_not_admit_names_the_exact_fix() {
        // The new user's case: DB_URL on a non-default port, db_host left at
        // its default 127.0.0.1:5432.
        let url = format!("postgres://book:{PASSWORD}@127.0.0.1:55432/books");
        let w = warnings_for(&url, &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("127.0.0.1:55432"), "{}", w[0]);
        assert!(
            w[0].contains("set SPIN_VARIABLE_DB_HOST=127.0.0.1:55432"),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("--variable db_host=127.0.0.1:55432"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("postgres://127.0.0.1:5432"), "{}", w[0]);
    }

    #[test]
    fn an_admitted_postgres_address_gives_no_warning() {
        let url = format!("postgres://book:{PASSWORD}@127.0.0.1:55432/books?sslmode=disable");
        assert!(warnings_for(&url, &[("db_host", "127.0.0.1:55432")]).is_empty());
        // No port means 5432 on both sides; the default db_host admits it.
        let url = format!("postgresql://book:{PASSWORD}@127.0.0.1/books");
        assert!(warnings_for(&url, &[]).is_empty());
        // The variable wins over DB_URL, as in the component.
        let m = spin_toml();
        let v = vars(&m, &[("db_url", "postgres://u@127.0.0.1:5432/d")]);
        assert!(warnings(&m, &v, &env("postgres://u@10.0.0.9:1/d")).is_empty());
    }

    #[test]
    fn localhost_and_127_0_0_1_are_different_hosts() {
        let w = warnings_for("postgres://u@localhost:5432/books", &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("set SPIN_VARIABLE_DB_HOST=localhost:5432"),
            "{}",
            w[0]
        );
        let w = warnings_for(
            "postgres://u@LOCALHOST:6000/b",
            &[("db_host", "localhost:6000")],
        );
        assert!(w.is_empty(), "host names compare case-insensitively: {w:?}");
    }

    #[test]
    fn every_host_of_a_multi_host_address_is_checked() {
        // (DB_URL must be a URL: the component refuses key=value forms.)
        let w = warnings_for("postgres://u@127.0.0.1:5432,db2:5432/b", &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("db2:5432"), "{}", w[0]);
    }

    #[test]
    fn a_manifest_without_a_host_variable_is_told_to_add_the_entry() {
        let text = include_str!("../../../spin.toml").replace(
            "allowed_outbound_hosts = [\"postgres://{{ db_host }}\"]",
            "allowed_outbound_hosts = [\"postgres://db.internal:5432\"]",
        );
        let m = manifest(&text);
        let w = warnings(&m, &vars(&m, &[]), &env("postgres://u@127.0.0.1:7777/b"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("add \"postgres://127.0.0.1:7777\" to allowed_outbound_hosts of [component.book-catalog]"),
            "{}",
            w[0]
        );
        assert!(warnings(&m, &vars(&m, &[]), &env("postgres://u@db.internal/b")).is_empty());
    }

    #[test]
    fn wildcards_port_ranges_and_allow_all_are_judged_as_connections_are() {
        // (entry, whether it admits 127.0.0.1:5433)
        for (entry, admitted) in [
            ("postgres://*:5433", true),
            ("postgres://*:5432", false),
            ("postgres://127.0.0.1:5000..6000", true),
            ("postgres://127.0.0.1:*", true),
            ("postgres://*.example.com:5433", false),
            ("insecure:allow-all", true),
        ] {
            let text = include_str!("../../../spin.toml").replace(
                "allowed_outbound_hosts = [\"postgres://{{ db_host }}\"]",
                &format!("allowed_outbound_hosts = [\"{entry}\"]"),
            );
            let m = manifest(&text);
            let w = warnings(&m, &vars(&m, &[]), &env("postgres://u@127.0.0.1:5433/b"));
            assert_eq!(w.is_empty(), admitted, "{entry}: {w:?}");
        }
    }

    #[test]
    fn sqlite_labels_the_manifest_does_not_grant() {
        assert!(warnings_for("", &[]).is_empty(), "default is granted");
        assert!(warnings_for("sqlite:", &[]).is_empty());
        assert!(warnings_for("sqlite://default", &[]).is_empty());
        let w = warnings_for("sqlite://archive", &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("does not grant"), "{}", w[0]);
        assert!(
            w[0].contains("add \"archive\" to sqlite_databases of [component.book-catalog]"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("DB_URL=sqlite://default"), "{}", w[0]);
    }

    #[test]
    fn a_granted_label_other_than_default_has_no_location_here() {
        let text = include_str!("../../../spin.toml").replace(
            "sqlite_databases = [\"default\"]",
            "sqlite_databases = [\"default\", \"archive\"]",
        );
        let m = manifest(&text);
        let w = warnings(&m, &vars(&m, &[]), &env("sqlite://archive"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("only has a location for \"default\""),
            "{}",
            w[0]
        );
    }

    #[test]
    fn no_store_set_and_no_sqlite_granted_points_at_db_url() {
        let m = manifest(include_str!("../../../deploy/postgres-only/spin.toml"));
        let w = warnings(&m, &vars(&m, &[]), &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("set SPIN_VARIABLE_DB_URL=postgres://"),
            "{}",
            w[0]
        );
        let v = vars(&m, &[("db_url", "postgres://u@127.0.0.1:5432/b")]);
        assert!(warnings(&m, &v, &[]).is_empty());
    }

    #[test]
    fn unreadable_addresses_are_reported_without_their_text() {
        let w = warnings_for(
            &format!("postgres://u:{PASSWORD}@127.0.0.1:notaport/b"),
            &[],
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("DB_URL is not a valid PostgreSQL address"),
            "{}",
            w[0]
        );
    }
}
