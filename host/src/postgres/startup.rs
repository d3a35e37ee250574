//! What the PostgreSQL room does at start: the check that the address the
//! component will open is one `allowed_outbound_hosts` admits (decided by
//! `AllowedHost::allows`, as every connection is), and the component's
//! migrations applied to it, with the pool's TLS and address rules.

use anyhow::{anyhow, Context as _};
use book_catalog::migrations::{self, SchemaConnection};
use book_catalog::sql::Dialect;

use super::address::{display_host, parse, parse_and_check, targets};
use super::allowed::{AllowedHost, OutboundHosts, DEFAULT_PORT};
use super::pool::{connect, error_text, PgPools, PoolError, QUERY_TIMEOUT};

/// `host:port` as Spin writes it (IPv6 literals in brackets).
fn host_port(host: &str, port: u16) -> String {
    format!("{}:{port}", display_host(host))
}

/// The application variable an entry `postgres://{{ name }}` is made of.
fn host_variable(entry: &str) -> Option<String> {
    let rest = entry
        .strip_prefix("postgres://")
        .or_else(|| entry.strip_prefix("postgresql://"))?;
    let name = rest.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    valid.then(|| name.to_string())
}

/// Warnings (without the `warning: ` prefix), each with its exact fix, when
/// the component will be refused `address` (which `setting` holds, e.g.
/// `DB_URL`). Never contains the password.
pub fn admission_warnings(address: &str, hosts: &OutboundHosts, setting: &str) -> Vec<String> {
    let targets = match parse(address) {
        Err(_) => Err(format!("{setting} is not a valid PostgreSQL address")),
        Ok(config) => targets(&config)
            .map_err(|_| format!("{setting} names a Unix socket, which Spin never permits")),
    };
    let targets = match targets {
        Ok(targets) => targets,
        Err(reason) => {
            return vec![format!(
                "{reason}: every request that needs the store will answer 500"
            )]
        }
    };
    let admits = |entry: &str, host: &str, port: u16| matches!(AllowedHost::parse(entry), Ok(Some(allowed)) if allowed.allows(host, port));
    let mut warnings = Vec::new();
    for (host, port) in targets {
        if hosts.expanded().any(|entry| admits(entry, &host, port)) {
            continue;
        }
        let wanted = host_port(&host, port);
        let admitted: Vec<&str> = hosts
            .expanded()
            .filter(|e| e.starts_with("postgres://") || e.starts_with("postgresql://"))
            .collect();
        let fix = match hosts.written().find_map(host_variable) {
            Some(name) => format!(
                "set SPIN_VARIABLE_{}={wanted} (or --variable {name}={wanted})",
                name.to_ascii_uppercase()
            ),
            None => format!(
                "add \"postgres://{wanted}\" to allowed_outbound_hosts of [component.{}] in the \
                 manifest",
                hosts.component()
            ),
        };
        warnings.push(format!(
            "{setting} names PostgreSQL at {wanted}, which allowed_outbound_hosts does not admit \
             (it admits {admitted:?}; localhost and 127.0.0.1 differ, no port means \
             {DEFAULT_PORT}): every request that needs the store will answer 500 and GET \
             /health 503. Fix: {fix}"
        ));
    }
    warnings
}

/// Applies the component's migrations (`book_catalog::migrations`) to the
/// database at `address`, connecting as the pool does (its address rules and
/// TLS, its connect and statement time limits); returns the versions
/// applied. `None`: `allowed_outbound_hosts` does not admit the address (the
/// admission check says why), so nothing was tried.
///
/// `SchemaConnection` is synchronous: the migration runs on a thread of its
/// own with its own single-threaded runtime (this one may be single-threaded
/// too, where blocking on a future would panic), and this waits for it
/// without blocking the runtime.
pub async fn migrate_at_start(pools: &PgPools, address: &str) -> Option<anyhow::Result<Vec<i64>>> {
    let config = parse_and_check(address, pools.allowed()).ok()?;
    let tls = pools.tls().connector();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("pg-migrate".into())
        .spawn(move || {
            let _ = sender.send(migrate_on_own_runtime(&config, tls));
        });
    if let Err(e) = spawned {
        return Some(Err(anyhow!("cannot start the migration thread: {e}")));
    }
    Some(
        receiver
            .await
            .unwrap_or_else(|_| Err(anyhow!("the migration thread stopped"))),
    )
}

fn migrate_on_own_runtime(
    config: &tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
) -> anyhow::Result<Vec<i64>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime for the migrations")?;
    let client = runtime
        .block_on(connect(config, tls))
        .map_err(|e| match e {
            PoolError::ConnectionFailed(text) => anyhow!("cannot connect: {text}"),
            PoolError::QueryFailed(text) | PoolError::Other(text) => anyhow!("{text}"),
        })?;
    migrations::migrate(
        &mut Schema {
            runtime: &runtime,
            client: &client,
        },
        Dialect::Postgres,
    )
}

/// A client as `migrations::migrate` works through it: each statement on
/// the thread's runtime (which also drives the connection's task), within
/// the pool's statement time limit.
struct Schema<'a> {
    runtime: &'a tokio::runtime::Runtime,
    client: &'a tokio_postgres::Client,
}

impl Schema<'_> {
    fn run<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> anyhow::Result<T> {
        match self
            .runtime
            .block_on(async { tokio::time::timeout(QUERY_TIMEOUT, work).await })
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(anyhow!("{}", error_text(&e))),
            Err(_) => Err(anyhow!(
                "a statement timed out after {} s",
                QUERY_TIMEOUT.as_secs()
            )),
        }
    }
}

impl SchemaConnection for Schema<'_> {
    fn execute(&mut self, statement: &str) -> anyhow::Result<()> {
        // The simple protocol: no statement to prepare, any result ignored.
        self.run(self.client.batch_execute(statement))
    }

    fn applied_versions(&mut self) -> anyhow::Result<Vec<i64>> {
        let rows = self
            .run(self.client.query(migrations::APPLIED_VERSIONS, &[]))
            .context("reading schema_migrations")?;
        rows.iter()
            .map(|row| row.try_get::<_, i64>(0).map_err(|e| anyhow!("{e}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_variables_are_read_from_the_entry_as_written() {
        assert_eq!(
            host_variable("postgres://{{ db_host }}").as_deref(),
            Some("db_host")
        );
        assert_eq!(
            host_variable("postgresql://{{db_host}}").as_deref(),
            Some("db_host")
        );
        assert_eq!(host_variable("postgres://{{ db_host }}:5432"), None);
        assert_eq!(host_variable("postgres://h:5432"), None);
        assert_eq!(host_port("::1", 5432), "[::1]:5432");
    }

    #[tokio::test]
    async fn an_address_the_hosts_do_not_admit_is_not_migrated() {
        let pools = PgPools::new(Vec::new()).unwrap();
        assert!(migrate_at_start(&pools, "postgres://u:p@127.0.0.1:1/d")
            .await
            .is_none());
        // Admitted but unreachable: an error, not a hang (the port refuses).
        let allowed = vec![AllowedHost::parse("postgres://127.0.0.1:1")
            .unwrap()
            .unwrap()];
        let pools = PgPools::new(allowed).unwrap();
        let result = migrate_at_start(
            &pools,
            "postgres://u:secretpw@127.0.0.1:1/d?sslmode=disable",
        )
        .await
        .unwrap();
        let error = format!("{:#}", result.unwrap_err());
        assert!(error.starts_with("cannot connect"), "{error}");
        assert!(!error.contains("secretpw"), "{error}");
    }
}
