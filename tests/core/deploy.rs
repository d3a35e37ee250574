//! `deploy/` agrees with `spin.toml`, the router, the settings and the CRDs,
//! read as TOML, YAML and the commands the deploy scripts give stand-ins
//! (nothing is built, pushed or applied); each check fails on a broken copy.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use book_catalog::app::{route, Endpoint, HEALTH_PATH};
use book_catalog::settings::{Setting, MIN_SECRET_BYTES};
use serde_yaml::Value as Yaml;

const SIGNING_SECRETS: [&str; 2] = ["secret_token", "secret_token_previous"];
/// What `make variants` writes: the builds deploy/'s manifests serve.
const VARIANT_WASMS: [&str; 3] = [
    "target/variants/book-catalog-postgres.wasm",
    "target/variants/book-catalog-p2.wasm",
    "target/variants/catalog-page.wasm",
];
/// Every manifest's routes: the API on every path but the catalog page's.
const ROUTES: [&str; 2] = ["/... book-catalog", "/ui/... catalog-page"];
/// Each deploy script | what it builds | what it then deploys, once (Akamai:
/// the PostgreSQL-only build, WASI 0.3; SpinKube: the WASI 0.2 build) | a
/// setting it passes unless given one (Akamai's edge names the client in
/// true-client-ip).
const DEPLOYS: &str = "
deploy/akamai/deploy.sh | make variants | spin aka deploy -f deploy/postgres-only/spin.toml | client_ip_header=true-client-ip
deploy/spinkube/deploy.sh | make variants | spin registry push -f deploy/spinkube/spin.toml |
";
/// Made up: a signing secret of 48 bytes, a password hash, a database.
const TOKEN: &str = "made-up-signing-secret-of-48-bytes-0123456789abc";
const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA";
const DB_URL: &str = "postgres://book:p%40ss@db.example.com:6432/books?sslmode=require";
/// What the deploy READMEs ask for, by name (after SPIN_VARIABLE_).
const REQUIRED: [(&str, &str); 3] =
    [("SECRET_TOKEN", TOKEN), ("AUTH_PASSWORD_HASH", HASH), ("DB_URL", DB_URL)];
/// A stand-in (an exported bash function) that writes its command line to
/// $COMMANDS (no value the tests give has a space, so words stay words).
const STAND_IN: &str = r#"() { printf '%s\n' "${FUNCNAME[0]} $*" >> "$COMMANDS"; }"#;

type Findings = Vec<String>;

/// `need!(out, ok => "finding", args)` adds the finding unless `ok`.
macro_rules! need {
    ($out:ident, $ok:expr => $($finding:tt)+) => {
        if !$ok {
            $out.push(format!($($finding)+));
        }
    };
}

/// By path: the files under `deploy/` (not in dot folders), `spin.toml`, `Makefile`.
#[derive(Clone)]
struct Repo(BTreeMap<String, String>);

impl Repo {
    fn load() -> Repo {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let (mut files, mut paths) = (BTreeMap::new(), vec![root.join("deploy")]);
        paths.extend(["spin.toml", "Makefile"].map(|f| root.join(f)));
        while let Some(path) = paths.pop() {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel.display().to_string();
            if path.is_dir() && !rel.contains("/.") {
                let entries = std::fs::read_dir(&path).expect("a folder");
                paths.extend(entries.map(|e| e.expect("an entry").path()));
            } else if path.is_file() {
                files.insert(rel, std::fs::read_to_string(&path).expect("UTF-8"));
            }
        }
        Repo(files)
    }

    fn text(&self, path: &str) -> &str {
        self.0.get(path).map_or("", String::as_str)
    }

    fn files(&self, endings: &[&str]) -> Vec<&str> {
        let deploy = self.0.keys().filter(|p| p.starts_with("deploy/"));
        deploy.filter(|p| endings.iter().any(|e| p.ends_with(e))).map(String::as_str).collect()
    }

    /// The documents of a TOML (one) or YAML (any number) file, as one tree type.
    fn parse(&self, path: &str) -> Result<Vec<Yaml>, String> {
        let text = self.text(path);
        if !path.ends_with(".toml") {
            let docs = serde_yaml::Deserializer::from_str(text);
            let docs = docs.map(serde::Deserialize::deserialize);
            return docs.collect::<Result<_, _>>().map_err(|e| e.to_string());
        }
        let toml: toml::Value = toml::from_str(text).map_err(|e| e.to_string())?;
        Ok(vec![serde_yaml::to_value(toml).map_err(|e| e.to_string())?])
    }

