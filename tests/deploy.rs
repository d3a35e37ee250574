//! The deployment files under `deploy/` must agree with `spin.toml` and the
//! router, so that they cannot drift: every file parses (TOML, YAML), every
//! variable they set is a variable of the manifest (secrets only from a
//! Kubernetes Secret), the SpinApp runs the manifest's component with probes
//! on the health path the router serves publicly, the runtime-config files
//! configure only SQLite databases the manifest grants, every path a README
//! `curl`s is routed, and the PostgreSQL-only manifest keeps the same
//! variables, component and routes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use book_catalog::router::{route, Endpoint, HEALTH_PATH};
use serde_yaml::Value as Yaml;
use toml::Value as Toml;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the deployment files must agree with, from a Spin manifest.
#[derive(Debug)]
struct Manifest {
    /// Variable name -> declared `secret = true`.
    variables: BTreeMap<String, bool>,
    components: BTreeSet<String>,
    /// (route, component) of every HTTP trigger.
    routes: BTreeSet<(String, String)>,
    sqlite_databases: BTreeSet<String>,
    allowed_outbound_hosts: BTreeSet<String>,
}

fn manifest(path: &Path) -> Manifest {
    let doc: Toml =
        toml::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let variables = doc["variables"]
        .as_table()
        .expect("[variables]")
        .iter()
        .map(|(name, spec)| {
            let secret = spec.get("secret").and_then(Toml::as_bool).unwrap_or(false);
            (name.clone(), secret)
        })
        .collect();
    let component_table = doc["component"].as_table().expect("[component.*]");
    let components = component_table.keys().cloned().collect();
    let routes = doc["trigger"]["http"]
        .as_array()
        .expect("[[trigger.http]]")
        .iter()
        .map(|t| {
            (
                t["route"].as_str().expect("route").to_string(),
                t["component"].as_str().expect("component").to_string(),
            )
        })
        .collect();
    let strings = |key: &str| -> BTreeSet<String> {
        component_table
            .values()
            .filter_map(|c| c.get(key).and_then(Toml::as_array))
            .flatten()
            .map(|v| v.as_str().expect("a string").to_string())
            .collect()
    };
    Manifest {
        variables,
        components,
        routes,
        sqlite_databases: strings("sqlite_databases"),
        allowed_outbound_hosts: strings("allowed_outbound_hosts"),
    }
}

fn spin_toml() -> Manifest {
    manifest(&root().join("spin.toml"))
}

/// Every file under `deploy/`, sorted.
fn deploy_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("deploy"), &mut files);
    files.sort();
    files
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

fn yaml_documents(path: &Path) -> Vec<Yaml> {
    let text = read(path);
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            <Yaml as serde::Deserialize>::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|doc| !doc.is_null())
        .collect()
}

fn all_yaml() -> Vec<(PathBuf, Yaml)> {
    deploy_files()
        .into_iter()
        .filter(|p| matches!(extension(p), "yaml" | "yml"))
        .flat_map(|p| yaml_documents(&p).into_iter().map(move |d| (p.clone(), d)))
        .collect()
}

fn of_kind(kind: &str) -> Vec<(PathBuf, Yaml)> {
    all_yaml()
        .into_iter()
        .filter(|(_, doc)| doc["kind"].as_str() == Some(kind))
        .collect()
}

