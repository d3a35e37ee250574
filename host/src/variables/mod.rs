//! Spin variables (`fermyon:spin/variables@2.0.0`, `@3.0.0`): `.env` files
//! and a runtime config's providers (`providers`, `vault`), Spin's
//! precedence (`resolve`), and the interfaces on [`VariablesView`].

mod providers;
mod resolve;
mod vault;

pub use providers::{load as load_providers, read_dotenv};
pub use resolve::Variables;

use std::sync::Arc;

use wasmtime::component::{Accessor, HasData};

use crate::bindings::fermyon::spin::variables::{self, Error};
use crate::bindings::spin::variables::variables as v3;

/// What `fermyon:spin/variables` and `spin:variables` see of an instance.
pub struct VariablesView<'a> {
    pub variables: &'a Arc<Variables>,
}

/// The interfaces' `HasData` marker (as `WasiCli` is for `wasi:cli`).
pub struct SpinVariables;

impl HasData for SpinVariables {
    type Data<'a> = VariablesView<'a>;
}

impl variables::Host for VariablesView<'_> {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, Error>> {
        Ok(self.variables.get(&name).await)
    }
}

impl v3::Host for VariablesView<'_> {}

/// 3.0's `get`: the same resolution, 3.0's error of the same case.
impl<U> v3::HostWithStore<U> for SpinVariables {
    async fn get(
        accessor: &Accessor<U, Self>,
        name: String,
    ) -> wasmtime::Result<Result<String, v3::Error>> {
        let variables = accessor.with(|mut access| access.get().variables.clone());
        Ok(variables.get(&name).await.map_err(|e| match e {
            Error::InvalidName(text) => v3::Error::InvalidName(text),
            Error::Undefined(text) => v3::Error::Undefined(text),
            Error::Provider(text) => v3::Error::Provider(text),
            Error::Other(text) => v3::Error::Other(text),
        }))
    }
}