    fn doc(&self, path: &str) -> Yaml {
        self.parse(path).unwrap_or_default().into_iter().next().unwrap_or_default()
    }

    /// The one YAML document of that `kind` under `deploy/` (null unless one).
    fn one(&self, kind: &str) -> Yaml {
        let docs = self.files(&[".yaml"]).into_iter();
        let docs = docs.flat_map(|p| self.parse(p).unwrap_or_default());
        let mut docs: Vec<Yaml> = docs.filter(|d| d["kind"] == kind).collect();
        docs.pop().filter(|_| docs.is_empty()).unwrap_or_default()
    }

    /// Runs a script of a copy of these files with stand-ins for `spin`,
    /// `kubectl`, `make` and only PATH, IMAGE and `settings` (SPIN_VARIABLE_*).
    fn run(&self, script: &str, settings: &[(&str, impl AsRef<str>)]) -> Run {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = format!("deploy-{}-{n}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
        for (path, text) in &self.0 {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().expect("a folder")).expect("a folder");
            std::fs::write(&path, text).expect("written");
        }
        let mut command = Command::new("bash");
        command.env_clear().arg(dir.join(script));
        command.env("COMMANDS", dir.join("commands"));
        command.env("PATH", std::env::var("PATH").unwrap_or_default());
        command.env("IMAGE", "registry.example/book-catalog:1");
        for program in ["spin", "kubectl", "make"] {
            command.env(format!("BASH_FUNC_{program}%%"), STAND_IN);
        }
        for (name, value) in settings {
            command.env(format!("SPIN_VARIABLE_{name}"), value.as_ref());
        }
        let output = command.output().expect("a script that runs");
        let log = std::fs::read_to_string(dir.join("commands")).unwrap_or_default();
        std::fs::remove_dir_all(&dir).expect("removed");
        let error = String::from_utf8_lossy(&output.stderr).into_owned();
        let (ok, commands) = (output.status.success(), log.lines().map(String::from));
        Run(ok, error, commands.collect())
    }
}

/// A script's success, stderr and the command lines the stand-ins recorded.
struct Run(bool, String, Vec<String>);

impl Run {
    fn running(&self, words: &str) -> Vec<&str> {
        self.2.iter().filter(|c| c.starts_with(words)).map(String::as_str).collect()
    }

    /// Whether it succeeded, running `first...` before `then...`.
    fn before(&self, first: &str, then: &str) -> bool {
        let at = |words| self.2.iter().position(|c| c.starts_with(words));
        self.0 && at(first).is_some_and(|first| Some(first) < at(then))
    }

    /// The `name=value` pairs of its `--variable`s and `--from-literal`s.
    fn variables(&self) -> BTreeMap<String, String> {
        let flags = |c| [values(c, "--variable"), values(c, "--from-literal")].concat();
        let pairs = self.2.iter().flat_map(|c| flags(c));
        let pairs = pairs.filter_map(|v| v.split_once('='));
        pairs.map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }
}

/// The values of `flag` in a command line (`flag value` or `flag=value`).
fn values<'a>(command: &'a str, flag: &str) -> Vec<&'a str> {
    let words: Vec<&'a str> = command.split(' ').collect();
    let value = |(i, word): (usize, &&'a str)| match word.strip_prefix(flag)? {
        "" => words.get(i + 1).copied(),
        rest => rest.strip_prefix('='),
    };
    words.iter().enumerate().filter_map(value).collect()
}

fn text(value: &Yaml) -> &str {
    value.as_str().unwrap_or("")
}

fn seq(value: &Yaml) -> Vec<&Yaml> {
    value.as_sequence().into_iter().flatten().collect()
}

fn entries(value: &Yaml) -> Vec<(&str, &Yaml)> {
    value.as_mapping().into_iter().flatten().map(|(k, v)| (text(k), v)).collect()
}

fn keys(value: &Yaml) -> BTreeSet<String> {
    entries(value).iter().map(|e| e.0.to_string()).collect()
}

/// The `host:port` of a PostgreSQL URL (no port: 5432).
fn postgres_host(url: &str) -> String {
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    let port = host.rsplit_once(':').map_or("", |(_, port)| port);
    format!("{host}{}", port.parse::<u16>().map_or(":5432", |_| ""))
}

/// A Kubernetes quantity (`100m`, `1`, `128Mi`) in its unit (0 if it is none).
fn quantity(value: &Yaml) -> f64 {
    let text = serde_yaml::to_string(value).unwrap_or_default();
    let text = text.trim().trim_matches(['\'', '"']);
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let binary = ["", "Ki", "Mi", "Gi"].iter().position(|u| *u == unit);
    let factor = binary.map(|p| 1024f64.powi(p as i32));
    number.parse::<f64>().unwrap_or(0.0) * factor.unwrap_or(if unit == "m" { 1e-3 } else { 0.0 })
}

