//! `book-host`: serves the Book Catalog WebAssembly component the way
//! `spin up` does, on wasmtime. This file holds the command line and the
//! wiring; host/README.md describes the modules ("rooms").

mod bindings;
mod db_calls;
mod engine;
mod hash_password;
mod http;
mod manifest;
mod postgres;
mod sqlite;
mod startup;
mod state;
mod tls;
mod variables;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use wasmtime::component::{Component, Linker};
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use crate::http::{Limits, Server};
use crate::manifest::Manifest;
use crate::postgres::PgPools;
use crate::sqlite::SqliteDbs;
use crate::startup::ComponentSettings;
use crate::state::{Shared, State};
use crate::variables::{Sources, Variables};

/// Serve the Book Catalog component (a Spin HTTP app) on wasmtime, like `spin up`.
///
/// Application variables come from --variable, then the variables providers
/// of --runtime-config-file, then SPIN_VARIABLE_<NAME> in the environment,
/// then a .env file in the current directory, then the manifest's defaults.
/// The component's environment holds the plain names of its settings (listed
/// below) when the host has them set, and nothing else of the host's
/// environment. At start the host applies the component's migrations to the
/// store it will use. BOOK_HOST_COUNT_DB_CALLS=1 logs the Spin database calls of each request.
/// BOOK_HOST_THREADS=N (1 to 64) sets the serving threads, each with its own
/// runtime on the shared listener (default: one per core).
/// --pg-empty-query-error (BOOK_HOST_PG_EMPTY_QUERY_ERROR=1) makes a
/// PostgreSQL query without rows an error, as a test for the Spin 4.0.0-4.0.2
/// hang.
#[derive(Parser, Debug)]
#[command(name = "book-host", version, after_help = startup::settings_help())]
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

    /// Instances running at once; a request that finds them all busy for
    /// 5 s answers 503
    #[arg(long, value_name = "N", env = "BOOK_HOST_MAX_INSTANCES",
          default_value_t = http::DEFAULT_MAX_INSTANCES,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_instances: u32,

    /// The longest a request may run once it has an instance: past it the
    /// guest is stopped, the request answers 500 and the instance is
    /// discarded
    #[arg(long, value_name = "SECONDS", env = "BOOK_HOST_REQUEST_TIMEOUT",
          default_value = "30", value_parser = parse_seconds)]
    request_timeout: Duration,

    /// A Spin runtime config file; its [[variables_provider]] tables (env,
    /// vault) are applied, other tables are named in a warning
    #[arg(long, value_name = "FILE")]
    runtime_config_file: Option<PathBuf>,

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

