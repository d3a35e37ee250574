#!/usr/bin/env -S python3 -B
"""A failing variables provider never opens the default door: the host reads
its settings from a HashiCorp Vault (`--runtime-config-file`, `type =
"vault"`), played by a KV v2 server process of ours. While it serves, only
its credentials log in; a secret rotated in it is in use within the 5 s a
WASI 0.3 instance keeps its settings (docs/configuration.md): tokens of the
old one refused; an account removed and another's password changed in it
refuse their tokens within that time, the other account and the pair
unaffected, never a 5xx; when it answers 500, then when nothing listens, every login
(defaults too) answers 500 and no token is signed, a protected request 500
(not 401), /health 503; the log names the setting, never a value. When the
Vault is back, so is the service.
"""

import json
from pathlib import Path
from urllib.parse import urlsplit

import lib

MOUNT = "secret"
PREFIX = "book-catalog"
# How long a changed variable may go unseen: the 5 s an instance keeps its
# settings (src/spin/p3/instance.rs), and a margin for a loaded machine.
SEEN_WITHIN = 8


class FakeVault:
    """KV version 2 reads: `GET /v1/{mount}/data/{prefix}/{name}`."""

    def __init__(self, values, token, port=None):
        self.values, self.token, self.failing, self.reads = values, token, False, []
        self.port = port or lib.free_port()
        self.server = lib.http_server(self.handle, port=self.port)

    def handle(self, request):
        path = urlsplit(request.path).path  # Spin's client adds an empty `?`
        self.reads.append(path)
        prefix = f"/v1/{MOUNT}/data/{PREFIX}/"
        name = path[len(prefix):] if path.startswith(prefix) else None
        if self.failing:
            status, body = 500, {"errors": ["internal error"]}
        elif request.headers.get("X-Vault-Token") != self.token:
            status, body = 403, {"errors": ["permission denied"]}
        elif name not in self.values:
            status, body = 404, {"errors": []}
        else:  # every field Vault answers: clients parse them all
            status, body = 200, {
                "request_id": "00000000-0000-0000-0000-000000000000", "lease_id": "",
                "renewable": False, "lease_duration": 0, "wrap_info": None, "warnings": None,
                "auth": None, "data": {"data": {"value": self.values[name]}, "metadata": {
                    "created_time": "2026-11-01T00:00:00.000000000Z", "custom_metadata": None,
                    "deletion_time": "", "destroyed": False, "version": 1}}}
        lib.reply(request, status, json.dumps(body).encode())

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class VaultHost(lib.Host):
    """A host with no credentials or secret of its own: only the Vault has them."""

    def __init__(self, ctx):
        super().__init__(ctx, secret=None, username="unused", password="unused")

    def settings(self):
        return {k: v for k, v in super().settings().items() if k not in ("AUTH_USERNAME", "AUTH_PASSWORD")}


def accounts(t, host, vault, pair_session):
    """Accounts kept in the Vault: one removed and one re-passworded there
    while the host serves."""
    passwords = {name: "Acct." + lib.random_text(16) for name in ("gone", "changed", "kept")}
    entries = {name: lib.account(name, "reader", pw) for name, pw in passwords.items()}
    vault.values["accounts"] = json.dumps(list(entries.values()))
    clients = iter(range(10**6))  # each login from a client of its own: polling is no guessing

    def login(name):
        body = {"username": name, "password": passwords[name]}
        return host.call("POST", "/token", body, headers={"X-Forwarded-For": lib.client(next(clients))})
    seen = lib.wait_until(lambda: login("kept").status == 200, SEEN_WITHIN)
    t.check(seen is not None, f"accounts set in the Vault log in within {SEEN_WITHIN} s", f"{seen}")
    tokens = {name: login(name).data["token"] for name in passwords}
    tokens["the pair"] = pair_session
    entries["changed"] = lib.account("changed", "reader", "New." + lib.random_text(16))
    del entries["gone"]
    vault.values["accounts"] = json.dumps(list(entries.values()))
    statuses = []

    def revoked():
        answers = {name: host.call("GET", "/books", token=token).status for name, token in tokens.items()}
        statuses.extend(answers.values())
        return answers["gone"] == answers["changed"] == 401
    seen = lib.wait_until(revoked, SEEN_WITHIN)
    t.check(seen is not None, f"a removed account's and a changed password's tokens are refused within "
            f"{SEEN_WITHIN} s", f"{statuses[-4:]}")
    kept = [host.call("GET", "/books", token=tokens[name]).status for name in ("kept", "the pair")]
    t.check(kept == [200, 200] and not any(s >= 500 for s in statuses),
            "the other account's and the pair's tokens are unaffected, no 5xx", f"{kept} {statuses}")