/// Finds each way `value` does not conform to `schema`: a type (`string`,
/// `quantity`: string or integer, ...), a list (not empty unless `closed`,
/// each item conforming to its one item), fields (`closed`: only these, each
/// optional; else each needed, more allowed), or the value it must be.
fn conforms(value: &Yaml, schema: &Yaml, closed: bool, at: &str, out: &mut Findings) {
    let right = match (schema, text(schema)) {
        (_, "string") => value.is_string(),
        (_, "boolean") => value.is_bool(),
        (_, "integer") => value.is_i64(),
        (_, "quantity") => value.is_string() || value.is_i64(),
        (_, "absolute path") => text(value).starts_with('/'),
        (_, "remote URL") => matches!(text(value).split_once("://"), Some(("https" | "libsql", _))),
        (Yaml::Sequence(item), _) => {
            for (i, v) in seq(value).into_iter().enumerate() {
                conforms(v, &item[0], closed, &format!("{at}[{i}]"), out);
            }
            value.is_sequence() && (closed || !seq(value).is_empty())
        }
        (Yaml::Mapping(_), _) => {
            for key in if closed { keys(value) } else { keys(schema) } {
                need!(out, !schema[&key].is_null() => "{at}.{key}: not a field");
                let at = format!("{at}.{key}");
                conforms(&value[&key], &schema[&key], closed, &at, out);
            }
            value.is_mapping()
        }
        _ => value == schema,
    };
    need!(out, right || schema.is_null() => "{at}: {value:?} is not {schema:?}");
}

/// The fields of `spec` of spin-operator's CRDs (943f5b17, config/crd/bases/)
/// that deploy/spinkube uses, with their types; others are refused until added.
const CRDS: &str = r#"
SpinApp:
  executor: string
  image: string
  replicas: integer
  components: [string]
  resources: {limits: &quantities {cpu: quantity, memory: quantity}, requests: *quantities}
  checks: {liveness: &probe {httpGet: {path: string}, initialDelaySeconds: integer,
    periodSeconds: integer, timeoutSeconds: integer, successThreshold: integer,
    failureThreshold: integer}, readiness: *probe}
  variables: [{name: string, value: string,
    valueFrom: {secretKeyRef: {name: string, key: string, optional: boolean}}}]
SpinAppExecutor:
  createDeployment: boolean
  deploymentConfig: {runtimeClassName: string, spinImage: string, caCertSecret: string,
    installDefaultCACerts: boolean, otel: {exporter_otlp_endpoint: string,
    exporter_otlp_traces_endpoint: string, exporter_otlp_metrics_endpoint: string,
    exporter_otlp_logs_endpoint: string}}
"#;

/// What files hold (and more): spin.toml reaches one PostgreSQL host and has
/// no default signing secret; deploy/'s manifests serve `make variants`'
/// build, Akamai's with its edge's client header; runtime configurations use
/// the label spin.toml grants; the executor makes the deployment, not the CA
/// Secret (the operator's has public roots only); the Ingress leads to the
/// operator's Service (the app's name, port 80); the NetworkPolicy admits
/// the Ingress controller only (an ipBlock, or a peer without both selectors,
/// admits clients, who then write the X-Forwarded-For entry trusted).
const EXPECTED: &str = r#"
spin.toml:
  variables: {secret_token: {default: ""}, secret_token_previous: {default: ""}}
  component: {book-catalog: {allowed_outbound_hosts: ["postgres://{{ db_host }}"],
    sqlite_databases: [default]}, catalog-page: {
    source: target/wasm32-wasip2/release/catalog_page.wasm}}
deploy/postgres-only/spin.toml: {component: {book-catalog: {
  source: ../../target/variants/book-catalog-postgres.wasm, build: &variants {
  command: make variants, workdir: ../..}}, catalog-page: &page {
  source: ../../target/variants/catalog-page.wasm, build: *variants}}}
deploy/wasi-p2/spin.toml: {component: {book-catalog: {
  source: ../../target/variants/book-catalog-p2.wasm, sqlite_databases: [default],
  build: *variants}, catalog-page: *page}}
deploy/spinkube/spin.toml: {component: {book-catalog: {
  source: ../../target/variants/book-catalog-p2.wasm, build: *variants},
  catalog-page: *page}}
