//! The deployment files under `deploy/` must agree with `spin.toml`, the
//! router and the settings (`Setting::ALL`), so that they cannot drift. Each
//! check reads the files as text and returns what it found wrong;
//! `deploy_files_pass_every_check` runs them all on the files as they are,
//! and `each_check_fails_on_a_broken_example` runs each on a copy with one
//! text replaced, which it must refuse. Commands are read from fenced shell
//! blocks (and `.sh` files) line by line, with plain string checks: one
//! setting a line, as the files write them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use base64::Engine as _;
use book_catalog::router::{route, Endpoint, HEALTH_PATH};
use book_catalog::settings::Setting;
use serde_yaml::Value as Yaml;
use toml::Value as Toml;

/// The service ignores a shorter signing secret (docs/configuration.md).
const MIN_SECRET_BYTES: usize = 32;
const SIGNING_SECRETS: [&str; 2] = ["secret_token", "secret_token_previous"];
/// What `make variants` writes: the build without SQLite imports.
const POSTGRES_ONLY_WASM: &str = "target/variants/book-catalog-postgres.wasm";
const SETTING_MARKERS: [&str; 4] = [
    "--variable ",
    "--variable=",
    "--from-literal=",
    "SPIN_VARIABLE_",
];

/// What a check found wrong, a line each.
type Findings = Vec<String>;

trait Compare {
    /// Adds a finding unless `actual == expected`.
    fn same<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, actual: T, expected: T);
}

impl Compare for Findings {
    fn same<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, actual: T, expected: T) {
        if actual != expected {
            self.push(format!("{what}: {actual:?}, not {expected:?}"));
        }
    }
}

/// Adds the finding (`format!` arguments) unless `ok`.
macro_rules! need {
    ($out:expr, $ok:expr, $($finding:tt)+) => {
        if !$ok {
            $out.push(format!($($finding)+));
        }
    };
}

/// The files the checks read, by path from the repository root: every file
/// under `deploy/` (not in dot folders such as a `.spin/` left by `spin up`),
/// `spin.toml` and the `Makefile`.
#[derive(Clone)]
struct Repo(BTreeMap<String, String>);

