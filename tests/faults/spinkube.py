#!/usr/bin/env -S python3 -B
"""A SpinKube node: what its pods run, without the cluster (root, PostgreSQL).

containerd of its own (socket, root and state in a temporary directory, the
`spin` runtime in its config; the shims' sockets stay in /run/containerd/s,
the shim's state in /run/containerd/spin) with containerd-shim-spin from
build/containerd-shim/ (.ci/run unpacks it); the WASI 0.2 build pushed by
deploy/spinkube/deploy.sh push (Spin 3.6.3 in test-all.sh) to registry.py's
loopback registry and pulled by `ctr`. A pod: a new container (runtime
io.containerd.spin.v2, host network, on 127.0.0.1), every setting as
SPIN_VARIABLE_<NAME> in its environment as spin-operator passes
spinapp.yaml's (the Secret's password hash), on a database its role owns.
Checks: e2e.py's suites; /health 503 while PostgreSQL is stopped, 200 when
back; a rescheduled pod keeps every book; one key through two pods stores
once. A containerd that cannot unpack a Spin artifact (before 1.6.25, 1.7.7):
each container is made from an empty image under APP_IMAGE, which is then
re-tagged to the app (the shim reads it when the task starts). Exits 77 with
one line when the machine cannot run the node.
"""

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

import lib
import e2e  # noqa: I001 (lib puts tests/ on the path)
import outages
import registry
import safe_writes
from lib import ROOT, launch, random_text, wait_until

SHIM = ROOT / "build/containerd-shim/containerd-shim-spin-v2"
MANIFEST = ROOT / "deploy/spinkube/spin.toml"
APP_IMAGE, EMPTY_IMAGE = "localhost/book-catalog-pod:latest", "localhost/empty:latest"
CONFIG = """\
version = 2
root = "{dir}/root"
state = "{dir}/state"
[grpc]
  address = "{dir}/containerd.sock"
[ttrpc]
  address = "{dir}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{dir}/opt"
# A SpinKube node's: the handler of the RuntimeClass wasmtime-spin-v2 (CRI loads only with runc too).
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.spin]
  runtime_type = "io.containerd.spin.v2"
"""


def unable():
    """Why this machine cannot run the node, or None."""
    missing = [c for c in ("containerd", "ctr", "runc", "docker-registry") if not shutil.which(c)]
    if os.geteuid() != 0:
        return "containerd needs root"
    if missing:
        return f"no {', '.join(missing)} (scripts/ensure-tools.sh containerd)"
    if not SHIM.exists():
        return f"no {SHIM.relative_to(ROOT)} (.ci/run unpacks containerd-shim-spin there)"
    ran = subprocess.run([SHIM, "-v"], capture_output=True, text=True)
    if ran.returncode != 0:
        return f"containerd-shim-spin does not run here: {(ran.stderr.strip().splitlines() or ['?'])[-1]}"
    if "overlay" not in open("/proc/filesystems", encoding="utf-8").read():
        return "no overlayfs, containerd's snapshotter"
    return None


def empty_image_archive(path):
    """An OCI archive of EMPTY_IMAGE: one empty layer (a writable root for a container)."""
    with tarfile.open(path, "w") as archive:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

        def blob(data, media_type):
            digest = hashlib.sha256(data).hexdigest()
            add("blobs/sha256/" + digest, data)
            return {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}
        layer = blob(bytes(10240), "application/vnd.oci.image.layer.v1.tar")  # an empty tar
        config = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {}, "rootfs": {
            "type": "layers", "diff_ids": [layer["digest"]]}}).encode(), "application/vnd.oci.image.config.v1+json")
        media_type = "application/vnd.oci.image.manifest.v1+json"
        manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": media_type, "config": config,
                                    "layers": [layer]}).encode(), media_type)
        manifest["annotations"] = {"io.containerd.image.name": EMPTY_IMAGE}
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", json.dumps({"schemaVersion": 2, "manifests": [manifest]}).encode())


