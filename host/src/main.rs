//! `spin-lite`: serves a Spin HTTP application's components the way `spin up`
//! does, on wasmtime. This file is the wiring; host/README.md the rooms.

mod bindings;
mod cli;
mod engine;
mod http;
mod manifest;
mod postgres;
mod rows;
mod sqlite;
mod state;
mod tls;
mod variables;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use wasmtime::component::{Component, Linker};
use wasmtime_wasi_http::handler::ProxyPre;
use wasmtime_wasi_http::p3::bindings::ServicePre;

use crate::cli::Cli;
use crate::http::{App, Limits, Server};
use crate::manifest::{HttpComponent, Manifest};
use crate::postgres::PgPools;
use crate::sqlite::SqliteDbs;
use crate::state::{Shared, State};
use crate::variables::Variables;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line: clap's first line already says what is wrong.
            let text = e.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: invalid arguments"));
            return ExitCode::from(2);
        }
    };
    // Start-up, signals and one serving thread; `Server::serve` adds the rest.
    let ran = http::serving_runtime()
        .context("cannot start the async runtime")
        .and_then(|runtime| runtime.block_on(run(cli)));
    match ran {
        Ok(()) => {
            eprintln!("spin-lite: stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let started = Instant::now();
    let manifest = Manifest::load(&cli.from)?;
    manifest.warnings.iter().for_each(|warning| eprintln!("warning: {warning}"));

    let env = |name: &str| std::env::var(name).ok();
    let mut providers = Vec::new();
    if let Some(path) = &cli.runtime_config_file {
        let names: Vec<&str> = manifest.variables.keys().map(String::as_str).collect();
        let warnings;
        (providers, warnings) = variables::load_providers(path, &names, &env)?;
        warnings.iter().for_each(|warning| eprintln!("warning: {warning}"));
    }
    let dotenv = variables::read_dotenv(Path::new(".env"));
    let env_then_dotenv = |name: &str| env(name).or_else(|| dotenv.get(name).cloned());
    let cli_variables = cli.variables.iter().cloned().collect();
    let variables =
        Variables::resolve(&manifest, cli_variables, &env_then_dotenv, providers).await?;

    let state_dir = cli.state_dir.clone().unwrap_or_else(|| manifest.dir.join(".spin"));
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("cannot create state dir {}", state_dir.display()))?;
    // Absolute, so the compilation cache and messages do not depend on cwd.
    let state_dir = std::fs::canonicalize(&state_dir)
        .with_context(|| format!("cannot resolve state dir {}", state_dir.display()))?;
    let sqlite_locations = sqlite::locations(cli.runtime_config_file.as_deref(), &state_dir)?;

    let limits = Limits {
        max_instances: cli.max_instances,
        request_timeout: cli.request_timeout,
        reuse_count: cli.max_instance_reuse_count,
        concurrent_reuse: cli.max_instance_concurrent_reuse_count,
        idle_timeout: cli.idle_instance_timeout,
    };
    let mut servers = Vec::new();
    for component in &manifest.components {
        let (allowed, warnings) =
            postgres::postgres_hosts(&component.allowed_outbound_hosts, |e| variables.expand(e));
        warnings.iter().for_each(|warning| eprintln!("warning: {warning}"));
        let shared = Arc::new(Shared {
            variables: Arc::new(variables.for_component(&component.variables)),
            sqlite: SqliteDbs::new(&component.sqlite_databases, sqlite_locations.clone()),
            postgres: Arc::new(PgPools::new(allowed)?),
            env: cli.env.clone(),
            pg_empty_query_error: cli.pg_empty_query_error,
        });
        let pre = load(component, &state_dir, &cli)?;
        servers.push(Arc::new(Server::new(pre, shared, component.route.clone(), limits)));
    }
    let app = Arc::new(App(servers));

    // Before "Serving": a signal sent right after it is handled gracefully.
    let mut sigterm = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    let listener = tokio::net::TcpListener::bind(cli.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cli.listen))?;
    let addr = listener.local_addr()?;
    println!("Serving http://{addr}");
    println!("Available Routes:");
    for component in &manifest.components {
        let (route, id) = (&component.route, &component.id);
        let wildcard = if route.wildcard { " (wildcard)" } else { "" };
        println!("  {id}: http://{addr}{}{wildcard}", route.base);
    }
    println!("Ready in {} ms", started.elapsed().as_millis());

    let shutdown = async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
    };
    app.serve(listener, shutdown).await.context("cannot serve")
}

/// The component compiled on an engine of its own (its world decides the
/// engine's configuration; each has its own pool), ready to instantiate.
fn load(component: &HttpComponent, state_dir: &Path, cli: &Cli) -> Result<ProxyPre<State>> {
    let loading = || format!("cannot load component {}", component.source.display());
    let bytes = std::fs::read(&component.source).with_context(loading)?;
    // The WASI version from the component's exports, as Spin main tells it.
    let p3 = http::exports_wasi_0_3(&bytes);
    let instances = cli.max_instances + http::MAX_IDLE_INSTANCES;
    let concurrent = p3.then_some(cli.max_instance_concurrent_reuse_count);
    let engine = engine::engine(state_dir, instances, concurrent)?;
    http::start_epoch_ticker(engine.clone()).context("cannot start the epoch ticker")?;
    let compiled =
        Component::new(&engine, &bytes).map_err(anyhow::Error::from).with_context(loading)?;
    let mut linker = Linker::new(&engine);
    state::add_to_linker(&mut linker, p3)?;
    let pre =
        linker.instantiate_pre(&compiled).map_err(anyhow::Error::from).with_context(|| {
            format!("component {:?} needs an import this host does not provide", component.id)
        })?;
    match p3 {
        true => ServicePre::new(pre).map(ProxyPre::P3),
        false => wasmtime_wasi_http::p2::bindings::ProxyPre::new(pre).map(ProxyPre::P2),
    }
    .map_err(anyhow::Error::from)
    .with_context(|| {
        format!("component {:?} does not export wasi:http/incoming-handler", component.id)
    })
}
