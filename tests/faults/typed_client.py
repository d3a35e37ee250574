#!/usr/bin/env -S python3 -B
"""A client generated from openapi.yaml by openapi-python-client (installed
into build/venv by `scripts/ensure-tools.sh client`) without a warning: its
models type the envelopes (`Book`, a list of `Book`, a `str` token, an
error's exact status and message), and, imported as is, it drives the
lifecycle against a started host. The component answers alike on either
store: SQLite only.
"""

import importlib
import os
import subprocess
import sys
import typing
import uuid

import lib
from launch import ROOT

VENV = ROOT / "build/venv"
GENERATOR = VENV / "bin/openapi-python-client"
PACKAGE = "book_catalog_client"


def generate(ctx):
    """Generates the client into the run's temp dir: (exit status, output)."""
    # Its formatting step runs build/venv's ruff, else it warns that ruff is missing.
    env = {**os.environ, "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([str(GENERATOR), "generate", "--path", str(ROOT / "openapi.yaml"),
                          "--output-path", os.path.join(ctx.tmp, PACKAGE), "--meta", "none"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=ctx.tmp)
    return out.returncode, out.stdout + out.stderr


def api(name):
    return importlib.import_module(f"{PACKAGE}.api.default.{name}")


def model(models, name):
    """A generated model, or a class nothing is an instance of (its checks fail, not the module)."""
    return getattr(models, name, None) or type(f"Missing{name}", (), {})


def check_types(t, models):
    """The generated models' annotations, resolved."""
    def hints(cls):
        return typing.get_type_hints(cls, localns=vars(models))

    book = hints(models.BookEnvelope)
    t.check(book.get("data") is models.Book and hints(models.Book) == {
        "id": int, "title": str, "author": str, "year": int},
        "a book's envelope types `data` as the generated `Book`, its fields typed",
        f"{book} {hints(models.Book)}")
    listed = hints(models.BookListEnvelope).get("data")
    t.check(listed == list[models.Book], "a list's envelope types `data` as a list of `Book`", f"{listed}")
    token = hints(models.TokenEnvelope).get("data")
    t.check(token is model(models, "TokenData") and hints(token) == {"token": str},
            "the login's envelope types `data` as `TokenData` with a `str` token", f"{token}")


def drive(t, host, client_module, models):
    """The lifecycle through the generated client."""
    issue_token, create_book, get_book, update_book, list_books, delete_book = (
        api(name) for name in ("issue_token", "create_book", "get_book", "update_book",
                               "list_books", "delete_book"))
    public = client_module.Client(base_url=host.base_url, raise_on_unexpected_status=True)
    r = issue_token.sync_detailed(client=public, body=models.Login(host.username, host.password))
    login = r.parsed.data if isinstance(r.parsed, models.TokenEnvelope) else None
    token = login.token if isinstance(login, model(models, "TokenData")) else None
    t.check(r.status_code == 200 and isinstance(token, str) and token.count(".") == 2,
            "login: 200, parsed into a `TokenEnvelope` whose `TokenData` has a `str` token", f"{r}")
    if token is None:
        return
    # The API takes the bare token (no "Bearer " prefix), as its security scheme says.
    client = client_module.AuthenticatedClient(base_url=host.base_url, token=token, prefix="",
                                               raise_on_unexpected_status=True)
    title = "Typed " + uuid.uuid4().hex
    r = create_book.sync_detailed(client=client, body=models.NewBook(title, "A. Client", 2001),
                                  idempotency_key=str(uuid.uuid4()))
    made = r.parsed.data if isinstance(r.parsed, models.BookEnvelope) else None
    etag = r.headers.get("etag")
    t.check(r.status_code == 201 and isinstance(made, models.Book) and isinstance(made.id, int)
            and (made.title, made.author, made.year) == (title, "A. Client", 2001)
            and etag == f'"{made.id}.1"',
            "create: 201, `data` parsed into a `Book` with the fields sent, its ETag", f"{r.parsed!r} {etag}")
    if made is None:
        return
    r = get_book.sync_detailed(made.id, client=client)
    t.check(r.status_code == 200 and isinstance(r.parsed, models.BookEnvelope)
            and r.parsed.data == made and r.headers.get("etag") == etag,
            "get: 200, the same `Book` and ETag", f"{r.parsed!r} {r.headers.get('etag')!r}")
    r = update_book.sync_detailed(made.id, client=client, body=models.BookChanges(year=2002), if_match=etag)
    updated = r.parsed.data if isinstance(r.parsed, models.BookEnvelope) else None
    new_etag = r.headers.get("etag")
    t.check(r.status_code == 200 and isinstance(updated, models.Book) and updated.year == 2002
            and updated.title == title and new_etag == f'"{made.id}.2"',
            "update with If-Match: 200, the changed `Book` and its next ETag", f"{r.parsed!r} {new_etag!r}")
    r = update_book.sync_detailed(made.id, client=client, body=models.BookChanges(year=1), if_match=etag)
    t.check(r.status_code == 412 and isinstance(r.parsed, model(models, "UpdateBookResponse412"))
            and r.parsed.message == "Precondition failed" and r.parsed.data is None,
            "update with the stale ETag: 412, parsed into its error model", f"{r.parsed!r}")
    r = list_books.sync_detailed(client=client, limit=1)
    page = r.parsed.data if isinstance(r.parsed, models.BookListEnvelope) else None
    t.check(r.status_code == 200 and page is not None and len(page) == 1
            and isinstance(page[0], models.Book) and page[0].id == made.id,
            "list with limit 1: a page of one `Book`", f"{r.parsed!r}")
    r = delete_book.sync_detailed(made.id, client=client, if_match=new_etag)
    t.check(r.status_code == 200 and isinstance(r.parsed, model(models, "DeleteBookResponse200"))
            and r.parsed.data is None, "delete with If-Match: 200, `data` None", f"{r.parsed!r}")
    r = get_book.sync_detailed(made.id, client=client)
    t.check(r.status_code == 404 and isinstance(r.parsed, model(models, "GetBookResponse404"))
            and r.parsed.message == "Book not found" and r.parsed.data is None,
            "get after delete: 404, parsed into its error model", f"{r.parsed!r}")


def run(ctx):
    t = ctx.tally
    if not ctx.only_on("sqlite", "the generated client talks to the component, whatever the store"):
        return
    if not GENERATOR.exists():
        t.check(False, "openapi-python-client is installed (scripts/ensure-tools.sh client)")
        return
    code, output = generate(ctx)
    t.check(code == 0 and "warning" not in output.lower(),
            "openapi-python-client generates a client from openapi.yaml without a warning",
            output[-2000:])
    if code != 0:
        return
    lib.use_venv()  # the generated package imports build/venv's httpx and attrs
    sys.path.insert(0, ctx.tmp)
    package, models = importlib.import_module(PACKAGE), importlib.import_module(f"{PACKAGE}.models")
    check_types(t, models)
    host = ctx.host().start()
    drive(t, host, package, models)


if __name__ == "__main__":
    lib.main("typed_client", run)