deploy/runtime-config/sqlite-path.toml: {sqlite_database: {default: {type: spin,
  path: absolute path}}}
deploy/runtime-config/sqlite-libsql.toml: {sqlite_database: {default: {type: libsql,
  url: remote URL, token: string}}}
deploy/spinkube/spinapp.yaml: {kind: SpinApp, apiVersion: &api core.spinkube.dev/v1alpha1,
  metadata: {name: book-catalog}, spec: {replicas: 3, image: string,
  checks: {liveness: &health {httpGet: {path: /health}}, readiness: *health}}}
deploy/spinkube/executor.yaml: {kind: SpinAppExecutor, apiVersion: *api, spec: {
  createDeployment: true, deploymentConfig: {caCertSecret: string,
  installDefaultCACerts: false, otel: {exporter_otlp_endpoint: string}}}}
deploy/spinkube/ingress.yaml: {kind: Ingress, spec: {rules: [{http: {paths: [{path: /,
  pathType: Prefix, backend: {service: {name: book-catalog, port: {number: 80}}}}]}}]}}
deploy/spinkube/networkpolicy.yaml: {kind: NetworkPolicy, spec: {policyTypes: [Ingress],
  podSelector: {matchLabels: {core.spinkube.dev/app-name: book-catalog}},
  ingress: [{ports: [{port: 80}], from: [{
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}},
    podSelector: {matchLabels: {app.kubernetes.io/name: ingress-nginx}}}]}]}}
"#;

/// Every TOML and YAML file parses; every script has a `#!` line, passes
/// `bash -n` and (but the sourced settings.sh) is executable.
fn files_parse(repo: &Repo, out: &mut Findings) {
    for path in repo.files(&[".toml", ".yaml"]) {
        let parsed = repo.parse(path);
        need!(out, parsed.as_ref().is_ok_and(|d| !d.is_empty()) => "{path}: {parsed:?}");
    }
    for path in repo.files(&[".sh"]) {
        let (text, mut bash) = (repo.text(path), Command::new("bash"));
        let bash = bash.args(["-n", "-c", text]).output();
        let file = std::fs::metadata(Path::new(env!("CARGO_MANIFEST_DIR")).join(path));
        let run = file.is_ok_and(|f| f.permissions().mode() & 0o111 != 0);
        need!(out, text.starts_with("#!") && bash.is_ok_and(|o| o.status.success()) => "{path}");
        need!(out, run || path.ends_with("/settings.sh") => "{path} is not executable");
    }
}

/// The files hold EXPECTED; the `spec` of the SpinApp and of the
/// SpinAppExecutor has only fields of CRDS, of their types.
fn files_hold_what_they_must(repo: &Repo, out: &mut Findings) {
    for (path, expected) in entries(&serde_yaml::from_str(EXPECTED).expect("YAML")) {
        conforms(&repo.doc(path), expected, false, path, out);
    }
    for (kind, spec) in entries(&serde_yaml::from_str(CRDS).expect("YAML")) {
        conforms(&repo.one(kind)["spec"], spec, true, kind, out);
    }
}

/// A manifest without what a deploy manifest may change.
fn comparable(manifest: &Yaml) -> Yaml {
    let mut m = manifest.clone();
    m["application"] = Yaml::Null;
    m["variables"]["client_ip_header"]["default"] = Yaml::Null;
    for key in ["source", "sqlite_databases", "build"] {
        m["component"]["book-catalog"][key] = Yaml::Null;
        m["component"]["catalog-page"][key] = Yaml::Null;
    }
    m
}

