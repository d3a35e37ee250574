#!/usr/bin/env -S python3 -B
"""PostgreSQL over TLS as the real host does it, against a cluster of its own
whose certificate (IP 127.0.0.1) a CA no system trusts signed. Spin 4.0.2
verifies certificate and host name under every sslmode but `disable` (no
`verify-full`); trusting the CA by SSL_CERT_FILE, or mounting it over the
system bundle as SpinKube's executor does, lets it through. PostgreSQL only.
"""

from pathlib import Path
from urllib.parse import urlsplit

import lib


class TlsHost(lib.Host):
    def __init__(self, ctx, db_url, ca_file=None, bundle=None):
        super().__init__(ctx, db_url=db_url)
        self.ca_file, self.bundle = ca_file, bundle

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
    cluster = ctx.cluster(tls=True)
    ca = Path(cluster.dir) / "ca.crt"
    cases = [
        ("sslmode=require, a certificate no trusted CA signed", "require", None, None, 503),
        ("sslmode=prefer, the same certificate (no fall back to plain text)", "prefer", None, None, 503),
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
        r = host.call("GET", "/health", timeout=30)
        t.check(r.is_envelope(*((200, "Service healthy") if expected == 200 else lib.UNAVAILABLE)), f"{name}: GET /health {expected}", f"{r!r}\n{host.tail(8)}")
        host.stop()


if __name__ == "__main__":
    lib.main("tls", run)
