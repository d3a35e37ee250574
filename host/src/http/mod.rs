//! The HTTP side (wasi-http serving): hyper accepts requests and hands each
//! one to the component's `wasi:http/incoming-handler`, in a fresh instance
//! (Spin's isolation) or, with `--max-instance-reuse N`, in an idle instance
//! that has served fewer than N.
//!
//! One single-threaded tokio runtime per core, all accepting from the same
//! listener: a connection, the instances serving its requests and their
//! SQLite statements stay on one thread (measured: docs/performance.md,
//! "What made it fast").
//!
//! What a slow or hostile client can hold: its connection's task, never an
//! instance slot or a thread. Hyper reads the request head (within
//! `HEADER_TIMEOUT`) before the request exists; the body is read ahead
//! ([`request_body`]) before the request waits for a slot; a request that
//! waits `SLOT_WAIT` for a slot answers 503; and one that runs past
//! `--request-timeout` is stopped with 500, its instance discarded. Guest
//! code yields to the other requests of its thread every `EPOCH_TICK`, so a
//! runaway guest cannot keep them waiting, nor its own deadline from firing.
//!
//! By concern:
//!
//! - [`server`]: the serving threads, the instance slots and each request;
//! - [`request_body`]: the body read ahead, then streamed, then lingered on;
//! - [`spin_headers`]: the `spin-*` headers Spin gives a component;
//! - [`answers`]: what the host answers itself (404, 500, 503), as Spin
//!   does: a status and an empty body;
//! - [`hooks`]: wasi-http's hooks, refusing outgoing requests.
//!
//! The server knows nothing of the instance state but [`GuestState`]: the
//! state implements it, and this room does not import the state.

mod answers;
mod hooks;
mod request_body;
mod server;
mod spin_headers;

pub use hooks::NoOutgoingHttp;
pub use server::{
    serving_runtime, start_epoch_ticker, GuestState, Limits, Server, DEFAULT_MAX_INSTANCES,
    MAX_IDLE_INSTANCES,
};