/// spin.toml declares every setting and passes it to the component; its only
/// other variable is the PostgreSQL host it may reach. It serves ROUTES, the
/// page's taking no path of the router's, the page with no setting,
/// database or host. deploy/'s manifests are the same but for the builds
/// they serve, which `make variants` writes, and may grant no SQLite
/// database (one serving a PostgreSQL-only build must not).
fn manifests_declare_the_settings(repo: &Repo, out: &mut Findings) {
    let m = repo.doc("spin.toml");
    let routes = seq(&m["trigger"]["http"]).into_iter();
    let routes: Vec<_> =
        routes.map(|t| format!("{} {}", text(&t["route"]), text(&t["component"]))).collect();
    need!(out, routes == ROUTES => "routes {routes:?}");
    let api = ["/ui", "/ui/", "/ui/x"].map(|path| route("GET", path).endpoint.is_ok());
    need!(out, api == [false; 3] => "the page takes the API's paths: {api:?}");
    let page = keys(&m["component"]["catalog-page"]);
    need!(out, page.iter().eq(["build", "source"]) => "the page has {page:?}");
    let (mut others, component) = (keys(&m["variables"]), &m["component"]["book-catalog"]);
    for name in Setting::ALL.map(Setting::variable_name) {
        need!(out, others.remove(name) => "{name} is not declared");
        let passed = &component["variables"][name];
        need!(out, *passed == format!("{{{{ {name} }}}}") => "{name} is not passed");
    }
    need!(out, others.iter().eq(["db_host"]) => "variables not settings: {others:?}");
    let make = repo.text("Makefile");
    let built = VARIANT_WASMS.iter().all(|wasm| make.contains(wasm));
    need!(out, make.contains("\nvariants:") && built => "variants");
    for path in repo.files(&["/spin.toml"]) {
        let (deploy, c) = (repo.doc(path), &repo.doc(path)["component"]["book-catalog"]);
        need!(out, comparable(&deploy) == comparable(&m) => "{path}: not spin.toml");
        let postgres_only = text(&c["source"]).ends_with("-postgres.wasm");
        let none = c["sqlite_databases"].is_null();
        let sqlite =
            none || (c["sqlite_databases"] == component["sqlite_databases"] && !postgres_only);
        need!(out, sqlite => "{path}: SQLite");
    }
}

/// The SpinApp runs spin.toml's component on the executor: on one of a
/// RuntimeClass and an image (the operator's webhook), sending OTLP/HTTP as
/// Spin does (a port, not gRPC's 4317; no path where Spin appends one). It
/// requests within limits, probes the router's public health check for
/// longer than the store's 5 s connect timeout, trusts one proxy (the
/// Ingress) and nothing else; the NetworkPolicy selects by one label.
fn spinapp_runs_on_its_executor_behind_its_ingress_only(repo: &Repo, out: &mut Findings) {
    let (app, executor) = (repo.one("SpinApp"), repo.one("SpinAppExecutor"));
    let (spec, config) = (&app["spec"], &executor["spec"]["deploymentConfig"]);
    need!(out, spec["executor"] == executor["metadata"]["name"] => "another executor");
    let m = repo.doc("spin.toml");
    need!(out, seq(&spec["components"]).into_iter().eq(&keys(&m["component"])) => "components");
    let one = config["runtimeClassName"].is_null() != config["spinImage"].is_null();
    need!(out, one => "not one of runtimeClassName and spinImage");
    for (key, url) in entries(&config["otel"]) {
        let url = text(url);
        let rest = url.strip_prefix("http://").or(url.strip_prefix("https://"));
        let (host, path) = rest.map_or(("", ""), |r| r.split_once('/').unwrap_or((r, "")));
        let port = host.rsplit_once(':').map(|(_, port)| port.parse::<u16>());
        let base = key != "exporter_otlp_endpoint" || path.is_empty();
        need!(out, port.is_some_and(|p| p.is_ok_and(|p| p != 4317)) && base => "{key}: {url:?}");
    }
    for resource in ["cpu", "memory"] {
        let request = quantity(&spec["resources"]["requests"][resource]);
        let limit = quantity(&spec["resources"]["limits"][resource]);
        need!(out, 0.0 < request && request <= limit => "{resource}: {request} > {limit}");
    }
    for check in ["liveness", "readiness"] {
        let probe = &spec["checks"][check];
        let path = text(&probe["httpGet"]["path"]);
        let routed = route("GET", path);
        let public = !routed.protected && routed.endpoint == Ok(Endpoint::Health);
        need!(out, path == HEALTH_PATH && public => "{check}: {path} is not the health check");
        let timeout = probe["timeoutSeconds"].as_u64().unwrap_or(1);
        need!(out, timeout > 5 => "{check}.timeoutSeconds {timeout} <= 5");
    }
    let variables = seq(&spec["variables"]);
    let variable = |name| variables.iter().find(|v| v["name"] == name);
    need!(out, variable("trusted_proxy_hops").is_some_and(|v| v["value"] == "1") => "hops");
    let others = ["client_ip_header", "trust_forwarded_for"].map(variable);
    need!(out, others.iter().all(Option::is_none) => "one proxy, and {others:?}");
    let pods = keys(&repo.one("NetworkPolicy")["spec"]["podSelector"]["matchLabels"]);
    need!(out, pods.len() == 1 => "pod selector {pods:?}");
}

