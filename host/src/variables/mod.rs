//! Spin variables (`fermyon:spin/variables@2.0.0`), split by concern:
//!
//! - [`template`]: variable names and `{{ name }}` templates;
//! - [`dotenv`]: `SPIN_VARIABLE_*` lines of `./.env`;
//! - [`providers`]: `[[variables_provider]]` of a runtime config file, with
//!   [`vault`] for HashiCorp Vault;
//! - [`resolve`]: Spin's precedence over all of them;
//! - the interface the component calls, below.

mod dotenv;
mod providers;
mod resolve;
mod template;
mod vault;

pub use dotenv::read_dotenv;
pub use providers::load as load_providers;
pub use resolve::{Sources, Variables};
pub use template::{validate_name, Template};

use crate::bindings::fermyon::spin::variables::{self, Error};
use crate::state::State;

impl variables::Host for State {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, Error>> {
        Ok(self.shared.variables.get(&name).await)
    }
}