/// Seconds, whole or not, from 0.1 to one day.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.1..=86_400.0).contains(&seconds) {
        return Err(format!("{text} is not between 0.1 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
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
        .max_blocking_threads(http::MAX_BLOCKING_THREADS_PER_RUNTIME)
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
    let providers = match &cli.runtime_config_file {
        None => Vec::new(),
        Some(path) => {
            let names: Vec<&str> = manifest.variables.keys().map(String::as_str).collect();
            let (providers, warnings) = variables::load_providers(path, &names, &env)?;
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            providers
        }
    };
    let variables = Variables::resolve(
        &manifest,
        &Sources {
            cli: &cli_vars,
            env: &env,
            dotenv: &dotenv,
        },
        providers,
    )
    .await?;

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

    let outbound = startup::outbound_hosts(&manifest, &variables);
    let (allowed, warnings) = outbound.postgres();
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    let component_env = ComponentSettings::environment(env);
    let settings = ComponentSettings::new(&variables, component_env.clone());
    startup::report(&manifest, &outbound, &settings, &sqlite_path);

    let instances = cli.max_instances + http::MAX_IDLE_INSTANCES;
    let engine = engine::engine(&state_dir, instances)?;
    http::start_epoch_ticker(engine.clone()).context("cannot start the epoch ticker")?;
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

    let sqlite = SqliteDbs::new(&manifest.sqlite_databases, sqlite_path);
    let postgres = PgPools::new(allowed)?;
    startup::migrate(&settings, &sqlite, &postgres).await;

    let shared = Arc::new(Shared {
        variables,
        sqlite,
        postgres,
        env: component_env,
        count_db_calls: std::env::var("BOOK_HOST_COUNT_DB_CALLS").is_ok_and(|v| v == "1"),
        pg_empty_query_error: cli.pg_empty_query_error,
    });
    let server = Arc::new(Server::new(
        pre,
        Box::new(move || State::new(shared.clone())),
        manifest.route.clone(),
        Limits {
            max_reuse: cli.max_instance_reuse,
            max_instances: cli.max_instances,
            request_timeout: cli.request_timeout,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags table of host/README.md, as (flag, environment, default)
    /// with the backticks taken off.
    fn documented_flags() -> Vec<(String, String, String)> {
        let readme = include_str!("../README.md");
        let table = readme
            .split("## Flags")
            .nth(1)
            .expect("host/README.md has a Flags section");
        table
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'))
            .skip(2)
            .map(|row| {
                let cells: Vec<String> = row
                    .split('|')
                    .map(|cell| cell.trim().trim_matches('`').to_string())
                    .collect();
                (cells[1].clone(), cells[2].clone(), cells[3].clone())
            })
            .collect()
    }

    #[test]
    fn the_readme_documents_every_flag_its_environment_name_and_default() {
        use clap::CommandFactory;
        let documented = documented_flags();
        let command = Cli::command();
        for argument in command.get_arguments() {
            let Some(long) = argument.get_long() else {
                continue;
            };
            if ["help", "version"].contains(&long) {
                continue;
            }
            let row = documented
                .iter()
                .find(|(flag, _, _)| {
                    flag.split([',', ' '])
                        .any(|word| word == format!("--{long}"))
                })
                .unwrap_or_else(|| panic!("--{long} is not in host/README.md's flags table"));
            let environment = argument
                .get_env()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            assert_eq!(row.1, environment, "--{long}: environment name");
            let default: Vec<String> = argument
                .get_default_values()
                .iter()
                .map(|value| value.to_string_lossy().into_owned())
                .collect();
            match default.as_slice() {
                [value] => assert_eq!(&row.2, value, "--{long}: default"),
                // No default in clap: the README says what happens instead
                // (`.spin` beside the manifest, off) or nothing.
                _ => assert!(
                    !row.2.chars().any(|c| c.is_ascii_digit()),
                    "--{long}: {row:?}"
                ),
            }
        }
    }

    #[test]
    fn flags_parse_and_refuse_as_documented() {
        let cli = Cli::try_parse_from(["book-host", "--request-timeout", "1.5"]).unwrap();
        assert_eq!(cli.request_timeout, Duration::from_millis(1500));
        // "the request deadline (0.1 to 86400)"
        for bad in ["0", "0.09", "-1", "x", "86401"] {
            assert!(Cli::try_parse_from(["book-host", "--request-timeout", bad]).is_err());
        }
        let cli = Cli::try_parse_from(["book-host", "--pg-empty-query-error"]).unwrap();
        assert!(cli.pg_empty_query_error);
        assert!(
            !Cli::try_parse_from(["book-host"])
                .unwrap()
                .pg_empty_query_error
        );
        // The only test that touches this variable (tests share the process).
        for (value, on) in [("1", true), ("true", true), ("0", false), ("false", false)] {
            std::env::set_var("BOOK_HOST_PG_EMPTY_QUERY_ERROR", value);
            let cli = Cli::try_parse_from(["book-host"]);
            std::env::remove_var("BOOK_HOST_PG_EMPTY_QUERY_ERROR");
            assert_eq!(cli.unwrap().pg_empty_query_error, on, "{value}");
        }
        assert!(Cli::try_parse_from(["book-host", "--max-instance-reuse", "0"]).is_err());
        assert!(Cli::try_parse_from(["book-host", "--max-instances", "1001"]).is_err());
        assert!(Cli::try_parse_from(["book-host", "--listen", "nope"]).is_err());
    }

    #[test]
    fn the_help_lists_the_settings_from_the_core() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        for setting in book_catalog::settings::Setting::ALL {
            assert!(help.contains(setting.env_name()), "{help}");
            assert!(help.contains(setting.variable_name()), "{help}");
        }
    }
}
