//! The deployment files under `deploy/` must agree with `spin.toml`, the
//! router and the settings, so that they cannot drift: every file parses;
//! every variable they name is a variable of the manifest, and every manifest
//! variable is a setting (or the PostgreSQL host the manifest allows); the
//! other manifests keep the variables, component, routes and allowed hosts;
//! the SpinApp runs the component with three replicas, resources, probes on
//! the public health path, credentials from a Secret and one trusted proxy,
//! behind an Ingress that only it may be reached through; no file ships a
//! usable signing secret, runs a bare `spin deploy` or a `spin up --variable`
//! that Spin 2.6 lacks; every `db_host` is the `host:port` of its `db_url`
//! and every `sslmode` one Spin accepts; Akamai gets the PostgreSQL-only
//! build and `client_ip_header = true-client-ip`; Fermyon Cloud gets the
//! cloud plugin. `checks_catch_bad_examples` shows each text check failing
//! on a bad example.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component as PathPart, Path, PathBuf};

use base64::Engine as _;
use book_catalog::router::{route, Endpoint, HEALTH_PATH};
use book_catalog::settings::{parse_header_name, parse_proxy_hops, Setting, MIN_SECRET_BYTES};
use serde_yaml::Value as Yaml;
use toml::Value as Toml;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A path relative to the repository root, for messages.
fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `a/b/../c` -> `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            PathPart::ParentDir => {
                out.pop();
            }
            PathPart::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Manifests

#[derive(Debug)]
struct Variable {
    secret: bool,
    default: Option<String>,
}

#[derive(Debug)]
struct Component {
    source: String,
    sqlite_databases: BTreeSet<String>,
    allowed_outbound_hosts: BTreeSet<String>,
    /// Component variable -> its template, e.g. `"{{ db_url }}"`.
    variables: BTreeMap<String, String>,
    build_command: Option<String>,
    build_workdir: Option<String>,
}

/// What the deployment files must agree with, from a Spin manifest.
#[derive(Debug)]
struct Manifest {
    path: PathBuf,
    name: String,
    variables: BTreeMap<String, Variable>,
    components: BTreeMap<String, Component>,
    /// (route, component) of every HTTP trigger.
    routes: BTreeSet<(String, String)>,
}

impl Manifest {
    fn component_ids(&self) -> BTreeSet<String> {
        self.components.keys().cloned().collect()
    }

    fn union(&self, field: impl Fn(&Component) -> &BTreeSet<String>) -> BTreeSet<String> {
        self.components.values().flat_map(field).cloned().collect()
    }

    fn allowed_outbound_hosts(&self) -> BTreeSet<String> {
        self.union(|c| &c.allowed_outbound_hosts)
    }

    fn sqlite_databases(&self) -> BTreeSet<String> {
        self.union(|c| &c.sqlite_databases)
    }
}

fn manifest(path: &Path) -> Manifest {
    let what = rel(path);
    let doc: Toml = toml::from_str(&read(path)).unwrap_or_else(|e| panic!("{what}: {e}"));
    let variables = doc["variables"]
        .as_table()
        .unwrap_or_else(|| panic!("{what}: [variables]"))
        .iter()
        .map(|(name, spec)| {
            let variable = Variable {
                secret: spec.get("secret").and_then(Toml::as_bool).unwrap_or(false),
                default: spec
                    .get("default")
                    .and_then(Toml::as_str)
                    .map(str::to_string),
            };
            (name.clone(), variable)
        })
        .collect();
    let strings = |c: &Toml, key: &str| -> BTreeSet<String> {
        c.get(key)
            .and_then(Toml::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().expect("a string").to_string())
            .collect()
    };
    let components = doc["component"]
        .as_table()
        .unwrap_or_else(|| panic!("{what}: [component.*]"))
        .iter()
        .map(|(id, c)| {
            let build = c.get("build");
            let build_str = |key: &str| {
                build
                    .and_then(|b| b.get(key))
                    .and_then(Toml::as_str)
                    .map(str::to_string)
            };
            let component = Component {
                source: c["source"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: {id}: source"))
                    .to_string(),
                sqlite_databases: strings(c, "sqlite_databases"),
                allowed_outbound_hosts: strings(c, "allowed_outbound_hosts"),
                variables: c
                    .get("variables")
                    .and_then(Toml::as_table)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("a template").to_string()))
                    .collect(),
                build_command: build_str("command"),
                build_workdir: build_str("workdir"),
            };
            (id.clone(), component)
        })
        .collect();
    let routes = doc["trigger"]["http"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: [[trigger.http]]"))
        .iter()
        .map(|t| {
            (
                t["route"].as_str().expect("route").to_string(),
                t["component"].as_str().expect("component").to_string(),
            )
        })
        .collect();
    Manifest {
        path: path.to_path_buf(),
        name: doc["application"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: application.name"))
            .to_string(),
        variables,
        components,
        routes,
    }
}

fn spin_toml() -> Manifest {
    manifest(&root().join("spin.toml"))
}

/// The Spin manifests under `deploy/` (each folder's `spin.toml`).
fn deploy_manifests() -> Vec<Manifest> {
    deploy_files()
        .into_iter()
        .filter(|p| p.file_name() == Some("spin.toml".as_ref()))
        .map(|p| manifest(&p))
        .collect()
}

/// The PostgreSQL-only build `make variants` writes.
fn postgres_only_wasm() -> PathBuf {
    root().join("target/variants/book-catalog-postgres.wasm")
}

// ---------------------------------------------------------------------------
// Files

/// Every file under `deploy/`, sorted; folders whose name starts with a dot
/// (`.spin/` left by a `spin up`) are not deployment files.
fn deploy_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                let hidden = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'));
                if !hidden {
                    walk(&path, out);
                }
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

/// The Markdown and shell files: the instructions.
fn instruction_files() -> Vec<PathBuf> {
    deploy_files()
        .into_iter()
        .filter(|p| matches!(extension(p), "md" | "sh"))
        .collect()
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

fn the_spinapp() -> (String, Yaml) {
    let apps = of_kind("SpinApp");
    assert_eq!(apps.len(), 1, "one SpinApp under deploy/");
    let (path, app) = apps.into_iter().next().expect("one");
    (rel(&path), app)
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

/// A Secret's values, from `stringData` and (base64) `data`.
fn secret_values(secret: &Yaml) -> BTreeMap<String, Vec<u8>> {
    let mut values = BTreeMap::new();
    if let Some(map) = secret["stringData"].as_mapping() {
        for (k, v) in map {
            let text = v.as_str().map(str::to_string).unwrap_or_else(|| {
                serde_yaml::to_string(v)
                    .expect("a YAML value")
                    .trim()
                    .to_string()
            });
            values.insert(k.as_str().expect("a key").to_string(), text.into_bytes());
        }
    }
    if let Some(map) = secret["data"].as_mapping() {
        for (k, v) in map {
            let key = k.as_str().expect("a key").to_string();
            let encoded = v.as_str().unwrap_or_else(|| panic!("data.{key}: a string"));
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .unwrap_or_else(|e| panic!("data.{key}: not base64: {e}"));
            values.insert(key, decoded);
        }
    }
    values
}

// ---------------------------------------------------------------------------
// Shell commands in instructions

/// One command: a line of a shell script or of a fenced block in Markdown,
/// with its `\` continuations joined and its comment removed.
#[derive(Debug)]
struct Command {
    /// 1-based line of its first line.
    line: usize,
    text: String,
    /// The three lines before it, comments included.
    before: String,
}

/// `line` without its comment: from a `#` outside quotes at the start of a
/// word.
fn strip_comment(line: &str) -> &str {
    let mut single = false;
    let mut double = false;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return &line[..at],
            _ => {}
        }
        previous = c;
    }
    line
}

