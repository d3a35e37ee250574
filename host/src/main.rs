//! `book-host`: serves the Book Catalog WebAssembly component the way
//! `spin up` does, on wasmtime.

mod bindings;
mod hash_password;
mod manifest;
mod postgres;
mod server;
mod sqlite;
mod startup;
mod state;
mod variables;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use wasmtime::component::{Component, Linker};
use wasmtime::{Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy};
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use crate::manifest::Manifest;
use crate::postgres::{AllowedHost, PgPools};
use crate::server::Server;
use crate::sqlite::SqliteDbs;
use crate::state::Shared;
use crate::variables::{Sources, Variables};

/// The plain environment names the component may read (like `spin up -e`);
/// nothing else of the host's environment reaches it.
const COMPONENT_ENV: [&str; 9] = [
    "SECRET_TOKEN",
    "DB_URL",
    "AUTH_USERNAME",
    "AUTH_PASSWORD",
    "AUTH_PASSWORD_HASH",
    "SECRET_TOKEN_PREVIOUS",
    "LOGIN_MAX_FAILURES",
    "LOGIN_WINDOW_SECONDS",
    "TRUST_FORWARDED_FOR",
];

/// Serve the Book Catalog component (a Spin HTTP app) on wasmtime, like `spin up`.
///
/// Application variables come from --variable, then SPIN_VARIABLE_<NAME> in
/// the environment, then a .env file in the current directory, then the
/// manifest's defaults. The component's environment holds SECRET_TOKEN,
/// DB_URL, AUTH_USERNAME, AUTH_PASSWORD, AUTH_PASSWORD_HASH,
/// SECRET_TOKEN_PREVIOUS, LOGIN_MAX_FAILURES, LOGIN_WINDOW_SECONDS and
/// TRUST_FORWARDED_FOR when the host has them set.
/// BOOK_HOST_COUNT_DB_CALLS=1 logs the Spin database calls of each request.
/// BOOK_HOST_THREADS=N (1 to 64) sets the serving threads, each with its own
/// runtime on the shared listener (default: one per core).
/// --pg-empty-query-error (BOOK_HOST_PG_EMPTY_QUERY_ERROR=1) makes a
/// PostgreSQL query without rows an error, as a test for the Spin 4.0.0-4.0.2
/// hang.
#[derive(Parser, Debug)]
#[command(name = "book-host", version)]
struct Cli {
    /// The application manifest
    #[arg(
        short = 'f',
        long = "from",
        value_name = "MANIFEST",
        default_value = "spin.toml"
    )]
    from: PathBuf,

    /// Address to listen on
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,

    /// Folder for the SQLite `default` database (sqlite_db.db) and the
    /// compilation cache [default: .spin beside the manifest]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// Requests one instance may serve, one after another; 1 gives every
    /// request a fresh instance, as Spin does
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_instance_reuse: u32,

    /// Set an application variable (wins over the environment), e.g.
    /// --variable secret_token=...
    #[arg(long = "variable", value_name = "NAME=VALUE")]
    variables: Vec<String>,

    /// Fail a PostgreSQL query that returns zero rows (the component gets
    /// query-failed; a log line names the statement) instead of answering:
    /// real Spin 4.0.0 to 4.0.2 hang forever on such a query (Spin issue
    /// #3671), so tests run with this to catch one. Off by default
    #[arg(long, env = "BOOK_HOST_PG_EMPTY_QUERY_ERROR",
          value_parser = clap::builder::BoolishValueParser::new())]
    pg_empty_query_error: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug, PartialEq, Eq)]