impl Repo {
    fn load() -> Repo {
        fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
            for entry in std::fs::read_dir(dir).expect("a folder") {
                let path = entry.expect("an entry").path();
                let hidden = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'));
                if path.is_dir() && !hidden {
                    walk(root, &path, files);
                } else if path.is_file() {
                    let rel = path
                        .strip_prefix(root)
                        .expect("under the root")
                        .display()
                        .to_string();
                    files.insert(rel, std::fs::read_to_string(&path).expect("UTF-8 text"));
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = BTreeMap::new();
        walk(root, &root.join("deploy"), &mut files);
        for file in ["spin.toml", "Makefile"] {
            files.insert(
                file.into(),
                std::fs::read_to_string(root.join(file)).expect(file),
            );
        }
        Repo(files)
    }

    fn text(&self, path: &str) -> &str {
        self.0.get(path).map_or("", String::as_str)
    }

    fn deploy_files(&self, extensions: &[&str]) -> Vec<&str> {
        let ext = |p: &str| {
            Path::new(p)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_string()
        };
        let files = self.0.keys().filter(|p| p.starts_with("deploy/"));
        files
            .filter(|p| extensions.contains(&ext(p).as_str()))
            .map(String::as_str)
            .collect()
    }

    fn toml(&self, path: &str) -> Toml {
        toml::from_str(self.text(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn yaml(&self, kind: &str) -> Vec<(String, Yaml)> {
        let mut found = Vec::new();
        for path in self.deploy_files(&["yaml", "yml"]) {
            for doc in serde_yaml::Deserializer::from_str(self.text(path)) {
                let doc: Yaml =
                    serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{path}: {e}"));
                if doc["kind"].as_str() == Some(kind) {
                    found.push((path.to_string(), doc));
                }
            }
        }
        found
    }

    fn the_spinapp(&self) -> (String, Yaml) {
        let mut apps = self.yaml("SpinApp");
        assert_eq!(apps.len(), 1, "one SpinApp under deploy/");
        apps.remove(0)
    }

    /// The shell commands of every Markdown and shell file under `deploy/`.
    fn commands(&self) -> Vec<(&str, Command)> {
        let files = self.deploy_files(&["md", "sh"]);
        files
            .into_iter()
            .flat_map(|p| {
                commands(self.text(p), p.ends_with(".md"))
                    .into_iter()
                    .map(move |c| (p, c))
            })
            .collect()
    }
}

/// One command: a line of a shell script or of a fenced block, with the lines
/// its `\` continues onto, comments removed.
struct Command {
    line: usize,
    lines: Vec<String>,
    /// The three lines before it, comments included.
    before: String,
}

impl Command {
    fn text(&self) -> String {
        self.lines.join(" ")
    }

    /// Whether it runs `words` (e.g. "spin aka deploy"), the words in a row.
    fn runs(&self, words: &str) -> bool {
        let program: Vec<&str> = words.split(' ').collect();
        self.text()
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(program.len())
            .any(|w| w == program)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.lines.iter().flat_map(|l| settings(l)).collect()
    }

    /// The word after `flag` (`-f path`, `--from=path`), quotes removed.
    fn flag(&self, flags: &[&str]) -> Option<String> {
        let text = self.text();
        let words: Vec<&str> = text.split_whitespace().collect();
        let value = words
            .windows(2)
            .find(|w| flags.contains(&w[0]))
            .map(|w| w[1].to_string());
        value.map(|v| v.trim_matches(['"', '\'']).to_string())
    }
}

fn commands(text: &str, markdown: bool) -> Vec<Command> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut out, mut in_code, mut current) = (Vec::new(), !markdown, None::<Command>);
    for (index, raw) in lines.iter().enumerate() {
        if markdown && raw.trim_start().starts_with("```") {
            in_code = !in_code;
            out.extend(current.take());
            continue;
        }
        let code = if raw.trim_start().starts_with('#') {
            ""
        } else {
            raw.split(" #").next().unwrap_or("")
        };
        let (code, continues) = code
            .trim_end()
            .strip_suffix('\\')
            .map_or((code.trim(), false), |c| (c.trim(), true));
        if !in_code || (code.is_empty() && current.is_none()) {
            continue;
        }
        let before = lines[index.saturating_sub(3)..index].join("\n");
        current
            .get_or_insert_with(|| Command {
                line: index + 1,
                lines: Vec::new(),
                before,
            })
            .lines
            .push(code.to_string());
        if !continues {
            out.extend(current.take());
        }
    }
    out.extend(current);
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The Spin variables one line sets (`--variable name=value`,
/// `--from-literal=name=value`, `SPIN_VARIABLE_NAME=value`), each value as
/// written without its outer quotes: `$` in it means it comes from the shell.
fn settings(line: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for marker in SETTING_MARKERS {
        for (at, _) in line.match_indices(marker) {
            if line[..at].ends_with(|c: char| is_name_char(c) || c == '$' || c == '{') {
                continue; // a read (`$SPIN_VARIABLE_X`), not a setting
            }
            let rest = line[at + marker.len()..].trim_start();
            let quote = rest.chars().next().filter(|c| matches!(c, '"' | '\''));
            let rest = &rest[quote.map_or(0, char::len_utf8)..];
            let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
            let Some(value) = rest[name.len()..].strip_prefix('=') else {
                continue;
            };
            // Up to the next option, quotes (around the pair or the value) removed.
            let value = value
                .split(" --")
                .next()
                .unwrap_or("")
                .trim()
                .trim_end_matches('\\');
            let value_quote = value.chars().next().filter(|c| matches!(c, '"' | '\''));
            let value = match quote.or(value_quote) {
                Some(q) => value
                    .trim()
                    .trim_start_matches(q)
                    .rsplit_once(q)
                    .map_or(value, |(v, _)| v),
                None => value.split_whitespace().next().unwrap_or(""),
            };
            let name = if marker == "SPIN_VARIABLE_" {
                name.to_ascii_lowercase()
            } else {
                name
            };
            found.push((name, value.to_string()));
        }
    }
    found
}

/// Variable names anywhere in a text, set or read.
fn variable_mentions(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for marker in SETTING_MARKERS {
        for (at, _) in text.match_indices(marker) {
            let rest = text[at + marker.len()..].trim_start_matches(['"', '\'', ' ']);
            let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
            if !name.is_empty() {
                found.insert(if marker == "SPIN_VARIABLE_" {
                    name.to_ascii_lowercase()
                } else {
                    name
                });
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------
// Manifests, read from their TOML

fn table(value: &Toml, key: &str) -> toml::Table {
    value
        .get(key)
        .and_then(Toml::as_table)
        .cloned()
        .unwrap_or_default()
}

fn strings(value: &Toml, key: &str) -> BTreeSet<String> {
    let items = value
        .get(key)
        .and_then(Toml::as_array)
        .into_iter()
        .flatten();
    items.filter_map(Toml::as_str).map(str::to_string).collect()
}

fn str_at<'a>(value: &'a Toml, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(value, |v, key| v.get(key))?.as_str()
}

fn union(manifest: &Toml, key: &str) -> BTreeSet<String> {
    table(manifest, "component")
        .values()
        .flat_map(|c| strings(c, key))
        .collect()
}

fn routes(manifest: &Toml) -> BTreeSet<(String, String)> {
    let triggers = manifest
        .get("trigger")
        .and_then(|t| t.get("http"))
        .and_then(Toml::as_array);
    let route = |t: &Toml| {
        (
            str_at(t, &["route"]).unwrap_or("").into(),
            str_at(t, &["component"]).unwrap_or("").into(),
        )
    };
    triggers.into_iter().flatten().map(route).collect()
}

/// `dir/a/../b` -> `dir/b`, as text.
fn resolve(dir: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            ".." => drop(parts.pop()),
            "." | "" => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// `host:port` of a `postgres://` URL (no port: 5432).
fn postgres_host_port(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(with_default_port(
        authority.rsplit_once('@').map_or(authority, |(_, h)| h),
    ))
}

fn with_default_port(host_port: &str) -> String {
    let port = host_port.rsplit_once(':').map(|(_, p)| p);
    let port = port.filter(|_| !host_port.ends_with(']'));
    match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => host_port.to_string(),
        _ => format!("{host_port}:5432"),
    }
}

/// A Secret's values, from `stringData` and (base64) `data`.
fn secret_values(secret: &Yaml) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    let entries = |key: &str| secret[key].as_mapping().cloned().unwrap_or_default();
    for (k, v) in entries("stringData") {
        values.insert(
            k.as_str().unwrap_or("").into(),
            v.as_str().unwrap_or("").into(),
        );
    }
    for (k, v) in entries("data") {
        let decoded =
            base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or("").trim());
        values.insert(
            k.as_str().unwrap_or("").into(),
            String::from_utf8_lossy(&decoded.expect("base64")).into(),
        );
    }
    values
}

fn keys(value: &Yaml) -> BTreeSet<String> {
    value
        .as_mapping()
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.as_str().map(str::to_string))
        .collect()
}

/// A Kubernetes quantity (`100m`, `1`, `128Mi`) as a number.
fn quantity(value: &Yaml) -> Option<f64> {
    let text = value
        .as_str()
        .map(str::to_string)
        .or_else(|| value.as_f64().map(|n| n.to_string()))?;
    let suffixes = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ];
    let (number, factor) = suffixes
        .iter()
        .find_map(|(s, f)| text.strip_suffix(s).map(|n| (n, *f)))
        .unwrap_or((&text, 1.0));
    number.parse::<f64>().ok().map(|n| n * factor)
}

/// `path` is the router's public health check, and a trigger of spin.toml serves it.
fn public_health_path(repo: &Repo, path: &str, what: &str, out: &mut Findings) {
    let routed = route("GET", path).ok();
    let public = routed.is_some_and(|r| !r.protected && r.endpoint == Ok(Endpoint::Health));
    need!(
        out,
        path == HEALTH_PATH && public,
        "{what}: {path} is not the public health check {HEALTH_PATH}"
    );
    let served = routes(&repo.toml("spin.toml")).iter().any(|(r, _)| {
        r.strip_suffix("/...")
            .is_some_and(|p| path.starts_with(&format!("{p}/")))
            || r == path
    });
    need!(out, served, "{what}: no trigger of spin.toml serves {path}");
}

// ---------------------------------------------------------------------------
// The checks

/// Every file parses (TOML, YAML; a script is executable with a `#!` line),
/// and each platform folder has its README.
fn files_parse(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for path in repo.deploy_files(&["toml"]) {
        let parsed = toml::from_str::<Toml>(repo.text(path));
        need!(out, parsed.is_ok(), "{path}: {parsed:?}");
    }
    for path in repo.deploy_files(&["yaml", "yml"]) {
        let docs = serde_yaml::Deserializer::from_str(repo.text(path));
        let docs: Result<Vec<Yaml>, _> = docs.map(serde::Deserialize::deserialize).collect();
        need!(out, docs.is_ok_and(|d| !d.is_empty()), "{path}: not YAML");
    }
    for path in repo.deploy_files(&["sh"]) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            let mode = std::fs::metadata(file).map_or(0, |m| m.permissions().mode());
            need!(out, mode & 0o111 != 0, "{path}: not executable");
        }
        need!(out, repo.text(path).starts_with("#!"), "{path}: no #! line");
    }
    let kinds = ["toml", "yaml", "yml", "sh", "md"];
    let all = repo.0.keys().filter(|p| p.starts_with("deploy/")).count();
    out.same("files of known kinds", repo.deploy_files(&kinds).len(), all);
    for folder in ["spinkube", "fermyon-cloud", "runtime-config", "akamai"] {
        let readme = format!("deploy/{folder}/README.md");
        need!(out, repo.0.contains_key(&readme), "{readme} is missing");
    }
    let yaml = repo.deploy_files(&["yaml", "yml"]).len();
    let toml = repo.deploy_files(&["toml"]).len();
    need!(
        out,
        yaml >= 4 && toml >= 4,
        "{yaml} YAML, {toml} TOML files"
    );
    out
}

/// spin.toml declares every setting and passes it to the component; its
/// only other variable is the PostgreSQL host it may reach; no default secret.
fn manifest_variables_are_the_settings(repo: &Repo) -> Findings {
    let (mut out, m) = (Findings::new(), repo.toml("spin.toml"));
    let variables = table(&m, "variables");
    let passed = table(&table(&m, "component")["book-catalog"], "variables");
    for name in Setting::ALL.map(Setting::variable_name) {
        need!(out, variables.contains_key(name), "{name} is not declared");
        let template = format!("{{{{ {name} }}}}");
        let given = passed.get(name).and_then(Toml::as_str);
        out.same(name, given, Some(template.as_str()));
    }
    let is_setting = |n: &&String| Setting::ALL.iter().any(|s| s.variable_name() == *n);
    let others: Vec<&String> = variables.keys().filter(|n| !is_setting(n)).collect();
    out.same(
        "variables not settings",
        others,
        vec![&"db_host".to_string()],
    );
    let hosts = union(&m, "allowed_outbound_hosts");
    need!(out, hosts.contains("postgres://{{ db_host }}"), "{hosts:?}");
    let default = str_at(&m, &["variables", "secret_token", "default"]);
    out.same("secret_token's default", default, Some(""));
    out
}

/// A manifest without what a deploy manifest may change: the application's
/// name and description, `client_ip_header`'s default, each component's
/// source, SQLite databases and build.
fn comparable(manifest: &Toml) -> Toml {
    let mut m = manifest.clone();
    let table = m.as_table_mut().expect("a table");
    table.remove("application");
    if let Some(Toml::Table(header)) = table["variables"].get_mut("client_ip_header") {
        header.remove("default");
    }
    if let Some(Toml::Table(components)) = table.get_mut("component") {
        for (_, component) in components.iter_mut() {
            for key in ["source", "sqlite_databases", "build"] {
                component.as_table_mut().map(|c| c.remove(key));
            }
        }
    }
    m
}

/// deploy/akamai and deploy/postgres-only are spin.toml (its variables,
/// secret ones included, defaults, component, routes and hosts) but for
/// serving `make variants`' PostgreSQL-only build, without SQLite.
fn deploy_manifests_keep_spin_toml(repo: &Repo) -> Findings {
    let (mut out, main) = (Findings::new(), repo.toml("spin.toml"));
    let paths = repo.deploy_files(&["toml"]);
    let paths: Vec<&str> = paths
        .into_iter()
        .filter(|p| p.ends_with("/spin.toml"))
        .collect();
    let expected = ["deploy/akamai/spin.toml", "deploy/postgres-only/spin.toml"];
    out.same("Spin manifests under deploy/", &paths[..], &expected[..]);
    let makefile = repo.text("Makefile");
    let variants = makefile.contains("\nvariants:") && makefile.contains(POSTGRES_ONLY_WASM);
    need!(
        out,
        variants,
        "`make variants` does not write {POSTGRES_ONLY_WASM}"
    );
    for path in paths {
        let m = repo.toml(path);
        need!(
            out,
            comparable(&m) == comparable(&main),
            "{path} is not spin.toml"
        );
        let dir = path.trim_end_matches("/spin.toml");
        for (id, c) in table(&m, "component") {
            let source = resolve(dir, str_at(&c, &["source"]).unwrap_or(""));
            out.same(
                &format!("{path}: {id}: source"),
                source.as_str(),
                POSTGRES_ONLY_WASM,
            );
            let build = str_at(&c, &["build", "command"]);
            out.same(
                &format!("{path}: {id}: build"),
                build,
                Some("make variants"),
            );
            let workdir = resolve(dir, str_at(&c, &["build", "workdir"]).unwrap_or("."));
            need!(out, workdir.is_empty(), "{path}: {id}: builds in {workdir}");
            need!(
                out,
                c.get("sqlite_databases").is_none(),
                "{path}: {id}: SQLite"
            );
        }
    }
    out
}

/// What the SpinKube files must hold (more keys and values may be there):
/// spin.toml's component, three replicas, the probes on the health path;
/// the Ingress leading every path to the operator's Service (named like the
/// app, port 80); the NetworkPolicy selecting the app's pods by the
/// operator's label and admitting on port 80 only.
const SPINKUBE: &str = r#"
kind: SpinApp
apiVersion: core.spinkube.dev/v1alpha1
metadata: {name: book-catalog}
spec:
  replicas: 3
  executor: containerd-shim-spin
  checks: {liveness: {httpGet: {path: /health}}, readiness: {httpGet: {path: /health}}}
---
kind: Ingress
spec:
  rules:
    - http:
        paths:
          - path: /
            pathType: Prefix
            backend: {service: {name: book-catalog, port: {number: 80}}}
---
kind: NetworkPolicy
spec:
  podSelector: {matchLabels: {core.spinkube.dev/app-name: book-catalog}}
  policyTypes: [Ingress]
  ingress: [{ports: [{port: 80}]}]
"#;

/// Whether `actual` holds `expected`: its keys (and maybe more), the same
/// number of items, the same scalars.
fn holds(actual: &Yaml, expected: &Yaml) -> bool {
    match (actual, expected) {
        (Yaml::Mapping(a), Yaml::Mapping(e)) => {
            e.iter().all(|(k, v)| a.get(k).is_some_and(|a| holds(a, v)))
        }
        (Yaml::Sequence(a), Yaml::Sequence(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(a, e)| holds(a, e))
        }
        _ => actual == expected,
    }
}

/// The SpinApp, Ingress and NetworkPolicy hold SPINKUBE; the SpinApp runs
/// spin.toml's component with spin-operator's fields only, requests within
/// limits, probes on the public health path that outlast the store's 5 s
/// connect timeout, and `trusted_proxy_hops = "1"`: the Ingress is the one
/// proxy, and the NetworkPolicy admits its controller only (else a client
/// writes the X-Forwarded-For entry that is trusted).
fn spinkube_runs_three_replicas_behind_its_ingress_only(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for expected in serde_yaml::Deserializer::from_str(SPINKUBE) {
        let expected: Yaml = serde::Deserialize::deserialize(expected).expect("YAML");
        let kind = expected["kind"].as_str().unwrap_or("");
        let found = repo.yaml(kind);
        out.same(kind, found.len(), 1);
        let held = found.iter().all(|(_, doc)| holds(doc, &expected));
        need!(out, held, "the {kind} is not as SPINKUBE says");
    }
    let (what, app) = repo.the_spinapp();
    let spec = &app["spec"];
    let ids = table(&repo.toml("spin.toml"), "component");
    let components = sequence(&spec["components"])
        .into_iter()
        .filter_map(Yaml::as_str);
    let components: Vec<&str> = components.collect();
    out.same(
        "components",
        components,
        ids.keys().map(String::as_str).collect(),
    );
    let fields = "executor image imagePullSecrets checks replicas enableAutoscaling runtimeConfig \
                  volumes volumeMounts variables serviceAnnotations deploymentAnnotations \
                  podAnnotations podLabels resources components serviceAccountName invocationLimits";
    let unknown = keys(spec)
        .into_iter()
        .filter(|k| !fields.split(' ').any(|f| f == k));
    out.same("unknown spec fields", unknown.collect(), vec![]);
    need!(
        out,
        spec["image"].as_str().is_some_and(|i| !i.is_empty()),
        "{what}: image"
    );
    let resources = &spec["resources"];
    out.same("resources", keys(resources), names(&["limits", "requests"]));
    for resource in ["cpu", "memory"] {
        let request = quantity(&resources["requests"][resource]).unwrap_or(0.0);
        let limit = quantity(&resources["limits"][resource]).unwrap_or(0.0);
        need!(
            out,
            0.0 < request && request <= limit,
            "{resource}: {request} > {limit}"
        );
    }
    out.same(
        "checks",
        keys(&spec["checks"]),
        names(&["liveness", "readiness"]),
    );
    let probe_fields = "httpGet initialDelaySeconds timeoutSeconds periodSeconds successThreshold \
                        failureThreshold";
    for check in ["liveness", "readiness"] {
        let probe = &spec["checks"][check];
        let unknown = keys(probe)
            .into_iter()
            .filter(|k| !probe_fields.contains(k.as_str()));
        out.same("unknown probe fields", unknown.collect(), vec![]);
        let path = probe["httpGet"]["path"].as_str().unwrap_or("");
        public_health_path(repo, path, &format!("{what}: {check}"), &mut out);
        let timeout = probe["timeoutSeconds"].as_u64().unwrap_or(1);
        need!(out, timeout > 5, "{check}.timeoutSeconds {timeout} <= 5");
    }
    let variables = spin_app_variables(&app);
    // SpinVar.value is a string: an unquoted 1 is refused by the CRD.
    let hops = variables.get("trusted_proxy_hops").map(|v| &v["value"]);
    out.same("trusted_proxy_hops", hops.and_then(Yaml::as_str), Some("1"));
    for other in ["client_ip_header", "trust_forwarded_for"] {
        need!(out, !variables.contains_key(other), "{other}: one proxy");
    }
    for (_, policy) in repo.yaml("NetworkPolicy") {
        let pods = keys(&policy["spec"]["podSelector"]["matchLabels"]);
        out.same("pod selector", pods.len(), 1);
        for rule in sequence(&policy["spec"]["ingress"]) {
            // An ipBlock, an empty selector or none at all admits clients.
            let named = |peer: &&Yaml| {
                let labels = |s: &str| keys(&peer[s]["matchLabels"]);
                let labelled =
                    !labels("namespaceSelector").is_empty() && !labels("podSelector").is_empty();
                peer["ipBlock"].is_null() && labelled
            };
            let peers = sequence(&rule["from"]);
            need!(
                out,
                !peers.is_empty() && peers.iter().all(named),
                "admits clients"
            );
        }
    }
    out
}

fn names(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The SpinApp's variables by name.
fn spin_app_variables(app: &Yaml) -> BTreeMap<&str, &Yaml> {
    let variables = sequence(&app["spec"]["variables"]).into_iter();
    variables
        .map(|v| (v["name"].as_str().unwrap_or(""), v))
        .collect()
}

fn sequence(value: &Yaml) -> Vec<&Yaml> {
    value.as_sequence().into_iter().flatten().collect()
}

/// The SpinApp sets only spin.toml's variables, each once; credentials come
/// from the Secret that `kubectl create secret generic` makes (and
/// secret.yaml templates), and every key of it is read.
fn spinapp_credentials_come_from_the_secret(repo: &Repo) -> Findings {
    let (mut out, (_, app)) = (Findings::new(), repo.the_spinapp());
    let manifest = table(&repo.toml("spin.toml"), "variables");
    let mut created: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, c) in repo.commands() {
        if c.runs("kubectl create secret generic") {
            let keys = created.entry(c.flag(&["generic"]).unwrap_or_default());
            keys.or_default().extend(c.settings().into_keys());
        }
    }
    need!(out, !created.is_empty(), "no `kubectl create secret`");
    let mut templates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, secret) in repo.yaml("Secret") {
        let name = secret["metadata"]["name"].as_str().unwrap_or("");
        templates.insert(name.into(), secret_values(&secret).into_keys().collect());
    }
    let (mut names, mut read) = (BTreeSet::new(), BTreeSet::new());
    for var in sequence(&app["spec"]["variables"]) {
        let name = var["name"].as_str().unwrap_or("");
        need!(out, names.insert(name), "{name} set twice");
        need!(out, manifest.contains_key(name), "{name}: not in spin.toml");
        let one = var["value"].is_null() != var["valueFrom"].is_null();
        need!(out, one, "{name}: not one of value and valueFrom");
        let reference = &var["valueFrom"]["secretKeyRef"];
        let secret = manifest.get(name).and_then(|v| v.get("secret"));
        let credential = secret == Some(&Toml::Boolean(true));
        let credential = credential || ["db_url", "auth_username"].contains(&name);
        need!(
            out,
            !credential || !reference.is_null(),
            "{name}: not from a Secret"
        );
        let secret = reference["name"].as_str().unwrap_or("").to_string();
        let key = reference["key"].as_str().unwrap_or("").to_string();
        if !reference.is_null() && !reference["optional"].as_bool().unwrap_or(false) {
            let made = created.get(&secret).is_some_and(|k| k.contains(&key));
            need!(out, made, "{name}: no `kubectl create secret` sets {key}");
            let templated = templates.get(&secret).is_none_or(|k| k.contains(&key));
            need!(out, templated, "{name}: the template {secret} has no {key}");
        }
        read.insert((secret, key));
    }
    for needed in "secret_token auth_username db_url db_host trusted_proxy_hops".split(' ') {
        need!(out, names.contains(needed), "{needed} is not set");
    }
    let password = names.contains("auth_password_hash") || names.contains("auth_password");
    need!(out, password, "no password");
    for (secret, keys) in templates.iter().chain(&created) {
        for key in keys {
            let pair = (secret.clone(), key.clone());
            need!(out, read.contains(&pair), "{secret}: {key} is never read");
        }
    }
    out
}

fn spin_manifests(repo: &Repo) -> Vec<&str> {
    let tomls = repo.deploy_files(&["toml"]).into_iter();
    tomls.filter(|p| p.ends_with("/spin.toml")).collect()
}

/// No signing secret a reader could use (32 bytes or more) in a Secret
/// template, a command or a manifest default.
fn no_usable_signing_secret(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    let secrets = repo
        .yaml("Secret")
        .into_iter()
        .map(|(p, s)| (p, secret_values(&s)));
    let commands = repo.commands().into_iter();
    let commands = commands.map(|(p, c)| (format!("{p} line {}", c.line), c.settings()));
    for (what, values) in secrets.chain(commands) {
        for name in SIGNING_SECRETS
            .into_iter()
            .filter(|s| values.contains_key(*s))
        {
            // `$`: generated or read from the shell when the command runs.
            let value = &values[name];
            let usable = !value.contains('$') && value.len() >= MIN_SECRET_BYTES;
            need!(out, !usable, "{what}: {name} is a usable secret");
            checked += 1;
        }
    }
    for path in spin_manifests(repo) {
        let manifest = repo.toml(path);
        for name in SIGNING_SECRETS {
            let default = str_at(&manifest, &["variables", name, "default"]);
            out.same(&format!("{path}: {name}"), default, Some(""));
        }
    }
    // The SpinKube Secret (template and command), Akamai and Fermyon Cloud.
    need!(out, checked >= 4, "only {checked} signing secrets to check");
    out
}

/// The runtime configurations configure only SQLite databases spin.toml
/// grants: a local file at an absolute path, or libSQL with a url and token.
fn runtime_configs_configure_granted_sqlite(repo: &Repo) -> Findings {
    let (mut out, mut types) = (Findings::new(), BTreeSet::new());
    let granted = union(&repo.toml("spin.toml"), "sqlite_databases");
    let tomls = repo.deploy_files(&["toml"]).into_iter();
    for path in tomls.filter(|p| p.starts_with("deploy/runtime-config/")) {
        let doc = repo.toml(path);
        out.same(path, keys_of(&doc), vec!["sqlite_database"]);
        for (label, db) in table(&doc, "sqlite_database") {
            need!(out, granted.contains(&label), "{path}: {label} not granted");
            let kind = str_at(&db, &["type"]).unwrap_or("spin").to_string();
            let text = |key| str_at(&db, &[key]).unwrap_or("");
            let right = match kind.as_str() {
                "spin" => keys_of(&db) == ["path", "type"] && text("path").starts_with('/'),
                "libsql" => {
                    let remote = ["https://", "libsql://"]
                        .iter()
                        .any(|s| text("url").starts_with(s));
                    keys_of(&db) == ["token", "type", "url"] && remote
                }
                _ => false,
            };
            need!(out, right, "{path}: {label}: type {kind}");
            types.insert(kind);
        }
    }
    out.same("types", types, names(&["libsql", "spin"]));
    out
}

fn keys_of(value: &Toml) -> Vec<&str> {
    value
        .as_table()
        .into_iter()
        .flat_map(|t| t.keys())
        .map(String::as_str)
        .collect()
}

/// Every variable a file names is one of spin.toml, and the instructions set
/// the ones each platform needs.
fn every_variable_named_is_a_manifest_variable(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    let variables = table(&repo.toml("spin.toml"), "variables");
    let mut seen = BTreeSet::new();
    for path in repo.deploy_files(&["toml", "yaml", "yml", "md", "sh"]) {
        for name in variable_mentions(repo.text(path)) {
            need!(out, variables.contains_key(&name), "{path}: {name}?");
            seen.insert(name);
        }
    }
    for needed in "secret_token auth_password_hash db_url db_host client_ip_header".split(' ') {
        need!(out, seen.contains(needed), "no instructions set {needed}");
    }
    out
}

/// `spin up --variable` is Spin 3.4+: the command or the three lines before
/// it say so (older Spin takes SPIN_VARIABLE_*).
fn spin_up_variable_says_spin_3_4(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for (path, c) in repo.commands() {
        let says = format!("{}\n{}", c.before, c.text()).contains("3.4");
        let up = c.runs("spin up") && c.text().contains("--variable");
        need!(out, !up || says, "{path} line {}: say Spin 3.4", c.line);
    }
    out
}

/// No bare `spin deploy` (Spin 4 asks which plugin); the plugins' own deploys instead.
fn no_bare_spin_deploy(repo: &Repo) -> Findings {
    let (mut out, mut plugin) = (Findings::new(), 0);
    for (path, c) in repo.commands() {
        let bare = c.runs("spin deploy") && !c.text().contains("SPIN_DEPLOY_PLUGIN=");
        need!(out, !bare, "{path} line {}: a bare `spin deploy`", c.line);
        plugin += usize::from(c.runs("spin cloud deploy") || c.runs("spin aka deploy"));
    }
    need!(out, plugin >= 3, "{plugin} plugin deploys");
    out
}

/// Every URL the READMEs `curl` is routed; `/health` is the public health check.
fn every_path_curled_is_routed(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    for path in repo.deploy_files(&["md"]) {
        for line in repo.text(path).lines().filter(|l| l.contains("curl ")) {
            let urls = line.split_whitespace().filter_map(|w| w.split_once("://"));
            for (_, url) in urls {
                let request = url.find('/').map_or("/", |i| &url[i..]);
                let request = request.trim_end_matches(['\'', '"', '`']);
                need!(out, route("GET", request).is_ok(), "{path}: {request}");
                if request == HEALTH_PATH {
                    public_health_path(repo, request, path, &mut out);
                }
                checked += 1;
            }
        }
    }
    need!(out, checked >= 4, "the READMEs do not curl /health");
    out
}

/// Wherever both are written, `db_host` is the `host:port` of `db_url`: the
/// manifest allows `postgres://{{ db_host }}` only.
fn db_host_is_the_host_of_db_url(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    let commands = repo.commands().into_iter();
    let commands = commands.map(|(p, c)| (format!("{p} line {}", c.line), c.settings()));
    let secrets = repo
        .yaml("Secret")
        .into_iter()
        .map(|(p, s)| (p, secret_values(&s)));
    for (what, settings) in commands.chain(secrets) {
        let host = settings.get("db_host").filter(|h| !h.contains('$'));
        if let (Some(url), Some(host)) = (settings.get("db_url"), host) {
            let expected = postgres_host_port(url);
            out.same(
                &format!("{what}: db_host"),
                Some(with_default_port(host)),
                expected,
            );
            checked += 1;
        }
    }
    // SpinKube (command and template), Akamai, Fermyon Cloud.
    need!(out, checked >= 4, "only {checked} db_url/db_host pairs");
    out
}

/// Spin 4.0.2 parses `sslmode` disable, prefer and require only (a URL
/// parameter; prose may name others), and the READMEs say that it verifies
/// the certificate in every mode but `disable`.
fn postgres_tls_modes_are_ones_spin_accepts(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for path in repo.deploy_files(&["toml", "yaml", "yml", "md", "sh"]) {
        let text = repo.text(path);
        for (at, _) in text.match_indices("sslmode=") {
            let rest = &text[at + "sslmode=".len()..];
            let end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '-');
            let mode = &rest[..end.unwrap_or(rest.len())];
            let parameter = text[..at].ends_with(['?', '&']);
            let accepted = ["disable", "prefer", "require"].contains(&mode);
            need!(out, !parameter || accepted, "{path}: sslmode={mode}");
        }
    }
    for path in
        "deploy/spinkube/README.md deploy/spinkube/spinapp.yaml deploy/akamai/README.md".split(' ')
    {
        // The words, comment markers left out: a sentence may span comment lines.
        let lines = repo
            .text(path)
            .lines()
            .map(|l| l.trim_start().trim_start_matches('#'));
        let text = lines
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ");
        for said in [
            "sslmode=require",
            "sslmode=disable",
            "host name",
            "except disable",
        ] {
            need!(
                out,
                text.replace('`', "").contains(said),
                "{path}: say {said:?}"
            );
        }
    }
    out
}