/// The SpinApp sets spin.toml's variables, each once, credentials from the
/// Secret secret.yaml templates and deploy.sh makes, with the keys it needs
/// (and reads all). The template has no usable signing secret (nor `data`),
/// and a db_host that is its db_url's (with an sslmode Spin 4.0.2 parses).
/// deploy.sh makes the `caCertSecret` with the key the operator mounts
/// (internal/controller/deployment.go) and applies the folder but the
/// template, the executor before the SpinApp.
fn spinkube_script_makes_what_the_files_read(repo: &Repo, out: &mut Findings) {
    let (manifest, app) = (&repo.doc("spin.toml")["variables"], repo.one("SpinApp"));
    let (template, mut names, mut read) = (repo.one("Secret"), BTreeSet::new(), BTreeSet::new());
    let (secret, data) = (text(&template["metadata"]["name"]), &template["stringData"]);
    let run = repo.run("deploy/spinkube/deploy.sh", &REQUIRED);
    let executor = repo.one("SpinAppExecutor");
    let made = run.variables();
    let create = format!("kubectl create secret generic {secret} --from-literal");
    need!(out, run.running(&create).len() == 1 => "deploy.sh does not make {secret}");
    for var in seq(&app["spec"]["variables"]) {
        let (name, reference) = (text(&var["name"]), &var["valueFrom"]["secretKeyRef"]);
        need!(out, names.insert(name) && !manifest[name].is_null() => "{name}: twice or unknown");
        need!(out, var["value"].is_null() != var["valueFrom"].is_null() => "{name}: value?");
        let credential =
            manifest[name]["secret"] == true || name == "db_url" || name == "auth_username";
        need!(out, !credential || reference["name"] == secret => "{name}: not from {secret}");
        let (key, optional) = (text(&reference["key"]), reference["optional"] == true);
        let both = !data[key].is_null() && made.contains_key(key);
        need!(out, reference.is_null() || optional || both => "{name}: {key} is not made");
        read.insert(key);
    }
    let set = |names_: &str| names_.split(' ').all(|n| names.contains(n));
    need!(out, set("secret_token auth_username db_url db_host trusted_proxy_hops") => "{names:?}");
    need!(out, set("auth_password_hash") || set("auth_password") => "no password");
    let all = keys(data).into_iter().chain(made.into_keys());
    need!(out, all.collect::<Vec<_>>().iter().all(|k| read.contains(k.as_str())) => "not all read");
    need!(out, template["data"].is_null() && data.is_mapping() => "data, not stringData");
    for name in SIGNING_SECRETS {
        need!(out, text(&data[name]).len() < MIN_SECRET_BYTES => "a usable {name}");
    }
    let (url, host) = (text(&data["db_url"]), text(&data["db_host"]));
    need!(out, host == postgres_host(url) => "db_host {host} for {url}");
    let query = url.split_once('?').map_or("", |q| q.1).split('&');
    let modes: Vec<&str> = query.filter_map(|p| p.strip_prefix("sslmode=")).collect();
    need!(out, [["disable"], ["prefer"], ["require"]].iter().any(|m| modes == m) => "{modes:?}");
    let ca = text(&executor["spec"]["deploymentConfig"]["caCertSecret"]);
    let made = run.running(&format!("kubectl create secret generic {ca} "));
    let from: Vec<&str> = made.iter().flat_map(|c| values(c, "--from-file")).collect();
    need!(out, from.len() == 1 && from[0].starts_with("ca-certificates.crt=") => "{ca}: {from:?}");
    let apply = "kubectl apply -f deploy/spinkube/";
    for path in repo.files(&[".yaml"]) {
        let template = repo.parse(path).unwrap_or_default().iter().any(|d| d["kind"] == "Secret");
        let applied = run.2.contains(&format!("kubectl apply -f {path}"));
        need!(out, !path.contains("/spinkube/") || applied != template => "{path}");
    }
    need!(out, run.before(&format!("{apply}executor"), &format!("{apply}spinapp")) => "order");
}