enum Command {
    /// Read a password from standard input and print its Argon2id PHC
    /// string (m=19456,t=2,p=1, OWASP's parameters) for auth_password_hash /
    /// AUTH_PASSWORD_HASH, e.g. printf '%s' 'the password' | book-host hash-password
    HashPassword,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            // One line: clap's first line already says what is wrong.
            let text = e.to_string();
            eprintln!(
                "{}",
                text.lines().next().unwrap_or("error: invalid arguments")
            );
            return ExitCode::from(2);
        }
    };
    if cli.command == Some(Command::HashPassword) {
        return match hash_password::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    // Start-up, signals and one of the serving threads run on this
    // single-threaded runtime; `Server::serve` starts one more per core.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Tokio's default allows 512 blocking threads, each with its own
        // stack and allocator heap; we need only a few.
        .max_blocking_threads(server::MAX_BLOCKING_THREADS_PER_RUNTIME)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let started = Instant::now();
    let manifest = Manifest::load(&cli.from)?;

    let mut cli_vars = HashMap::new();
    for assignment in &cli.variables {
        let Some((name, value)) = assignment.split_once('=') else {
            bail!("--variable expects NAME=VALUE");
        };
        cli_vars.insert(name.trim().to_string(), value.to_string());
    }
    let dotenv = variables::read_dotenv(Path::new(".env"));
    let env = |name: &str| std::env::var(name).ok();
    let variables = Variables::resolve(
        &manifest,
        &Sources {
            cli: &cli_vars,
            env: &env,
            dotenv: &dotenv,
        },
    )?;

    let state_dir = cli
        .state_dir
        .clone()
        .unwrap_or_else(|| manifest.dir.join(".spin"));
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("cannot create state dir {}", state_dir.display()))?;
    // Absolute, so the compilation cache and messages do not depend on cwd.
    let state_dir = std::fs::canonicalize(&state_dir)
        .with_context(|| format!("cannot resolve state dir {}", state_dir.display()))?;
    let sqlite_path = state_dir.join("sqlite_db.db");

    let allowed = allowed_hosts(&manifest, &variables);
    let component_env: Vec<(String, String)> = COMPONENT_ENV
        .iter()
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .collect();
    report_configuration(&variables, &component_env, &sqlite_path);
    // A store the component will be refused: say so now, with the fix.
    for warning in startup::store_access_warnings(&manifest, &variables, &component_env) {
        eprintln!("warning: {warning}");
    }

    let engine = engine(&state_dir)?;
    let component = Component::from_file(&engine, &manifest.source)
        .map_err(anyhow::Error::from)
        .with_context(|| {
        format!(
            "cannot load component {} (build it first: cargo build --release --target wasm32-wasip2)",
            manifest.source.display()
        )
    })?;
    let mut linker = Linker::new(&engine);
    state::add_to_linker(&mut linker)?;
    let pre = linker
        .instantiate_pre(&component)
        .map_err(anyhow::Error::from)
        .context("the component needs an import this host does not provide")?;
    let pre = ProxyPre::new(pre)
        .map_err(anyhow::Error::from)
        .context("the component does not export wasi:http/incoming-handler")?;

    let shared = Arc::new(Shared {
        variables,
        sqlite: SqliteDbs::new(&manifest.sqlite_databases, sqlite_path),
        postgres: PgPools::new(allowed)?,
        env: component_env,
        count_db_calls: std::env::var("BOOK_HOST_COUNT_DB_CALLS").is_ok_and(|v| v == "1"),
        pg_empty_query_error: cli.pg_empty_query_error,
    });
    let server = Arc::new(Server::new(
        pre,
        shared,
        manifest.route.clone(),
        cli.max_instance_reuse,
    ));

    // Install signal handlers before announcing the address, so a signal
    // sent right after "Serving" is always handled gracefully.
    let mut sigterm = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    let listener = tokio::net::TcpListener::bind(cli.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cli.listen))?;
    let addr = listener.local_addr()?;
    println!("Serving http://{addr}");
    println!("Available Routes:");
    println!(
        "  {}: http://{addr}{} {}",
        manifest.component_id,
        if manifest.route.base.is_empty() {
            ""
        } else {
            &manifest.route.base
        },
        if manifest.route.wildcard {
            "(wildcard)"
        } else {
            ""
        }
    );
    println!("Ready in {} ms", started.elapsed().as_millis());

    let shutdown = async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
        println!("Shutting down");
    };
    server.serve(listener, shutdown).await;
    Ok(())
}

/// `allowed_outbound_hosts` with templates expanded. Like Spin, a bad or
/// unresolvable entry does not stop start-up; it just admits nothing.
fn allowed_hosts(manifest: &Manifest, variables: &Variables) -> Vec<AllowedHost> {
    let mut allowed = Vec::new();
    for entry in &manifest.allowed_outbound_hosts {
        match variables.expand(entry) {
            Err(var) => eprintln!(
                "warning: allowed_outbound_hosts entry {entry:?} uses undefined variable {var:?}; it admits nothing"
            ),
            Ok(expanded) => match AllowedHost::parse(&expanded) {
                Ok(Some(a)) => allowed.push(a),
                Ok(None) => {}
                // Name the template, not its value (which came from variables).
                Err(_) => eprintln!(
                    "warning: allowed_outbound_hosts entry {entry:?} is not scheme://host[:port]; it admits nothing"
                ),
            },
        }
    }
    allowed
}