fn keys(value: &Yaml) -> BTreeSet<String> {
    value
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(Yaml::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a `[[trigger.http]]` route serves `path` (`/...` is a wildcard).
fn route_serves(route: &str, path: &str) -> bool {
    match route.strip_suffix("/...") {
        Some(prefix) => {
            path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty()
        }
        None => route == path,
    }
}

/// A path the router serves without authentication as the health check,
/// and the manifest routes to its component.
fn assert_public_health_path(path: &str, what: &str) {
    assert_eq!(path, HEALTH_PATH, "{what}: probe path");
    let routed = route("GET", path).unwrap_or_else(|e| panic!("{what}: {path} is not routed: {e}"));
    assert!(!routed.protected, "{what}: {path} needs authentication");
    assert_eq!(routed.endpoint, Ok(Endpoint::Health), "{what}: {path}");
    let m = spin_toml();
    assert!(
        m.routes.iter().any(|(r, _)| route_serves(r, path)),
        "{what}: no trigger of spin.toml serves {path}: {:?}",
        m.routes
    );
}

#[test]
fn every_deploy_file_parses() {
    let files = deploy_files();
    let mut kinds = BTreeMap::new();
    for path in &files {
        match extension(path) {
            "toml" => {
                toml::from_str::<Toml>(&read(path))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
            "yaml" | "yml" => {
                assert!(
                    !yaml_documents(path).is_empty(),
                    "{}: empty",
                    path.display()
                );
            }
            "md" | "sh" => {}
            other => panic!("{}: unexpected file type {other:?}", path.display()),
        }
        *kinds.entry(extension(path).to_string()).or_insert(0) += 1;
    }
    for folder in ["spinkube", "fermyon-cloud", "runtime-config"] {
        let readme = root().join("deploy").join(folder).join("README.md");
        assert!(readme.is_file(), "{} is missing", readme.display());
    }
    assert!(kinds.get("yaml").copied().unwrap_or(0) >= 2, "{kinds:?}");
    assert!(kinds.get("toml").copied().unwrap_or(0) >= 2, "{kinds:?}");
}

#[test]
fn the_spinapp_runs_the_component_with_three_replicas_and_health_probes() {
    let m = spin_toml();
    let apps = of_kind("SpinApp");
    assert_eq!(apps.len(), 1, "one SpinApp under deploy/");
    let (path, app) = &apps[0];
    let what = path.display().to_string();
    assert_eq!(
        app["apiVersion"].as_str(),
        Some("core.spinkube.dev/v1alpha1"),
        "{what}"
    );
    let spec = &app["spec"];
    // The fields of spin-operator's SpinAppSpec: a typo is not silently ignored.
    let known: BTreeSet<String> = [
        "executor",
        "image",
        "imagePullSecrets",
        "checks",
        "replicas",
        "enableAutoscaling",
        "runtimeConfig",
        "volumes",
        "volumeMounts",
        "variables",
        "serviceAnnotations",
        "deploymentAnnotations",
        "podAnnotations",
        "podLabels",
        "resources",
        "components",
        "serviceAccountName",
        "invocationLimits",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    let unknown: Vec<_> = keys(spec).difference(&known).cloned().collect();
    assert!(
        unknown.is_empty(),
        "{what}: unknown spec fields {unknown:?}"
    );
    assert_eq!(spec["replicas"].as_u64(), Some(3), "{what}: replicas");
    assert_eq!(
        spec["executor"].as_str(),
        Some("containerd-shim-spin"),
        "{what}"
    );
    assert!(
        spec["image"].as_str().is_some_and(|i| !i.is_empty()),
        "{what}: image"
    );
    let components: BTreeSet<String> = spec["components"]
        .as_sequence()
        .expect("spec.components")
        .iter()
        .map(|c| c.as_str().expect("a component id").to_string())
        .collect();
    assert_eq!(components, m.components, "{what}: components vs spin.toml");

    let probe_fields: BTreeSet<String> = [
        "httpGet",
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(
        keys(&spec["checks"]),
        ["liveness", "readiness"].map(String::from).into()
    );
    for check in ["liveness", "readiness"] {
        let probe = &spec["checks"][check];
        let unknown: Vec<_> = keys(probe).difference(&probe_fields).cloned().collect();
        assert!(
            unknown.is_empty(),
            "{what}: {check}: unknown fields {unknown:?}"
        );
        let path = probe["httpGet"]["path"].as_str().expect("httpGet.path");
        assert_public_health_path(path, &format!("{what}: {check}"));
        // The probe must outlast the store's connect timeout (5 s), or a
        // slow database would look like a dead pod.
        let timeout = probe["timeoutSeconds"].as_u64().unwrap_or(1);
        assert!(timeout > 5, "{what}: {check}.timeoutSeconds {timeout} <= 5");
    }
}

#[test]
fn spinapp_variables_are_manifest_variables_and_secrets_come_from_the_secret() {
    let m = spin_toml();
    let secrets: BTreeMap<String, BTreeSet<String>> = of_kind("Secret")
        .into_iter()
        .map(|(_, s)| {
            let name = s["metadata"]["name"]
                .as_str()
                .expect("metadata.name")
                .to_string();
            let mut ks = keys(&s["stringData"]);
            ks.extend(keys(&s["data"]));
            (name, ks)
        })
        .collect();
    assert!(!secrets.is_empty(), "a Secret template under deploy/");
    let mut used: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, app) in of_kind("SpinApp") {
        let what = path.display();
        let mut names = BTreeSet::new();
        for var in app["spec"]["variables"]
            .as_sequence()
            .expect("spec.variables")
        {
            let name = var["name"].as_str().expect("variable name");
            assert!(names.insert(name.to_string()), "{what}: {name} set twice");
            let secret = *m
                .variables
                .get(name)
                .unwrap_or_else(|| panic!("{what}: {name} is not a variable of spin.toml"));
            let has_value = !var["value"].is_null();
            let has_value_from = !var["valueFrom"].is_null();
            let reference = &var["valueFrom"]["secretKeyRef"];
            assert!(
                has_value ^ has_value_from,
                "{what}: {name}: exactly one of value and valueFrom"
            );
            if secret {
                assert!(
                    !has_value,
                    "{what}: {name} is a secret: set it from a Secret"
                );
            }
            if !reference.is_null() {
                let secret_name = reference["name"].as_str().expect("secretKeyRef.name");
                let key = reference["key"].as_str().expect("secretKeyRef.key");
                let keys = secrets.get(secret_name).unwrap_or_else(|| {
                    panic!("{what}: {name}: no Secret {secret_name:?} under deploy/")
                });
                assert!(
                    keys.contains(key),
                    "{what}: {name}: Secret {secret_name} has no key {key}"
                );
                used.insert((secret_name.to_string(), key.to_string()));
            }
        }
        // PostgreSQL for the replicas: the store and the host it may reach.
        for needed in [
            "secret_token",
            "auth_username",
            "auth_password",
            "db_url",
            "db_host",
        ] {
            assert!(names.contains(needed), "{what}: {needed} is not set");
        }
    }
    for (secret, ks) in &secrets {
        for key in ks {
            assert!(
                used.contains(&(secret.clone(), key.clone())),
                "Secret {secret}: key {key} is read by no SpinApp variable"
            );
        }
    }
    // db_host feeds allowed_outbound_hosts: the template must still be there.
    assert!(
        m.allowed_outbound_hosts
            .contains("postgres://{{ db_host }}"),
        "{:?}",
        m.allowed_outbound_hosts
    );
}

#[test]
fn runtime_configs_configure_only_granted_sqlite_databases() {
    let m = spin_toml();
    let files: Vec<PathBuf> = deploy_files()
        .into_iter()
        .filter(|p| {
            extension(p) == "toml"
                && p.parent().and_then(Path::file_name) == Some("runtime-config".as_ref())
        })
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    let mut types = BTreeSet::new();
    for path in files {
        let what = path.display().to_string();
        let doc: Toml = toml::from_str(&read(&path)).expect("TOML");
        let top: Vec<&String> = doc.as_table().expect("a table").keys().collect();
        assert_eq!(top, ["sqlite_database"], "{what}: only SQLite databases");
        for (label, db) in doc["sqlite_database"]
            .as_table()
            .expect("[sqlite_database.*]")
        {
            assert!(
                m.sqlite_databases.contains(label),
                "{what}: {label} is not granted by spin.toml ({:?})",
                m.sqlite_databases
            );
            let db = db.as_table().expect("a table");
            let kind = db.get("type").and_then(Toml::as_str).unwrap_or("spin");
            let fields: BTreeSet<&str> = db.keys().map(String::as_str).collect();
            match kind {
                "spin" => {
                    assert_eq!(fields, ["path", "type"].into(), "{what}");
                    let p = db["path"].as_str().expect("path");
                    assert!(p.starts_with('/'), "{what}: an absolute path, not {p:?}");
                }
                "libsql" => {
                    assert_eq!(fields, ["token", "type", "url"].into(), "{what}");
                    let url = db["url"].as_str().expect("url");
                    assert!(
                        url.starts_with("https://") || url.starts_with("libsql://"),
                        "{what}: url {url:?}"
                    );
                    assert!(db["token"].is_str(), "{what}: token");
                }
                other => panic!("{what}: type {other:?}"),
            }
            types.insert(kind.to_string());
        }
    }
    assert_eq!(types, ["libsql", "spin"].map(String::from).into());
}

/// Variable names in shell text: `--variable name=...`, `SPIN_VARIABLE_NAME`,
/// `--from-literal=name=...` (Secret keys are variable names too).
fn variable_mentions(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (marker, upper) in [
        ("--variable ", false),
        ("--from-literal=", false),
        ("SPIN_VARIABLE_", true),
    ] {
        for (at, _) in text.match_indices(marker) {
            let rest = text[at + marker.len()..].trim_start_matches(['"', '\'']);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue;
            }
            found.insert(if upper {
                name.to_ascii_lowercase()
            } else {
                name
            });
        }
    }
    found
}

#[test]
fn every_variable_the_instructions_name_is_a_manifest_variable() {
    let m = spin_toml();
    let mut seen = BTreeSet::new();
    for path in deploy_files() {
        if !matches!(extension(&path), "md" | "sh") {
            continue;
        }
        for name in variable_mentions(&read(&path)) {
            assert!(
                m.variables.contains_key(&name),
                "{}: {name} is not a variable of spin.toml",
                path.display()
            );
            seen.insert(name);
        }
    }
    for needed in ["secret_token", "auth_password", "db_url", "db_host"] {
        assert!(seen.contains(needed), "no instructions set {needed}");
    }
}

#[test]
fn every_path_the_readmes_curl_is_routed() {
    let mut checked = 0;
    for path in deploy_files() {
        if extension(&path) != "md" {
            continue;
        }
        for line in read(&path).lines().filter(|l| l.contains("curl ")) {
            for word in line.split_whitespace() {
                let Some(after_scheme) = word.split_once("://").map(|(_, rest)| rest) else {
                    continue;
                };
                let request_path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
                let request_path = request_path.trim_end_matches(['\'', '"']);
                let routed = route("GET", request_path);
                assert!(
                    routed.is_ok(),
                    "{}: curl of {request_path} is not routed",
                    path.display()
                );
                if request_path == HEALTH_PATH {
                    assert_public_health_path(request_path, &path.display().to_string());
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "the READMEs show how to check /health");
}

#[test]
fn the_postgres_only_manifest_keeps_the_variables_component_and_routes() {
    let path = root().join("deploy/postgres-only/spin.toml");
    assert!(path.is_file(), "{} is missing", path.display());
    let main = spin_toml();
    let pg = manifest(&path);
    let missing: Vec<_> = main
        .variables
        .keys()
        .filter(|v| !pg.variables.contains_key(*v))
        .collect();
    let extra: Vec<_> = pg
        .variables
        .keys()
        .filter(|v| !main.variables.contains_key(*v))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} must declare the variables of spin.toml (and pass them to the component): \
         missing {missing:?}, extra {extra:?}",
        path.display()
    );
    assert_eq!(pg.components, main.components);
    assert_eq!(pg.routes, main.routes);
    assert_eq!(pg.allowed_outbound_hosts, main.allowed_outbound_hosts);
    assert!(
        pg.sqlite_databases.is_empty(),
        "the PostgreSQL-only build grants no SQLite"
    );
}
