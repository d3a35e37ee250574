//! The real `spin-lite` binary on a manifest in a folder of its own, a
//! minimal HTTP client, and PostgreSQL helpers (`SPIN_LITE_TEST_PG_URL`).

pub mod components;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A Spin manifest serving `source` on `/...`, with `extra` appended (more
/// of `[component.app]`, then other tables), written into `dir`.
pub fn write_manifest(dir: &Path, source: &Path, variables: &str, extra: &str) -> PathBuf {
    let text = format!(
        "spin_manifest_version = 2\n[application]\nname = \"app\"\n[variables]\n{variables}\n\
         [[trigger.http]]\nroute = \"/...\"\ncomponent = \"app\"\n\
         [component.app]\nsource = {:?}\n{extra}\n",
        source.display().to_string()
    );
    let path = dir.join("spin.toml");
    std::fs::write(&path, text).unwrap();
    path
}

pub struct Host {
    child: Child,
    pub port: u16,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

pub fn collect(stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    out
}

pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spin-lite"));
    // A hermetic environment and working directory (no stray .env).
    cmd.env_clear().current_dir(dir);
    cmd
}

impl Host {
    pub fn start(dir: &Path, manifest: &Path, args: &[&str], env: &[(&str, &str)]) -> Host {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = command(dir)
            .arg("--from")
            .arg(manifest)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        let mut host = Host { child, port, stdout, stderr };
        let deadline = Instant::now() + Duration::from_secs(120);
        let serving = format!("Serving http://127.0.0.1:{port}");
        while !host.stdout().contains(&serving) {
            if let Ok(Some(status)) = host.child.try_wait() {
                panic!("spin-lite exited with {status}: {}", host.stderr());
            }
            assert!(Instant::now() < deadline, "spin-lite did not start: {}", host.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
        host
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (5 s at most) for `text` in the log, maybe written after the answer.
    pub fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.stderr().contains(text) {
            assert!(Instant::now() < deadline, "no {text:?} in:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        self.signal("-TERM")
    }

    /// `kill SIGNAL` (`-INT`, say), then the exit status.
    pub fn signal(&mut self, signal: &str) -> ExitStatus {
        let ok =
            Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "spin-lite did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 client: one GET per connection; the status, the head
/// and the (de-chunked) body.
pub fn get(port: u16, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = raw.split_once("\r\n\r\n").expect("response head");
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    if !chunked {
        return (status, head.to_string(), rest.to_string());
    }
    let (mut body, mut rest) = (String::new(), rest);
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    (status, head.to_string(), body)
}

/// `SPIN_LITE_TEST_PG_URL` and its `host:port` (no port: 5432). Unset, a
/// PostgreSQL test fails rather than pass unrun.
pub fn test_pg_url() -> (String, String) {
    let url = std::env::var("SPIN_LITE_TEST_PG_URL").expect(
        "SPIN_LITE_TEST_PG_URL is not set: run `make test`, or point it at a PostgreSQL database",
    );
    let authority = url.rsplit('@').next().unwrap();
    let host_port = authority.split(['/', '?']).next().unwrap();
    let host_port =
        if host_port.contains(':') { host_port.to_string() } else { format!("{host_port}:5432") };
    (url, host_port)
}

/// Runs SQL on the test server (without TLS, as `make test`'s cluster is).
fn pg_admin(url: &str, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to SPIN_LITE_TEST_PG_URL: {e}"));
        let task = tokio::spawn(connection);
        client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        drop(client);
        let _ = task.await;
    })
}

/// A new, empty database of its own, dropped at the end (even on failure).
pub struct ScratchDatabase {
    admin_url: String,
    name: String,
}

impl ScratchDatabase {
    pub fn create(admin_url: &str) -> ScratchDatabase {
        let nanos = std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos();
        let name = format!("spin_lite_probe_{}_{nanos}", std::process::id());
        pg_admin(admin_url, &format!("CREATE DATABASE {name}"));
        ScratchDatabase { admin_url: admin_url.to_string(), name }
    }

    /// The admin URL with its database replaced by this one.
    pub fn url(&self) -> String {
        with_param(&self.admin_url, &format!("dbname={}", self.name))
    }
}

/// `url` with one more query parameter (a later one overrides the path's
/// database or an earlier parameter).
pub fn with_param(url: &str, param: &str) -> String {
    format!("{url}{}{param}", if url.contains('?') { "&" } else { "?" })
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let _ = std::panic::catch_unwind(|| pg_admin(&self.admin_url, &sql));
    }
}
