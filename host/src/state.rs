//! Per-instance store data (`Store<State>`), the view it lends each
//! interface (the rooms know their view, not this module), and the linker.

use std::sync::Arc;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttp, WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::bindings;
use crate::http::NoOutgoingHttp;
use crate::postgres::{PgPools, PgView, SpinPostgres};
use crate::sqlite::{SpinSqlite, SqliteDbs, SqliteView};
use crate::variables::{SpinVariables, Variables, VariablesView};

/// Host state shared by every instance.
pub struct Shared {
    pub variables: Arc<Variables>,
    pub sqlite: SqliteDbs,
    pub postgres: Arc<PgPools>,
    /// Exactly the `-e NAME=VALUE` pairs.
    pub env: Vec<(String, String)>,
    pub pg_empty_query_error: bool,
}

pub struct State {
    shared: Arc<Shared>,
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: NoOutgoingHttp,
}

impl State {
    pub fn new(shared: Arc<Shared>) -> State {
        let mut wasi = WasiCtx::builder();
        wasi.inherit_stdout().inherit_stderr().envs(&shared.env);
        State {
            shared,
            table: ResourceTable::new(),
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            hooks: NoOutgoingHttp,
        }
    }

    fn sqlite(&mut self) -> SqliteView<'_> {
        SqliteView { dbs: &self.shared.sqlite, table: &mut self.table }
    }

    fn postgres(&mut self) -> PgView<'_> {
        PgView {
            pools: &self.shared.postgres,
            table: &mut self.table,
            empty_query_error: self.shared.pg_empty_query_error,
        }
    }

    fn variables(&mut self) -> VariablesView<'_> {
        VariablesView { variables: &self.shared.variables }
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

/// One interface at a time: no filesystem, sockets or outgoing HTTP. For a
/// WASI 0.3 component (`p3`) 0.3's and the newer Spin interfaces too (Rust's
/// std imports WASI 0.2's from a 0.3 component as well).
pub fn add_to_linker(linker: &mut Linker<State>, p3: bool) -> wasmtime::Result<()> {
    use bindings::fermyon::spin::{postgres, rdbms_types, sqlite, variables};
    use bindings::spin::variables::variables as variables3;
    use bindings::spin::{postgres::postgres as pg4, sqlite::sqlite as sqlite3};
    use wasmtime_wasi::p2::bindings::{cli, random};
    use wasmtime_wasi_http::p2::bindings::{http::types, LinkOptions};
    let l = linker;
    if p3 {
        wasmtime_wasi::p3::cli::add_to_linker(l)?;
        wasmtime_wasi::p3::clocks::add_to_linker(l)?;
        wasmtime_wasi::p3::random::add_to_linker(l)?;
        let http_types =
            wasmtime_wasi_http::p3::bindings::http::types::add_to_linker::<_, WasiHttp>;
        http_types(l, State::http)?;
        sqlite3::add_to_linker::<State, SpinSqlite>(l, State::sqlite)?;
        variables3::add_to_linker::<State, SpinVariables>(l, State::variables)?;
        pg4::add_to_linker::<State, SpinPostgres>(l, State::postgres)?;
    }
    // io, clocks, random, stdin, stdout and stderr.
    wasmtime_wasi::p2::add_to_linker_proxy_interfaces_async(l)?;
    cli::environment::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::exit::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_input::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_output::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stdin::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stdout::add_to_linker::<State, WasiCli>(l, State::cli)?;
    cli::terminal_stderr::add_to_linker::<State, WasiCli>(l, State::cli)?;
    random::insecure::add_to_linker::<State, WasiRandom>(l, State::random)?;
    random::insecure_seed::add_to_linker::<State, WasiRandom>(l, State::random)?;
    let http_options = (&LinkOptions::default()).into();
    types::add_to_linker::<State, WasiHttp>(l, &http_options, State::http)?;
    sqlite::add_to_linker::<State, SpinSqlite>(l, State::sqlite)?;
    variables::add_to_linker::<State, SpinVariables>(l, State::variables)?;
    rdbms_types::add_to_linker::<State, SpinPostgres>(l, State::postgres)?;
    postgres::add_to_linker::<State, SpinPostgres>(l, State::postgres)?;
    Ok(())
}