/// Each deploy script runs as DEPLOYS says, passing each setting set as
/// SPIN_VARIABLE_<environment name> as that variable, nothing that is not
/// one of spin.toml, db_host as db_url's `host:port` (once without a port),
/// no signing secret the service would not use, no bare `spin deploy`
/// (which Spin 4 refuses).
fn deploy_scripts_pass_every_setting(repo: &Repo, out: &mut Findings) {
    let variables = keys(&repo.doc("spin.toml")["variables"]);
    let value = |s: Setting| match s.variable_name() {
        "db_url" => "postgresql://book@db.example.com/books?sslmode=prefer".to_string(),
        name => format!("{TOKEN}-{name}"),
    };
    let every = Setting::ALL.map(|s| (s.env_name(), value(s))).to_vec();
    let required = REQUIRED.map(|(n, v)| (n, v.to_string())).to_vec();
    for (deploy, settings) in DEPLOYS.trim().lines().flat_map(|d| [(d, &every), (d, &required)]) {
        let mut deploy = deploy.split(" |").map(str::trim);
        let [script, build, deploy, default] = [(); 4].map(|_| deploy.next().unwrap_or(""));
        let run = repo.run(script, settings);
        let once = run.running(deploy.split(" -").next().unwrap_or("")).len() == 1;
        let passed = run.variables();
        need!(out, run.before(build, deploy) && once => "{script}: {build}, {deploy}? {}", run.1);
        need!(out, run.running("spin deploy").is_empty() => "{script}: a bare `spin deploy`");
        need!(out, passed.keys().all(|k| variables.contains(k)) => "{script}: {passed:?}");
        for (i, (name, value)) in settings.iter().enumerate() {
            let name = name.to_lowercase();
            need!(out, passed.get(&name) == Some(value) => "{script}: {name} is not passed");
            if SIGNING_SECRETS.contains(&name.as_str()) {
                let mut short = settings.to_vec();
                short[i].1.truncate(MIN_SECRET_BYTES - 1);
                let run = repo.run(script, &short);
                need!(out, !run.0 && run.variables().is_empty() => "{script}: a short {name}");
            }
        }
        if let Some((name, value)) = default.split_once('=') {
            let given = settings.iter().any(|(given, _)| given.eq_ignore_ascii_case(name));
            let passed = passed.get(name).map(String::as_str);
            need!(out, given || passed == Some(value) => "{script}: {name} is not {value}");
        }
        let url = passed.get("db_url").map_or("", String::as_str);
        need!(out, passed.get("db_host") == Some(&postgres_host(url)) => "{script}: db_host");
    }
}

type Check = fn(&Repo, &mut Findings);

macro_rules! named {
    ($($check:ident),* $(,)?) => { [$((stringify!($check), $check as Check)),*] };
}

const CHECKS: [(&str, Check); 6] = named! {
    files_parse, files_hold_what_they_must, manifests_declare_the_settings,
    spinapp_runs_on_its_executor_behind_its_ingress_only,
    spinkube_script_makes_what_the_files_read, deploy_scripts_pass_every_setting,
};

fn findings(repo: &Repo, (name, check): (&str, Check)) -> Findings {
    let mut out = Findings::new();
    check(repo, &mut out);
    out.iter().map(|f| format!("{name}: {f}")).collect()
}

#[test]
fn deploy_files_pass_every_check() {
    let failed = CHECKS.map(|c| findings(&Repo::load(), c)).concat();
    assert!(failed.is_empty(), "\n  {}", failed.join("\n  "));
}

#[test]
fn each_check_fails_on_a_broken_example() {
    let (repo, mut untested) = (Repo::load(), BTreeSet::from(CHECKS.map(|(name, _)| name)));
    for example in BROKEN.trim().lines().map(|l| l.replace("\\n", "\n")) {
        let mut fields = example.split('|').map(str::trim);
        let [name, file, text, replacement] = [(); 4].map(|_| fields.next().unwrap_or(""));
        let check = CHECKS.into_iter().find(|(n, _)| *n == name).expect(name);
        let mut broken = repo.clone();
        let original = broken.0.get_mut(file).expect(file);
        assert!(original.contains(text), "{file} has no {text:?}");
        *original = original.replacen(text, replacement, 1);
        assert!(!findings(&broken, check).is_empty(), "{name} passes {example:?}");
        untested.remove(name);
    }
    assert!(untested.is_empty(), "no broken example: {untested:?}");
}

