//! Bindings for our world, generated from `../wit` (the `book-catalog` world:
//! the default build, the union of every variant's imports) so that a change
//! of WASI patch versions there needs no code change here. Every `wasi:*`
//! interface maps to wasmtime-wasi / wasmtime-wasi-http's own bindings; only
//! the Spin interfaces are generated here.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "book-catalog",
    imports: { default: async | trappable },
    exports: { default: async },
    require_store_data_send: true,
    with: {
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        // Not `wasi:cli/exit`: its WIT gates `exit-with-code` behind an
        // unstable feature that wasmtime's 0.2.12 copy has stabilised, so
        // the two disagree on link options. Ours is generated (one
        // function); the host links wasmtime's.
        "wasi:cli/environment": wasmtime_wasi::p2::bindings::cli::environment,
        "wasi:cli/stdin": wasmtime_wasi::p2::bindings::cli::stdin,
        "wasi:cli/stdout": wasmtime_wasi::p2::bindings::cli::stdout,
        "wasi:cli/stderr": wasmtime_wasi::p2::bindings::cli::stderr,
        "wasi:cli/terminal-input": wasmtime_wasi::p2::bindings::cli::terminal_input,
        "wasi:cli/terminal-output": wasmtime_wasi::p2::bindings::cli::terminal_output,
        "wasi:cli/terminal-stdin": wasmtime_wasi::p2::bindings::cli::terminal_stdin,
        "wasi:cli/terminal-stdout": wasmtime_wasi::p2::bindings::cli::terminal_stdout,
        "wasi:cli/terminal-stderr": wasmtime_wasi::p2::bindings::cli::terminal_stderr,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "wasi:http": wasmtime_wasi_http::p2::bindings::http,
        // The resources' types, from modules that do not import this one
        // (so the edge goes one way).
        "fermyon:spin/sqlite.connection": crate::sqlite::pool::Connection,
        "fermyon:spin/postgres.connection": crate::postgres::pool::Connection,
    },
});
