//! Spin variables (`fermyon:spin/variables@2.0.0`): `./.env` (`dotenv`), a
//! runtime config's providers (`providers`, `vault`), Spin's precedence
//! (`resolve`), and the interface on [`VariablesView`].

mod dotenv;
mod providers;
mod resolve;
mod vault;

pub use dotenv::read_dotenv;
pub use providers::load as load_providers;
pub use resolve::Variables;

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
