//! Per-instance store data (`Store<State>`) and the linker that gives the
//! component exactly the interfaces our world (`../wit`) imports.

use std::future::Future;
use std::sync::Arc;

use wasmtime::component::{HasData, HasSelf, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttp, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use crate::bindings;
use crate::postgres::PgPools;
use crate::sqlite::SqliteDbs;
use crate::variables::Variables;

/// Host state shared by every instance.
pub struct Shared {
    pub variables: Variables,
    pub sqlite: SqliteDbs,
    pub postgres: PgPools,
    /// Plain environment handed to the component (`spin up -e` style).
    pub env: Vec<(String, String)>,
    /// `BOOK_HOST_COUNT_DB_CALLS=1`: log the Spin DB host calls per request.
    pub count_db_calls: bool,
    /// `--pg-empty-query-error`: a PostgreSQL `query` that returns zero rows
    /// fails (real Spin 4.0.0 to 4.0.2 hang on it) instead of answering.
    pub pg_empty_query_error: bool,
}

/// Spin database host calls made while serving one request.
#[derive(Default, Debug, Clone, Copy)]
pub struct DbCalls {
    pub open: u32,
    pub execute: u32,
    pub query: u32,
}

pub struct State {
    pub shared: Arc<Shared>,
    pub table: ResourceTable,
    pub calls: DbCalls,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: NoOutgoingHttp,
}

impl State {
    pub fn new(shared: Arc<Shared>) -> State {
        let mut wasi = WasiCtx::builder();
        // Component output goes straight to ours (one log line per request).
        wasi.inherit_stdout().inherit_stderr();
        for (k, v) in &shared.env {
            wasi.env(k, v);
        }
        State {
            shared,
            table: ResourceTable::new(),
            calls: DbCalls::default(),
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            hooks: NoOutgoingHttp,
        }
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// Our world imports no `wasi:http/outgoing-handler`; this only satisfies
/// the hooks trait (nothing links a way to call it).
struct NoOutgoingHttp;

impl WasiHttpHooks for NoOutgoingHttp {
    fn send_request(
        &mut self,
        _request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<
            dyn Future<Output = wasmtime_wasi_http::Result<(), wasmtime_wasi_http::Error>> + Send,
        >,
    ) -> Box<
        dyn Future<
                Output = wasmtime_wasi_http::Result<(
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<
                        dyn Future<
                                Output = wasmtime_wasi_http::Result<(), wasmtime_wasi_http::Error>,
                            > + Send,
                    >,
                )>,
            > + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}

/// `wasi:io` host traits are implemented on the resource table itself.
struct Io;
impl HasData for Io {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the world's imports, one interface at a time, so the component can
/// reach nothing else (no filesystem, sockets or outgoing HTTP).
/// Semver-compatible 0.2.x imports resolve to wasmtime's 0.2 implementations.
pub fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::{cli, clocks, io, random};
    let l = linker;
    io::error::add_to_linker::<State, Io>(l, |s| &mut s.table)?;
    io::poll::add_to_linker::<State, Io>(l, |s| &mut s.table)?;
    io::streams::add_to_linker::<State, Io>(l, |s| &mut s.table)?;
    cli::environment::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::exit::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::stdin::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::stdout::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::stderr::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_input::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_output::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stdin::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stdout::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stderr::add_to_linker::<State, WasiCli>(l, State::cli)?;
    clocks::wall_clock::add_to_linker::<State, WasiClocks>(l, State::clocks)?;
    clocks::monotonic_clock::add_to_linker::<State, WasiClocks>(l, State::clocks)?;
    random::insecure_seed::add_to_linker::<State, WasiRandom>(l, State::random)?;
    let http_options = wasmtime_wasi_http::p2::bindings::LinkOptions::default();
    wasmtime_wasi_http::p2::bindings::http::types::add_to_linker::<State, WasiHttp>(
        l,
        &(&http_options).into(),
        State::http,
    )?;
    bindings::fermyon::spin::sqlite::add_to_linker::<State, HasSelf<State>>(l, |s| s)?;
    bindings::fermyon::spin::variables::add_to_linker::<State, HasSelf<State>>(l, |s| s)?;
    bindings::fermyon::spin::rdbms_types::add_to_linker::<State, HasSelf<State>>(l, |s| s)?;
    bindings::fermyon::spin::postgres::add_to_linker::<State, HasSelf<State>>(l, |s| s)?;
    Ok(())
}
