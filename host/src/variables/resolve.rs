//! Application variables and the component's view of them, with Spin's
//! precedence: `--variable`, the providers in file order,
//! `SPIN_VARIABLE_<NAME>` in the environment, then in `./.env`, the
//! manifest's default. A provider without the value passes to the next; a
//! provider that fails ends the lookup with its error, as in Spin.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::{bail, Result};

use super::providers::Provider;
use crate::bindings::fermyon::spin::variables::Error;
use crate::manifest::{validate_name, Manifest, Template};

/// The application's variables, as one component sees them (`for_component`).
#[derive(Clone)]
pub struct Variables {
    cli: Arc<HashMap<String, String>>,
    providers: Arc<[Provider]>,
    /// The environment, `./.env` and the defaults, resolved at start.
    fallback: Arc<HashMap<String, String>>,
    component: BTreeMap<String, Template>,
}

impl Variables {
    /// Resolves what can be at start (`env`: the environment, then
    /// `./.env`); as in Spin, a required variable no source has stops start-up.
    pub async fn resolve(
        manifest: &Manifest,
        cli: HashMap<String, String>,
        env: &dyn Fn(&str) -> Option<String>,
        providers: Vec<Provider>,
    ) -> Result<Variables> {
        let mut fallback = HashMap::new();
        for (name, var) in &manifest.variables {
            let env_name = format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase());
            if let Some(value) = env(&env_name).or_else(|| var.default.clone()) {
                fallback.insert(name.clone(), value);
            }
        }
        let (cli, providers, fallback) = (Arc::new(cli), providers.into(), Arc::new(fallback));
        let variables = Variables { cli, providers, fallback, component: BTreeMap::new() };
        let mut missing = Vec::new();
        for (name, _) in manifest.variables.iter().filter(|(_, var)| var.required) {
            if !matches!(variables.value(name).await, Ok(Some(_))) {
                missing.push(name.as_str());
            }
        }
        if !missing.is_empty() {
            bail!("no provider resolved required variable(s): {}", missing.join(", "));
        }
        Ok(variables)
    }

    /// The same variables, seen by a component with these `[component.X.variables]`.
    pub fn for_component(&self, component: &BTreeMap<String, Template>) -> Variables {
        Variables { component: component.clone(), ..self.clone() }
    }

    /// An application variable from the first source that has it.
    async fn value(&self, name: &str) -> Result<Option<String>, String> {
        if let Some(value) = self.cli.get(name) {
            return Ok(Some(value.clone()));
        }
        for provider in self.providers.iter() {
            if let Some(value) = provider.get(name).await? {
                return Ok(Some(value));
            }
        }
        Ok(self.fallback.get(name).cloned())
    }

    /// Expands an `allowed_outbound_hosts` entry against the variables no
    /// provider is asked for; `Err(name)` names an undefined one.
    pub fn expand(&self, text: &str) -> Result<String, String> {
        let template = Template::parse(text).map_err(|e| e.to_string())?;
        let mut values = (*self.fallback).clone();
        values.extend(self.cli.iter().map(|(k, v)| (k.clone(), v.clone())));
        template.expand(&values)
    }

    /// The component's view: `get(name)` of a component variable.
    pub async fn get(&self, name: &str) -> Result<String, Error> {
        validate_name(name).map_err(|e| Error::InvalidName(format!("{name:?}: {e}")))?;
        let template = self
            .component
            .get(name)
            .ok_or_else(|| Error::Undefined(format!("no variable for {name:?}")))?;
        let mut values = HashMap::new();
        for reference in template.references() {
            let value = match self.value(reference).await {
                Ok(Some(value)) => value,
                Ok(None) => {
                    let text = format!("no provider resolved required variable {reference:?}");
                    return Err(Error::Provider(text));
                }
                Err(reason) => {
                    eprintln!("error: variables provider: {reason}");
                    return Err(Error::Provider(reason));
                }
            };
            values.insert(reference.to_string(), value);
        }
        template
            .expand(&values)
            .map_err(|v| Error::Provider(format!("variable {v:?} is not resolved")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn manifest() -> Manifest {
        let text = crate::manifest::tests::manifest(
            "api_key = { default = \"\", secret = true }\n\
             db_host = { default = \"127.0.0.1:5432\" }\nneeded = { required = true }",
            "variables.api_key = \"{{ api_key }}\"\n\
             variables.url = \"postgres://{{db_host}}/x\"\nvariables.fixed = \"literal\"",
        );
        Manifest::parse(&text, PathBuf::from(".")).unwrap()
    }

    fn pairs(list: &[(&str, &str)]) -> HashMap<String, String> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    async fn resolve(
        cli: &[(&str, &str)],
        env: &[(&str, &str)],
        providers: Vec<Provider>,
    ) -> Result<Variables> {
        let (env, manifest) = (pairs(env), manifest());
        let lookup = move |k: &str| env.get(k).cloned();
        let variables = Variables::resolve(&manifest, pairs(cli), &lookup, providers).await?;
        Ok(variables.for_component(&manifest.components[0].variables))
    }

    const NEED: (&str, &str) = ("SPIN_VARIABLE_NEEDED", "n");

    // The order default < .env < SPIN_VARIABLE_* < --variable and the
    // required-variable error are tests/serve.rs's; here providers' place.
    #[tokio::test]
    async fn providers_rank_between_the_flags_and_the_environment() {
        let provider = || Provider::Env(pairs(&[("api_key", "provided"), ("needed", "p")]));
        let env = ("SPIN_VARIABLE_API_KEY", "env");
        let v = resolve(&[], &[env], vec![provider()]).await.unwrap();
        assert_eq!(v.get("api_key").await.unwrap(), "provided");
        let cli = ("api_key", "cli");
        let v = resolve(&[cli], &[env], vec![provider()]).await.unwrap();
        assert_eq!(v.get("api_key").await.unwrap(), "cli");
        assert_eq!(v.get("url").await.unwrap(), "postgres://127.0.0.1:5432/x");
        assert_eq!(v.get("fixed").await.unwrap(), "literal");

        // A plain API_KEY never reaches a Spin variable.
        let v = resolve(&[], &[NEED, ("API_KEY", "plain")], vec![]).await.unwrap();
        assert_eq!(v.get("api_key").await.unwrap(), "");
    }

    #[tokio::test]
    async fn a_failing_provider_is_an_error_not_a_default() {
        // Nothing listens on port 9 of loopback (discard, never served here).
        let config = toml::from_str("url = 'http://127.0.0.1:9'\ntoken = 't'\nmount = 'secret'");
        let vault = super::super::vault::Vault::new(config.unwrap()).unwrap();
        // (A required variable is looked up at start: here --variable has it.)
        let v = resolve(&[("needed", "n")], &[], vec![Provider::Vault(vault)]).await.unwrap();
        assert!(matches!(v.get("api_key").await, Err(Error::Provider(_))));
        // A variable that needs no application variable is not affected.
        assert_eq!(v.get("fixed").await.unwrap(), "literal");
    }

    #[tokio::test]
    async fn get_errors() {
        let v = resolve(&[], &[NEED], vec![]).await.unwrap();
        assert!(matches!(v.get("nope").await, Err(Error::Undefined(_))));
        // Application variables are not visible unless the component maps them.
        assert!(matches!(v.get("db_host").await, Err(Error::Undefined(_))));
        // Which names are invalid is manifest.rs's test.
        assert!(matches!(v.get("a-b").await, Err(Error::InvalidName(_))));
        assert_eq!(v.expand("postgres://{{ db_host }}").unwrap(), "postgres://127.0.0.1:5432");
        assert_eq!(v.expand("postgres://{{ nope }}").unwrap_err(), "nope");
    }
}
