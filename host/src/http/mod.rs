//! The HTTP side (wasi-http serving): hyper accepts requests and hands each
//! one to the component's `wasi:http/incoming-handler`, in a fresh instance
//! (Spin's isolation) or, with `--max-instance-reuse N`, in an idle instance
//! that has served fewer than N.
//!
//! One single-threaded tokio runtime per core, all accepting from the same
//! listener: a connection and the instances serving its requests stay on
//! one thread (why: `Server::serve`); their SQLite statements run on that
//! runtime's blocking pool, as in Spin (`sqlite::host`).
//!
//! What a slow or hostile client can hold: its connection's task, never an
//! instance slot or a thread. Hyper reads the request head (within
//! `HEADER_TIMEOUT`) before the request exists; the body is read ahead
//! (`request_body`) before the request waits for a slot; a request that
//! waits `SLOT_WAIT` for a slot answers 503; and one that runs past
//! `--request-timeout` is stopped with 500, its instance discarded. Guest
//! code yields to the other requests of its thread every `EPOCH_TICK`, so a
//! runaway guest cannot keep them waiting, nor its own deadline from firing.
//! The server knows the instance state only as a `WasiHttpView`.

mod answers;
mod hooks;
mod request_body;
mod server;
mod spin_headers;

pub use hooks::NoOutgoingHttp;
pub use server::{
    serving_runtime, start_epoch_ticker, Limits, Server, DEFAULT_MAX_INSTANCES, MAX_IDLE_INSTANCES,
};