/// Akamai: the PostgreSQL-only build, `client_ip_header = true-client-ip`
/// (its edge's header), and a `spin aka deploy` that sets what it needs.
fn akamai_deploys_the_postgres_only_build_with_true_client_ip(repo: &Repo) -> Findings {
    let (mut out, path, readme) = (
        Findings::new(),
        "deploy/akamai/spin.toml",
        "deploy/akamai/README.md",
    );
    let akamai = repo.toml(path);
    let header = str_at(&akamai, &["variables", "client_ip_header", "default"]);
    let header = header.map(|h| h.trim().to_ascii_lowercase());
    out.same(
        "client_ip_header's default",
        header.as_deref(),
        Some("true-client-ip"),
    );
    for (id, c) in table(&akamai, "component") {
        need!(
            out,
            strings(&c, "sqlite_databases").is_empty(),
            "{id}: SQLite"
        );
        let passed = str_at(&c, &["variables", "client_ip_header"]);
        out.same("client_ip_header", passed, Some("{{ client_ip_header }}"));
    }
    let commands = commands(repo.text(readme), true);
    need!(
        out,
        commands.iter().any(|c| c.runs("make variants")),
        "no `make variants`"
    );
    let deploys: Vec<&Command> = commands
        .iter()
        .filter(|c| c.runs("spin aka deploy"))
        .collect();
    need!(out, !deploys.is_empty(), "no `spin aka deploy`");
    for deploy in &deploys {
        let from = deploy.flag(&["-f", "--from"]).unwrap_or_default();
        let postgres_only = [path, "deploy/postgres-only/spin.toml"].contains(&from.as_str());
        need!(out, postgres_only, "line {}: -f {from:?}", deploy.line);
        let header = deploy.settings().get("client_ip_header").cloned();
        let right = header
            .as_deref()
            .map_or(from == path, |h| h == "true-client-ip");
        need!(
            out,
            right,
            "line {}: client_ip_header {header:?}",
            deploy.line
        );
    }
    let first = deploys.first().map(|c| c.settings()).unwrap_or_default();
    for needed in "db_url db_host secret_token auth_username client_ip_header".split(' ') {
        need!(
            out,
            first.contains_key(needed),
            "the deploy sets no {needed}"
        );
    }
    let password = ["auth_password_hash", "auth_password"]
        .iter()
        .any(|p| first.contains_key(*p));
    need!(out, password, "the deploy sets no password");
    let said = repo.text(readme).contains("nothing was deployed");
    need!(out, said, "{readme}: say that nothing was deployed");
    out
}

