#!/usr/bin/env python3
"""The app through a real registry, as a user ships it.

Debian's `docker-registry` (the distribution registry) on 127.0.0.1, with a
configuration and storage of its own. The app is pushed by the push step of
deploy/spinkube/deploy.sh, the command its README documents (MANIFEST, IMAGE,
INSECURE_REGISTRY=1 for plain HTTP); then `spin up -f REF --insecure` serves
it from an empty directory with a cache of its own, every setting as
SPIN_VARIABLE_<NAME>, and the plain hurl suite runs against it as
tests/e2e.py runs it (each file one test). SQLite: the default build
(spin.toml), its catalog in --state-dir; and, without --state-dir, Spin
keeps that database in memory and a book is gone on the next request (why
the README's command sets it). PostgreSQL: the PostgreSQL-only build
(deploy/postgres-only/spin.toml; `make variants`) on a fresh database.
What was pushed is complete: the registry's image holds the built
component byte for byte and the app's manifest with every variable.
Real Spin only (--host spin); needs docker-registry
(scripts/ensure-tools.sh registry).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402
from lib import ROOT, launch  # noqa: E402

BUILDS = {"sqlite": ROOT / "spin.toml", "postgres": ROOT / "deploy/postgres-only/spin.toml"}
PUSH = ROOT / "deploy/spinkube/deploy.sh"
OCI_MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
LOCKED_APP_TYPE = "application/vnd.fermyon.spin.application.v1+config"
WASM_TYPE = "application/vnd.wasm.content.layer.v1+wasm"
CONFIG = """\
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {storage}
http:
  addr: 127.0.0.1:{port}
"""


class Registry:
    """A docker-registry process on loopback; stopped with the test's hosts."""

    def __init__(self, ctx):
        binary = shutil.which("docker-registry")
        if not binary:
            raise RuntimeError("no docker-registry (scripts/ensure-tools.sh registry)")
        home = Path(tempfile.mkdtemp(prefix="registry.", dir=ctx.tmp))
        self.port = lib.free_port()
        self.address = f"127.0.0.1:{self.port}"
        config = home / "config.yml"
        config.write_text(CONFIG.format(storage=home / "storage", port=self.port), encoding="utf-8")
        self.log_path = home / "registry.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([binary, "serve", str(config)], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        ctx.hosts.append(self)  # stopped when the module ends
        deadline = time.monotonic() + 30
        while self.get("/v2/") is None:
            if not self.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"docker-registry did not answer on {self.address}:\n"
                                   f"{self.tail()}")
            time.sleep(0.1)

    def get(self, path, accept=None):
        """The body of GET `path` on the registry, or None."""
        request = urllib.request.Request(f"http://{self.address}{path}",
                                         headers={"Accept": accept} if accept else {})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.read()
        except (OSError, urllib.error.HTTPError):
            return None

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, lines=30):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class PulledApp(lib.Host):
    """`spin up -f REF --insecure` run from an empty directory, with a fresh
    cache (so all it serves comes from the registry) and every setting as
    SPIN_VARIABLE_<NAME>; --state-dir unless `state` is false."""

    def __init__(self, ctx, ref, state=True, **kwargs):
        super().__init__(ctx, **kwargs)
        self.ref, self.state = ref, state
        self.empty = Path(tempfile.mkdtemp(prefix="empty.", dir=ctx.tmp))
        self.cache = Path(tempfile.mkdtemp(prefix="cache.", dir=ctx.tmp))

    def command_and_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPIN_VARIABLE_")}
        env.update(("SPIN_VARIABLE_" + name, value) for name, value in self.settings().items())
        command = ["env", "-C", str(self.empty), launch.spin_binary(), "up", "-f", self.ref,
                   "--insecure", "--cache-dir", str(self.cache),
                   "--listen", f"127.0.0.1:{self.port}"]
        if self.state:
            command += ["--state-dir", str(self.state_dir)]
        return command, env


def push(ctx, manifest, ref):
    """deploy/spinkube/deploy.sh push, with this Spin as `spin`."""
    bindir = Path(tempfile.mkdtemp(prefix="bin.", dir=ctx.tmp))
    (bindir / "spin").symlink_to(launch.spin_binary())
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}", IMAGE=ref,
               MANIFEST=str(manifest.relative_to(ROOT)), INSECURE_REGISTRY="1")
    return subprocess.run([str(PUSH), "push"], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)


