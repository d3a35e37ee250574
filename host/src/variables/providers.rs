//! The `[[variables_provider]]`s of a runtime config file, in file order
//! (`[sqlite_database.*]` is the SQLite room's; any other table is named in
//! a warning at start), and `.env` files.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;

use super::vault::{Vault, VaultConfig};

#[derive(Debug)]
pub enum Provider {
    /// `type = "env"`: `{prefix}_{NAME}` from the environment (and a
    /// `dotenv_path` file), resolved once at start.
    Env(HashMap<String, String>),
    Vault(Vault),
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ProviderConfig {
    Env { prefix: Option<String>, dotenv_path: Option<String> },
    Vault(VaultConfig),
}

#[derive(Deserialize)]
struct RuntimeConfig {
    #[serde(default)]
    variables_provider: Vec<ProviderConfig>,
    #[serde(default, rename = "sqlite_database")]
    _sqlite_database: toml::Table,
    #[serde(flatten)]
    other: HashMap<String, toml::Value>,
}

impl Provider {
    /// `Err` when the provider could not answer.
    pub async fn get(&self, name: &str) -> Result<Option<String>, String> {
        match self {
            Provider::Env(values) => Ok(values.get(name).cloned()),
            Provider::Vault(vault) => vault.get(name).await,
        }
    }
}

/// The assignments of a `.env` file: `./.env` (its `SPIN_VARIABLE_*`, as
/// `spin up` reads them) or an env provider's `dotenv_path`. A missing file
/// has none.
pub fn read_dotenv(path: &std::path::Path) -> HashMap<String, String> {
    parse_dotenv(&std::fs::read_to_string(path).unwrap_or_default())
}

pub fn parse_dotenv(text: &str) -> HashMap<String, String> {
    let lines = text.lines().map(str::trim).filter(|line| !line.starts_with('#'));
    let pairs =
        lines.filter_map(|line| line.strip_prefix("export ").unwrap_or(line).split_once('='));
    let unquote = |value: &str| {
        let quoted = ['"', '\''].iter().find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q));
        quoted.unwrap_or(value).to_string()
    };
    pairs.map(|(key, value)| (key.trim().to_string(), unquote(value.trim()))).collect()
}

/// The providers of the runtime config file at `path`, and a warning for
/// each table of it this host does not apply.
pub fn load(
    path: &Path,
    names: &[&str],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<Provider>, Vec<String>)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read runtime config {}", path.display()))?;
    let config: RuntimeConfig = toml::from_str(&text)
        .with_context(|| format!("runtime config {} is not valid", path.display()))?;
    let mut warnings: Vec<String> = config
        .other
        .keys()
        .map(|table| {
            format!(
                "runtime config {}: [{table}] is not applied by spin-lite (only \
                 [[variables_provider]] and [sqlite_database.*] are)",
                path.display()
            )
        })
        .collect();
    warnings.sort();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut providers = Vec::new();
    for provider in config.variables_provider {
        providers.push(match provider {
            ProviderConfig::Vault(vault) => Provider::Vault(Vault::new(vault)?),
            ProviderConfig::Env { prefix, dotenv_path } => {
                let prefix = prefix.unwrap_or_else(|| "SPIN_VARIABLE".to_string());
                if prefix.is_empty() {
                    bail!("an env variables provider's prefix must not be empty");
                }
                let dotenv =
                    dotenv_path.map(|file| read_dotenv(&dir.join(file))).unwrap_or_default();
                let values = names
                    .iter()
                    .filter_map(|name| {
                        let key = format!("{prefix}_{}", name.to_ascii_uppercase());
                        let value = env(&key).or_else(|| dotenv.get(&key).cloned())?;
                        Some((name.to_string(), value))
                    })
                    .collect();
                Provider::Env(values)
            }
        });
    }
    Ok((providers, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, env: &[(&str, &str)]) -> Result<(Vec<Provider>, Vec<String>)> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.env"), "APP_API_KEY=from-dotenv\n").unwrap();
        let path = dir.path().join("runtime-config.toml");
        std::fs::write(&path, text).unwrap();
        let env: HashMap<String, String> =
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        load(&path, &["store", "api_key"], &|k| env.get(k).cloned())
    }

    #[test]
    fn providers_in_file_order_and_other_tables_named() {
        let (providers, warnings) = load_text(
            r#"
[[variables_provider]]
type = "vault"
url = "http://127.0.0.1:8200"
token = "root-token-xyz"
mount = "secret"
prefix = "app"
[[variables_provider]]
type = "env"
prefix = "APP"
dotenv_path = "app.env"
[sqlite_database.default]
type = "spin"
path = "data.db"
[key_value_store.default]
type = "spin"
"#,
            &[("APP_STORE", "the-store")],
        )
        .unwrap();
        assert!(matches!(providers[0], Provider::Vault(_)));
        let Provider::Env(values) = &providers[1] else { panic!("{providers:?}") };
        assert_eq!(values.get("store").map(String::as_str), Some("the-store"));
        assert_eq!(values.get("api_key").map(String::as_str), Some("from-dotenv"));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("[key_value_store]"), "{warnings:?}");
        assert!(!format!("{providers:?}").contains("root-token-xyz"));
    }

    #[test]
    fn bad_providers_stop_start_up() {
        for text in [
            "[[variables_provider]]\ntype = \"vault\"\nurl = \"http://h\"\n",
            "[[variables_provider]]\ntype = \"vault\"\nurl = \"ftp://h\"\ntoken = \"t\"\nmount = \"m\"\n",
            "[[variables_provider]]\ntype = \"azure_key_vault\"\n",
            "[[variables_provider]]\ntype = \"vault\"\nurl = \"http://h\"\ntoken = \"t\"\nmount = \"m\"\nnamespace = \"n\"\n",
        ] {
            assert!(load_text(text, &[]).is_err(), "{text}");
        }
    }

    #[test]
    fn dotenv_lines() {
        let d = parse_dotenv(
            "# c\nSPIN_VARIABLE_A=1\nexport SPIN_VARIABLE_B=\"two words\"\nOTHER=x\nSPIN_VARIABLE_C='q'\n",
        );
        assert_eq!(d["SPIN_VARIABLE_A"], "1");
        assert_eq!(d["SPIN_VARIABLE_B"], "two words");
        assert_eq!(d["SPIN_VARIABLE_C"], "q");
        assert_eq!(d["OTHER"], "x");
    }
}
