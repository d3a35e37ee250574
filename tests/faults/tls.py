#!/usr/bin/env python3
"""PostgreSQL over TLS as real Spin 4.0.2 does it, under the host under test
(`--host spin`: real Spin). A cluster of its own serves a certificate for IP
127.0.0.1 signed by a CA no system trusts. Spin verifies certificate and host
name under every sslmode but `disable` (it does not know `verify-full`,
tokio-postgres 0.7.12), against the system's roots; trusting the CA through
SSL_CERT_FILE shows it is the verification that refuses; so does the CA
mounted over the system bundle, as SpinKube's executor mounts its
`caCertSecret` in a pod (deploy/spinkube). With --store sqlite: no check.
"""

import sys
from pathlib import Path
from urllib.parse import urlsplit

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402


class TlsHost(lib.Host):
    def __init__(self, ctx, db_url, ca_file=None, bundle=None):
        super().__init__(ctx, db_url=db_url)
        self.ca_file = ca_file
        self.bundle = bundle

    def command_and_env(self):
        command, env = super().command_and_env()
        for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
            env.pop(name, None)
        if self.ca_file:
            env["SSL_CERT_FILE"] = str(self.ca_file)
        if self.bundle:  # as in a SpinKube pod, in a mount namespace of its own
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                       'mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@"',
                       str(self.bundle), *command]
        return command, env


def with_sslmode(url, mode, host=None):
    u = urlsplit(url)
    netloc = u.netloc if host is None else u.netloc.replace("127.0.0.1", host)
    return u._replace(netloc=netloc, query="" if mode is None else f"sslmode={mode}").geturl()


def run(ctx):
    t = ctx.tally
    if not ctx.only_on("postgres", "TLS to PostgreSQL"):
        return
    cluster = lib.Pg(tls=True)
    ctx.extra_clusters.append(cluster)
    ca = Path(cluster.dir) / "ca.crt"
    cases = [
        ("sslmode=require, a certificate no trusted CA signed", "require", None, None, 503),
        ("sslmode=prefer, the same certificate (no fall back to plain text)", "prefer", None,
         None, 503),
        ("no sslmode (prefer), the same certificate", None, None, None, 503),
        ("sslmode=disable", "disable", None, None, 200),
        ("sslmode=require with the CA trusted (SSL_CERT_FILE)", "require", ca, None, 200),
        ("sslmode=require with the CA as the system bundle (SpinKube's caCertSecret)",
         "require", None, None, 200, ca),
        ("sslmode=require, CA trusted, a host name the certificate does not name",
         "require", ca, "localhost", 503),
        ("sslmode=verify-full (a mode Spin 4.0.2 does not know)", "verify-full", ca, None, 503),
    ]
    for name, mode, ca_file, host_name, expected, *bundle in cases:
        host = TlsHost(ctx, with_sslmode(cluster.url, mode, host_name), ca_file, *bundle)
        host.start(healthy=expected == 200)
        r = lib.try_request(host.port, "GET", "/health", timeout=30)
        ok = r.is_envelope(expected, "Service healthy" if expected == 200 else
                           "Service unavailable")
        t.check(ok, f"{name}: GET /health {expected}", f"{r!r}\n{host.tail(8)}")
        if expected == 503:
            login = host.login()
            t.check(login.is_envelope(500, "Internal server error"),
                    f"{name}: a login (it needs the store) answers 500", f"{login!r}")
        host.stop()


if __name__ == "__main__":
    lib.main("tls", run)
