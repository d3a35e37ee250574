//! Spin variables (`fermyon:spin/variables@2.0.0`): application variables
//! resolved once at start-up from `--variable`, `SPIN_VARIABLE_<NAME>`, a
//! `.env` file, then the manifest default; component variables are templates
//! over them, expanded when the component asks.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Result};

use crate::bindings::fermyon::spin::variables::{self, Error};
use crate::manifest::Manifest;
use crate::state::State;

/// Spin's rule for variable names (so they map to env names and paths):
/// lower-case ASCII letters, digits and single underscores, starting with a
/// letter and not ending with an underscore.
pub fn validate_name(name: &str) -> Result<(), String> {
    let Some(first) = name.bytes().next() else {
        return Err("must not be empty".into());
    };
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
    {
        return Err(format!(
            "invalid character {c:?}: variable names may contain only lower-case letters, numbers and underscores"
        ));
    }
    if !first.is_ascii_lowercase() {
        return Err("must start with a lower-case ASCII letter".into());
    }
    if name.ends_with('_') {
        return Err("must end with a lower-case ASCII letter or digit".into());
    }
    if name.contains("__") {
        return Err("must not contain consecutive underscores".into());
    }
    Ok(())
}

/// A `literal {{ name }} literal` template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Var(String),
}

impl Template {
    pub fn parse(text: &str) -> Result<Template> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Lit(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                bail!("unclosed '{{{{' in template");
            };
            let name = after[..end].trim();
            validate_name(name).map_err(|e| anyhow::anyhow!("template variable {name:?}: {e}"))?;
            parts.push(Part::Var(name.to_string()));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Ok(Template(parts))
    }

    /// Names of the variables the template refers to.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// Expands the template; `Err(name)` for the first unknown variable.
    pub fn expand(&self, values: &HashMap<String, String>) -> Result<String, String> {
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Lit(l) => out.push_str(l),
                Part::Var(v) => out.push_str(values.get(v).ok_or_else(|| v.clone())?),
            }
        }
        Ok(out)
    }
}

/// Resolved application variables plus the component's templates.
pub struct Variables {
    values: HashMap<String, String>,
    component: BTreeMap<String, Template>,
}

/// Where application variable values come from, highest priority first.
pub struct Sources<'a> {
    /// `--variable name=value` from the command line.
    pub cli: &'a HashMap<String, String>,
    /// The process environment (`SPIN_VARIABLE_<NAME>`).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `SPIN_VARIABLE_<NAME>` lines of `./.env`, if any.
    pub dotenv: &'a HashMap<String, String>,
}

impl Variables {
    pub fn resolve(manifest: &Manifest, sources: &Sources) -> Result<Variables> {
        let mut values = HashMap::new();
        let mut missing = Vec::new();
        for (name, var) in &manifest.variables {
            let env_name = format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase());
            let value = sources
                .cli
                .get(name)
                .cloned()
                .or_else(|| (sources.env)(&env_name))
                .or_else(|| sources.dotenv.get(&env_name).cloned())
                .or_else(|| var.default.clone());
            match value {
                Some(v) => {
                    values.insert(name.clone(), v);
                }
                None => missing.push(name.as_str()),
            }
        }
        if !missing.is_empty() {
            bail!(
                "no provider resolved required variable(s): {}",
                missing.join(", ")
            );
        }
        Ok(Variables {
            values,
            component: manifest.component_variables.clone(),
        })
    }

    /// Expands a template (e.g. an `allowed_outbound_hosts` entry) against the
    /// application variables; `Err(name)` names an undefined variable.
    pub fn expand(&self, text: &str) -> Result<String, String> {
        let template = Template::parse(text).map_err(|e| e.to_string())?;
        template.expand(&self.values)
    }

    /// The component's view: `get(name)` of a component variable.
    pub fn get(&self, name: &str) -> Result<String, Error> {
        validate_name(name).map_err(|e| Error::InvalidName(format!("{name:?}: {e}")))?;
        let template = self
            .component
            .get(name)
            .ok_or_else(|| Error::Undefined(format!("no variable for {name:?}")))?;
        // Every reference was checked against the application variables when
        // the manifest was loaded, so this only fails on a host bug.
        template
            .expand(&self.values)
            .map_err(|v| Error::Provider(format!("variable {v:?} is not resolved")))
    }
}

/// Reads `SPIN_VARIABLE_*` assignments from a `.env` file (missing file: none).
pub fn read_dotenv(path: &std::path::Path) -> HashMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    parse_dotenv(&text)
}

fn parse_dotenv(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if !key.starts_with("SPIN_VARIABLE_") {
            continue;
        }
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        out.insert(key.to_string(), value.to_string());
    }
    out
}