/// Start-up lines about the store and the secrets, never printing a secret.
fn report_configuration(variables: &Variables, env: &[(String, String)], sqlite_path: &Path) {
    let (store, warnings) = configuration_report(variables, env, sqlite_path);
    println!("Store: {store}");
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

/// The store line and the warnings, as the component will see its settings:
/// a non-empty Spin variable, else the plain environment name.
fn configuration_report(
    variables: &Variables,
    env: &[(String, String)],
    sqlite_path: &Path,
) -> (String, Vec<String>) {
    let setting = |var: &str, env_name: &str| {
        variables
            .get(var)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| {
                env.iter()
                    .find(|(k, v)| k == env_name && !v.is_empty())
                    .map(|(_, v)| v.clone())
            })
    };
    let db_url = setting("db_url", "DB_URL").unwrap_or_default();
    let mut warnings = Vec::new();
    match setting("secret_token", "SECRET_TOKEN") {
        None => warnings.push(
            "no signing secret configured (set SPIN_VARIABLE_SECRET_TOKEN or SECRET_TOKEN): \
             POST /token will answer 500 and protected routes 401"
                .to_string(),
        ),
        Some(s) if s.len() < 32 => warnings.push(format!(
            "the signing secret is shorter than 32 bytes ({} bytes); use a longer random secret",
            s.len()
        )),
        Some(_) => {}
    }
    match setting("auth_password_hash", "AUTH_PASSWORD_HASH") {
        // A hash replaces the password; one the component cannot use makes
        // every login 500 (the reason is checked by the component itself).
        Some(hash) if !hash_password::looks_like_argon2id(&hash) => warnings.push(
            "auth_password_hash / AUTH_PASSWORD_HASH is not an Argon2id PHC string \
             ($argon2id$v=19$m=...,t=...,p=...$salt$hash): every login will answer 500"
                .to_string(),
        ),
        Some(_) => {}
        None if setting("auth_password", "AUTH_PASSWORD").is_none() => warnings.push(
            "the default login password is in use (set SPIN_VARIABLE_AUTH_PASSWORD or AUTH_PASSWORD, \
             or a hash in AUTH_PASSWORD_HASH: book-host hash-password)"
                .to_string(),
        ),
        None => {}
    }
    (describe_store(&db_url, sqlite_path), warnings)
}

fn describe_store(db_url: &str, sqlite_path: &Path) -> String {
    let url = db_url.trim();
    if url.is_empty() || url == "sqlite:" || url == "sqlite://" || url == "sqlite://default" {
        format!("SQLite default database at {}", sqlite_path.display())
    } else if let Some(label) = url.strip_prefix("sqlite://") {
        format!("SQLite database {label:?} (this host only provides \"default\")")
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        format!("PostgreSQL at {}", redact_password(url))
    } else {
        "DB_URL is neither sqlite: nor postgres://; the component will answer 500".to_string()
    }
}

/// `scheme://user:secret@host/...` -> `scheme://user:***@host/...`. Uses the
/// last `@`, so an unescaped `@` or `/` inside the password is still hidden.
fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let Some(at) = url.rfind('@').filter(|at| *at > scheme_end) else {
        return url.to_string();
    };
    let userinfo = &url[scheme_end..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &userinfo[..colon],
            &url[at..]
        ),
        None => url.to_string(),
    }
}

