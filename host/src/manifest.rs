//! The subset of a Spin 2 manifest this host understands: HTTP-triggered
//! components, each with its source, route, variables (Spin's names, and the
//! `{{ name }}` templates of component variables and
//! `allowed_outbound_hosts` entries), SQLite grants and outbound hosts. A
//! leaf.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// One application variable (`[variables]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppVariable {
    pub default: Option<String>,
    #[serde(default)]
    pub required: bool,
    #[allow(dead_code)]
    secret: Option<bool>,
    #[allow(dead_code)]
    description: Option<String>,
}

#[derive(Debug)]
pub struct Manifest {
    /// The manifest's folder: `source` and the default state dir are in it.
    pub dir: PathBuf,
    pub variables: BTreeMap<String, AppVariable>,
    /// One per `[[trigger.http]]`, the most specific route first.
    pub components: Vec<HttpComponent>,
    pub warnings: Vec<String>,
}

/// A `[[trigger.http]]` and the component it serves.
#[derive(Debug)]
pub struct HttpComponent {
    pub id: String,
    pub source: PathBuf,
    pub route: Route,
    pub variables: BTreeMap<String, Template>,
    pub sqlite_databases: Vec<String>,
    /// As written: expanded once variables are resolved.
    pub allowed_outbound_hosts: Vec<String>,
}

/// An HTTP trigger route: `/...` style wildcard or an exact path.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub raw: String,
    /// Without the wildcard: `` for `/...`, `/api` for `/api/...`.
    pub base: String,
    pub wildcard: bool,
}

impl Route {
    fn parse(raw: &str) -> Result<Route> {
        if !raw.starts_with('/') {
            bail!("http trigger route {raw:?} must start with '/'");
        }
        let (base, wildcard) = match raw.strip_suffix("/...") {
            Some(base) => (base, true),
            None => (raw, false),
        };
        Ok(Route { raw: raw.to_string(), base: base.trim_end_matches('/').to_string(), wildcard })
    }

    /// Spin's precedence, highest first: an exact route over a wildcard, a
    /// longer wildcard base over a shorter.
    pub fn specificity(&self) -> (bool, usize) {
        (!self.wildcard, self.base.len())
    }

    /// Whether the route serves `path`; if so, the part after the route's
    /// base (Spin's `spin-path-info`).
    pub fn matches<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = path.strip_prefix(self.base.as_str())?;
        if self.wildcard {
            (rest.is_empty() || rest.starts_with('/')).then_some(rest)
        } else {
            (rest.is_empty() || rest == "/").then_some("")
        }
    }
}

/// Spin's rule for variable names (so they map to env names and paths):
/// lower-case ASCII letters, digits and single underscores, starting with a
/// letter and not ending with an underscore.
pub fn validate_name(name: &str) -> Result<(), String> {
    let Some(first) = name.bytes().next() else {
        return Err("must not be empty".into());
    };
    if let Some(c) =
        name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
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

#[derive(Deserialize)]
struct RawManifest {
    spin_manifest_version: toml::Value,
    #[serde(default)]
    variables: BTreeMap<String, AppVariable>,
    #[serde(default)]
    trigger: RawTriggers,
    #[serde(default)]
    component: BTreeMap<String, RawComponent>,
}

#[derive(Deserialize, Default)]
struct RawTriggers {
    #[serde(default)]
    http: Vec<RawHttpTrigger>,
}

#[derive(Deserialize)]
struct RawHttpTrigger {
    route: toml::Value,
    component: toml::Value,
}

#[derive(Deserialize)]
struct RawComponent {
    source: toml::Value,
    #[serde(default)]
    sqlite_databases: Vec<String>,
    #[serde(default)]
    allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read manifest {}", path.display()))?;
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let dir = dir.to_path_buf();
        Self::parse(&text, dir).with_context(|| format!("invalid manifest {}", path.display()))
    }

    pub fn parse(text: &str, dir: PathBuf) -> Result<Manifest> {
        // toml's own message spans several lines; the CLI error is one.
        let raw: RawManifest =
            toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.message()))?;
        let version = &raw.spin_manifest_version;
        if !(version.as_integer() == Some(2) || version.as_str() == Some("2")) {
            bail!("only spin_manifest_version = 2 is supported");
        }

        for (name, v) in &raw.variables {
            validate_name(name).map_err(|e| anyhow::anyhow!("variable {name:?}: {e}"))?;
            match (&v.default, v.required) {
                (Some(_), true) => {
                    bail!("variable {name:?} cannot be both required and have a default")
                }
                (None, false) => {
                    bail!("variable {name:?} must either be required or have a default")
                }
                _ => {}
            }
        }
        let variables = raw.variables;

        if raw.trigger.http.is_empty() {
            bail!("expected at least one [[trigger.http]]");
        }
        let (mut components, mut warnings) = (Vec::<HttpComponent>::new(), Vec::new());
        for trigger in &raw.trigger.http {
            let component = http_component(trigger, &raw.component, &variables, &dir)?;
            // As Spin: the later of two equal routes is served.
            if let Some(i) = components.iter().position(|c| c.route == component.route) {
                let (earlier, route) = (components.remove(i).id, &component.route.raw);
                let later = &component.id;
                warnings.push(format!(
                    "route {route} of {earlier:?} is never used (duplicate of {later:?})"
                ));
            }
            components.push(component);
        }
        components.sort_by_key(|c| Reverse(c.route.specificity()));
        Ok(Manifest { dir, variables, components, warnings })
    }
}

