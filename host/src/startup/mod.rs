//! What is specific to this service at start: its settings, read as the
//! component reads them (`book_catalog::settings`, `book_catalog::db_url`)
//! from the sources known at start; the report of the store it will use and
//! of the settings that will make requests fail, each with its fix (the
//! store's checks are the rooms', [`store_access`]); and the migrations
//! applied to that store ([`migrations`]). Nothing here ever prints a secret
//! or a password, whatever form `DB_URL` takes. Like Spin, the host serves
//! either way.

mod migrations;
mod store_access;

use std::path::Path;

use book_catalog::db_url::{StoreTarget, DEFAULT_SQLITE_LABEL};
use book_catalog::password::HashedPassword;
use book_catalog::settings::{self, Setting, MIN_SECRET_BYTES};

use crate::manifest::Manifest;
use crate::postgres::OutboundHosts;
use crate::variables::Variables;

pub use migrations::migrate;
pub use store_access::store_access_warnings;

/// The component's `allowed_outbound_hosts`, expanded against the
/// application variables known at start.
pub fn outbound_hosts(manifest: &Manifest, variables: &Variables) -> OutboundHosts {
    OutboundHosts::expand(
        &manifest.component_id,
        &manifest.allowed_outbound_hosts,
        |entry| variables.expand(entry),
    )
}

/// `--help`'s list of the component's settings, made from `Setting::ALL`.
pub fn settings_help() -> String {
    let mut text = String::from(
        "Component settings: the Spin variable (--variable NAME=..., SPIN_VARIABLE_<NAME>) \
         wins; else the plain environment name, which is all of book-host's environment \
         the component gets:\n",
    );
    for setting in Setting::ALL {
        text.push_str(&format!(
            "  {:<24}{}\n",
            setting.variable_name(),
            setting.env_name()
        ));
    }
    text
}

/// The component's settings as it will see them: a non-empty Spin variable,
/// else the plain environment name, of the sources known at start (a value
/// only a variables provider holds is not seen here).
pub struct ComponentSettings<'a> {
    variables: &'a Variables,
    /// The plain environment handed to the component.
    env: Vec<(String, String)>,
}

