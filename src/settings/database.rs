//! The database `DB_URL` names (docs/configuration.md): anything but its
//! forms is refused, described without its text. Also the one redaction of a
//! password in a PostgreSQL address, for logs.

use std::fmt;

use super::{Setting, SettingSource};
use crate::db::{StoreKind, Synchronous};
use crate::error::ApiError;

/// The database `DB_URL` names (with `sqlite_synchronous` for SQLite); a
/// setting that cannot be read, or names no store we support, is a 500 (the
/// reason in the log).
pub fn database(ctx: &mut impl SettingSource) -> Result<Database, ApiError> {
    let value = ctx.setting(Setting::DbUrl)?;
    let mut database = Database::parse(value.as_deref()).map_err(ApiError::internal)?;
    if database.kind == StoreKind::Sqlite {
        database.synchronous = super::sqlite_synchronous(ctx)?;
    }
    Ok(database)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    pub kind: StoreKind,
    /// A Spin SQLite database's label, or a PostgreSQL URL (passed as is).
    pub address: String,
    /// SQLite's commit durability; PostgreSQL's is the server's own.
    pub synchronous: Synchronous,
}

pub const DEFAULT_SQLITE_LABEL: &str = "default";

/// A `DB_URL` that names no store we support. It keeps only the URL's
/// scheme, never the rest: a value that is not a URL we know may hold a
/// password in any form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedDbUrl {
    scheme: Option<String>,
}

impl UnsupportedDbUrl {
    fn of(db_url: &str) -> UnsupportedDbUrl {
        let scheme = db_url
            .split_once(':')
            .map(|(scheme, _)| scheme)
            .filter(|scheme| {
                !scheme.is_empty()
                    && scheme.len() <= 16
                    && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            })
            .map(str::to_string);
        UnsupportedDbUrl { scheme }
    }
}

impl fmt::Display for UnsupportedDbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scheme {
            Some(scheme) => write!(f, "DB_URL (a {scheme}: address) is not supported")?,
            None => f.write_str("DB_URL is not supported")?,
        }
        f.write_str(": use sqlite:, sqlite://LABEL, postgres://... or postgresql://...")
    }
}

impl Database {
    pub fn parse(db_url: Option<&str>) -> Result<Database, UnsupportedDbUrl> {
        let db_url = db_url.unwrap_or("").trim();
        let store = |kind, address: &str| {
            Ok(Database { kind, address: address.to_string(), synchronous: Synchronous::default() })
        };
        if db_url.is_empty() || db_url == "sqlite:" {
            return store(StoreKind::Sqlite, DEFAULT_SQLITE_LABEL);
        }
        if let Some(label) = db_url.strip_prefix("sqlite://") {
            let valid = !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if valid {
                return store(StoreKind::Sqlite, label);
            }
        }
        if db_url.starts_with("postgres://") || db_url.starts_with("postgresql://") {
            return store(StoreKind::Postgres, db_url);
        }
        Err(UnsupportedDbUrl::of(db_url))
    }

    /// The `host:port` of a PostgreSQL URL, as Spin matches it against
    /// `allowed_outbound_hosts` (no port: 5432; an IPv6 host in brackets):
    /// what the manifest's `db_host` must be. Never the user or password.
    pub fn host_port(&self) -> Option<String> {
        let rest = self.address.split_once("://")?.1;
        let authority = rest.split(['/', '?', '#']).next()?;
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        if host_port.is_empty() {
            return None;
        }
        let has_port = match host_port.rsplit_once(':') {
            Some((host, port)) => !port.is_empty() && !host.ends_with(':') && !port.contains(']'),
            None => false,
        };
        Some(if has_port { host_port.to_string() } else { format!("{host_port}:5432") })
    }

    /// A refused PostgreSQL address (`... is not permitted`), with its fix:
    /// the manifests allow `postgres://{{ db_host }}` only.
    pub fn not_permitted_fix(&self) -> String {
        let value = self.host_port().map_or(String::new(), |host_port| host_port + ", ");
        format!(
            "the manifest allows outbound PostgreSQL only to postgres://{{{{ db_host }}}}: set \
             the variable db_host (SPIN_VARIABLE_DB_HOST) to {value}the host and port of db_url"
        )
    }

    /// Why connecting to this PostgreSQL database failed, for the log, with
    /// the fix when Spin refused the address (its refusal names the address
    /// only). `reason` is the host's, its password already masked.
    pub fn connect_failure(&self, reason: &str) -> String {
        if reason.contains("is not permitted") {
            format!("connecting to PostgreSQL: {reason}; {}", self.not_permitted_fix())
        } else {
            format!("connecting to PostgreSQL: {reason}")
        }
    }

    /// How the store is named in logs: never with a password.
    pub fn describe(&self) -> String {
        match self.kind {
            StoreKind::Sqlite => format!("SQLite database {:?}", self.address),
            StoreKind::Postgres => format!("PostgreSQL {}", redact_password(&self.address)),
        }
    }
}