fn commands(text: &str, markdown: bool) -> Vec<Command> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_code = !markdown;
    let mut current: Option<Command> = None;
    for (index, raw) in lines.iter().enumerate() {
        if markdown && raw.trim_start().starts_with("```") {
            in_code = !in_code;
            if let Some(done) = current.take() {
                out.push(done);
            }
            continue;
        }
        if !in_code {
            continue;
        }
        let code = strip_comment(raw).trim_end();
        let (code, continues) = match code.strip_suffix('\\') {
            Some(head) => (head, true),
            None => (code, false),
        };
        if code.trim().is_empty() && current.is_none() {
            continue;
        }
        let command = current.get_or_insert_with(|| Command {
            line: index + 1,
            text: String::new(),
            before: lines[index.saturating_sub(3)..index].join("\n"),
        });
        command.text.push(' ');
        command.text.push_str(code.trim());
        if !continues {
            out.push(current.take().expect("a command"));
        }
    }
    out.extend(current);
    out
}

fn is_markdown(path: &Path) -> bool {
    extension(path) == "md"
}

fn file_commands(path: &Path) -> Vec<Command> {
    commands(&read(path), is_markdown(path))
}

/// The shell word at the start of `s` (quotes and `$( )` nest) and its
/// length in bytes.
fn shell_word(s: &str) -> (&str, usize) {
    #[derive(PartialEq)]
    enum Ctx {
        Single,
        Double,
        Subst,
    }
    let mut stack: Vec<Ctx> = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match stack.last() {
            Some(Ctx::Single) => {
                if c == b'\'' {
                    stack.pop();
                }
            }
            Some(Ctx::Double) => match c {
                b'"' => {
                    stack.pop();
                }
                b'\\' => i += 1,
                b'$' if bytes.get(i + 1) == Some(&b'(') => {
                    stack.push(Ctx::Subst);
                    i += 1;
                }
                _ => {}
            },
            top => {
                let base = top.is_none();
                match c {
                    b'\'' => stack.push(Ctx::Single),
                    b'"' => stack.push(Ctx::Double),
                    b'\\' => i += 1,
                    b'$' if bytes.get(i + 1) == Some(&b'(') => {
                        stack.push(Ctx::Subst);
                        i += 1;
                    }
                    b')' if !base => {
                        stack.pop();
                    }
                    c if base && c.is_ascii_whitespace() => break,
                    _ => {}
                }
            }
        }
        i += 1;
    }
    let end = i.min(s.len());
    (&s[..end], end)
}

/// A shell word without its quote characters (only for words without `$( )`).
fn unquote(word: &str) -> String {
    word.chars().filter(|c| !matches!(c, '\'' | '"')).collect()
}

/// A value set in a command, as written.
#[derive(Debug, PartialEq)]
enum Value {
    /// Produced when the command runs: `"$(openssl rand -base64 48)"`.
    Generated,
    /// Taken from a shell variable: `"$SECRET"`, `"postgres://u:${P}@h/db"`.
    Reference(String),
    Literal(String),
}

fn classify(raw: &str) -> Value {
    if raw.contains("$(openssl rand") {
        Value::Generated
    } else if raw.contains('$') {
        Value::Reference(unquote(raw))
    } else {
        Value::Literal(unquote(raw))
    }
}