fn http_component(
    trigger: &RawHttpTrigger,
    components: &BTreeMap<String, RawComponent>,
    variables: &BTreeMap<String, AppVariable>,
    dir: &Path,
) -> Result<HttpComponent> {
    let route = match &trigger.route {
        toml::Value::String(s) => Route::parse(s)?,
        _ => bail!("the http trigger's route must be a string"),
    };
    let toml::Value::String(id) = &trigger.component else {
        bail!("the http trigger's component must name a [component.X] table");
    };
    let Some(component) = components.get(id) else {
        bail!("the http trigger names component {id:?}, which is not defined");
    };
    let toml::Value::String(source) = &component.source else {
        bail!("component {id:?}: only a local file `source` is supported");
    };
    let mut templates = BTreeMap::new();
    for (name, template) in &component.variables {
        validate_name(name).map_err(|e| anyhow::anyhow!("component variable {name:?}: {e}"))?;
        let template = Template::parse(template)
            .map_err(|e| anyhow::anyhow!("component variable {name:?}: {e}"))?;
        // Like Spin: a component variable may only refer to declared
        // application variables.
        if let Some(unknown) = template.references().find(|r| !variables.contains_key(*r)) {
            bail!("component variable {name:?} refers to unknown variable {unknown:?}");
        }
        templates.insert(name.clone(), template);
    }
    Ok(HttpComponent {
        id: id.clone(),
        source: dir.join(source),
        route,
        variables: templates,
        sqlite_databases: component.sqlite_databases.clone(),
        allowed_outbound_hosts: component.allowed_outbound_hosts.clone(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A manifest of component `c` on `/api/...`, with `extra_vars` and
    /// `component_extra` (more of `[component.c]`).
    pub(crate) fn manifest(extra_vars: &str, component_extra: &str) -> String {
        format!(
            r#"
spin_manifest_version = 2
[application]
name = "t"
[variables]
{extra_vars}
[[trigger.http]]
route = "/api/..."
component = "c"
[component.c]
source = "c.wasm"
{component_extra}
"#
        )
    }

    #[test]
    fn parses_a_spin_manifest() {
        let text = manifest(
            "api_key = { required = true, secret = true }\n\
             db_host = { default = \"127.0.0.1:5432\" }",
            "sqlite_databases = [\"default\"]\n\
             allowed_outbound_hosts = [\"postgres://{{ db_host }}\"]\n\
             [component.c.variables]\napi_key = \"{{ api_key }}\"",
        );
        let m = Manifest::parse(&text, PathBuf::from("/app")).unwrap();
        let [c] = m.components.as_slice() else { panic!("{m:?}") };
        assert_eq!(c.id, "c");
        assert_eq!(c.source, PathBuf::from("/app/c.wasm"));
        assert_eq!(c.route.raw, "/api/...");
        assert_eq!(c.sqlite_databases, vec!["default"]);
        assert_eq!(c.allowed_outbound_hosts, vec!["postgres://{{ db_host }}"]);
        assert!(m.variables["api_key"].required);
        assert_eq!(m.variables["api_key"].default, None);
        assert_eq!(m.variables["db_host"].default.as_deref(), Some("127.0.0.1:5432"));
        let refs: Vec<_> = c.variables["api_key"].references().collect();
        assert_eq!(refs, vec!["api_key"]);
    }

    #[test]
    fn each_trigger_serves_its_component_and_the_last_of_a_route_wins() {
        let second = "[[trigger.http]]\nroute = \"/...\"\ncomponent = \"d\"\n\
                      [component.d]\nsource = \"d.wasm\"\nsqlite_databases = [\"default\"]";
        let m = Manifest::parse(&manifest("", second), PathBuf::from("/app")).unwrap();
        let found = |m: &Manifest| {
            m.components.iter().map(|c| format!("{} {}", c.id, c.route.raw)).collect::<Vec<_>>()
        };
        assert_eq!(found(&m), ["c /api/...", "d /..."]);
        assert!(m.components[0].sqlite_databases.is_empty());
        assert_eq!(m.components[1].source, PathBuf::from("/app/d.wasm"));
        let twice = second.replace("\"/...\"", "\"/api/...\"");
        let m = Manifest::parse(&manifest("", &twice), PathBuf::from(".")).unwrap();
        assert_eq!(found(&m), ["d /api/..."]);
        assert_eq!(m.warnings, ["route /api/... of \"c\" is never used (duplicate of \"d\")"]);
    }

    #[test]
    fn rejects_bad_manifests() {
        let bad = [
            manifest("a = { default = \"x\", required = true }", ""),
            manifest("a = { secret = true }", ""),
            manifest("Bad = { default = \"x\" }", ""),
            manifest("", "[component.c.variables]\nx = \"{{ nope }}\""),
            manifest("", "[component.c.variables]\nx = \"{{ unclosed\""),
            "spin_manifest_version = 1".to_string(),
            "not toml [".to_string(),
        ];
        for text in bad {
            assert!(Manifest::parse(&text, PathBuf::from(".")).is_err(), "{text}");
        }
    }

    #[test]
    fn exact_routes_then_longer_bases_come_first() {
        let mut routes =
            ["/...", "/ui/...", "/ui", "/ui/x/...", "/health"].map(|r| Route::parse(r).unwrap());
        routes.sort_by_key(|r| std::cmp::Reverse(r.specificity()));
        let order = routes.iter().map(|r| r.raw.as_str()).collect::<Vec<_>>();
        assert_eq!(order, ["/health", "/ui", "/ui/x/...", "/ui/...", "/..."]);
    }

    #[test]
    fn route_matching() {
        let all = Route::parse("/...").unwrap();
        assert_eq!(all.matches("/item/1"), Some("/item/1"));
        assert_eq!(all.matches("/"), Some("/"));
        let api = Route::parse("/api/...").unwrap();
        assert_eq!(api.matches("/api/x"), Some("/x"));
        assert_eq!(api.matches("/api"), Some(""));
        assert_eq!(api.matches("/apix"), None);
        let exact = Route::parse("/hello").unwrap();
        assert_eq!(exact.matches("/hello"), Some(""));
        assert_eq!(exact.matches("/hello/x"), None);
    }

    #[test]
    fn templates() {
        let t = Template::parse("a{{x}}b{{ y_1 }}").unwrap();
        assert_eq!(t.references().collect::<Vec<_>>(), vec!["x", "y_1"]);
        assert!(Template::parse("{{ x").is_err());
        assert!(Template::parse("{{ X }}").is_err());
        let values = HashMap::from([("x".to_string(), "1".to_string())]);
        assert_eq!(Template::parse("a{{ x }}b").unwrap().expand(&values), Ok("a1b".into()));
        assert_eq!(Template::parse("{{ y }}").unwrap().expand(&values), Err("y".into()));
    }

    #[test]
    fn names() {
        for good in ["a", "store", "x1_y2"] {
            assert_eq!(validate_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Bad", "a-b", "1a", "a__b", "a_", "_a"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
