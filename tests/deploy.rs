//! The deployment files under `deploy/` must agree with `spin.toml`, the
//! router and the settings (`Setting::ALL`), so that they cannot drift. Each
//! check reads the files as text and returns what it found wrong;
//! `deploy_files_pass_every_check` runs them all on the files as they are,
//! and `each_check_fails_on_a_broken_example` runs each on a copy with one
//! text replaced, which it must refuse. TOML is read into the same tree as
//! YAML, so one set of helpers reads both. Commands are read from fenced
//! shell blocks (and `.sh` files) line by line, with plain string checks: one
//! setting a line, as the files write them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{Debug, Display};
use std::path::Path;

use base64::Engine as _;
use book_catalog::app::{route, Endpoint, HEALTH_PATH};
use book_catalog::settings::Setting;
use serde_yaml::Value as Yaml;

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
    fn same<T: PartialEq + Debug>(&mut self, what: impl Display, actual: T, expected: T);
}

impl Compare for Findings {
    fn same<T: PartialEq + Debug>(&mut self, what: impl Display, actual: T, expected: T) {
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
                let name = path.file_name().and_then(|n| n.to_str());
                if path.is_dir() && !name.unwrap_or("").starts_with('.') {
                    walk(root, &path, files);
                } else if path.is_file() {
                    let rel = path.strip_prefix(root).expect("under the root");
                    let text = std::fs::read_to_string(&path).expect("UTF-8");
                    files.insert(rel.display().to_string(), text);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = BTreeMap::new();
        walk(root, &root.join("deploy"), &mut files);
        for file in ["spin.toml", "Makefile"] {
            let text = std::fs::read_to_string(root.join(file));
            files.insert(file.into(), text.expect(file));
        }
        Repo(files)
    }

    fn text(&self, path: &str) -> &str {
        self.0.get(path).map_or("", String::as_str)
    }

    /// The files under `deploy/` with one of the (space-separated) extensions.
    fn files(&self, extensions: &str) -> Vec<&str> {
        let mut found = Vec::new();
        for path in self.0.keys().filter(|p| p.starts_with("deploy/")) {
            let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
            if extensions.split(' ').any(|e| e == ext) {
                found.push(path.as_str());
            }
        }
        found
    }

    /// The documents of a TOML (one) or YAML (any number) file.
    fn parse(&self, path: &str) -> Result<Vec<Yaml>, String> {
        let text = self.text(path);
        if path.ends_with(".toml") {
            let toml = toml::from_str::<toml::Value>(text).map_err(|e| e.to_string())?;
            return Ok(vec![serde_yaml::to_value(toml).map_err(|e| e.to_string())?]);
        }
        let docs = serde_yaml::Deserializer::from_str(text);
        let docs = docs.map(serde::Deserialize::deserialize);
        docs.collect::<Result<_, _>>().map_err(|e| e.to_string())
    }

    fn doc(&self, path: &str) -> Yaml {
        let docs = self.parse(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        docs.into_iter().next().expect("a document")
    }

    /// Every YAML document of that `kind` under `deploy/`, with its path.
    fn yaml(&self, kind: &str) -> Vec<(String, Yaml)> {
        let mut found = Vec::new();
        for path in self.files("yaml yml") {
            for doc in self.parse(path).unwrap_or_else(|e| panic!("{path}: {e}")) {
                if doc["kind"].as_str() == Some(kind) {
                    found.push((path.to_string(), doc));
                }
            }
        }
        found
    }

    fn the_spinapp(&self) -> Yaml {
        let mut apps = self.yaml("SpinApp");
        assert_eq!(apps.len(), 1, "one SpinApp under deploy/");
        apps.remove(0).1
    }

    fn spin_manifests(&self) -> Vec<&str> {
        let tomls = self.files("toml").into_iter();
        tomls.filter(|p| p.ends_with("/spin.toml")).collect()
    }

    /// The shell commands of every Markdown and shell file under `deploy/`,
    /// each with where it is (`path line N`).
    fn commands(&self) -> Vec<(String, Command)> {
        let mut found = Vec::new();
        for path in self.files("md sh") {
            for c in commands(self.text(path), path.ends_with(".md")) {
                found.push((format!("{path} line {}", c.line), c));
            }
        }
        found
    }

    /// The settings each Secret template and each command writes, by where.
    fn written_settings(&self) -> Vec<(String, BTreeMap<String, String>)> {
        let secrets = self.yaml("Secret").into_iter();
        let secrets = secrets.map(|(p, s)| (p, secret_values(&s)));
        let commands = self
            .commands()
            .into_iter()
            .map(|(at, c)| (at, c.settings()));
        secrets.chain(commands).collect()
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

    fn words(&self) -> Vec<String> {
        self.text().split_whitespace().map(str::to_string).collect()
    }

    /// Whether it runs `program` (e.g. "spin aka deploy"), the words in a row.
    fn runs(&self, program: &str) -> bool {
        let program: Vec<&str> = program.split(' ').collect();
        self.words().windows(program.len()).any(|w| w == program)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.lines.iter().flat_map(|l| settings(l)).collect()
    }

    /// The keys its `--from-file=key=path` (or `=path`: the file's name) make.
    fn file_keys(&self) -> BTreeSet<String> {
        let words = self.words();
        let files = words.iter().filter_map(|w| w.strip_prefix("--from-file="));
        let key = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
        files
            .map(|f| f.split_once('=').map_or_else(|| key(f), |kv| kv.0.into()))
            .collect()
    }

    /// The word after `flag` (`-f path`, `--from=path`), quotes removed.
    fn flag(&self, flags: &[&str]) -> Option<String> {
        let words = self.words();
        let value = words.windows(2).find(|w| flags.contains(&w[0].as_str()));
        value.map(|w| w[1].trim_matches(['"', '\'']).to_string())
    }
}

/// The commands that run `program`.
fn running<'a>(commands: &'a [Command], program: &str) -> Vec<&'a Command> {
    commands.iter().filter(|c| c.runs(program)).collect()
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
        let comment = raw.trim_start().starts_with('#');
        let code = if comment {
            ""
        } else {
            raw.split(" #").next().unwrap_or("")
        };
        let continued = code.trim_end().strip_suffix('\\');
        let (code, continues) = continued.map_or((code.trim(), false), |c| (c.trim(), true));
        if !in_code || (code.is_empty() && current.is_none()) {
            continue;
        }
        let before = lines[index.saturating_sub(3)..index].join("\n");
        let line = index + 1;
        let command = current.get_or_insert_with(|| Command {
            line,
            lines: vec![],
            before,
        });
        command.lines.push(code.to_string());
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

/// Each place a `SETTING_MARKERS` marker is written in `text`: the marker,
/// what is before it and what follows it.
fn markers(text: &str) -> Vec<(&str, &str, &str)> {
    let mut found = Vec::new();
    for marker in SETTING_MARKERS {
        for (at, _) in text.match_indices(marker) {
            found.push((marker, &text[..at], &text[at + marker.len()..]));
        }
    }
    found
}

/// A variable's name as written after `marker` (`SPIN_VARIABLE_X` names `x`).
fn variable_name(marker: &str, rest: &str) -> String {
    let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
    match marker {
        "SPIN_VARIABLE_" => name.to_ascii_lowercase(),
        _ => name,
    }
}

/// The Spin variables one line sets (`--variable name=value`,
/// `--from-literal=name=value`, `SPIN_VARIABLE_NAME=value`), each value as
/// written without its outer quotes: `$` in it means it comes from the shell.
fn settings(line: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (marker, before, rest) in markers(line) {
        if before.ends_with(|c: char| is_name_char(c) || c == '$' || c == '{') {
            continue; // a read (`$SPIN_VARIABLE_X`), not a setting
        }
        let rest = rest.trim_start();
        let quote = rest.chars().next().filter(|c| matches!(c, '"' | '\''));
        let rest = &rest[quote.map_or(0, char::len_utf8)..];
        let name = variable_name(marker, rest);
        let Some(value) = rest[name.len()..].strip_prefix('=') else {
            continue;
        };
        // Up to the next option, quotes (around the pair or the value) removed.
        let value = value.split(" --").next().unwrap_or("");
        let value = value.trim().trim_end_matches('\\');
        let value_quote = value.chars().next().filter(|c| matches!(c, '"' | '\''));
        let value = match quote.or(value_quote) {
            Some(q) => {
                let unquoted = value.trim().trim_start_matches(q).rsplit_once(q);
                unquoted.map_or(value, |(v, _)| v)
            }
            None => value.split_whitespace().next().unwrap_or(""),
        };
        found.push((name, value.to_string()));
    }
    found
}

/// Variable names anywhere in a text, set or read.
fn variable_mentions(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (marker, _, rest) in markers(text) {
        let name = variable_name(marker, rest.trim_start_matches(['"', '\'', ' ']));
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

// ---------------------------------------------------------------------------
// Reading the tree (TOML and YAML alike)

fn text(value: &Yaml) -> &str {
    value.as_str().unwrap_or("")
}

fn seq(value: &Yaml) -> Vec<&Yaml> {
    value.as_sequence().into_iter().flatten().collect()
}

fn entries(value: &Yaml) -> Vec<(&str, &Yaml)> {
    let entries = value.as_mapping().into_iter().flatten();
    entries.map(|(k, v)| (text(k), v)).collect()
}

fn keys(value: &Yaml) -> BTreeSet<String> {
    let entries = entries(value).into_iter();
    entries.map(|(k, _)| k.to_string()).collect()
}

/// Space-separated words as a set, to compare with `keys`.
fn words(words: &str) -> BTreeSet<String> {
    words.split(' ').map(str::to_string).collect()
}

/// What the components of a manifest list under `key`, all together.
fn union(manifest: &Yaml, key: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, component) in entries(&manifest["component"]) {
        found.extend(seq(&component[key]).into_iter().map(|v| text(v).into()));
    }
    found
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
    let postgres = url.strip_prefix("postgres://");
    let rest = postgres.or_else(|| url.strip_prefix("postgresql://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(with_default_port(host))
}

fn with_default_port(host_port: &str) -> String {
    let port = host_port.rsplit_once(':').map(|(_, p)| p);
    match port.filter(|_| !host_port.ends_with(']')) {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => host_port.to_string(),
        _ => format!("{host_port}:5432"),
    }
}

/// A Secret's values, from `stringData` and (base64) `data`.
fn secret_values(secret: &Yaml) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for (k, v) in entries(&secret["stringData"]) {
        values.insert(k.to_string(), text(v).to_string());
    }
    let base64 = base64::engine::general_purpose::STANDARD;
    for (k, v) in entries(&secret["data"]) {
        let decoded = base64.decode(text(v).trim()).expect("base64");
        values.insert(k.to_string(), String::from_utf8_lossy(&decoded).into());
    }
    values
}

/// A Kubernetes quantity (`100m`, `1`, `128Mi`) as a number.
fn quantity(value: &Yaml) -> Option<f64> {
    let number = value.as_f64().map(|n| n.to_string());
    let text = value.as_str().map(str::to_string).or(number)?;
    let binary = [("Ki", 1), ("Mi", 2), ("Gi", 3)].map(|(s, p)| (s, 1024f64.powi(p)));
    let decimal = [("m", 1e-3), ("k", 1e3), ("M", 1e6), ("G", 1e9)];
    for (suffix, factor) in binary.into_iter().chain(decimal) {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    text.parse::<f64>().ok()
}

/// `path` is the router's public health check, and a trigger of spin.toml serves it.
fn public_health_path(repo: &Repo, path: &str, what: &str, out: &mut Findings) {
    let routed = route("GET", path).ok();
    let public = routed.is_some_and(|r| !r.protected && r.endpoint == Ok(Endpoint::Health));
    let health = path == HEALTH_PATH && public;
    need!(out, health, "{what}: {path} is not public");
    let manifest = repo.doc("spin.toml");
    let mut served = false;
    for trigger in seq(&manifest["trigger"]["http"]) {
        let route = text(&trigger["route"]);
        let prefix = route.strip_suffix("/...").map(|p| format!("{p}/"));
        served |= route == path || prefix.is_some_and(|p| path.starts_with(&p));
    }
    need!(out, served, "{what}: spin.toml does not serve {path}");
}

// ---------------------------------------------------------------------------
// The checks

/// Every file parses (TOML, YAML; a script is executable with a `#!` line),
/// and each platform folder has its README.
fn files_parse(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for path in repo.files("toml yaml yml") {
        let parsed = repo.parse(path);
        let ok = parsed.as_ref().is_ok_and(|d| !d.is_empty());
        need!(out, ok, "{path}: {parsed:?}");
    }
    for path in repo.files("sh") {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            let mode = std::fs::metadata(file).map_or(0, |m| m.permissions().mode());
            need!(out, mode & 0o111 != 0, "{path}: not executable");
        }
        need!(out, repo.text(path).starts_with("#!"), "{path}: no #! line");
    }
    let all = repo.0.keys().filter(|p| p.starts_with("deploy/")).count();
    let known = repo.files("toml yaml yml sh md").len();
    out.same("files of known kinds", known, all);
    for folder in ["spinkube", "fermyon-cloud", "runtime-config", "akamai"] {
        let readme = format!("deploy/{folder}/README.md");
        need!(out, repo.0.contains_key(&readme), "{readme} is missing");
    }
    let (yaml, toml) = (repo.files("yaml yml").len(), repo.files("toml").len());
    need!(out, yaml >= 4 && toml >= 4, "{yaml} YAML, {toml} TOML");
    out
}

/// spin.toml declares every setting and passes it to the component; its
/// only other variable is the PostgreSQL host it may reach; no default secret.
fn manifest_variables_are_the_settings(repo: &Repo) -> Findings {
    let (mut out, m) = (Findings::new(), repo.doc("spin.toml"));
    let declared = &m["variables"];
    let passed = &m["component"]["book-catalog"]["variables"];
    let mut others = keys(declared);
    for name in Setting::ALL.map(Setting::variable_name) {
        need!(out, others.remove(name), "{name} is not declared");
        let template = format!("{{{{ {name} }}}}");
        out.same(name, passed[name].as_str(), Some(template.as_str()));
    }
    out.same("variables not settings", others, words("db_host"));
    let hosts = union(&m, "allowed_outbound_hosts");
    need!(out, hosts.contains("postgres://{{ db_host }}"), "{hosts:?}");
    let default = declared["secret_token"]["default"].as_str();
    out.same("secret_token's default", default, Some(""));
    out
}

/// A manifest without what a deploy manifest may change: the application's
/// name and description, `client_ip_header`'s default, each component's
/// source, SQLite databases and build.
fn comparable(manifest: &Yaml) -> Yaml {
    let mut m = manifest.clone();
    m.as_mapping_mut().expect("a table").remove("application");
    let variables = m.get_mut("variables").and_then(Yaml::as_mapping_mut);
    let header = variables.and_then(|v| v.get_mut("client_ip_header"));
    if let Some(header) = header.and_then(Yaml::as_mapping_mut) {
        header.remove("default");
    }
    let components = m.get_mut("component").and_then(Yaml::as_mapping_mut);
    for component in components.into_iter().flat_map(|c| c.values_mut()) {
        for key in ["source", "sqlite_databases", "build"] {
            component.as_mapping_mut().map(|c| c.remove(key));
        }
    }
    m
}

/// deploy/akamai and deploy/postgres-only are spin.toml (its variables,
/// secret ones included, defaults, component, routes and hosts) but for
/// serving `make variants`' PostgreSQL-only build, without SQLite.
fn deploy_manifests_keep_spin_toml(repo: &Repo) -> Findings {
    let (mut out, main) = (Findings::new(), repo.doc("spin.toml"));
    let paths = repo.spin_manifests();
    let expected = ["deploy/akamai/spin.toml", "deploy/postgres-only/spin.toml"];
    out.same("Spin manifests under deploy/", &paths[..], &expected[..]);
    let makefile = repo.text("Makefile");
    let variants = makefile.contains("\nvariants:") && makefile.contains(POSTGRES_ONLY_WASM);
    need!(out, variants, "`make variants` writes no variant");
    for path in paths {
        let m = repo.doc(path);
        let same = comparable(&m) == comparable(&main);
        need!(out, same, "{path}: not spin.toml");
        let dir = path.trim_end_matches("/spin.toml");
        for (id, c) in entries(&m["component"]) {
            let source = resolve(dir, text(&c["source"]));
            out.same(format!("{path}: {id}"), source.as_str(), POSTGRES_ONLY_WASM);
            let build = c["build"]["command"].as_str();
            out.same(format!("{path}: {id}"), build, Some("make variants"));
            let workdir = resolve(dir, c["build"]["workdir"].as_str().unwrap_or("."));
            need!(out, workdir.is_empty(), "{path}: {id}: builds in {workdir}");
            need!(out, c["sqlite_databases"].is_null(), "{path}: {id}: SQLite");
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
        let kind = text(&expected["kind"]);
        let found = repo.yaml(kind);
        out.same(kind, found.len(), 1);
        let held = found.iter().all(|(_, doc)| holds(doc, &expected));
        need!(out, held, "the {kind} is not as SPINKUBE says");
    }
    let (app, manifest) = (repo.the_spinapp(), repo.doc("spin.toml"));
    let spec = &app["spec"];
    let components: Vec<&str> = seq(&spec["components"]).into_iter().map(text).collect();
    let ids = entries(&manifest["component"]).into_iter().map(|e| e.0);
    out.same("components", components, ids.collect());
    let fields = words(
        "executor image imagePullSecrets checks replicas enableAutoscaling runtimeConfig volumes \
         volumeMounts variables serviceAnnotations deploymentAnnotations podAnnotations podLabels \
         resources components serviceAccountName invocationLimits",
    );
    out.same("spec fields", &keys(spec) - &fields, BTreeSet::new());
    need!(out, !text(&spec["image"]).is_empty(), "no image");
    let resources = &spec["resources"];
    out.same("resources", keys(resources), words("limits requests"));
    for resource in ["cpu", "memory"] {
        let request = quantity(&resources["requests"][resource]).unwrap_or(0.0);
        let limit = quantity(&resources["limits"][resource]).unwrap_or(0.0);
        let within = 0.0 < request && request <= limit;
        need!(out, within, "{resource}: {request} > {limit}");
    }
    out.same("checks", keys(&spec["checks"]), words("liveness readiness"));
    let probe_fields = words(
        "httpGet initialDelaySeconds timeoutSeconds periodSeconds successThreshold failureThreshold",
    );
    for check in ["liveness", "readiness"] {
        let probe = &spec["checks"][check];
        out.same(check, &keys(probe) - &probe_fields, BTreeSet::new());
        public_health_path(repo, text(&probe["httpGet"]["path"]), check, &mut out);
        let timeout = probe["timeoutSeconds"].as_u64().unwrap_or(1);
        need!(out, timeout > 5, "{check}.timeoutSeconds {timeout} <= 5");
    }
    let variables = seq(&spec["variables"]).into_iter();
    let variables: BTreeMap<&str, &Yaml> = variables.map(|v| (text(&v["name"]), v)).collect();
    // SpinVar.value is a string: an unquoted 1 is refused by the CRD.
    let hops = variables.get("trusted_proxy_hops").map(|v| &v["value"]);
    out.same("trusted_proxy_hops", hops.and_then(Yaml::as_str), Some("1"));
    for other in ["client_ip_header", "trust_forwarded_for"] {
        need!(out, !variables.contains_key(other), "{other}: one proxy");
    }
    for (_, policy) in repo.yaml("NetworkPolicy") {
        let pods = keys(&policy["spec"]["podSelector"]["matchLabels"]);
        out.same("pod selector", pods.len(), 1);
        for rule in seq(&policy["spec"]["ingress"]) {
            // An ipBlock, an empty selector or none at all admits clients.
            let labelled = |peer: &Yaml, s: &str| !keys(&peer[s]["matchLabels"]).is_empty();
            let named = |peer: &&Yaml| {
                let selected = labelled(peer, "namespaceSelector") && labelled(peer, "podSelector");
                peer["ipBlock"].is_null() && selected
            };
            let peers = seq(&rule["from"]);
            let named = !peers.is_empty() && peers.iter().all(named);
            need!(out, named, "admits clients");
        }
    }
    out
}

/// spin-operator's SpinAppExecutor (943f5b17,
/// config/crd/bases/core.spinkube.dev_spinappexecutors.yaml): each field of
/// `spec` with its type, an object as its fields.
const EXECUTOR_SPEC: &str = r#"
createDeployment: boolean
deploymentConfig:
  runtimeClassName: string
  spinImage: string
  caCertSecret: string
  installDefaultCACerts: boolean
  otel:
    exporter_otlp_endpoint: string
    exporter_otlp_traces_endpoint: string
    exporter_otlp_metrics_endpoint: string
    exporter_otlp_logs_endpoint: string
"#;
/// The key of `caCertSecret` the operator mounts (internal/controller/deployment.go).
const CA_KEY: &str = "ca-certificates.crt";

/// `value` has only fields of `schema` (EXECUTOR_SPEC's form), of their types.
fn typed(value: &Yaml, schema: &Yaml, at: &str, out: &mut Findings) {
    let kind = schema.as_str().unwrap_or("mapping");
    let right = match kind {
        "string" => value.is_string(),
        "boolean" => value.is_bool(),
        _ => value.is_mapping(),
    };
    need!(out, right, "{at}: not a {kind}");
    for (key, field) in entries(value).into_iter().filter(|_| schema.is_mapping()) {
        let known = !schema[key].is_null();
        need!(out, known, "{at}.{key}: not a field");
        if known {
            typed(field, &schema[key], &format!("{at}.{key}"), out);
        }
    }
}

/// The port and path of an `http(s)://host:port[/path]` URL.
fn http_url_port_path(url: &str) -> Option<(u16, &str)> {
    let http = url.strip_prefix("http://");
    let rest = http.or_else(|| url.strip_prefix("https://"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = authority.rsplit_once(':')?;
    let host = !host.is_empty() && !host.contains(['@', '?', '#']);
    Some((port.parse().ok().filter(|p| *p > 0 && host)?, path))
}

/// The SpinApp runs on the one SpinAppExecutor, which has only the CRD's
/// fields, of their types, and makes the deployment on one of a RuntimeClass
/// and an image (as the operator's webhook wants). Its `caCertSecret` is made
/// by `kubectl create secret generic`, each time with the key the operator
/// mounts, and not by the operator (`installDefaultCACerts` would fill it
/// with public roots only). Its OTLP endpoints are http(s) URLs with a port,
/// not gRPC's 4317 (Spin sends OTLP/HTTP; the executor sets no protocol), the
/// combined one without a path (Spin appends `/v1/traces` and the like).
fn spinkube_executor_trusts_the_database_ca_and_sets_otel(repo: &Repo) -> Findings {
    let (mut out, executors) = (Findings::new(), repo.yaml("SpinAppExecutor"));
    out.same("SpinAppExecutors", executors.len(), 1);
    let Some((_, executor)) = executors.first() else {
        return out;
    };
    let (spec, config) = (&executor["spec"], &executor["spec"]["deploymentConfig"]);
    let schema: Yaml = serde_yaml::from_str(EXECUTOR_SPEC).expect("YAML");
    typed(spec, &schema, "spec", &mut out);
    let create = spec["createDeployment"].as_bool();
    out.same("createDeployment", create, Some(true));
    let one = config["runtimeClassName"].is_null() != config["spinImage"].is_null();
    need!(out, one, "not one of runtimeClassName and spinImage");
    let (app, name) = (repo.the_spinapp(), &executor["metadata"]["name"]);
    out.same("executor", &app["spec"]["executor"], name);
    let secret = text(&config["caCertSecret"]);
    let operator = config["installDefaultCACerts"].as_bool() == Some(true);
    need!(out, !operator, "installDefaultCACerts: {secret}");
    let mut made = 0;
    for (at, c) in repo.commands() {
        let named = c.flag(&["generic"]).is_some_and(|n| n == secret);
        if c.runs("kubectl create secret generic") && named {
            let key = c.file_keys().contains(CA_KEY);
            need!(out, key, "{at}: {secret} without {CA_KEY}");
            made += 1;
        }
    }
    need!(out, made > 0, "{secret:?}: no `kubectl create`");
    for (key, url) in entries(&config["otel"]) {
        let (port, path) = http_url_port_path(text(url)).unwrap_or((0, ""));
        let base = key != "exporter_otlp_endpoint" || path.trim_matches('/').is_empty();
        need!(out, port != 0 && port != 4317 && base, "{key}: {url:?}");
    }
    let endpoint = config["otel"]["exporter_otlp_endpoint"].is_string();
    need!(out, endpoint, "no OTLP endpoint");
    out
}

/// The SpinApp sets only spin.toml's variables, each once; credentials come
/// from the Secret that `kubectl create secret generic` makes (and
/// secret.yaml templates), and every key of it is read.
fn spinapp_credentials_come_from_the_secret(repo: &Repo) -> Findings {
    let (mut out, app) = (Findings::new(), repo.the_spinapp());
    let manifest = &repo.doc("spin.toml")["variables"];
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
        let keys = secret_values(&secret).into_keys().collect();
        templates.insert(text(&secret["metadata"]["name"]).into(), keys);
    }
    let (mut names, mut read) = (BTreeSet::new(), BTreeSet::new());
    for var in seq(&app["spec"]["variables"]) {
        let name = text(&var["name"]);
        need!(out, names.insert(name), "{name} set twice");
        need!(out, !manifest[name].is_null(), "{name}: not in spin.toml");
        let one = var["value"].is_null() != var["valueFrom"].is_null();
        need!(out, one, "{name}: not one of value and valueFrom");
        let reference = &var["valueFrom"]["secretKeyRef"];
        let secret = manifest[name]["secret"] == Yaml::Bool(true);
        let credential = secret || ["db_url", "auth_username"].contains(&name);
        let ok = !credential || !reference.is_null();
        need!(out, ok, "{name}: not from a Secret");
        let secret = text(&reference["name"]).to_string();
        let key = text(&reference["key"]).to_string();
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

/// No signing secret a reader could use (32 bytes or more) in a Secret
/// template, a command or a manifest default.
fn no_usable_signing_secret(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    for (what, values) in repo.written_settings() {
        for value in SIGNING_SECRETS.into_iter().filter_map(|s| values.get(s)) {
            // `$`: generated or read from the shell when the command runs.
            let usable = !value.contains('$') && value.len() >= MIN_SECRET_BYTES;
            need!(out, !usable, "{what}: a usable signing secret");
            checked += 1;
        }
    }
    for path in repo.spin_manifests() {
        let manifest = repo.doc(path);
        for name in SIGNING_SECRETS {
            let default = manifest["variables"][name]["default"].as_str();
            out.same(format!("{path}: {name}"), default, Some(""));
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
    let granted = union(&repo.doc("spin.toml"), "sqlite_databases");
    for path in repo.files("toml") {
        if !path.starts_with("deploy/runtime-config/") {
            continue;
        }
        let doc = repo.doc(path);
        out.same(path, keys(&doc), words("sqlite_database"));
        for (label, db) in entries(&doc["sqlite_database"]) {
            need!(out, granted.contains(label), "{path}: {label} not granted");
            let kind = db["type"].as_str().unwrap_or("spin");
            let (path_, url) = (text(&db["path"]), text(&db["url"]));
            let right = match kind {
                "spin" => keys(db) == words("path type") && path_.starts_with('/'),
                "libsql" => {
                    let remote = url.starts_with("https://") || url.starts_with("libsql://");
                    keys(db) == words("token type url") && remote
                }
                _ => false,
            };
            need!(out, right, "{path}: {label}: type {kind}");
            types.insert(kind.to_string());
        }
    }
    out.same("types", types, words("libsql spin"));
    out
}

/// Every variable a file names is one of spin.toml, and the instructions set
/// the ones each platform needs.
fn every_variable_named_is_a_manifest_variable(repo: &Repo) -> Findings {
    let (mut out, mut seen) = (Findings::new(), BTreeSet::new());
    let variables = keys(&repo.doc("spin.toml")["variables"]);
    for path in repo.files("toml yaml yml md sh") {
        for name in variable_mentions(repo.text(path)) {
            need!(out, variables.contains(&name), "{path}: {name}?");
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
    for (at, c) in repo.commands() {
        let says = format!("{}\n{}", c.before, c.text()).contains("3.4");
        let up = c.runs("spin up") && c.text().contains("--variable");
        need!(out, !up || says, "{at}: say Spin 3.4");
    }
    out
}

/// No bare `spin deploy` (Spin 4 asks which plugin); the plugins' own deploys instead.
fn no_bare_spin_deploy(repo: &Repo) -> Findings {
    let (mut out, mut plugin) = (Findings::new(), 0);
    for (at, c) in repo.commands() {
        let bare = c.runs("spin deploy") && !c.text().contains("SPIN_DEPLOY_PLUGIN=");
        need!(out, !bare, "{at}: a bare `spin deploy`");
        plugin += usize::from(c.runs("spin cloud deploy") || c.runs("spin aka deploy"));
    }
    need!(out, plugin >= 3, "{plugin} plugin deploys");
    out
}

/// Every URL the READMEs `curl` is routed; `/health` is the public health check.
fn every_path_curled_is_routed(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    for path in repo.files("md") {
        let lines = repo.text(path).lines().filter(|l| l.contains("curl "));
        for word in lines.flat_map(str::split_whitespace) {
            let Some((_, url)) = word.split_once("://") else {
                continue;
            };
            let request = url.find('/').map_or("/", |i| &url[i..]);
            let request = request.trim_end_matches(['\'', '"', '`']);
            need!(out, route("GET", request).is_ok(), "{path}: {request}");
            if request == HEALTH_PATH {
                public_health_path(repo, request, path, &mut out);
            }
            checked += 1;
        }
    }
    need!(out, checked >= 4, "the READMEs do not curl /health");
    out
}

/// Wherever both are written, `db_host` is the `host:port` of `db_url`: the
/// manifest allows `postgres://{{ db_host }}` only.
fn db_host_is_the_host_of_db_url(repo: &Repo) -> Findings {
    let (mut out, mut checked) = (Findings::new(), 0);
    for (what, settings) in repo.written_settings() {
        let host = settings.get("db_host").filter(|h| !h.contains('$'));
        if let (Some(url), Some(host)) = (settings.get("db_url"), host) {
            let host = Some(with_default_port(host));
            out.same(format!("{what}: db_host"), host, postgres_host_port(url));
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
    for path in repo.files("toml yaml yml md sh") {
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
    let readmes = "deploy/spinkube/README.md deploy/spinkube/spinapp.yaml deploy/akamai/README.md";
    for path in readmes.split(' ') {
        // The words, comment markers left out: a sentence may span comment lines.
        let lines = repo.text(path).lines();
        let lines = lines.map(|l| l.trim_start().trim_start_matches('#'));
        let words: Vec<&str> = lines.flat_map(str::split_whitespace).collect();
        let text = words.join(" ").replace('`', "");
        for said in "sslmode=require|sslmode=disable|host name|except disable".split('|') {
            need!(out, text.contains(said), "{path}: say {said:?}");
        }
    }
    out
}

/// Akamai: the PostgreSQL-only build, `client_ip_header = true-client-ip`
/// (its edge's header), and a `spin aka deploy` that sets what it needs.
fn akamai_deploys_the_postgres_only_build_with_true_client_ip(repo: &Repo) -> Findings {
    let (path, readme) = ("deploy/akamai/spin.toml", "deploy/akamai/README.md");
    let (mut out, akamai) = (Findings::new(), repo.doc(path));
    let header = akamai["variables"]["client_ip_header"]["default"].as_str();
    let header = header.map(|h| h.trim().to_ascii_lowercase());
    out.same("default header", header.as_deref(), Some("true-client-ip"));
    for (id, c) in entries(&akamai["component"]) {
        need!(out, seq(&c["sqlite_databases"]).is_empty(), "{id}: SQLite");
        let passed = c["variables"]["client_ip_header"].as_str();
        out.same("client_ip_header", passed, Some("{{ client_ip_header }}"));
    }
    let commands = commands(repo.text(readme), true);
    let variants = commands.iter().any(|c| c.runs("make variants"));
    need!(out, variants, "no `make variants`");
    let deploys = running(&commands, "spin aka deploy");
    need!(out, !deploys.is_empty(), "no `spin aka deploy`");
    for deploy in &deploys {
        let from = deploy.flag(&["-f", "--from"]).unwrap_or_default();
        let postgres_only = [path, "deploy/postgres-only/spin.toml"].contains(&from.as_str());
        need!(out, postgres_only, "line {}: -f {from:?}", deploy.line);
        let header = deploy.settings().get("client_ip_header").cloned();
        let right = header
            .as_deref()
            .map_or(from == path, |h| h == "true-client-ip");
        need!(out, right, "client_ip_header {header:?}");
    }
    let first = deploys.first().map(|c| c.settings()).unwrap_or_default();
    for needed in "db_url db_host secret_token auth_username client_ip_header".split(' ') {
        need!(out, first.contains_key(needed), "no {needed}");
    }
    let password = first.contains_key("auth_password_hash") || first.contains_key("auth_password");
    need!(out, password, "the deploy sets no password");
    let said = repo.text(readme).contains("nothing was deployed");
    need!(out, said, "{readme}: say that nothing was deployed");
    out
}

/// Fermyon Cloud: `spin cloud deploy` in the README and in deploy.sh, linking
/// only SQLite labels spin.toml grants, naming spin.toml's application.
fn fermyon_cloud_deploys_with_the_cloud_plugin(repo: &Repo) -> Findings {
    let (mut out, m) = (Findings::new(), repo.doc("spin.toml"));
    let granted = union(&m, "sqlite_databases");
    let app = m["application"]["name"].as_str();
    let (mut deploys, mut links) = (0, 0);
    for file in ["README.md", "deploy.sh"] {
        let path = format!("deploy/fermyon-cloud/{file}");
        let path = path.as_str();
        let commands = commands(repo.text(path), path.ends_with(".md"));
        let here = running(&commands, "spin cloud deploy").len();
        need!(out, here >= 1, "{path}: no `spin cloud deploy`");
        deploys += here;
        for words in commands.iter().map(Command::words) {
            let words: Vec<&str> = words.iter().map(|w| w.trim_matches(['"', '\''])).collect();
            for pair in words.windows(2) {
                if pair[0] == "--link" {
                    let link = pair[1].strip_prefix("sqlite:").unwrap_or("");
                    let label = link.split_once('=').map_or("", |(label, _)| label);
                    need!(out, granted.contains(label), "--link {}", pair[1]);
                    links += 1;
                }
                if pair[0] == "--app" {
                    out.same("--app", Some(pair[1]), app);
                }
            }
        }
    }
    let enough = deploys >= 2 && links >= 2;
    need!(out, enough, "{deploys} deploys, {links} --link");
    out
}

/// Each platform README gives the exact commands and says what was verified
/// and what was not run.
fn readmes_say_what_was_verified(repo: &Repo) -> Findings {
    let mut out = Findings::new();
    for folder in ["akamai", "fermyon-cloud", "spinkube"] {
        let text = repo.text(&format!("deploy/{folder}/README.md"));
        let mut headings = text.lines().filter(|l| l.starts_with('#'));
        let section = headings.any(|l| l.contains("verified"));
        need!(out, section, "{folder}: no section on what was verified");
        need!(out, text.contains("Not run"), "{folder}: what was not run");
        let commands = commands(text, true).len();
        need!(out, commands >= 3, "{folder}: {commands} commands");
    }
    out
}

// ---------------------------------------------------------------------------
// Tests

type Check = fn(&Repo) -> Findings;

macro_rules! named {
    ($($check:ident),* $(,)?) => { [$((stringify!($check), $check as Check)),*] };
}

const CHECKS: [(&str, Check); 17] = named![
    files_parse,
    manifest_variables_are_the_settings,
    deploy_manifests_keep_spin_toml,
    spinkube_runs_three_replicas_behind_its_ingress_only,
    spinkube_executor_trusts_the_database_ca_and_sets_otel,
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
    let mut failed = Vec::new();
    for (name, check) in CHECKS {
        failed.extend(check(&repo).into_iter().map(|f| format!("{name}: {f}")));
    }
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
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | caCertSecret: book-catalog-ca | caCertSecrets: book-catalog-ca
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | installDefaultCACerts: false | installDefaultCACerts: "false"
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | installDefaultCACerts: false | installDefaultCACerts: true
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | runtimeClassName: wasmtime-spin-v2 | runtimeClassName: wasmtime-spin-v2\n    spinImage: ghcr.io/spinframework/spin:v3.6.3
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/spinapp.yaml | executor: book-catalog-shim | executor: containerd-shim-spin
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | caCertSecret: book-catalog-ca | caCertSecret: books-db-ca
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/README.md | generic book-catalog-ca --from-file=ca-certificates.crt= | generic book-catalog-ca --from-file=ca.crt=
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | http://otel-collector.observability:4318 | otel-collector.observability:4318
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | :4318 | :4317
spinkube_executor_trusts_the_database_ca_and_sets_otel | deploy/spinkube/executor.yaml | :4318 | :4318/v1/traces
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
db_host_is_the_host_of_db_url | deploy/spinkube/secret.yaml | db_host: "books-db-rw.books.svc:5432" | db_host: "books-db-rw.books.svc:5433"
db_host_is_the_host_of_db_url | deploy/spinkube/README.md | db_host=books-db-rw.books.svc:5432 | db_host=books-db-rw:5432
postgres_tls_modes_are_ones_spin_accepts | deploy/akamai/README.md | 5432/books?sslmode=require | 5432/books?sslmode=verify-full
postgres_tls_modes_are_ones_spin_accepts | deploy/spinkube/secret.yaml | books?sslmode=require | books?user=u&sslmode=allow
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
    let (repo, mut untested) = (Repo::load(), BTreeSet::from(CHECKS.map(|(name, _)| name)));
    for example in BROKEN.trim().lines().map(|l| l.replace("\\n", "\n")) {
        let fields: Vec<&str> = example.split('|').map(str::trim).collect();
        let [check, file, text, replacement] = fields[..] else {
            panic!("{example:?}")
        };
        let (_, run) = CHECKS.into_iter().find(|(n, _)| *n == check).expect(check);
        let mut broken = repo.clone();
        let original = broken.0.get_mut(file).expect(file);
        assert!(original.contains(text), "{file} has no {text:?}");
        *original = original.replacen(text, replacement, 1);
        let refused = !run(&broken).is_empty();
        assert!(refused, "{check} passes {text:?} -> {replacement:?}");
        untested.remove(check);
    }
    assert!(untested.is_empty(), "no broken example: {untested:?}");
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