def check_image(ctx, registry, name, tag, manifest):
    """The image holds the built component and the app's manifest with every variable."""
    t = ctx.tally
    app = tomllib.loads(manifest.read_text(encoding="utf-8"))
    (component,) = app["component"].values()
    built = (manifest.parent / component["source"]).resolve().read_bytes()
    built = "sha256:" + hashlib.sha256(built).hexdigest()
    image = registry.get(f"/v2/{name}/manifests/{tag}", OCI_MANIFEST_TYPE)
    layers = json.loads(image or b"{}").get("layers", [])
    wasm = [layer["digest"] for layer in layers if layer["mediaType"] == WASM_TYPE]
    t.check(wasm == [built], f"{name}:{tag}: the registry holds the built component, byte for byte",
            f"built {built}, image {layers}")
    locked = [registry.get(f"/v2/{name}/blobs/{layer['digest']}")
              for layer in layers if layer["mediaType"] == LOCKED_APP_TYPE]
    locked = json.loads(locked[0] or b"{}") if len(locked) == 1 else {}
    sources = [c.get("source", {}).get("digest") for c in locked.get("components", [])]
    t.check(sources == [built] and set(locked.get("variables", {})) == set(app["variables"]),
            f"{name}:{tag}: ... and the app's manifest, naming that component and every variable",
            f"{sources} {sorted(locked.get('variables', {}))}")


def plain_hurl(ctx, host, what):
    """The plain hurl files as a user runs them; each file one check."""
    files = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "tests/hurl").glob("*.hurl"))
    run = subprocess.run(
        ["hurl", "--test", "--variables-file", "tests/hurl/example.env",
         "--variable", f"base_url={host.base_url}", "--variable", f"username={host.username}",
         "--secret", f"password={host.password}"] + files,
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    results = {file: status for status, file in
               re.findall(r"^(Success|Failure) (\S+\.hurl) \(", run.stderr, re.M)}
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
    for file in files:
        ctx.tally.check(results.get(file) == "Success", f"{what}: plain hurl {file}",
                        f"hurl exited {run.returncode}")


def gone_without_state_dir(ctx, ref):
    """Without --state-dir, a book created is not there on the next request."""
    host = PulledApp(ctx, ref, state=False).start()
    token = host.token()
    book = {"title": "Kept?", "author": "Nobody", "year": 2000}
    created = host.call("POST", "/book", book, token)
    read = None
    if created.status == 201:
        read = host.call("GET", f"/book/{created.data['id']}", token=token)
    log = Path(host.log_path).read_text(errors="replace")
    ctx.tally.check(created.status == 201 and read is not None and read.status == 404
                    and "in-memory database" in log,
                    "without --state-dir, Spin keeps the default SQLite database in memory: a book "
                    "created is gone on the next request (the README's command sets --state-dir)",
                    f"{created!r} {read!r}")
    host.kill()


def run(ctx):
    t = ctx.tally
    if ctx.host_kind != "spin":
        t.note("skipped: `spin registry push` and `spin up -f REF` need real Spin (--host spin)")
        return
    registry = Registry(ctx)
    version = subprocess.run(["docker-registry", "--version"], capture_output=True, text=True)
    t.note(f"{version.stdout.strip()} on {registry.address}")
    manifest = BUILDS[ctx.store]
    app = tomllib.loads(manifest.read_text(encoding="utf-8"))["application"]
    name, tag = app["name"], app["version"]
    ref = f"{registry.address}/{name}:{tag}"
    pushed = push(ctx, manifest, ref)
    if not t.check(pushed.returncode == 0 and "Pushed with digest" in pushed.stdout + pushed.stderr,
                   f"deploy/spinkube/deploy.sh push of {manifest.relative_to(ROOT)} to {ref}",
                   pushed.stdout + pushed.stderr):
        return
    check_image(ctx, registry, name, tag, manifest)
    host = PulledApp(ctx, ref, db_url=ctx.fresh_database()).start()
    t.check(host.health() == 200 and not any(host.empty.iterdir()),
            f"spin up -f {name}:{tag} --insecure serves it from an empty directory",
            f"{host.health()} {list(host.empty.iterdir())}")
    plain_hurl(ctx, host, f"{name}:{tag} from the registry")
    if ctx.store == "sqlite":
        db = host.state_dir / "sqlite_db.db"
        t.check(db.is_file() and db.stat().st_size > 0, "its catalog is <state-dir>/sqlite_db.db",
                f"{sorted(p.name for p in host.state_dir.iterdir())}")
    t.check(host.stop() == 0, "it exits 0 on SIGTERM")
    if ctx.store == "sqlite":
        gone_without_state_dir(ctx, ref)


if __name__ == "__main__":
    lib.main("registry", run)