def run(ctx):
    if not ctx.only_on("sqlite", "the variables provider is the host's, whatever the store"):
        return
    t = ctx.tally
    token = "vault-token-" + lib.random_text(12)
    username, password = "vaulted-" + lib.random_text(6).lower(), "Vaulted." + lib.random_text(16)
    secret = lib.random_text(48)
    vault = FakeVault({"auth_username": username, "auth_password": password, "secret_token": secret}, token)
    config = Path(ctx.tmp) / "runtime-config.toml"
    config.write_text(f'[[variables_provider]]\ntype = "vault"\nurl = "http://127.0.0.1:{vault.port}"\n'
                      f'token = "{token}"\nmount = "{MOUNT}"\nprefix = "{PREFIX}"\n', encoding="utf-8")
    host = VaultHost(ctx)
    host.args = ["--runtime-config-file", str(config)]
    host.start()

    def login(user, pw):
        return host.call("POST", "/token", {"username": user, "password": pw})

    r = login(username, password)
    t.check(r.is_envelope(200), "the Vault serves the credentials: they log in", f"{r!r}")
    session = r.data["token"] if r.status == 200 else None
    r = login("admin", "password")
    t.check(r.is_envelope(401, "Invalid credentials"), "the default credentials do not", f"{r!r}")
    t.check(any(p.endswith(f"/{PREFIX}/auth_password") for p in vault.reads),
            "the host asked the Vault (KV v2 path under the prefix)", f"{vault.reads[:4]}")

    vault.values["secret_token"] = lib.random_text(48)
    seen = lib.wait_until(lambda: host.call("GET", "/books", token=session).status == 401, SEEN_WITHIN)
    t.check(seen is not None, f"a secret rotated in the Vault is in use within {SEEN_WITHIN} s: "
            "a token of the old one is refused", f"{seen}")
    r = login(username, password)
    session = r.data["token"] if r.status == 200 else None
    t.check(host.call("GET", "/books", token=session).status == 200, "a token of the new one is not")
    accounts(t, host, vault, session)

    for failure, make in (("answers 500", lambda: setattr(vault, "failing", True)),
                          ("is not listening", vault.stop)):
        make()
        seen = lib.wait_until(lambda: login(username, password).status == 500, SEEN_WITHIN)
        t.check(seen is not None, f"the Vault {failure}: seen within {SEEN_WITHIN} s", f"{seen}")
        for user, pw in (("admin", "password"), (username, password)):
            r = login(user, pw)  # never 200: no token signed
            t.check(r.is_envelope(*lib.ERROR),
                    f"the Vault {failure}: a login as {'admin' if user == 'admin' else 'the user'} "
                    "answers 500", f"{r!r}")
        r = host.call("GET", "/books", token=session)
        t.check(r.is_envelope(*lib.ERROR),
                f"the Vault {failure}: a protected request with a valid token answers 500, not 401",
                f"{r!r}")
        r = host.call("GET", "/health")
        t.check(r.is_envelope(*lib.UNAVAILABLE), f"the Vault {failure}: GET /health answers 503", f"{r!r}")
    log = host.tail(200)
    t.check("AUTH_USERNAME" in log, "the log names the setting it could not read", log[-400:])
    t.check(password not in log and secret not in log and token not in log,
            "the log holds no value, secret or Vault token")

    # The Vault is back, at the same address: so is the service, unrestarted.
    vault = FakeVault(vault.values, token, port=vault.port)
    try:
        seen = lib.wait_until(lambda: login(username, password).status == 200, SEEN_WITHIN)
        t.check(seen is not None, "the Vault answers again: the credentials log in again", f"{seen}")
    finally:
        vault.stop()
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("providers", run)
