#!/usr/bin/env python3
"""A settings source that fails never opens the default door.

The host reads its variables from a HashiCorp Vault (`--runtime-config-file`
with a `[[variables_provider]] type = "vault"`, as Spin takes it), played by
a small KV version 2 server here. First it serves the login settings, and
only those credentials work. Then it fails: it answers 500, and then nothing
listens at its address. In both cases every login (the default
`admin`/`password`, and the right credentials) answers 500 "Internal server
error" and no token is ever signed; a protected request answers 500 rather
than 401; the log names the setting, never a value. When the Vault answers
again, so does the service.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

MOUNT = "secret"
PREFIX = "book-catalog"


class FakeVault:
    """KV version 2 reads: `GET /v1/{mount}/data/{prefix}/{name}`."""

    def __init__(self, values, token, port=None):
        self.values, self.token, self.failing = values, token, False
        self.reads = []
        vault = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                path = urlsplit(self.path).path  # Spin's client adds an empty `?`
                vault.reads.append(path)
                prefix = f"/v1/{MOUNT}/data/{PREFIX}/"
                if vault.failing:
                    return self.answer(500, {"errors": ["internal error"]})
                if self.headers.get("X-Vault-Token") != vault.token:
                    return self.answer(403, {"errors": ["permission denied"]})
                name = path[len(prefix):] if path.startswith(prefix) else None
                if name not in vault.values:
                    return self.answer(404, {"errors": []})
                # As Vault answers, every field: clients parse them all.
                self.answer(200, {
                    "request_id": "00000000-0000-0000-0000-000000000000", "lease_id": "",
                    "renewable": False, "lease_duration": 0, "wrap_info": None,
                    "warnings": None, "auth": None,
                    "data": {"data": {"value": vault.values[name]},
                             "metadata": {"created_time": "2026-11-01T00:00:00.000000000Z",
                                          "custom_metadata": None, "deletion_time": "",
                                          "destroyed": False, "version": 1}}})

            def answer(self, status, body):
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.port = port or lib.free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class VaultHost(lib.Host):
    """A host with no credentials or secret of its own: only the Vault has them."""

    def __init__(self, ctx):
        super().__init__(ctx, secret=None, username="unused", password="unused")

    def settings(self):
        settings = super().settings()
        for name in ("AUTH_USERNAME", "AUTH_PASSWORD"):
            settings.pop(name)
        return settings


def run(ctx):
    if not ctx.only_on("sqlite", "the variables provider is the host's, whatever the store"):
        return
    t = ctx.tally
    token = "vault-token-" + lib.random_text(12)
    username, password = "vaulted-" + lib.random_text(6).lower(), "Vaulted." + lib.random_text(16)
    secret = lib.random_text(48)
    vault = FakeVault({"auth_username": username, "auth_password": password,
                       "secret_token": secret}, token)
    config = Path(ctx.tmp) / "runtime-config.toml"
    config.write_text(
        "[[variables_provider]]\n"
        'type = "vault"\n'
        f'url = "http://127.0.0.1:{vault.port}"\n'
        f'token = "{token}"\n'
        f'mount = "{MOUNT}"\n'
        f'prefix = "{PREFIX}"\n', encoding="utf-8")
    host = VaultHost(ctx)
    host.args = ["--runtime-config-file", str(config)]
    host.start()

    def login(user, pw):
        return lib.try_request(host.port, "POST", "/token", body={"username": user, "password": pw})

    r = login(username, password)
    t.check(r.is_envelope(200), "the Vault serves the credentials: they log in", f"{r!r}")
    session = r.data["token"] if r.status == 200 else None
    r = login("admin", "password")
    t.check(r.is_envelope(401, "Invalid credentials"), "the default credentials do not", f"{r!r}")
    t.check(any(p.endswith(f"/{PREFIX}/auth_password") for p in vault.reads),
            "the host asked the Vault (KV v2 path under the prefix)", f"{vault.reads[:4]}")

    signed = []
    for failure, make in (("answers 500", lambda: setattr(vault, "failing", True)),
                          ("is not listening", vault.stop)):
        make()
        for user, pw in (("admin", "password"), (username, password)):
            r = login(user, pw)
            if r.status == 200:
                signed.append(r)
            t.check(r.is_envelope(500, "Internal server error"),
                    f"the Vault {failure}: a login as {'admin' if user == 'admin' else 'the user'} "
                    "answers 500", f"{r!r}")
        r = lib.try_request(host.port, "GET", "/books", token=session)
        t.check(r.is_envelope(500, "Internal server error"),
                f"the Vault {failure}: a protected request with a valid token answers 500, not 401",
                f"{r!r}")
        r = lib.try_request(host.port, "GET", "/health")
        t.check(r.is_envelope(503, "Service unavailable"),
                f"the Vault {failure}: GET /health answers 503", f"{r!r}")
    t.check(not signed, "no token is signed while the Vault fails", f"{signed[:2]}")
    log = host.tail(200)
    t.check("AUTH_USERNAME" in log, "the log names the setting it could not read", log[-400:])
    t.check(password not in log and secret not in log and token not in log,
            "the log holds no value, secret or Vault token")

    # The Vault is back, at the same address: so is the service, unrestarted.
    vault = FakeVault(vault.values, token, port=vault.port)
    try:
        r = login(username, password)
        t.check(r.is_envelope(200), "the Vault answers again: the credentials log in again",
                f"{r!r}")
    finally:
        vault.stop()
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("providers", run)
