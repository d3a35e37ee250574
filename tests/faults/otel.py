#!/usr/bin/env -S python3 -B
"""What an operator sees over OpenTelemetry: only real Spin exports it, to a
receiver of ours on 127.0.0.1 (OTLP/HTTP protobuf, decoded with
opentelemetry-proto: `scripts/ensure-tools.sh otel`).

A login, a wrong one, a book created and read, a missing book, an unmatched
path; within 20 s: one SERVER span per request (method, path, route,
status); the store's open and statements as spans under it, none where no
store was opened; the request line as a log record and a trace event; no
secret exported. Then a PostgreSQL that refuses the host: the error line as
a log record, the failed call marked in the trace, still no secret.

Spin parents the store's spans and the component's lines to a request's
SERVER span only where the instance is the request's own (the WASI 0.2
build). A WASI 0.3 instance serves many requests at once, and Spin main
exports no store span or event under a request (its SQLite statements none
at all; docs/operations.md): for it, the request spans, the log records and
a failed PostgreSQL call marked as an error among every span are checked.
"""

import gzip
import re
import subprocess
import threading
from collections import Counter
from urllib.parse import urlsplit

import lib
from launch import ROOT, db_host

WAIT = 20.0  # a bound: the batches leave every 250 ms (`served`)
ACCOUNT = r'(?: account=(\S+|"(?:[^"\\]|\\.)*"))?'  # an authenticated request's
REQUEST_LINE = re.compile(r"level=info msg=request method=(\S+) route=(\S+) status=(\d{3}) "
                          r"store=(sqlite|postgres|none) duration_us=(\d+)" + ACCOUNT)
ERROR_LINE = re.compile(r'level=error msg="request failed" method=(\S+) route=(\S+) '
                        r'store=(\S+) reason="((?:[^"\\]|\\.)+)"' + ACCOUNT)
SYSTEM = {"sqlite": "sqlite", "postgres": "postgresql"}
OPEN = {"sqlite": "spin_sqlite.open", "postgres": "spin_outbound_pg.open"}