impl variables::Host for State {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, Error>> {
        Ok(self.shared.variables.get(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn manifest() -> Manifest {
        let text = r#"
spin_manifest_version = 2
[application]
name = "t"
[variables]
secret_token = { default = "", secret = true }
db_host = { default = "127.0.0.1:5432" }
needed = { required = true }
[[trigger.http]]
route = "/..."
component = "c"
[component.c]
source = "c.wasm"
[component.c.variables]
secret_token = "{{ secret_token }}"
url = "postgres://{{db_host}}/x"
fixed = "literal"
"#;
        Manifest::parse(text, PathBuf::from(".")).unwrap()
    }

    fn resolve(
        cli: &[(&str, &str)],
        env: &[(&str, &str)],
        dotenv: &[(&str, &str)],
    ) -> Result<Variables> {
        let cli: HashMap<_, _> = cli
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let dotenv: HashMap<_, _> = dotenv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |k: &str| env.get(k).cloned();
        Variables::resolve(
            &manifest(),
            &Sources {
                cli: &cli,
                env: &lookup,
                dotenv: &dotenv,
            },
        )
    }

    #[test]
    fn required_variable_stops_start_up() {
        let err = resolve(&[], &[], &[]).err().unwrap().to_string();
        assert_eq!(err, "no provider resolved required variable(s): needed");
    }

    #[test]
    fn precedence_cli_env_dotenv_default() {
        let need = ("SPIN_VARIABLE_NEEDED", "n");
        let v = resolve(&[], &[need], &[]).unwrap();
        assert_eq!(v.get("secret_token").unwrap(), "");
        assert_eq!(v.get("url").unwrap(), "postgres://127.0.0.1:5432/x");
        assert_eq!(v.get("fixed").unwrap(), "literal");

        let v = resolve(&[], &[need], &[("SPIN_VARIABLE_SECRET_TOKEN", "dot")]).unwrap();
        assert_eq!(v.get("secret_token").unwrap(), "dot");

        let v = resolve(
            &[],
            &[
                need,
                ("SPIN_VARIABLE_SECRET_TOKEN", "env"),
                ("SECRET_TOKEN", "plain"),
            ],
            &[("SPIN_VARIABLE_SECRET_TOKEN", "dot")],
        )
        .unwrap();
        assert_eq!(v.get("secret_token").unwrap(), "env");

        let v = resolve(
            &[("secret_token", "cli")],
            &[need, ("SPIN_VARIABLE_SECRET_TOKEN", "env")],
            &[],
        )
        .unwrap();
        assert_eq!(v.get("secret_token").unwrap(), "cli");

        // A plain SECRET_TOKEN never reaches a Spin variable.
        let v = resolve(&[], &[need, ("SECRET_TOKEN", "plain")], &[]).unwrap();
        assert_eq!(v.get("secret_token").unwrap(), "");
    }

    #[test]
    fn get_errors() {
        let v = resolve(&[], &[("SPIN_VARIABLE_NEEDED", "n")], &[]).unwrap();
        assert!(matches!(v.get("nope"), Err(Error::Undefined(_))));
        // Application variables are not visible unless the component maps them.
        assert!(matches!(v.get("db_host"), Err(Error::Undefined(_))));
        for bad in ["", "Bad", "a-b", "1a", "a__b", "a_", "_a"] {
            assert!(matches!(v.get(bad), Err(Error::InvalidName(_))), "{bad}");
        }
        assert_eq!(
            v.expand("postgres://{{ db_host }}").unwrap(),
            "postgres://127.0.0.1:5432"
        );
        assert_eq!(v.expand("postgres://{{ nope }}").unwrap_err(), "nope");
    }

    #[test]
    fn templates() {
        let t = Template::parse("a{{x}}b{{ y_1 }}").unwrap();
        assert_eq!(t.references().collect::<Vec<_>>(), vec!["x", "y_1"]);
        assert!(Template::parse("{{ x").is_err());
        assert!(Template::parse("{{ X }}").is_err());
    }

    #[test]
    fn dotenv_lines() {
        let d = parse_dotenv(
            "# c\nSPIN_VARIABLE_A=1\nexport SPIN_VARIABLE_B=\"two words\"\nOTHER=x\nSPIN_VARIABLE_C='q'\n",
        );
        assert_eq!(d["SPIN_VARIABLE_A"], "1");
        assert_eq!(d["SPIN_VARIABLE_B"], "two words");
        assert_eq!(d["SPIN_VARIABLE_C"], "q");
        assert!(!d.contains_key("OTHER"));
    }
}