impl<'a> ComponentSettings<'a> {
    pub fn new(variables: &'a Variables, env: Vec<(String, String)>) -> ComponentSettings<'a> {
        ComponentSettings { variables, env }
    }

    /// The environment the component gets: every setting's plain name that
    /// the host's environment has, nothing else.
    pub fn environment(host_env: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        Setting::ALL
            .iter()
            .filter_map(|setting| {
                let name = setting.env_name();
                host_env(name).map(|value| (name.to_string(), value))
            })
            .collect()
    }

    /// Whether a value may come from a variables provider, which start-up
    /// cannot see.
    pub fn has_providers(&self) -> bool {
        self.variables.has_providers()
    }

    pub fn get(&self, setting: Setting) -> Option<String> {
        let variable = self.variables.get_static(setting.variable_name());
        let env = || {
            self.env
                .iter()
                .find(|(name, _)| name == setting.env_name())
                .map(|(_, value)| value.clone())
        };
        settings::resolve(setting, Ok(variable), env).unwrap_or(None)
    }
}

/// Prints the store line and a warning for each setting that will make
/// requests fail.
pub fn report(
    manifest: &Manifest,
    outbound: &OutboundHosts,
    settings: &ComponentSettings,
    sqlite_path: &Path,
) {
    println!("Store: {}", describe_store(settings, sqlite_path));
    if settings.has_providers() {
        println!("Variables: also from the runtime config's providers, asked per request");
    }
    let warnings = setting_warnings(settings)
        .into_iter()
        .chain(store_access_warnings(manifest, outbound, settings));
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

/// Where the books will be, as the component reads `DB_URL`.
fn describe_store(settings: &ComponentSettings, sqlite_path: &Path) -> String {
    match StoreTarget::from_db_url(settings.get(Setting::DbUrl).as_deref()) {
        Ok(StoreTarget::Sqlite(label)) if label == DEFAULT_SQLITE_LABEL => {
            format!("SQLite default database at {}", sqlite_path.display())
        }
        Ok(StoreTarget::Sqlite(label)) => {
            format!("SQLite database {label:?} (this host only provides \"default\")")
        }
        Ok(target) => target.describe(),
        Err(unsupported) => format!("{unsupported}; the component will answer 500"),
    }
}

/// The signing secret and the login password, as the component will judge
/// them.
fn setting_warnings(settings: &ComponentSettings) -> Vec<String> {
    let mut warnings = Vec::new();
    match settings.get(Setting::SecretToken) {
        None => warnings.push(
            "no signing secret configured (set SPIN_VARIABLE_SECRET_TOKEN or SECRET_TOKEN): \
             POST /token will answer 500 and protected routes 401"
                .to_string(),
        ),
        Some(secret) if secret.len() < MIN_SECRET_BYTES => warnings.push(format!(
            "the signing secret is {} bytes, shorter than the {MIN_SECRET_BYTES} RFC 7518 \
             requires: it is not used (POST /token will answer 500 and protected routes 401); \
             use a longer random secret",
            secret.len()
        )),
        Some(_) => {}
    }
    if let Some(previous) = settings.get(Setting::SecretTokenPrevious) {
        if previous.len() < MIN_SECRET_BYTES {
            warnings.push(format!(
                "the previous signing secret is {} bytes, shorter than {MIN_SECRET_BYTES}: \
                 tokens signed with it are not accepted",
                previous.len()
            ));
        }
    }
    match settings.get(Setting::AuthPasswordHash) {
        Some(hash) => {
            if let Err(reason) = HashedPassword::parse(&hash) {
                warnings.push(format!("{reason}: every login will answer 500"));
            }
        }
        None if settings.get(Setting::AuthPassword).is_none() => warnings.push(
            "the default login password is in use (set SPIN_VARIABLE_AUTH_PASSWORD or \
             AUTH_PASSWORD, or a hash in AUTH_PASSWORD_HASH: book-host hash-password)"
                .to_string(),
        ),
        None => {}
    }
    warnings
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;
    use crate::variables::Sources;

    pub fn vars_of(manifest: &Manifest, pairs: &[(&str, &str)]) -> Variables {
        let cli: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let none = |_: &str| None;
        let sources = Sources {
            cli: &cli,
            env: &none,
            dotenv: &HashMap::new(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(Variables::resolve(manifest, &sources, Vec::new()))
            .unwrap()
    }

    pub fn spin_toml_vars(pairs: &[(&str, &str)]) -> (Manifest, Variables) {
        let manifest =
            Manifest::parse(include_str!("../../../spin.toml"), PathBuf::from(".")).unwrap();
        let variables = vars_of(&manifest, pairs);
        (manifest, variables)
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const PATH: &str = "/s/sqlite_db.db";

    #[test]
    fn the_store_line_names_the_store_without_a_password() {
        let describe = |db_url: &str| {
            let (_, v) = spin_toml_vars(&[]);
            describe_store(
                &ComponentSettings::new(&v, env(&[("DB_URL", db_url)])),
                Path::new(PATH),
            )
        };
        let default = format!("SQLite default database at {PATH}");
        assert_eq!(describe(""), default);
        assert_eq!(describe("sqlite:"), default);
        assert_eq!(describe("sqlite://default"), default);
        assert!(describe("sqlite://archive").contains("\"archive\""));
        // The component refuses `sqlite://` (no label): so does the line.
        assert!(describe("sqlite://").contains("is not supported"));
        for (url, shown) in [
            (
                "postgres://a:secretpw@h:5432/d",
                "postgres://a:***@h:5432/d",
            ),
            (
                "postgres://h/d?user=a&password=secretpw",
                "postgres://h/d?user=a&password=***",
            ),
            ("postgresql://a:p@ss/secretpw@h/d", "postgresql://a:***@h/d"),
        ] {
            let line = describe(url);
            assert_eq!(line, format!("PostgreSQL {shown}"));
            assert!(!line.contains("secretpw"), "{line}");
        }
        for url in [
            "mysql://a:secretpw@h",
            "host=h password=secretpw",
            "secretpw",
        ] {
            let line = describe(url);
            assert!(line.contains("not supported"), "{line}");
            assert!(!line.contains("secretpw"), "{line}");
        }
    }

    #[test]
    fn start_up_warnings() {
        let (_, v) = spin_toml_vars(&[]);
        let warnings = setting_warnings(&ComponentSettings::new(&v, Vec::new()));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("no signing secret"));
        assert!(warnings[1].starts_with("the default login password"));

        let short = "short-secret";
        let settings = ComponentSettings::new(
            &v,
            env(&[
                ("SECRET_TOKEN", short),
                ("SECRET_TOKEN_PREVIOUS", short),
                ("AUTH_PASSWORD", "pw"),
            ]),
        );
        let warnings = setting_warnings(&settings);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("it is not used"), "{}", warnings[0]);
        assert!(warnings[1].contains("previous signing secret"));
        assert!(!warnings.iter().any(|w| w.contains(short)));

        let long = "x".repeat(40);
        let (_, v) = spin_toml_vars(&[("secret_token", &long), ("auth_password", "pw")]);
        let settings = ComponentSettings::new(&v, env(&[("DB_URL", "sqlite://default")]));
        assert!(setting_warnings(&settings).is_empty());

        let (_, v) = spin_toml_vars(&[("secret_token", &long)]);
        let settings = ComponentSettings::new(
            &v,
            env(&[(
                "AUTH_PASSWORD_HASH",
                "$argon2id$v=19$m=999999999,t=2,p=1$c2FsdA$aGFzaA",
            )]),
        );
        let warnings = setting_warnings(&settings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("every login will answer 500"));
    }

    #[test]
    fn the_help_lists_every_setting() {
        let help = settings_help();
        for setting in Setting::ALL {
            let line = format!("{:<24}{}", setting.variable_name(), setting.env_name());
            assert!(help.contains(&line), "{help}");
        }
        assert_eq!(help.lines().count(), 1 + Setting::ALL.len());
    }

    #[test]
    fn the_component_gets_the_setting_names_only() {
        let host = HashMap::from([
            ("DB_URL", "sqlite://default"),
            ("TRUSTED_PROXY_HOPS", "1"),
            ("HOME", "/root"),
            ("SPIN_VARIABLE_DB_URL", "x"),
        ]);
        let env = ComponentSettings::environment(|name| host.get(name).map(|v| v.to_string()));
        assert_eq!(
            env,
            [
                ("DB_URL".to_string(), "sqlite://default".to_string()),
                ("TRUSTED_PROXY_HOPS".to_string(), "1".to_string())
            ]
        );
    }
}