impl Value {
    /// The text, where it is not produced by a command.
    fn text(&self) -> Option<&str> {
        match self {
            Value::Generated => None,
            Value::Reference(text) | Value::Literal(text) => Some(text),
        }
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The Spin variables a command sets: `--variable name=value`,
/// `--from-literal=name=value` (a Secret key), `SPIN_VARIABLE_NAME=value`.
fn settings_in(command: &str) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for marker in ["--variable ", "--variable=", "--from-literal="] {
        for (at, _) in command.match_indices(marker) {
            let rest = command[at + marker.len()..].trim_start();
            let (word, _) = shell_word(rest);
            let (quote, inner) = match word.chars().next() {
                Some(q @ ('"' | '\'')) => (q.to_string(), &word[1..]),
                _ => (String::new(), word),
            };
            let Some((name, value)) = inner.split_once('=') else {
                continue;
            };
            if name.is_empty() || !name.chars().all(is_name_char) {
                continue;
            }
            found.push((name.to_string(), classify(&format!("{quote}{value}"))));
        }
    }
    for (at, _) in command.match_indices("SPIN_VARIABLE_") {
        let preceded = command[..at].chars().next_back();
        if preceded.is_some_and(|c| is_name_char(c) || c == '$' || c == '{') {
            continue;
        }
        let rest = &command[at + "SPIN_VARIABLE_".len()..];
        let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
        if let Some(value) = rest[name.len()..].strip_prefix('=') {
            if !name.is_empty() {
                let (word, _) = shell_word(value);
                found.push((name.to_ascii_lowercase(), classify(word)));
            }
        }
    }
    found
}

/// Variable names anywhere in a text: `--variable name`, `--from-literal=name`,
/// `SPIN_VARIABLE_NAME` (set or read).
fn variable_mentions(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (marker, upper) in [
        ("--variable ", false),
        ("--variable=", false),
        ("--from-literal=", false),
        ("SPIN_VARIABLE_", true),
    ] {
        for (at, _) in text.match_indices(marker) {
            let rest = text[at + marker.len()..].trim_start_matches(['"', '\'', ' ']);
            let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
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

/// The word after `flag` (`-f path`, `--from path`, `--from=path`).
fn flag_value(command: &str, flags: &[&str]) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        for flag in flags {
            if word == flag {
                return words.get(i + 1).map(|w| unquote(w));
            }
            if let Some(value) = word.strip_prefix(&format!("{flag}=")) {
                return Some(unquote(value));
            }
        }
    }
    None
}

/// Whether `command` runs `program sub...` (the words in a row).
fn runs(command: &str, program: &[&str]) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(program.len()).any(|w| w == program)
}

// ---------------------------------------------------------------------------
// Checks on text; each returns its findings (empty: fine)

/// `spin deploy` without `SPIN_DEPLOY_PLUGIN`: Spin 4 stops ("needs to be
/// told which deployment plugin to use").
fn bare_spin_deploys(text: &str, markdown: bool) -> Vec<String> {
    commands(text, markdown)
        .into_iter()
        .filter(|c| runs(&c.text, &["spin", "deploy"]) && !c.text.contains("SPIN_DEPLOY_PLUGIN="))
        .map(|c| format!("line {}: a bare `spin deploy`: {}", c.line, c.text.trim()))
        .collect()
}

/// `spin up --variable` is Spin 3.4+: the command, or the three lines before
/// it, must say so; older Spin takes `SPIN_VARIABLE_*`.
fn spin_up_variables_without_3_4(text: &str, markdown: bool) -> Vec<String> {
    commands(text, markdown)
        .into_iter()
        .filter(|c| runs(&c.text, &["spin", "up"]) && c.text.contains("--variable"))
        .filter(|c| !format!("{}\n{}", c.before, c.text).contains("3.4"))
        .map(|c| {
            format!(
                "line {}: `spin up --variable` needs Spin 3.4; use SPIN_VARIABLE_* \
                 (or say 3.4): {}",
                c.line,
                c.text.trim()
            )
        })
        .collect()
}

const SIGNING_SECRETS: [Setting; 2] = [Setting::SecretToken, Setting::SecretTokenPrevious];

/// A signing secret written into a command: usable (32 bytes or more) is a
/// secret every reader of the file shares.
fn usable_signing_secrets_in_commands(text: &str, markdown: bool) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut findings = Vec::new();
    for command in commands(text, markdown) {
        for (name, value) in settings_in(&command.text) {
            if !SIGNING_SECRETS.iter().any(|s| s.variable_name() == name) {
                continue;
            }
            checked += 1;
            if let Value::Literal(literal) = value {
                if literal.len() >= MIN_SECRET_BYTES {
                    findings.push(format!(
                        "line {}: {name} is a usable literal ({} bytes): generate it \
                         (openssl rand -base64 48) or read it from a shell variable",
                        command.line,
                        literal.len()
                    ));
                }
            }
        }
    }
    (checked, findings)
}

/// A Secret template must not hold a signing secret the service would use.
fn usable_signing_secrets_in_secret(secret: &Yaml) -> Vec<String> {
    let values = secret_values(secret);
    SIGNING_SECRETS
        .iter()
        .filter_map(|s| {
            let value = values.get(s.variable_name())?;
            (value.len() >= MIN_SECRET_BYTES).then(|| {
                format!(
                    "Secret {:?}: {} is {} bytes, a usable signing secret; a template \
                     must hold none, or one shorter than {MIN_SECRET_BYTES} bytes",
                    secret["metadata"]["name"].as_str().unwrap_or("?"),
                    s.variable_name(),
                    value.len()
                )
            })
        })
        .collect()
}

/// `host:port` of a `postgres://` URL (no port: 5432).
fn postgres_host_port(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(with_default_port(host_port))
}

fn with_default_port(host_port: &str) -> String {
    let has_port = match host_port.rsplit_once(':') {
        Some((host, port)) => {
            !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(':')
        }
        None => false,
    };
    if has_port && !host_port.ends_with(']') {
        host_port.to_string()
    } else {
        format!("{host_port}:5432")
    }
}

/// `db_host` must be the `host:port` of `db_url` wherever both are written.
fn db_host_mismatch(db_url: &str, db_host: &str) -> Option<String> {
    match postgres_host_port(db_url) {
        None => Some(format!("db_url {db_url:?} is not a postgres:// URL")),
        Some(expected) if expected != with_default_port(db_host) => Some(format!(
            "db_host {db_host:?} is not the host:port of db_url ({expected})"
        )),
        Some(_) => None,
    }
}

fn db_host_mismatches_in_commands(text: &str, markdown: bool) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut findings = Vec::new();
    for command in commands(text, markdown) {
        let settings: BTreeMap<String, Value> = settings_in(&command.text).into_iter().collect();
        let (Some(url), Some(Value::Literal(host))) = (
            settings.get("db_url").and_then(Value::text),
            settings.get("db_host"),
        ) else {
            continue;
        };
        checked += 1;
        if let Some(problem) = db_host_mismatch(url, host) {
            findings.push(format!("line {}: {problem}", command.line));
        }
    }
    (checked, findings)
}