/// Fermyon Cloud: `spin cloud deploy` in the README and in deploy.sh, linking
/// only SQLite labels spin.toml grants, naming spin.toml's application.
fn fermyon_cloud_deploys_with_the_cloud_plugin(repo: &Repo) -> Findings {
    let (mut out, m) = (Findings::new(), repo.toml("spin.toml"));
    let (mut deploys, mut links) = (0, 0);
    for path in [
        "deploy/fermyon-cloud/README.md",
        "deploy/fermyon-cloud/deploy.sh",
    ] {
        let commands = commands(repo.text(path), path.ends_with(".md"));
        let here = commands
            .iter()
            .filter(|c| c.runs("spin cloud deploy"))
            .count();
        need!(out, here >= 1, "{path}: no `spin cloud deploy`");
        deploys += here;
        for text in commands.iter().map(Command::text) {
            let words: Vec<&str> = text
                .split_whitespace()
                .map(|w| w.trim_matches(['"', '\'']))
                .collect();
            for pair in words.windows(2) {
                if pair[0] == "--link" {
                    let link = pair[1]
                        .strip_prefix("sqlite:")
                        .and_then(|l| l.split_once('='));
                    let label = link.map(|(label, _)| label.to_string()).unwrap_or_default();
                    need!(
                        out,
                        union(&m, "sqlite_databases").contains(&label),
                        "--link {}",
                        pair[1]
                    );
                    links += 1;
                }
                if pair[0] == "--app" {
                    out.same("--app", Some(pair[1]), str_at(&m, &["application", "name"]));
                }
            }
        }
    }
    need!(
        out,
        deploys >= 2 && links >= 2,
        "{deploys} deploys, {links} --link"
    );
    out
}