class Node(launch.Host):
    """containerd with the shim on its PATH, started and stopped as a host is;
    stopping it first removes every container."""

    def __init__(self, ctx):
        super().__init__(workdir=tempfile.mkdtemp(prefix="node.", dir=ctx.tmp))
        ctx.hosts.append(self)
        self.kind, self.address = "containerd", str(self.workdir / "containerd.sock")
        self.ref, self.workaround = None, False
        self.start(60)

    def command_and_env(self):
        config = self.workdir / "config.toml"
        config.write_text(CONFIG.format(dir=self.workdir), encoding="utf-8")
        return ([shutil.which("containerd"), "--config", str(config)],
                dict(os.environ, PATH=f"{SHIM.parent}:{os.environ['PATH']}"))

    def health(self):
        return 200 if self.ctr("version", check=False).returncode == 0 else None

    def ctr(self, *args, check=True):
        return subprocess.run(["ctr", "--address", self.address, *args], capture_output=True, text=True,
                              timeout=120, check=check, stdin=subprocess.DEVNULL)

    def pull(self, ref):
        """`ctr images pull` of the app, usable as APP_IMAGE: the pull's error, if any."""
        self.ref, pulled = ref, self.ctr("images", "pull", "--plain-http", ref, check=False)
        if pulled.returncode != 0 and ref in self.ctr("images", "ls", "-q").stdout.split():
            self.workaround = True  # fetched, not unpacked
            empty_image_archive(self.workdir / "empty.tar")
            self.ctr("images", "import", str(self.workdir / "empty.tar"))
        self.ctr("images", "tag", "--force", ref, APP_IMAGE, check=False)
        return pulled.stderr.strip().splitlines()[-1] if pulled.returncode else None

    def create(self, env):
        """A new container of APP_IMAGE with this environment: its id."""
        container, env_file = "pod-" + random_text(10).lower(), self.workdir / "env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        if self.workaround:
            self.ctr("images", "tag", "--force", EMPTY_IMAGE, APP_IMAGE)
        self.ctr("containers", "create", "--runtime", "io.containerd.spin.v2", "--net-host",
                 "--env-file", str(env_file), APP_IMAGE, container, "/")
        env_file.unlink()
        if self.workaround:
            self.ctr("images", "tag", "--force", self.ref, APP_IMAGE)
        return container

    def remove(self, container):
        """Deletes the container and its task: the task's exit status, if it gave one."""
        deleted = self.ctr("tasks", "delete", "--force", container, check=False)
        self.ctr("containers", "delete", container, check=False)
        status = re.search(r"exit with non-zero exit code (\d+)", deleted.stderr)
        return int(status[1]) if status else 0 if deleted.returncode == 0 else None

    def kill(self):
        if self.alive():
            for container in self.ctr("containers", "ls", "-q", check=False).stdout.split():
                self.remove(container)
        super().kill()


class Pod(lib.Host):
    """The app in a container on ctx.node, its `ctr tasks start` the host
    process (it forwards SIGTERM to the task); each start a new container."""

    def __init__(self, ctx, db_url=None, **kwargs):
        super().__init__(ctx, db_url=db_url or ctx.fresh_database(), **kwargs)
        self.node, self.container, self.removed = ctx.node, None, None
        self.password_hash = lib.account(self.username, "editor", self.password)["password_hash"]

    def settings(self):
        settings = dict(super().settings(), AUTH_PASSWORD_HASH=self.password_hash)
        del settings["AUTH_PASSWORD"]
        return settings

    def command_and_env(self):
        env = {"SPIN_VARIABLE_" + name: value for name, value in self.settings().items()}
        self.container = self.node.create(dict(env, SPIN_HTTP_LISTEN_ADDR=f"127.0.0.1:{self.port}"))
        return (["ctr", "--address", self.node.address, "tasks", "start", "--fifo-dir",
                 str(self.node.workdir / "fifo"), self.container], dict(os.environ))

    def kill(self):
        super().kill()
        if self.container and self.node.alive():
            self.removed = self.node.remove(self.container)
        self.container = None

    def stop(self, timeout=20):
        """The task's exit status. containerd-shim-wasm now and then reports
        the exit before the task counts as stopped: then ctr's deletion fails
        (and ctr with 1), and kill's deletion gives the status."""
        status = super().stop(timeout)
        return self.removed if status == 1 and "must be stopped before deletion" in self.tail(1) else status