/// Replaces the password of a `scheme://user:password@host...` URL and any
/// `password=` parameter with `***`. The user info ends at the last `@`, not
/// at the first `/`, `?` or `#`, because an unencoded password may hold
/// those: this masks too much rather than too little.
pub fn redact_password(url: &str) -> String {
    let mut redacted = url.to_string();
    if let Some(scheme_end) = redacted.find("://") {
        let rest = scheme_end + 3;
        if let Some(at) = redacted[rest..].rfind('@').map(|i| rest + i) {
            if let Some(colon) = redacted[rest..at].find(':').map(|i| rest + i) {
                redacted.replace_range(colon + 1..at, "***");
            }
        }
    }
    let lower = redacted.to_ascii_lowercase();
    if let Some(at) = lower.find("password=") {
        let start = at + "password=".len();
        let end = redacted[start..].find(['&', ' ']).map_or(redacted.len(), |i| start + i);
        redacted.replace_range(start..end, "***");
    }
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<Database, UnsupportedDbUrl> {
        Database::parse(Some(url))
    }

    fn sqlite(label: &str) -> Result<Database, UnsupportedDbUrl> {
        Ok(Database {
            kind: StoreKind::Sqlite,
            address: label.into(),
            synchronous: Default::default(),
        })
    }

    fn postgres(url: &str) -> Result<Database, UnsupportedDbUrl> {
        Ok(Database {
            kind: StoreKind::Postgres,
            address: url.into(),
            synchronous: Default::default(),
        })
    }

    #[test]
    fn empty_or_sqlite_means_the_default_database() {
        let default = sqlite("default");
        assert_eq!(Database::parse(None), default);
        assert_eq!(target(""), default);
        assert_eq!(target("sqlite:"), default);
        assert_eq!(target("sqlite://default"), default);
    }

    #[test]
    fn sqlite_labels_and_postgres_urls() {
        assert_eq!(target("sqlite://books_2"), sqlite("books_2"));
        let pg = "postgres://u:p@127.0.0.1:5432/books";
        assert_eq!(target(pg), postgres(pg));
        let pg = "postgresql://127.0.0.1/books?sslmode=disable";
        assert_eq!(target(pg), postgres(pg));
    }

    #[test]
    fn anything_else_is_refused_without_echoing_a_password() {
        let bad = "mysql://u:hunter2@h/db sqlite:// sqlite://a/b file.db redis://x hunter2 \
                   postgress://u:hunter2@h/db postgres:u:hunter2@h";
        for bad in bad.split(' ').chain(["host=db password=hunter2"]) {
            let error = target(bad).unwrap_err().to_string();
            assert!(error.starts_with("DB_URL"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        assert_eq!(
            target("mysql://u:hunter2@h/db").unwrap_err().to_string(),
            "DB_URL (a mysql: address) is not supported: use sqlite:, sqlite://LABEL, \
             postgres://... or postgresql://..."
        );
        assert_eq!(
            target("hunter2").unwrap_err().to_string(),
            "DB_URL is not supported: use sqlite:, sqlite://LABEL, postgres://... or \
             postgresql://..."
        );
    }

    #[test]
    fn a_refused_address_names_db_host_as_host_and_port_never_the_password() {
        let fix = |url: &str| postgres(url).unwrap().not_permitted_fix();
        for (url, host_port) in [
            (
                "postgres://u:secret@db.example.com:6432/books?sslmode=require",
                "db.example.com:6432",
            ),
            ("postgresql://db.example.com/books", "db.example.com:5432"),
            ("postgres://u:p%40ss@[::1]:5433/b", "[::1]:5433"),
            ("postgres://u@[::1]/b", "[::1]:5432"),
            ("postgres://10.0.0.5", "10.0.0.5:5432"),
        ] {
            let text = fix(url);
            assert!(text.contains(&format!("SPIN_VARIABLE_DB_HOST) to {host_port},")), "{text}");
            assert!(!text.contains("secret") && !text.contains("p%40ss"), "{text}");
        }
        assert!(!fix("postgres:///books").contains(" to ,"));
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_password("postgres://user:s3cret@db:5432/books"),
            "postgres://user:***@db:5432/books"
        );
        assert_eq!(redact_password("postgres://user@db/books"), "postgres://user@db/books");
        assert_eq!(
            redact_password("postgres://db/books?user=u&password=s3cret&sslmode=require"),
            "postgres://db/books?user=u&password=***&sslmode=require"
        );
        assert_eq!(redact_password("postgres://u:p@ss@db/x"), "postgres://u:***@db/x");
        for password in ["hunter/2", "hunter#2", "hunter?2", "p@ss/hunter2"] {
            let redacted = redact_password(&format!("postgres://u:{password}@db:5432/x"));
            assert_eq!(redacted, "postgres://u:***@db:5432/x");
        }
        let described = postgres("postgres://a:b@h/d").unwrap().describe();
        assert_eq!(described, "PostgreSQL postgres://a:***@h/d");
    }

    #[test]
    fn a_store_missing_from_the_build_names_the_build_that_has_it() {
        let sqlite = target("sqlite://default").unwrap().kind;
        let postgres = target("postgres://h/d").unwrap().kind;
        assert_eq!((sqlite, postgres), (StoreKind::Sqlite, StoreKind::Postgres));
        assert!(postgres.missing_build_message().contains("book-catalog-postgres.wasm"));
        assert!(sqlite.missing_build_message().contains("book-catalog-sqlite.wasm"));
        // The native test build has the default features: both stores.
        assert!(sqlite.is_built() && postgres.is_built());
    }
}