/// Each platform README gives the exact commands and says what was verified
/// and what was not run.
fn readmes_say_what_was_verified(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for folder in ["akamai", "fermyon-cloud", "spinkube"] {
        let text = repo.text(&format!("deploy/{folder}/README.md"));
        let section = text
            .lines()
            .any(|l| l.starts_with('#') && l.contains("verified"));
        need!(out, section, "{folder}: no section on what was verified");
        need!(out, text.contains("Not run"), "{folder}: what was not run");
        need!(
            out,
            commands(text, true).len() >= 3,
            "{folder}: the commands"
        );
    }
    out
}

// ---------------------------------------------------------------------------
// Tests

type Check = fn(&Repo) -> Findings;

macro_rules! named {
    ($($check:ident),* $(,)?) => { [$((stringify!($check), $check as Check)),*] };
}

const CHECKS: [(&str, Check); 16] = named![
    files_parse,
    manifest_variables_are_the_settings,
    deploy_manifests_keep_spin_toml,
    spinkube_runs_three_replicas_behind_its_ingress_only,
    spinapp_credentials_come_from_the_secret,
    no_usable_signing_secret,
    runtime_configs_configure_granted_sqlite,
    every_variable_named_is_a_manifest_variable,
    spin_up_variable_says_spin_3_4,
    no_bare_spin_deploy,
    every_path_curled_is_routed,
    db_host_is_the_host_of_db_url,
    postgres_tls_modes_are_ones_spin_accepts,
    akamai_deploys_the_postgres_only_build_with_true_client_ip,
    fermyon_cloud_deploys_with_the_cloud_plugin,
    readmes_say_what_was_verified,
];