/// One broken example a line, `check | file | text | replacement` (`\n`: a
/// line break): the files with that one change must fail the check.
const BROKEN: &str = r#"
files_parse | deploy/akamai/deploy.sh | #!/usr/bin/env bash | # bash
files_parse | deploy/settings.sh | done | done done
files_hold_what_they_must | spin.toml | ["postgres://{{ db_host }}"] | ["postgres://{{ db_host }}", "https://*:*"]
files_hold_what_they_must | spin.toml | secret_token_previous = { default = "" | secret_token_previous = { default = "x"
files_hold_what_they_must | deploy/runtime-config/sqlite-path.toml | [sqlite_database.default] | [sqlite_database.books]
files_hold_what_they_must | deploy/runtime-config/sqlite-path.toml | path = "/var | path = "var
files_hold_what_they_must | deploy/spinkube/spinapp.yaml | replicas: 3 | replicas: 2
files_hold_what_they_must | deploy/spinkube/networkpolicy.yaml |   podSelector:\n            matchLabels:\n              app.kubernetes.io/name: ingress-nginx\n |
manifests_declare_the_settings | spin.toml | trusted_proxy_hops = "{{ trusted_proxy_hops }}" |
manifests_declare_the_settings | deploy/postgres-only/spin.toml | route = "/..." | route = "/api/..."
manifests_declare_the_settings | deploy/postgres-only/spin.toml | allowed_outbound_hosts | sqlite_databases = ["default"]\nallowed_outbound_hosts
manifests_declare_the_settings | spin.toml | route = "/ui/..." | route = "/app/..."
manifests_declare_the_settings | deploy/spinkube/spin.toml | route = "/ui/..." | route = "/ui"
manifests_declare_the_settings | spin.toml | source = "target/wasm32-wasip2/release/catalog_page.wasm" | source = "target/wasm32-wasip2/release/catalog_page.wasm"\nsqlite_databases = ["default"]
files_hold_what_they_must | deploy/wasi-p2/spin.toml | variants/catalog-page.wasm | variants/book-catalog-p2.wasm
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | - catalog-page |
files_hold_what_they_must | deploy/spinkube/executor.yaml | caCertSecret: book-catalog-ca | caCertSecrets: book-catalog-ca
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/executor.yaml | runtimeClassName: wasmtime-spin-v2 | runtimeClassName: wasmtime-spin-v2\n    spinImage: ghcr.io/spinframework/spin:v3.6.3
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/executor.yaml | :4318 | :4317
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | executor: book-catalog-shim | executor: containerd-shim-spin
files_hold_what_they_must | deploy/spinkube/spinapp.yaml | value: "1" | value: 1
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | - book-catalog | - books
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | memory: 128Mi | memory: 1Gi
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | path: /health | path: /books
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/spinapp.yaml | timeoutSeconds: 6 | timeoutSeconds: 5
spinapp_runs_on_its_executor_behind_its_ingress_only | deploy/spinkube/networkpolicy.yaml | app-name: book-catalog | app-name: book-catalog\n      tier: web
spinkube_script_makes_what_the_files_read | deploy/spinkube/spinapp.yaml | key: db_host | key: db_hostname
spinkube_script_makes_what_the_files_read | deploy/spinkube/spinapp.yaml | name: auth_username\n      valueFrom: | name: auth_username\n      value: admin\n      valueFrom:
spinkube_script_makes_what_the_files_read | deploy/settings.sh | export SPIN_VARIABLE_AUTH_USERNAME= | SPIN_VARIABLE_AUTH_USERNAME=
spinkube_script_makes_what_the_files_read | deploy/spinkube/secret.yaml | secret_token: "REPLACE-ME" | secret_token: "0123456789abcdef0123456789abcdef"
spinkube_script_makes_what_the_files_read | deploy/spinkube/secret.yaml | db_host: "books-db-rw.books.svc:5432" | db_host: "books-db-rw.books.svc:5433"
spinkube_script_makes_what_the_files_read | deploy/spinkube/secret.yaml | books?sslmode=require | books?user=u&sslmode=verify-full
spinkube_script_makes_what_the_files_read | deploy/spinkube/executor.yaml | caCertSecret: book-catalog-ca | caCertSecret: books-db-ca
spinkube_script_makes_what_the_files_read | deploy/spinkube/deploy.sh | --from-file=ca-certificates.crt= | --from-file=ca.crt=
spinkube_script_makes_what_the_files_read | deploy/spinkube/deploy.sh | executor spinapp | spinapp executor
spinkube_script_makes_what_the_files_read | deploy/spinkube/deploy.sh | networkpolicy ingress | networkpolicy ingress secret
deploy_scripts_pass_every_setting | deploy/settings.sh | compgen -e SPIN_VARIABLE_ | compgen -e SPIN_VARIABLE_S
deploy_scripts_pass_every_setting | deploy/settings.sh | -lt 32 | -lt 16
deploy_scripts_pass_every_setting | deploy/settings.sh | host="${host##*@}" | :
deploy_scripts_pass_every_setting | deploy/settings.sh | host="$host:5432" | host="$host"
deploy_scripts_pass_every_setting | deploy/akamai/deploy.sh | make variants | make variants\nvariable_flags+=(--variable secret_token=0123456789abcdef0123456789abcdef)
deploy_scripts_pass_every_setting | deploy/akamai/deploy.sh | -f deploy/postgres-only/spin.toml | -f spin.toml
deploy_scripts_pass_every_setting | deploy/akamai/deploy.sh | :-true-client-ip} | :-x-forwarded-for}
"#;
