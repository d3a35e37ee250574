//! The Spin adapters, WebAssembly only, one per world (Cargo feature `p3`
//! or `p2`): the HTTP entry point, settings from Spin variables and the
//! environment, and the two stores, each only with its Cargo feature (a
//! variant imports no interface of the store it lacks).

#[cfg(all(feature = "p2", feature = "p3"))]
compile_error!("a component has one world: build with the feature p3 or p2, not both");

#[cfg(feature = "p2")]
mod p2;
#[cfg(feature = "p3")]
mod p3;

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::settings::{self, Setting, SettingUnavailable};

/// One write per line, so that concurrent requests' lines never interleave.
fn log(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Unix time in seconds.
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

/// A setting from what its Spin variable gave: `Ok(None)` when the manifest
/// does not declare it for this component (the plain environment may still
/// set it), `Err` when its provider failed (a Vault it cannot reach): that is
/// never read as unset.
fn resolve(
    setting: Setting,
    variable: Result<Option<String>, String>,
) -> Result<Option<String>, SettingUnavailable> {
    settings::resolve(setting, variable, || std::env::var(setting.env_name()).ok())
}