/// One engine for the process: the compilation cache (under the state dir)
/// makes a restart skip compilation; the pooling allocator and copy-on-write
/// memory images make a fresh instance per request cheap.
fn engine(state_dir: &Path) -> Result<Engine> {
    let mut config = Config::new();
    config.memory_init_cow(true);
    let mut cache = CacheConfig::new();
    cache.with_directory(state_dir.join("cache"));
    match Cache::new(cache) {
        Ok(cache) => {
            config.cache(Some(cache));
        }
        Err(e) => eprintln!("warning: compilation cache disabled: {e:#}"),
    }

    /// Dirty memory per instance reset by memset rather than madvise: more
    /// than a request of our component touches (its stack, data and heap).
    const MEMORY_KEEP_RESIDENT_BYTES: usize = 1 << 20;
    const TABLE_KEEP_RESIDENT_BYTES: usize = 64 << 10;
    let instances = server::MAX_ACTIVE_INSTANCES + server::MAX_IDLE_INSTANCES;
    let mut pooling = wasmtime::PoolingAllocationConfig::default();
    pooling
        .total_component_instances(instances)
        // A Rust wasip2 component is a handful of core instances (the
        // program, the WASI adapter and glue), with one or two memories.
        .max_core_instances_per_component(16)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .total_core_instances(instances * 8)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_memory_size(256 << 20)
        // Reset a finished instance's memory by rewriting only the pages it
        // dirtied (found with Linux's PAGEMAP_SCAN, 6.7+), instead of
        // madvise-ing the whole memory away: no TLB shootdown across cores
        // and no page faults when the next instance touches the same pages.
        // Measured: see the README's performance section.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT_BYTES)
        .table_keep_resident(TABLE_KEEP_RESIDENT_BYTES);
    let mut pooled = config.clone();
    pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    match Engine::new(&pooled) {
        Ok(engine) => Ok(engine),
        Err(e) => {
            eprintln!(
                "warning: pooling allocator unavailable ({e}); allocating instances on demand"
            );
            Ok(Engine::new(&config)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact_password("postgres://book:s3cret@127.0.0.1:5432/books"),
            "postgres://book:***@127.0.0.1:5432/books"
        );
        assert_eq!(
            redact_password("postgresql://u:p@ss/w0rd@db/x?sslmode=require"),
            "postgresql://u:***@db/x?sslmode=require"
        );
        assert_eq!(redact_password("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(redact_password("postgres://db/x"), "postgres://db/x");
    }

    #[test]
    fn store_descriptions() {
        let p = Path::new("/s/sqlite_db.db");
        assert_eq!(
            describe_store("", p),
            "SQLite default database at /s/sqlite_db.db"
        );
        assert_eq!(
            describe_store("sqlite://default", p),
            "SQLite default database at /s/sqlite_db.db"
        );
        let pg = describe_store("postgres://a:secretpw@h:5432/d", p);
        assert_eq!(pg, "PostgreSQL at postgres://a:***@h:5432/d");
        assert!(!describe_store("mysql://a:secretpw@h", p).contains("secretpw"));
    }

    #[test]
    fn start_up_warnings() {
        let manifest =
            Manifest::parse(include_str!("../../spin.toml"), PathBuf::from(".")).unwrap();
        let vars = |pairs: &[(&str, &str)]| {
            let cli: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let none = |_: &str| None;
            Variables::resolve(
                &manifest,
                &Sources {
                    cli: &cli,
                    env: &none,
                    dotenv: &HashMap::new(),
                },
            )
            .unwrap()
        };
        let path = Path::new("/s/sqlite_db.db");
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };

        let (store, warnings) = configuration_report(&vars(&[]), &[], path);
        assert_eq!(store, "SQLite default database at /s/sqlite_db.db");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("no signing secret"));
        assert!(warnings[1].starts_with("the default login password"));

        let short = "short-secret";
        let (_, warnings) = configuration_report(
            &vars(&[]),
            &env(&[("SECRET_TOKEN", short), ("AUTH_PASSWORD", "pw")]),
            path,
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("shorter than 32 bytes"));
        assert!(!warnings[0].contains(short));

        let long = "x".repeat(40);
        let (store, warnings) = configuration_report(
            &vars(&[
                ("secret_token", &long),
                ("auth_password", "pw"),
                ("db_url", "postgres://u:hidden@h/d"),
            ]),
            &env(&[("DB_URL", "sqlite://default")]),
            path,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(store, "PostgreSQL at postgres://u:***@h/d");
    }

    #[test]
    fn cli_defaults() {
        let cli = Cli::try_parse_from(["book-host"]).unwrap();
        assert_eq!(cli.from, PathBuf::from("spin.toml"));
        assert_eq!(cli.listen, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(cli.max_instance_reuse, 1);
        assert!(!cli.pg_empty_query_error, "off by default");
        let cli = Cli::try_parse_from(["book-host", "--pg-empty-query-error"]).unwrap();
        assert!(cli.pg_empty_query_error);
        // The only test that touches this variable (tests share the process).
        for (value, on) in [("1", true), ("true", true), ("0", false), ("false", false)] {
            std::env::set_var("BOOK_HOST_PG_EMPTY_QUERY_ERROR", value);
            let cli = Cli::try_parse_from(["book-host"]);
            std::env::remove_var("BOOK_HOST_PG_EMPTY_QUERY_ERROR");
            assert_eq!(cli.unwrap().pg_empty_query_error, on, "{value}");
        }
        assert!(Cli::try_parse_from(["book-host", "--max-instance-reuse", "0"]).is_err());
        assert!(Cli::try_parse_from(["book-host", "--listen", "nope"]).is_err());
    }
}
