//! Spin variables (`fermyon:spin/variables@2.0.0`), split by concern:
//!
//! - [`dotenv`]: `SPIN_VARIABLE_*` lines of `./.env`;
//! - [`providers`]: `[[variables_provider]]` of a runtime config file, with
//!   [`vault`] for HashiCorp Vault;
//! - [`resolve`]: Spin's precedence over all of them (the names and
//!   `{{ name }}` templates are the manifest's, `crate::manifest`);
//! - the interface the component calls, below, on its own view of the host
//!   state: [`VariablesView`], the variables and nothing else.

mod dotenv;
mod providers;
mod resolve;
mod vault;

pub use dotenv::read_dotenv;
pub use providers::load as load_providers;
pub use resolve::{Sources, Variables};

use wasmtime::component::HasData;

use crate::bindings::fermyon::spin::variables::{self, Error};

/// What `fermyon:spin/variables` sees of an instance's state.
pub struct VariablesView<'a> {
    pub variables: &'a Variables,
}

/// The interface's `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinVariables;

impl HasData for SpinVariables {
    type Data<'a> = VariablesView<'a>;
}

impl variables::Host for VariablesView<'_> {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, Error>> {
        Ok(self.variables.get(&name).await)
    }
}