#[test]
fn deploy_files_pass_every_check() {
    let repo = Repo::load();
    let failed: Vec<String> = CHECKS
        .iter()
        .flat_map(|(name, check)| {
            check(&repo)
                .into_iter()
                .map(move |f| format!("{name}: {f}"))
        })
        .collect();
    assert!(failed.is_empty(), "\n  {}", failed.join("\n  "));
}

/// One broken example a line, `check | file | text | replacement` (`\n`: a
/// line break): the files with that one change must fail the check.
const BROKEN: &str = r#"
files_parse | deploy/akamai/spin.toml | [application] | [application
files_parse | deploy/fermyon-cloud/deploy.sh | #!/usr/bin/env bash | # bash
manifest_variables_are_the_settings | spin.toml | trusted_proxy_hops = "{{ trusted_proxy_hops }}" |
manifest_variables_are_the_settings | spin.toml | secret_token = { default = "" | secret_token = { default = "x"
deploy_manifests_keep_spin_toml | deploy/postgres-only/spin.toml | route = "/..." | route = "/api/..."
deploy_manifests_keep_spin_toml | deploy/akamai/spin.toml | book-catalog-postgres.wasm | book_catalog.wasm
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | replicas: 3 | replicas: 2
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | memory: 128Mi | memory: 1Gi
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | path: /health | path: /books
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | timeoutSeconds: 6 | timeoutSeconds: 5
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | value: "1" | value: 1
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/ingress.yaml | number: 80 | number: 8080
spinkube_runs_three_replicas_behind_its_ingress_only | deploy/spinkube/networkpolicy.yaml |   podSelector:\n            matchLabels:\n              app.kubernetes.io/name: ingress-nginx\n |
spinapp_credentials_come_from_the_secret | deploy/spinkube/spinapp.yaml | key: db_host | key: db_hostname
spinapp_credentials_come_from_the_secret | deploy/spinkube/README.md | --from-literal=auth_username=admin | --from-literal=auth_user=admin
no_usable_signing_secret | deploy/spinkube/secret.yaml | secret_token: "REPLACE-ME" | secret_token: "0123456789abcdef0123456789abcdef"
no_usable_signing_secret | deploy/spinkube/secret.yaml | type: Opaque | type: Opaque\ndata:\n  secret_token_previous: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
no_usable_signing_secret | deploy/akamai/README.md | secret_token="$BOOK_SECRET_TOKEN" | secret_token='0123456789abcdef0123456789abcdef'
runtime_configs_configure_granted_sqlite | deploy/runtime-config/sqlite-path.toml | [sqlite_database.default] | [sqlite_database.books]
runtime_configs_configure_granted_sqlite | deploy/runtime-config/sqlite-path.toml | path = "/var | path = "var
every_variable_named_is_a_manifest_variable | deploy/fermyon-cloud/README.md | SPIN_VARIABLE_DB_HOST | SPIN_VARIABLE_DATABASE_HOST
every_variable_named_is_a_manifest_variable | deploy/spinkube/README.md | --from-literal=db_url= | --from-literal=database_url=
spin_up_variable_says_spin_3_4 | deploy/runtime-config/README.md | spin up --runtime-config-file runtime-config.local.toml | spin up --variable db_host=h:1 \\n  --runtime-config-file runtime-config.local.toml
no_bare_spin_deploy | deploy/fermyon-cloud/deploy.sh | exec spin cloud deploy | exec spin deploy
every_path_curled_is_routed | deploy/akamai/README.md | .fwf.app/health | .fwf.app/healthz
db_host_is_the_host_of_db_url | deploy/akamai/README.md | --variable db_host=db.example.com:5432 | --variable db_host=db.example.com:5433
db_host_is_the_host_of_db_url | deploy/spinkube/secret.yaml | db_host: "postgres.books.svc.cluster.local:5432" | db_host: "postgres.books.svc.cluster.local:5433"
db_host_is_the_host_of_db_url | deploy/spinkube/README.md | db_host=postgres.books.svc.cluster.local:5432 | db_host=postgres:5432
postgres_tls_modes_are_ones_spin_accepts | deploy/akamai/README.md | 5432/books?sslmode=require | 5432/books?sslmode=verify-full
postgres_tls_modes_are_ones_spin_accepts | deploy/spinkube/secret.yaml | books?sslmode=disable | books?user=u&sslmode=allow
postgres_tls_modes_are_ones_spin_accepts | deploy/akamai/README.md | except `disable` | but `disable`
akamai_deploys_the_postgres_only_build_with_true_client_ip | deploy/akamai/README.md | client_ip_header=true-client-ip | client_ip_header=x-real-ip
akamai_deploys_the_postgres_only_build_with_true_client_ip | deploy/akamai/spin.toml | default = "true-client-ip" | default = ""
akamai_deploys_the_postgres_only_build_with_true_client_ip | deploy/akamai/README.md | spin aka deploy -f deploy/akamai/spin.toml | spin aka deploy -f spin.toml
fermyon_cloud_deploys_with_the_cloud_plugin | deploy/fermyon-cloud/deploy.sh | sqlite:default= | sqlite:books=
fermyon_cloud_deploys_with_the_cloud_plugin | deploy/fermyon-cloud/README.md | --app book-catalog | --app books
readmes_say_what_was_verified | deploy/spinkube/README.md | Not run | Skipped
"#;

#[test]
fn each_check_fails_on_a_broken_example() {
    let repo = Repo::load();
    let examples = BROKEN.trim().lines().map(|l| l.replace("\\n", "\n"));
    let examples: Vec<Vec<String>> = examples
        .map(|l| l.split('|').map(|f| f.trim().to_string()).collect())
        .collect();
    for example in &examples {
        let [check, file, text, replacement] = &example[..] else {
            panic!("{example:?}")
        };
        let mut broken = repo.clone();
        let original = broken
            .0
            .get_mut(file)
            .unwrap_or_else(|| panic!("{file} is not read"));
        assert!(
            original.contains(text.as_str()),
            "{check}: {file} no longer has {text:?}"
        );
        *original = original.replacen(text.as_str(), replacement, 1);
        let run = CHECKS
            .iter()
            .find(|(name, _)| name == check)
            .unwrap_or_else(|| panic!("no check {check:?}"))
            .1;
        assert!(
            !run(&broken).is_empty(),
            "{check} passes {file} with {text:?} -> {replacement:?}"
        );
    }
    let untested: Vec<&str> = CHECKS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !examples.iter().any(|e| e[0] == *n))
        .collect();
    assert!(
        untested.is_empty(),
        "checks without a broken example: {untested:?}"
    );
}

#[test]
fn settings_are_read_from_shell_lines_as_written() {
    let line = r#"  --from-literal=auth_password_hash="$(printf '%s' "$P" | argon2 "$(head -c 16 /dev/urandom | base64)" -id -e)" \"#;
    let hash = r#"$(printf '%s' "$P" | argon2 "$(head -c 16 /dev/urandom | base64)" -id -e)"#;
    assert_eq!(
        settings(line),
        [("auth_password_hash".to_string(), hash.to_string())]
    );
    assert_eq!(
        settings(r#"args+=(--variable "db_host=$H")"#),
        [("db_host".into(), "$H".into())]
    );
    assert_eq!(
        settings("export SPIN_VARIABLE_DB_URL=postgres://h/db x"),
        [("db_url".into(), "postgres://h/db".into())]
    );
    assert_eq!(
        settings("--variable a=b --variable c='d e'"),
        [("a".into(), "b".into()), ("c".into(), "d e".into())]
    );
    assert!(settings(r#": "${SPIN_VARIABLE_SECRET_TOKEN:?set it}""#).is_empty());
    let script =
        "#!/bin/sh\n# spin deploy\nspin cloud deploy \\\n  --app x # a comment\necho done\n";
    let texts: Vec<String> = commands(script, false).iter().map(Command::text).collect();
    assert_eq!(texts, ["spin cloud deploy --app x", "echo done"]);
}