class E2ePod(e2e.E2eHost, Pod):
    """A pod with e2e.py's settings too (its accounts, a short login window)."""


def run(ctx):
    t = ctx.tally
    t.label = "spinkube"  # real Spin pushes; the shim serves
    if not ctx.only_on("postgres", "a SpinKube app's replicas share one PostgreSQL database"):
        return
    hub = registry.Registry(ctx)
    ctx.node = node = Node(ctx)
    versions = [subprocess.run(command, capture_output=True, text=True).stdout.split()[index] for command, index
                in ((["containerd", "--version"], 2), ([SHIM, "-v"], 4), ([launch.spin_binary(), "--version"], 1))]
    t.note("containerd {}, containerd-shim-spin {}, spin {} pushes; registry on ".format(*versions) + hub.address)
    manifest = Path(ctx.manifest).resolve() if ctx.manifest else MANIFEST
    app = tomllib.loads(manifest.read_text(encoding="utf-8"))["application"]
    ref = f"{hub.address}/{app['name']}:{app['version']}"
    pushed = registry.push(ctx, manifest, ref)
    if not t.check(pushed.returncode == 0 and "Pushed with digest" in pushed.stdout + pushed.stderr,
                   f"deploy/spinkube/deploy.sh push of {manifest.relative_to(ROOT)} to {ref}",
                   pushed.stdout + pushed.stderr):
        return
    error = node.pull(ref)
    if not t.check(APP_IMAGE in node.ctr("images", "ls", "-q").stdout.split(), f"ctr images pull {ref}", error):
        return
    if node.workaround:
        t.note(f"this containerd cannot unpack a Spin artifact ({error}): containers are made from an "
               f"empty image, then {APP_IMAGE} is re-tagged to the app before their task starts")
    e2e.run(ctx, E2ePod)

    pod = Pod(ctx).start()
    token = pod.token()
    t.check(pod.call("GET", "/ui/").status == 200, "a pod serves the page too")
    passed = re.findall(r"^    - name: (\w+)$", (ROOT / "deploy/spinkube/spinapp.yaml").read_text(), re.M)
    t.check({name.lower() for name in pod.settings()} <= set(passed),
            "a pod's settings are variables spinapp.yaml passes", f"{sorted(pod.settings())} {passed}")
    t.check(pod.rows("SELECT rolsuper, pg_get_userbyid(datdba) = current_user FROM pg_roles, pg_database "
                     "WHERE rolname = current_user AND datname = current_database()") == [("f", "t")],
            "the pods' role owns their database and is no superuser")
    books = outages.seed(pod, token, 10)
    ctx.pg.pause()
    try:
        down = wait_until(lambda: pod.health() == 503, 20)
    finally:
        ctx.pg.resume()
    t.check(down is not None, "PostgreSQL stopped: GET /health 503 (the readiness probe takes the pod out)")
    t.check(wait_until(lambda: pod.health() == 200, 20) is not None,
            "PostgreSQL back: GET /health 200 again, the same container")
    t.check(pod.stop() == 0, "a pod exits 0 on SIGTERM")
    pod.start()
    ok, why = outages.all_present(pod, token, books)
    t.check(ok, "a pod rescheduled (a new container) keeps every book; a token from before accepted", why)
    other = Pod(ctx, secret=pod.secret, username=pod.username, password=pod.password, db_url=pod.pg_url).start()
    safe_writes.same_key_at_once(ctx, [pod, other], token, 10, 3, "two pods on one database")
    stopped = [pod.stop(), other.stop()]
    t.check(stopped == [0, 0], "both pods exit 0 on SIGTERM", f"{stopped} {pod.tail(5)} {other.tail(5)}")


if __name__ == "__main__":
    if reason := unable():
        print(f"a SpinKube node: skipped, {reason}", flush=True)
        sys.exit(77)
    lib.main("spinkube", run)
