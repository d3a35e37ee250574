#!/usr/bin/env -S python3 -B
"""The app through a real registry process, as a user ships it (real Spin only).

Debian's `docker-registry` on 127.0.0.1 (scripts/ensure-tools.sh registry).
deploy/spinkube/deploy.sh's push step pushes the build (MANIFEST, IMAGE,
INSECURE_REGISTRY=1); the image holds the built component byte for byte and
the manifest with every variable. `spin up -f REF --insecure` serves it from
an empty directory and cache, every setting as SPIN_VARIABLE_<NAME>, and the
plain hurl files pass (each one test). SQLite: spin.toml's build, its catalog
in --state-dir; without it Spin keeps the database in memory (why the README
sets it). PostgreSQL: the PostgreSQL-only build (`make variants`).
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
from pathlib import Path

import lib
from lib import ROOT, launch

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


class Registry(launch.Host):
    """A docker-registry process on loopback, started and stopped as a host is."""

    def __init__(self, ctx):
        if not shutil.which("docker-registry"):
            raise RuntimeError("no docker-registry (scripts/ensure-tools.sh registry)")
        super().__init__(workdir=tempfile.mkdtemp(prefix="registry.", dir=ctx.tmp))
        ctx.hosts.append(self)  # stopped when the module ends
        self.kind = "docker-registry"
        self.start(30)
        self.address = f"127.0.0.1:{self.port}"

    def command_and_env(self):
        config = self.workdir / "config.yml"
        config.write_text(CONFIG.format(storage=self.workdir / "storage", port=self.port), encoding="utf-8")
        return [shutil.which("docker-registry"), "serve", str(config)], dict(os.environ)

    def health(self):
        return 200 if self.get("/v2/") is not None else None

    def get(self, path, accept=None):
        """The body of GET `path` on the registry, or None."""
        r = lib.request(self.port, "GET", path, headers={"Accept": accept} if accept else {}, timeout=10)
        return r.raw if r.status == 200 else None


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
    """The image holds the built components (the API, the page) and the app's manifest with every variable."""
    t = ctx.tally
    app = tomllib.loads(manifest.read_text(encoding="utf-8"))
    built = sorted("sha256:" + hashlib.sha256((manifest.parent / c["source"]).resolve().read_bytes()).hexdigest()
                   for c in app["component"].values())
    image = registry.get(f"/v2/{name}/manifests/{tag}", OCI_MANIFEST_TYPE)
    layers = json.loads(image or b"{}").get("layers", [])
    wasm = sorted(layer["digest"] for layer in layers if layer["mediaType"] == WASM_TYPE)
    t.check(wasm == built, f"{name}:{tag}: the registry holds the built components, byte for byte",
            f"built {built}, image {layers}")
    locked = [registry.get(f"/v2/{name}/blobs/{layer['digest']}")
              for layer in layers if layer["mediaType"] == LOCKED_APP_TYPE]
    locked = json.loads(locked[0] or b"{}") if len(locked) == 1 else {}
    sources = sorted(c.get("source", {}).get("digest") for c in locked.get("components", []))
    t.check(sources == built and set(locked.get("variables", {})) == set(app["variables"]),
            f"{name}:{tag}: ... and the app's manifest, naming those components and every variable",
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
    """Without --state-dir, a book created is gone once its connection is: the
    next request's (WASI 0.2), or its instance's, after a second idle (WASI 0.3,
    whose instance keeps its SQLite connection)."""
    host = PulledApp(ctx, ref, state=False).start()
    token = host.token()
    created = host.call("POST", "/book", {"title": "Kept?", "author": "Nobody", "year": 2000}, token)
    time.sleep(2)
    read = host.call("GET", f"/book/{(created.data or {}).get('id')}", token=token)
    ctx.tally.check(created.status == 201 and read.status == 404 and "in-memory database" in host.tail(1000),
                    "without --state-dir, Spin keeps the default SQLite database in memory: a book "
                    "created is gone once its connection closes (the README's command sets --state-dir)",
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
    page = host.call("GET", "/ui/").status
    t.check(host.health() == 200 and page == 200 and not any(host.empty.iterdir()),
            f"spin up -f {name}:{tag} --insecure serves it, the page too, from an empty directory",
            f"{host.health()} {page} {list(host.empty.iterdir())}")
    plain_hurl(ctx, host, f"{name}:{tag} from the registry")
    if ctx.store == "sqlite":
        db = host.state_dir / "sqlite_db.db"
        t.check(db.is_file() and db.stat().st_size > 0, "its catalog is <state-dir>/sqlite_db.db",
                f"{sorted(p.name for p in host.state_dir.iterdir())}")
    host.stop()
    if ctx.store == "sqlite":
        gone_without_state_dir(ctx, ref)


if __name__ == "__main__":
    lib.main("registry", run)