/// Spin 4.0.2 (tokio-postgres) parses `disable`, `prefer` and `require`
/// only; `verify-full`, `verify-ca` and `allow` fail to parse. Only URL
/// parameters (`?sslmode=`, `&sslmode=`) count: prose may name the others.
fn unsupported_sslmodes(text: &str) -> Vec<String> {
    text.match_indices("sslmode=")
        .filter(|(at, _)| matches!(text[..*at].chars().next_back(), Some('?' | '&')))
        .map(|(at, marker)| {
            text[at + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|mode| !matches!(mode.as_str(), "disable" | "prefer" | "require"))
        .map(|mode| format!("sslmode={mode}: Spin accepts disable, prefer and require only"))
        .collect()
}

fn unknown_variables(text: &str, manifest: &Manifest) -> Vec<String> {
    variable_mentions(text)
        .into_iter()
        .filter(|name| !manifest.variables.contains_key(name))
        .map(|name| format!("{name} is not a variable of {}", rel(&manifest.path)))
        .collect()
}

fn assert_none(what: &str, findings: Vec<String>) {
    assert!(findings.is_empty(), "{what}:\n  {}", findings.join("\n  "));
}

// ---------------------------------------------------------------------------
// The router

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

// ---------------------------------------------------------------------------
// Tests

#[test]
fn every_deploy_file_parses() {
    let files = deploy_files();
    let mut kinds = BTreeMap::new();
    for path in &files {
        let what = rel(path);
        match extension(path) {
            "toml" => {
                toml::from_str::<Toml>(&read(path)).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            "yaml" | "yml" => {
                assert!(!yaml_documents(path).is_empty(), "{what}: empty");
            }
            "sh" => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(path)
                        .expect("metadata")
                        .permissions()
                        .mode();
                    assert!(mode & 0o111 != 0, "{what}: not executable");
                }
                assert!(read(path).starts_with("#!"), "{what}: no #! line");
            }
            "md" => {}
            other => panic!("{what}: unexpected file type {other:?}"),
        }
        *kinds.entry(extension(path).to_string()).or_insert(0) += 1;
    }
    for folder in ["spinkube", "fermyon-cloud", "runtime-config", "akamai"] {
        let readme = root().join("deploy").join(folder).join("README.md");
        assert!(readme.is_file(), "{} is missing", rel(&readme));
    }
    assert!(kinds.get("yaml").copied().unwrap_or(0) >= 4, "{kinds:?}");
    assert!(kinds.get("toml").copied().unwrap_or(0) >= 4, "{kinds:?}");
}

#[test]
fn every_manifest_variable_is_a_setting_or_the_allowed_host() {
    let m = spin_toml();
    let component = &m.components["book-catalog"];
    for setting in Setting::ALL {
        let name = setting.variable_name();
        assert!(
            m.variables.contains_key(name),
            "spin.toml does not declare {name} ({setting:?})"
        );
        assert_eq!(
            component.variables.get(name).map(String::as_str),
            Some(format!("{{{{ {name} }}}}").as_str()),
            "spin.toml does not pass {name} to the component"
        );
    }
    let hosts = m.allowed_outbound_hosts();
    let mut host_variables = 0;
    for name in m.variables.keys() {
        let is_setting = Setting::ALL.iter().any(|s| s.variable_name() == name);
        let in_hosts = hosts
            .iter()
            .any(|h| h.contains(&format!("{{{{ {name} }}}}")));
        assert!(
            is_setting || in_hosts,
            "spin.toml: {name} is neither a setting (Setting::ALL) nor used in \
             allowed_outbound_hosts {hosts:?}"
        );
        host_variables += usize::from(in_hosts && !is_setting);
    }
    // db_host feeds allowed_outbound_hosts: the template must still be there.
    assert!(hosts.contains("postgres://{{ db_host }}"), "{hosts:?}");
    assert_eq!(
        host_variables, 1,
        "db_host is the only non-setting variable"
    );
    assert_eq!(
        m.variables["secret_token"].default.as_deref().unwrap_or(""),
        "",
        "spin.toml: no default signing secret"
    );
}

#[test]
fn deploy_manifests_keep_the_variables_component_routes_and_hosts() {
    let main = spin_toml();
    let manifests = deploy_manifests();
    let folders: BTreeSet<String> = manifests
        .iter()
        .map(|m| rel(m.path.parent().expect("a folder")))
        .collect();
    assert_eq!(
        folders,
        ["deploy/akamai", "deploy/postgres-only"]
            .map(String::from)
            .into(),
        "the Spin manifests under deploy/"
    );
    let makefile = read(&root().join("Makefile"));
    assert!(
        makefile.contains("\nvariants:")
            && makefile.contains("target/variants/book-catalog-postgres.wasm"),
        "the Makefile's `variants` target writes target/variants/book-catalog-postgres.wasm"
    );
    for pg in &manifests {
        let what = rel(&pg.path);
        let names = |m: &Manifest| m.variables.keys().cloned().collect::<BTreeSet<_>>();
        assert_eq!(
            names(pg),
            names(&main),
            "{what}: the variables of spin.toml"
        );
        for (name, variable) in &main.variables {
            assert!(
                !variable.secret || pg.variables[name].secret,
                "{what}: {name} is secret in spin.toml"
            );
            if name != "client_ip_header" {
                assert_eq!(
                    pg.variables[name].default, variable.default,
                    "{what}: the default of {name}"
                );
            }
        }
        assert_eq!(
            pg.component_ids(),
            main.component_ids(),
            "{what}: component ids"
        );
        assert_eq!(pg.routes, main.routes, "{what}: routes");
        assert_eq!(
            pg.allowed_outbound_hosts(),
            main.allowed_outbound_hosts(),
            "{what}: allowed_outbound_hosts"
        );
        assert!(
            pg.sqlite_databases().is_empty(),
            "{what}: the PostgreSQL-only build grants no SQLite"
        );
        let dir = pg.path.parent().expect("a folder");
        for (id, component) in &pg.components {
            assert_eq!(
                component.variables, main.components[id].variables,
                "{what}: {id}: the component variables of spin.toml"
            );
            assert_eq!(
                normalize(&dir.join(&component.source)),
                postgres_only_wasm(),
                "{what}: {id}: source is the PostgreSQL-only build"
            );
            assert_eq!(
                component.build_command.as_deref(),
                Some("make variants"),
                "{what}: {id}: build"
            );
            let workdir = component.build_workdir.as_deref().unwrap_or(".");
            assert_eq!(
                normalize(&dir.join(workdir)),
                root(),
                "{what}: {id}: the build runs at the repository root"
            );
        }
    }
}

#[test]
fn the_spinapp_runs_the_component_with_three_replicas_probes_and_resources() {
    let m = spin_toml();
    let (what, app) = the_spinapp();
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
    assert_eq!(
        components,
        m.component_ids(),
        "{what}: components vs spin.toml"
    );

    // resources: requests and limits, each with cpu and memory, request <= limit.
    let resources = &spec["resources"];
    assert_eq!(
        keys(resources),
        ["limits", "requests"].map(String::from).into(),
        "{what}: resources"
    );
    for resource in ["cpu", "memory"] {
        let amount = |kind: &str| {
            let value = &resources[kind][resource];
            let text = match value {
                Yaml::String(s) => s.clone(),
                Yaml::Number(n) => n.to_string(),
                _ => panic!("{what}: resources.{kind}.{resource} is missing"),
            };
            quantity(&text)
                .unwrap_or_else(|| panic!("{what}: resources.{kind}.{resource} {text:?}"))
        };
        let (request, limit) = (amount("requests"), amount("limits"));
        assert!(
            request > 0.0 && request <= limit,
            "{what}: {resource}: request {request} must be > 0 and <= limit {limit}"
        );
    }

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

/// A Kubernetes quantity (`100m`, `1`, `128Mi`, `1G`) as a number.
fn quantity(text: &str) -> Option<f64> {
    let suffixes: [(&str, f64); 9] = [
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("m", 0.001),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let (number, factor) = suffixes
        .iter()
        .find_map(|(s, f)| text.strip_suffix(s).map(|n| (n, *f)))
        .unwrap_or((text, 1.0));
    number.parse::<f64>().ok().map(|n| n * factor)
}

#[test]
fn the_spinapp_trusts_one_proxy_and_is_reached_only_through_its_ingress() {
    let (what, app) = the_spinapp();
    let name = app["metadata"]["name"].as_str().expect("metadata.name");
    let variables: BTreeMap<&str, &Yaml> = app["spec"]["variables"]
        .as_sequence()
        .expect("spec.variables")
        .iter()
        .map(|v| (v["name"].as_str().expect("a name"), v))
        .collect();
    let hops = variables
        .get("trusted_proxy_hops")
        .unwrap_or_else(|| panic!("{what}: trusted_proxy_hops is not set"));
    // SpinVar.value is a string: an unquoted 1 is refused by the CRD.
    let hops = hops["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: trusted_proxy_hops: a quoted value, \"1\""));
    assert_eq!(
        parse_proxy_hops(hops),
        Some(1),
        "{what}: trusted_proxy_hops"
    );
    for other in ["client_ip_header", "trust_forwarded_for"] {
        assert!(
            !variables.contains_key(other),
            "{what}: {other}: the Ingress is the one proxy; trusted_proxy_hops says so"
        );
    }

    // The Ingress leads to the Service the operator creates: named like the
    // app, port 80 (spin-operator's spinapp.DefaultHTTPPort).
    let ingresses = of_kind("Ingress");
    assert_eq!(ingresses.len(), 1, "one Ingress under deploy/");
    let (path, ingress) = &ingresses[0];
    let mut backends = 0;
    for rule in ingress["spec"]["rules"].as_sequence().expect("spec.rules") {
        for p in rule["http"]["paths"].as_sequence().expect("http.paths") {
            let service = &p["backend"]["service"];
            assert_eq!(
                service["name"].as_str(),
                Some(name),
                "{}: backend",
                rel(path)
            );
            assert_eq!(
                service["port"]["number"].as_u64(),
                Some(80),
                "{}: port",
                rel(path)
            );
            assert_eq!(
                (p["path"].as_str(), p["pathType"].as_str()),
                (Some("/"), Some("Prefix")),
                "{}: every route of spin.toml (`/...`) goes through",
                rel(path)
            );
            backends += 1;
        }
    }
    assert!(backends >= 1, "{}: no backend", rel(path));

    // Only the Ingress controller may connect: else a client writes the
    // X-Forwarded-For entry that trusted_proxy_hops = 1 trusts.
    let policies = of_kind("NetworkPolicy");
    assert_eq!(policies.len(), 1, "one NetworkPolicy under deploy/");
    let (path, policy) = &policies[0];
    let what = rel(path);
    let spec = &policy["spec"];
    let selector = &spec["podSelector"]["matchLabels"];
    assert_eq!(
        keys(selector),
        BTreeSet::from(["core.spinkube.dev/app-name".to_string()]),
        "{what}: select the SpinApp's pods by the operator's label"
    );
    assert_eq!(
        selector["core.spinkube.dev/app-name"].as_str(),
        Some(name),
        "{what}"
    );
    assert!(
        spec["policyTypes"]
            .as_sequence()
            .is_some_and(|t| t.iter().any(|t| t.as_str() == Some("Ingress"))),
        "{what}: policyTypes Ingress"
    );
    let rules = spec["ingress"].as_sequence().expect("spec.ingress");
    assert!(
        !rules.is_empty(),
        "{what}: no rule admits the Ingress controller"
    );
    for rule in rules {
        let peers = rule["from"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{what}: a rule without `from` admits everyone"));
        assert!(!peers.is_empty(), "{what}: an empty `from` admits everyone");
        for peer in peers {
            assert!(
                peer["ipBlock"].is_null(),
                "{what}: an ipBlock admits clients"
            );
            for selector in ["namespaceSelector", "podSelector"] {
                assert!(
                    !keys(&peer[selector]["matchLabels"]).is_empty(),
                    "{what}: {selector} must name the Ingress controller's labels \
                     (an empty one selects every namespace or pod)"
                );
            }
        }
        let ports: Vec<u64> = rule["ports"]
            .as_sequence()
            .expect("ports")
            .iter()
            .filter_map(|p| p["port"].as_u64())
            .collect();
        assert_eq!(ports, [80], "{what}: the pods' port");
    }
}

/// Secrets the instructions create: `kubectl create secret generic NAME
/// --from-literal=key=...`: name -> keys.
fn created_secrets() -> BTreeMap<String, BTreeSet<String>> {
    let mut secrets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in instruction_files() {
        for command in file_commands(&path) {
            if !runs(&command.text, &["kubectl", "create", "secret", "generic"]) {
                continue;
            }
            let words: Vec<&str> = command.text.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "generic").expect("generic");
            let name = words.get(at + 1).expect("a Secret name").to_string();
            let keys = secrets.entry(name).or_default();
            keys.extend(settings_in(&command.text).into_iter().map(|(k, _)| k));
        }
    }
    secrets
}

#[test]
fn spinapp_variables_are_manifest_variables_and_credentials_come_from_the_secret() {
    let m = spin_toml();
    let (what, app) = the_spinapp();
    let templates: BTreeMap<String, BTreeSet<String>> = of_kind("Secret")
        .into_iter()
        .map(|(_, s)| {
            let name = s["metadata"]["name"].as_str().expect("metadata.name");
            (name.to_string(), secret_values(&s).into_keys().collect())
        })
        .collect();
    let created = created_secrets();
    assert!(
        !created.is_empty(),
        "the SpinKube README creates the Secret with `kubectl create secret generic`"
    );
    let mut names = BTreeSet::new();
    let mut read: BTreeSet<(String, String)> = BTreeSet::new();
    for var in app["spec"]["variables"]
        .as_sequence()
        .expect("spec.variables")
    {
        let name = var["name"].as_str().expect("variable name");
        assert!(names.insert(name.to_string()), "{what}: {name} set twice");
        let variable = m
            .variables
            .get(name)
            .unwrap_or_else(|| panic!("{what}: {name} is not a variable of spin.toml"));
        let has_value = !var["value"].is_null();
        let has_value_from = !var["valueFrom"].is_null();
        assert!(
            has_value ^ has_value_from,
            "{what}: {name}: exactly one of value and valueFrom"
        );
        let reference = &var["valueFrom"]["secretKeyRef"];
        let credential = variable.secret || ["db_url", "auth_username"].contains(&name);
        if credential {
            assert!(
                !reference.is_null(),
                "{what}: {name} is a credential: set it with valueFrom.secretKeyRef"
            );
        }
        if reference.is_null() {
            continue;
        }
        let secret = reference["name"].as_str().expect("secretKeyRef.name");
        let key = reference["key"].as_str().expect("secretKeyRef.key");
        let optional = reference["optional"].as_bool().unwrap_or(false);
        read.insert((secret.to_string(), key.to_string()));
        let created_keys = created
            .get(secret)
            .unwrap_or_else(|| panic!("{what}: {name}: no instructions create Secret {secret}"));
        if !optional {
            assert!(
                created_keys.contains(key),
                "{what}: {name}: `kubectl create secret generic {secret}` sets no {key}"
            );
            if let Some(template) = templates.get(secret) {
                assert!(
                    template.contains(key),
                    "{what}: {name}: the Secret template {secret} has no key {key}"
                );
            }
        }
    }
    // PostgreSQL for the replicas: the store, the host it may reach, and a login.
    for needed in [
        "secret_token",
        "auth_username",
        "db_url",
        "db_host",
        "trusted_proxy_hops",
    ] {
        assert!(names.contains(needed), "{what}: {needed} is not set");
    }
    assert!(
        names.contains("auth_password_hash") || names.contains("auth_password"),
        "{what}: no password"
    );
    for (secret, ks) in templates.iter().chain(&created) {
        for key in ks {
            assert!(
                read.contains(&(secret.clone(), key.clone())),
                "Secret {secret}: key {key} is read by no SpinApp variable"
            );
        }
    }
}

#[test]
fn no_file_under_deploy_ships_a_usable_signing_secret() {
    let mut checked = 0;
    for (path, secret) in of_kind("Secret") {
        assert_none(&rel(&path), usable_signing_secrets_in_secret(&secret));
        checked += 1;
    }
    for path in instruction_files() {
        let (n, findings) = usable_signing_secrets_in_commands(&read(&path), is_markdown(&path));
        assert_none(&rel(&path), findings);
        checked += n;
    }
    for m in deploy_manifests() {
        for s in SIGNING_SECRETS {
            let default = m.variables[s.variable_name()].default.as_deref();
            assert_eq!(
                default.unwrap_or(""),
                "",
                "{}: {s:?} has a default",
                rel(&m.path)
            );
        }
    }
    // The SpinKube Secret (template and command), Akamai and Fermyon Cloud.
    assert!(
        checked >= 4,
        "only {checked} signing secrets found to check"
    );
}

#[test]
fn runtime_configs_configure_only_granted_sqlite_databases() {
    let m = spin_toml();
    let granted = m.sqlite_databases();
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
        let what = rel(&path);
        let doc: Toml = toml::from_str(&read(&path)).expect("TOML");
        let top: Vec<&String> = doc.as_table().expect("a table").keys().collect();
        assert_eq!(top, ["sqlite_database"], "{what}: only SQLite databases");
        for (label, db) in doc["sqlite_database"]
            .as_table()
            .expect("[sqlite_database.*]")
        {
            assert!(
                granted.contains(label),
                "{what}: {label} is not granted by spin.toml ({granted:?})"
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

#[test]
fn every_variable_the_files_name_is_a_manifest_variable() {
    let m = spin_toml();
    let mut seen = BTreeSet::new();
    for path in deploy_files() {
        let text = read(&path);
        assert_none(&rel(&path), unknown_variables(&text, &m));
        seen.extend(variable_mentions(&text));
    }
    for needed in [
        "secret_token",
        "auth_password_hash",
        "db_url",
        "db_host",
        "client_ip_header",
    ] {
        assert!(seen.contains(needed), "no instructions set {needed}");
    }
}

#[test]
fn spin_up_variable_examples_work_on_spin_2_6() {
    for path in instruction_files() {
        assert_none(
            &rel(&path),
            spin_up_variables_without_3_4(&read(&path), is_markdown(&path)),
        );
    }
}

#[test]
fn no_file_runs_a_bare_spin_deploy() {
    let mut plugin_deploys = 0;
    for path in instruction_files() {
        let text = read(&path);
        assert_none(&rel(&path), bare_spin_deploys(&text, is_markdown(&path)));
        plugin_deploys += commands(&text, is_markdown(&path))
            .iter()
            .filter(|c| {
                runs(&c.text, &["spin", "cloud", "deploy"])
                    || runs(&c.text, &["spin", "aka", "deploy"])
            })
            .count();
    }
    assert!(plugin_deploys >= 3, "{plugin_deploys} plugin deploys");
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
                let request_path = request_path.trim_end_matches(['\'', '"', '`']);
                let routed = route("GET", request_path);
                assert!(
                    routed.is_ok(),
                    "{}: curl of {request_path} is not routed",
                    rel(&path)
                );
                if request_path == HEALTH_PATH {
                    assert_public_health_path(request_path, &rel(&path));
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 4, "the READMEs show how to check /health");
}

#[test]
fn every_db_host_is_the_host_and_port_of_its_db_url() {
    let mut checked = 0;
    for path in instruction_files() {
        let (n, findings) = db_host_mismatches_in_commands(&read(&path), is_markdown(&path));
        assert_none(&rel(&path), findings);
        checked += n;
    }
    for (path, secret) in of_kind("Secret") {
        let values = secret_values(&secret);
        if let (Some(url), Some(host)) = (values.get("db_url"), values.get("db_host")) {
            let url = String::from_utf8_lossy(url);
            let host = String::from_utf8_lossy(host);
            if let Some(problem) = db_host_mismatch(&url, &host) {
                panic!("{}: {problem}", rel(&path));
            }
            checked += 1;
        }
    }
    // SpinKube (command and template), Akamai, Fermyon Cloud.
    assert!(checked >= 4, "only {checked} db_url/db_host pairs found");
}

#[test]
fn postgres_tls_modes_are_ones_spin_accepts_and_the_rule_is_said() {
    for path in deploy_files() {
        assert_none(&rel(&path), unsupported_sslmodes(&read(&path)));
    }
    // Spin verifies the certificate and host name in every sslmode but
    // disable: the SpinKube README and the SpinApp's comment say what that
    // asks of db_url, and so does the Akamai README.
    for file in [
        "deploy/spinkube/README.md",
        "deploy/spinkube/spinapp.yaml",
        "deploy/akamai/README.md",
    ] {
        // The words, comment markers left out (a sentence may span comment lines).
        let text = read(&root().join(file))
            .lines()
            .map(|l| l.trim_start().trim_start_matches('#'))
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ");
        for needed in [
            "sslmode=require",
            "sslmode=disable",
            "host name",
            "except `disable`",
        ] {
            let needed_plain = needed.replace('`', "");
            assert!(
                text.contains(needed) || text.contains(&needed_plain),
                "{file} does not say {needed:?}"
            );
        }
    }
}

#[test]
fn akamai_deploys_the_postgres_only_build_with_true_client_ip() {
    let path = root().join("deploy/akamai/spin.toml");
    let akamai = manifest(&path);
    let header = akamai.variables["client_ip_header"].default.as_deref();
    assert_eq!(
        header.and_then(parse_header_name).as_deref(),
        Some("true-client-ip"),
        "deploy/akamai/spin.toml: client_ip_header defaults to true-client-ip"
    );
    let dir = path.parent().expect("a folder");
    for (id, component) in &akamai.components {
        assert_eq!(
            normalize(&dir.join(&component.source)),
            postgres_only_wasm(),
            "{id}: the PostgreSQL-only build"
        );
        assert!(
            component.sqlite_databases.is_empty(),
            "{id}: no SQLite on Akamai"
        );
        assert_eq!(
            component
                .variables
                .get("client_ip_header")
                .map(String::as_str),
            Some("{{ client_ip_header }}"),
            "{id}: client_ip_header reaches the component"
        );
    }

    let readme_path = root().join("deploy/akamai/README.md");
    let readme = read(&readme_path);
    let deploys: Vec<Command> = commands(&readme, true)
        .into_iter()
        .filter(|c| runs(&c.text, &["spin", "aka", "deploy"]))
        .collect();
    assert!(
        commands(&readme, true)
            .iter()
            .any(|c| runs(&c.text, &["make", "variants"])),
        "deploy/akamai/README.md: build with `make variants`"
    );
    assert!(
        !deploys.is_empty(),
        "deploy/akamai/README.md: no `spin aka deploy`"
    );
    for deploy in &deploys {
        let at = format!("deploy/akamai/README.md line {}", deploy.line);
        let from = flag_value(&deploy.text, &["-f", "--from"])
            .unwrap_or_else(|| panic!("{at}: -f names the manifest"));
        assert!(
            ["deploy/akamai/spin.toml", "deploy/postgres-only/spin.toml"].contains(&from.as_str()),
            "{at}: -f {from}: a PostgreSQL-only manifest"
        );
        let settings: BTreeMap<String, Value> = settings_in(&deploy.text).into_iter().collect();
        match settings.get("client_ip_header") {
            Some(value) => assert_eq!(
                value,
                &Value::Literal("true-client-ip".into()),
                "{at}: client_ip_header"
            ),
            None => assert_eq!(
                from, "deploy/akamai/spin.toml",
                "{at}: set client_ip_header"
            ),
        }
    }
    let first = &deploys[0];
    let settings: BTreeSet<String> = settings_in(&first.text)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for needed in [
        "db_url",
        "db_host",
        "secret_token",
        "auth_username",
        "client_ip_header",
    ] {
        assert!(
            settings.contains(needed),
            "deploy/akamai/README.md line {}: the deploy sets no {needed}",
            first.line
        );
    }
    assert!(
        settings.contains("auth_password_hash") || settings.contains("auth_password"),
        "deploy/akamai/README.md: the deploy sets no password"
    );
    assert!(
        readme.contains("nothing was deployed"),
        "deploy/akamai/README.md says that nothing was deployed"
    );
}

#[test]
fn fermyon_cloud_deploys_with_the_cloud_plugin() {
    let m = spin_toml();
    let mut deploys = 0;
    let mut links = 0;
    for file in [
        "deploy/fermyon-cloud/README.md",
        "deploy/fermyon-cloud/deploy.sh",
    ] {
        let path = root().join(file);
        let text = read(&path);
        let cmds = commands(&text, is_markdown(&path));
        let file_deploys = cmds
            .iter()
            .filter(|c| runs(&c.text, &["spin", "cloud", "deploy"]))
            .count();
        assert!(file_deploys >= 1, "{file}: no `spin cloud deploy`");
        deploys += file_deploys;
        for command in &cmds {
            let words: Vec<&str> = command.text.split_whitespace().collect();
            for pair in words.windows(2) {
                if pair[0] == "--link" {
                    let link = unquote(pair[1]);
                    let label = link
                        .strip_prefix("sqlite:")
                        .and_then(|l| l.split_once('='))
                        .map(|(label, _)| label)
                        .unwrap_or_else(|| panic!("{file}: --link {link}: sqlite:label=database"));
                    assert!(
                        m.sqlite_databases().contains(label),
                        "{file}: --link {label}: not a SQLite label of spin.toml"
                    );
                    links += 1;
                }
                if pair[0] == "--app" {
                    assert_eq!(
                        pair[1], m.name,
                        "{file}: --app is spin.toml's application name"
                    );
                }
            }
        }
    }
    assert!(
        deploys >= 2 && links >= 2,
        "{deploys} deploys, {links} --link"
    );
}

#[test]
fn each_readme_names_commands_and_says_what_was_verified() {
    for folder in ["akamai", "fermyon-cloud", "spinkube"] {
        let path = root().join("deploy").join(folder).join("README.md");
        let text = read(&path);
        assert!(
            text.lines()
                .any(|l| l.starts_with('#') && l.contains("verified")),
            "{}: a section on what was verified",
            rel(&path)
        );
        assert!(text.contains("Not run"), "{}: what was not run", rel(&path));
        assert!(
            commands(&text, true).len() >= 3,
            "{}: the exact commands, in a code block",
            rel(&path)
        );
    }
}

#[test]
fn checks_catch_bad_examples() {
    let m = spin_toml();
    // A bare `spin deploy`, in Markdown and in a script.
    assert_eq!(
        bare_spin_deploys("```sh\nspin deploy --variable a=b\n```\n", true).len(),
        1
    );
    assert_eq!(
        bare_spin_deploys("#!/bin/sh\nexec spin deploy \"$@\"\n", false).len(),
        1
    );
    assert!(bare_spin_deploys(
        "```sh\nSPIN_DEPLOY_PLUGIN=cloud spin deploy\nspin cloud deploy\n```\n",
        true
    )
    .is_empty());
    assert!(bare_spin_deploys("Spin 4 refuses a bare `spin deploy`.\n", true).is_empty());
    // `spin up --variable`, continued over lines, without Spin 3.4 said.
    let up = "```sh\nspin up \\\n  --variable secret_token=\"$(openssl rand -base64 48)\"\n```\n";
    assert_eq!(spin_up_variables_without_3_4(up, true).len(), 1);
    let said = "```sh\n# Spin 3.4 and later:\nspin up --variable db_host=h:1\n```\n";
    assert!(spin_up_variables_without_3_4(said, true).is_empty());
    // A usable signing secret, in a command and in a Secret (stringData, data).
    let long = "x".repeat(MIN_SECRET_BYTES);
    let cmd = format!("```sh\nspin aka deploy --variable secret_token='{long}'\n```\n");
    assert_eq!(usable_signing_secrets_in_commands(&cmd, true).1.len(), 1);
    let ok = "```sh\nkubectl create secret generic s --from-literal=secret_token=\"$(openssl rand -base64 48)\"\n```\n";
    assert_eq!(usable_signing_secrets_in_commands(ok, true), (1, vec![]));
    let secret: Yaml = serde_yaml::from_str(&format!(
        "kind: Secret\nmetadata: {{name: s}}\nstringData: {{secret_token: '{long}'}}\n"
    ))
    .expect("YAML");
    assert_eq!(usable_signing_secrets_in_secret(&secret).len(), 1);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&long);
    let secret: Yaml = serde_yaml::from_str(&format!(
        "kind: Secret\nmetadata: {{name: s}}\ndata: {{secret_token_previous: {encoded}}}\n"
    ))
    .expect("YAML");
    assert_eq!(usable_signing_secrets_in_secret(&secret).len(), 1);
    // db_host that is not the host:port of db_url (the default port counts).
    let mismatch = "```sh\nspin aka deploy \\\n  --variable db_url=\"postgres://u:${P}@db.example.com/books\" \\\n  --variable db_host=db.example.com:5433\n```\n";
    assert_eq!(db_host_mismatches_in_commands(mismatch, true).1.len(), 1);
    let matching = mismatch.replace("5433", "5432");
    assert_eq!(db_host_mismatches_in_commands(&matching, true), (1, vec![]));
    // An sslmode Spin cannot parse.
    assert_eq!(
        unsupported_sslmodes("postgres://h/db?sslmode=verify-full").len(),
        1
    );
    assert_eq!(
        unsupported_sslmodes("postgres://h/db?user=u&sslmode=allow").len(),
        1
    );
    assert!(unsupported_sslmodes("`sslmode=verify-full` does not parse").is_empty());
    // A variable spin.toml does not declare.
    assert_eq!(
        unknown_variables("SPIN_VARIABLE_DATABASE_URL=x", &m).len(),
        1
    );
    assert_eq!(unknown_variables("--from-literal=password=x", &m).len(), 1);
    // The shell words the checks read.
    assert_eq!(
        settings_in("x --variable auth_password_hash=\"$(printf '%s' \"$P\" | h)\" --variable \"db_host=$H\""),
        vec![
            ("auth_password_hash".to_string(), Value::Reference("$(printf %s $P | h)".into())),
            ("db_host".to_string(), Value::Reference("$H".into())),
        ]
    );
}