def otlp():
    """opentelemetry-proto's request messages, installed into build/venv on first use."""
    try:
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        subprocess.run([str(ROOT / "scripts/ensure-tools.sh"), "otel"], check=True, timeout=600)
        lib.use_venv()
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    return {"/v1/traces": trace_service_pb2.ExportTraceServiceRequest,
            "/v1/logs": logs_service_pb2.ExportLogsServiceRequest}


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Receiver:
    """An OTLP/HTTP endpoint: keeps every export, raw (decompressed) and decoded."""

    def __init__(self, messages):
        self.messages, self.lock = messages, threading.Lock()
        self.raw, self.spans, self.logs, self.errors = [], [], [], []
        self.server = lib.http_server(self.handle)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def handle(self, request):
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        try:
            if request.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            self.take(request.path, body)
        except Exception as e:  # noqa: BLE001 - kept, reported as a failed check
            self.errors.append(f"{request.path}: {e!r}")
        lib.reply(request, 200, b"", "application/x-protobuf")  # an empty Export*ServiceResponse

    def take(self, path, body):
        with self.lock:
            self.raw.append((path, body))
            if path not in self.messages:
                return  # /v1/metrics: kept raw, for the secret scan
            message = self.messages[path]()
            message.ParseFromString(body)
            if path == "/v1/logs":
                self.logs += [{"body": value(r.body), "attrs": attributes(r.attributes)}
                              for rl in message.resource_logs for sl in rl.scope_logs
                              for r in sl.log_records]
                return
            self.spans += [{"trace": s.trace_id.hex(), "id": s.span_id.hex(), "parent": s.parent_span_id.hex(),
                            "name": s.name, "kind": s.kind, "attrs": attributes(s.attributes),
                            "events": [attributes(e.attributes) for e in s.events],
                            "error": s.status.code == s.status.STATUS_CODE_ERROR,
                            "us": (s.end_time_unix_nano - s.start_time_unix_nano) // 1000}
                           for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]


def served(receiver, host):
    """Serves `host` under Spin exporting to `receiver`, its span and log
    batches every 250 ms rather than every 5 s (what is exported is the same)."""
    host.host_env.update(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
                         OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                         OTEL_BSP_SCHEDULE_DELAY="250", OTEL_BLRP_SCHEDULE_DELAY="250")
    return host


def request_of(span):
    """(method, path, status) of a SERVER span; Spin records the status as a string."""
    a = span["attrs"]
    return a.get("http.request.method"), a.get("url.path"), a.get("http.response.status_code")


def server_spans(receiver):
    """The SERVER spans, /health (the launcher's polls) left out."""
    return [s for s in receiver.spans if s["kind"] == 2 and s["attrs"].get("url.path") != "/health"]


def lines(receiver, pattern):
    return [m for m in (pattern.fullmatch((r["body"] or "").strip()) for r in receiver.logs) if m]


def under(span, top, by_id):
    """Whether `span` descends from `top` (same trace, parent links)."""
    while span and span["parent"]:
        if span["parent"] == top["id"]:
            return True
        span = by_id.get(span["parent"])
    return False


def trace_of(receiver, top):
    by_id = {s["id"]: s for s in receiver.spans if s["trace"] == top["trace"]}
    return [s for s in by_id.values() if under(s, top, by_id)]


def app_logs(spans):
    return [e["app_log"].strip() for s in spans for e in s["events"] if "app_log" in e]


def no_secret(t, receiver, secrets, store, what, marker):
    raw = b"".join(body for _, body in receiver.raw)
    # What was exported is plain text in the payloads (`marker` shows), so a secret would too.
    t.check(marker.encode() in raw, f"{store}: {what}: {marker!r} is found in the exported "
            "payloads", f"{len(raw)} bytes")
    found = [name for name, s in secrets.items() if s and s.encode() in raw]
    t.check(not found, f"{store}: {what}: no secret in any exported span, event, attribute, "
            "log record or metric", f"found: {found}")


def run(ctx):
    t = ctx.tally
    if ctx.host_kind != "spin":
        t.note("real Spin only (spin-lite exports no telemetry); skipped")
        return
    messages = otlp()
    store, system = ctx.store, SYSTEM[ctx.store]
    receiver = Receiver(messages)
    host = served(receiver, ctx.host(db_url=ctx.fresh_database())).start()

    # (method, path, status got, status wanted, route, store, a statement it runs), in order.
    wrong = "Wrong." + lib.random_text(16)
    r = host.login()
    token = r.data["token"] if r.status == 200 else ""
    answers = [("POST", "/token", r.status, 200, "/token", store, "login_attempts"),
               ("POST", "/token", host.login(password=wrong, headers={
                   "X-Forwarded-For": lib.client(1)}).status, 401, "/token", store, "login_attempts")]
    r = host.call("POST", "/book", {"title": "Traced", "author": "Otel", "year": 2026}, token)
    book = (r.data or {}).get("id", 0)
    answers.append(("POST", "/book", r.status, 201, "/book", store, "INSERT INTO changes"))
    for path, status in ((f"/book/{book}", 200), (f"/book/{book + 1000}", 404)):
        answers.append(("GET", path, host.call("GET", path, token=token).status, status,
                        "/book/{id}", store, "FROM books WHERE id"))
    nowhere = "/nowhere-" + lib.random_text(6)
    answers.append(("GET", nowhere, host.call("GET", nowhere).status, 404, "unmatched", "none", None))
    want_spans = Counter((m, p, str(s)) for m, p, _, s, *_ in answers)

    def made_by(route, status):  # the account its line names: a token's holder, a login's
        return host.username if route.startswith("/book") or (route, status) == ("/token", 200) else None
    want_lines = Counter((m, route, str(s), st, made_by(route, s)) for m, _, _, s, route, st, _ in answers)

    def complete():
        got = Counter(map(request_of, server_spans(receiver)))
        logged = Counter(m.group(1, 2, 3, 4, 6) for m in lines(receiver, REQUEST_LINE))
        return got >= want_spans and logged >= want_lines

    took = lib.wait_until(complete, WAIT, 0.25)
    t.note(f"{store}: exports to /v1/traces and /v1/logs within {took or WAIT:.1f} s: "
           f"{dict(Counter(p for p, _ in receiver.raw))}")
    t.check(not receiver.errors, f"{store}: every export decodes as OTLP protobuf", f"{receiver.errors}")

    tops = server_spans(receiver)
    got = Counter(map(request_of, tops))
    t.check(got == want_spans, f"{store}: one SERVER span per request, with its method, path and "
            "status", f"want {dict(want_spans)}, got {dict(got)}")
    t.check(tops and all(s["name"] == f"{s['attrs'].get('http.request.method')} /..."
                         and s["attrs"].get("http.route") == "/..." for s in tops),
            f"{store}: each is named `METHOD /...` with http.route `/...` (the manifest's route)",
            f"{[(s['name'], s['attrs'].get('http.route')) for s in tops]}")

    logged = [m for m in lines(receiver, REQUEST_LINE) if m.group(2) != "/health"]
    t.check(Counter(m.group(1, 2, 3, 4, 6) for m in logged) == want_lines,
            f"{store}: one log record per request: the request line with method, route, status, "
            "store, duration_us and the account", f"want {dict(want_lines)}, got "
            f"{[r['body'] for r in receiver.logs]}")
    t.check(receiver.logs and all(r["attrs"].get("component_id") == "book-catalog"
                                  for r in receiver.logs),
            f"{store}: each log record carries component_id=book-catalog",
            f"{[r['attrs'] for r in receiver.logs][:3]}")

    missing, misplaced, own = [], [], ctx.wasi_p2
    for method, path, _, status, route, used, statement in answers:
        top = next((s for s in tops if request_of(s) == (method, path, str(status))), None)
        if top is None or not own:
            missing += [(method, path, "no server span")] * (top is None)
            continue
        spans = trace_of(receiver, top)
        db = [s for s in spans if s["attrs"].get("db.system") == system]
        names = [s["name"] for s in db]
        if used == "none":
            if db:
                misplaced.append((method, path, "a store call for a request that opened none", names))
        elif OPEN[store] not in names or not any(statement in n for n in names):
            missing.append((method, path, f"no {OPEN[store]} or no statement with {statement!r}", names))
        line = next((m for m in map(REQUEST_LINE.fullmatch, app_logs(spans)) if m), None)
        if not line or line.group(1, 2, 3) != (method, route, str(status)):
            missing.append((method, path, "no request line among the trace's events", app_logs(spans)))
        # The component runs, and may log, after the response left: within the
        # execute_wasm_component span, not always within the SERVER span.
        elif int(line.group(5)) > (bound := max(s["us"] for s in [top, *spans])):
            misplaced.append((method, path, f"duration_us={line.group(5)} above the spans' {bound} us"))
    if own:
        t.check(not missing, f"{store}: each request's trace holds, under its SERVER span, the "
                f"{system} open and statement spans (db.system={system}) and its request line "
                "(event app_log)", f"{missing}")
        t.check(not misplaced, f"{store}: no store spans where the line says store=none; "
                "duration_us within the request's spans", f"{misplaced}")
    else:
        t.check(not missing, f"{store}: a SERVER span for each request (WASI 0.3: Spin exports no "
                "store span or event under it)", f"{missing}")
    secrets = {"secret": host.secret, "password": host.password, "wrong password": wrong,
               "token": token, "token signature": token.rpartition(".")[2],
               "database password": urlsplit(ctx.pg.url).password if ctx.pg else None}
    no_secret(t, receiver, secrets, store, "the requests above", "FROM books WHERE id")
    host.stop()
    receiver.server.shutdown()

    # A database that refuses the component: PostgreSQL with a wrong password,
    # or (on SQLite) a PostgreSQL address where nothing listens.
    db_password = "Db." + lib.random_text(16)
    if ctx.pg:
        url = ctx.pg.url_of("books", password=db_password)
    else:
        url = f"postgres://books:{db_password}@127.0.0.1:{lib.free_port()}/books?sslmode=disable"
    receiver = Receiver(messages)
    broken = served(receiver, ctx.host())
    broken.own_settings.update(DB_URL=url, DB_HOST=db_host(url))
    broken.start(healthy=False)
    broken.login()  # a 500: its error line and trace follow

    def failed_lines():
        return ([m for m in lines(receiver, ERROR_LINE) if m.group(2) == "/token"],
                [m for m in lines(receiver, REQUEST_LINE) if m.group(2) == "/token"])

    def failed_span():
        return next((s for s in server_spans(receiver) if s["attrs"].get("url.path") == "/token"), None)

    lib.wait_until(lambda: all(failed_lines()) and failed_span(), WAIT, 0.25)
    errors, requests = failed_lines()
    bodies = [(r["body"] or "").strip() for r in receiver.logs]
    t.check(errors and requests and errors[0].group(1, 3) == ("POST", "postgres")
            and requests[0].group(3, 4) == ("500", "postgres")
            and bodies.index(errors[0].group(0)) < bodies.index(requests[0].group(0)),
            f"{store}: the 500's error line (method, route, store, reason) arrives as a log "
            "record before its request line", f"{bodies}")
    top = failed_span()
    spans = (trace_of(receiver, top) if own else receiver.spans) if top else []
    postgres = (lambda s: s["attrs"].get("db.system") == "postgresql") if own else (
        lambda s: s["name"].startswith("spin_outbound_pg."))
    t.check(top and top["attrs"].get("http.response.status_code") == "500"
            and any(s["error"] and postgres(s) for s in spans)
            and (not own or (errors and errors[0].group(0) in app_logs(spans))),
            f"{store}: its trace: SERVER span status 500, the failed PostgreSQL call marked as an "
            "error" + (", the error line among its events" if own else " (WASI 0.3: among every span)"),
            f"{[(s['name'], s['error']) for s in spans]} {app_logs(spans)}")
    no_secret(t, receiver, {"database password": db_password, "password": broken.password,
                            "secret": broken.secret}, store, "the failing database", "request failed")
    t.check(broken.stop() == 0, f"{store}: spin up exits 0 on SIGTERM")
    receiver.server.shutdown()


if __name__ == "__main__":
    lib.main("otel", run)
