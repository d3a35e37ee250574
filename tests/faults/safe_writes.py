#!/usr/bin/env -S python3 -B
"""Safe writes (docs/api.md) under the failures only processes show. Two or
eight PUTs, and a DELETE racing a PUT, with one If-Match, sent to the byte at
once: one winner, no loser's change stored. A keyed POST whose connection is
cut, then retried; the host SIGKILLed between write and answer, restarted,
retried; one key 12 times at once to one host and 9 times to 3 replicas on
one PostgreSQL: one book, every answer 201, same bytes. Rounds quick/full:
races 100/500, cuts 10/50, kills 9/30, one key at once 20/100.
"""

import http.client
import json
import random
import time
import uuid
from contextlib import closing

import lib

PRECONDITION_FAILED = b'{"status":412,"message":"Precondition failed","data":null}'


def book(tag, k):
    return {"title": f"Safe {tag} {k}", "author": f"Writer {k}", "year": 1900 + k}


def key_book(ctx, field):
    """A key's book field, read from the first answer it keeps."""
    if ctx.store == "postgres":
        return f"((body::json)->'data'->>'{field}')"
    return f"json_extract(body, '$.data.{field}')"


def titled(host, token, title):
    """The books whose title is exactly `title`."""
    r = host.call("GET", f"/books?title={title.replace(' ', '+')}", token=token)
    assert r.status == 200, f"GET /books?title=: {r!r}"
    return [b for b in r.data if b["title"] == title]


def keyed_post(host, token, key, body):
    return host.call("POST", "/book", body, token, headers={"Idempotency-Key": key})


def message(token, method, path, headers, body):
    """A request's bytes (one per connection)."""
    data = b"" if body is None else json.dumps(body).encode()
    headers = dict(headers, Authorization=token, Connection="close",
                   **({"Content-Type": "application/json", "Content-Length": len(data)} if data else {}))
    return lib.head(method, path, headers) + data


def send_and_leave(port, token, key, body):
    """A keyed POST sent, its answer unread."""
    return lib.sent(port, message(token, "POST", "/book", {"Idempotency-Key": key}, body))


def at_once(token, requests):
    """Each (port, method, path, headers, body) on its own connection, sent
    but for its last byte; then every last byte, back to back: the answers."""
    messages = [(port, message(token, *rest)) for port, *rest in requests]
    sent = [(lib.sent(port, data[:-1], 60), data[-1:]) for port, data in messages]
    started = time.monotonic()
    for s, last in sent:
        s.sendall(last)
    answers = []
    for s, _ in sent:
        with closing(s), closing(http.client.HTTPResponse(s)) as r:
            r.begin()
            raw = r.read()
            answers.append(lib.Response(r.status, {k.lower(): v for k, v in r.getheaders()}, raw,
                                        time.monotonic() - started))
    return answers


def created_once(r, body, book_id=None):
    """A 201 with the book as sent (id `book_id` if given) and ETag "<id>.1"."""
    ok = r.is_envelope(201, "Book created successfully") and isinstance(r.data, dict)
    ok = ok and r.data == dict(body, id=r.data.get("id"))
    return ok and book_id in (None, r.data["id"]) and r.headers.get("etag") == f'"{r.data["id"]}.1"'


def refused(r):
    """412 with the envelope, no ETag."""
    return r.status == 412 and r.raw == PRECONDITION_FAILED and "etag" not in r.headers


def races(ctx, host, token):
    """PUTs, then a DELETE and a PUT, with the same current If-Match, sent at once."""
    t, tag, rounds = ctx.tally, lib.random_text(6), 500 if ctx.full else 100
    put_wrong, del_wrong, del_won = [], [], 0

    for k in range(rounds):
        first = host.call("POST", "/book", book(tag, k), token)
        path, etag = f"/book/{first.data['id']}", first.headers.get("etag")
        edits = [dict(book(tag, k), title=f"Edit {tag} {k} {side}") for side in "ABCDEFGH"[:2 + k % 2 * 6]]
        answers = at_once(token, [(host.port, "PUT", path, {"If-Match": etag}, e) for e in edits])
        final = host.call("GET", path, token=token)
        won = [(e, r) for e, r in zip(edits, answers) if r.status == 200]
        lost = [r for r in answers if refused(r)]
        new_tag = f'"{first.data["id"]}.2"'
        if not (len(won) == 1 and len(lost) == len(edits) - 1 and won[0][1].data == dict(won[0][0], id=first.data["id"])
                and won[0][1].headers.get("etag") == new_tag and final.data == won[0][1].data
                and final.headers.get("etag") == new_tag):
            put_wrong.append((k, etag, answers, final))
        # A DELETE and a PUT: the PUT may also find the book gone (404 before 412).
        second = host.call("POST", "/book", book(tag, k), token)
        path, etag = f"/book/{second.data['id']}", second.headers.get("etag")
        edit = dict(book(tag, k), title=f"Kept {tag} {k}")
        deleted, put = at_once(token, [(host.port, "DELETE", path, {"If-Match": etag}, None),
                                       (host.port, "PUT", path, {"If-Match": etag}, edit)])
        final = host.call("GET", path, token=token)
        if deleted.status == 200 and put.status in (404, 412) and final.status == 404:
            del_won += 1
        elif not (put.status == 200 and refused(deleted)
                  and final.data == dict(edit, id=second.data["id"])):
            del_wrong.append((k, etag, deleted, put, final))
    t.check(not put_wrong, f"{rounds} rounds of 2 or 8 PUTs with one If-Match: one 200, the others 412, "
            "the winner's change stored with the new ETag, never the loser's",
            f"{len(put_wrong)} wrong, e.g. {put_wrong[:2]}")
    t.check(not del_wrong, f"{rounds} rounds of a DELETE and a PUT with one If-Match: one winner, "
            "its outcome stored", f"{len(del_wrong)} wrong, e.g. {del_wrong[:2]}")
    t.note(f"DELETE vs PUT: the DELETE won {del_won} of {rounds}, the PUT {rounds - del_won - len(del_wrong)}")


def same_key_at_once(ctx, hosts, token, rounds, per_host, what):
    """`per_host` POSTs with one key to each host at once, `rounds` times."""
    t, tag, wrong = ctx.tally, lib.random_text(6), []
    for k in range(rounds):
        key, body = str(uuid.uuid4()), book(tag, k)
        answers = at_once(token, [(h.port, "POST", "/book", {"Idempotency-Key": key}, body)
                                  for h in hosts * per_host])
        stored = titled(hosts[0], token, body["title"])
        if not (len(stored) == 1 and all(created_once(r, body, stored[0]["id"]) for r in answers)
                and len({(r.raw, r.headers.get("etag")) for r in answers}) == 1):
            wrong.append((k, len(stored), lib.counts(r.status for r in answers), answers[:2]))
    t.check(not wrong, f"{rounds} rounds of {len(hosts) * per_host} POSTs with one key at once to {what}: "
            "one book, every answer 201 with its id, identical bytes",
            f"{len(wrong)} wrong, e.g. {wrong[:2]}")


def cut_connections(ctx, host, token):
    """The connection closed before the answer is read, then the retry."""
    t, tag, rounds = ctx.tally, lib.random_text(6), 50 if ctx.full else 10
    wrong, before = [], 0
    for k in range(rounds):
        key, body = str(uuid.uuid4()), book(tag, k)
        send_and_leave(host.port, token, key, body).close()
        time.sleep(random.uniform(0, 0.05))
        before += len(titled(host, token, body["title"])) == 1
        retries = [keyed_post(host, token, key, body) for _ in range(2)]
        stored = titled(host, token, body["title"])
        if not (len(stored) == 1 and all(created_once(r, body, stored[0]["id"]) for r in retries)
                and retries[0].raw == retries[1].raw):
            wrong.append((k, stored, retries))
    t.check(not wrong, f"{rounds} keyed POSTs cut before the answer, then retried twice: one book, "
            "each retry 201 with its id and the same bytes", f"{len(wrong)} wrong, e.g. {wrong[:2]}")
    t.check(host.alive(), "the host is up after the cut connections")
    t.note(f"cut POSTs: the book was stored before the retry in {before} of {rounds}")


def kills(ctx):
    """SIGKILL with a keyed POST in flight: at once, or once its book is stored."""
    t, tag, rounds = ctx.tally, lib.random_text(6), 30 if ctx.full else 9
    host = ctx.host(db_url=ctx.fresh_database()).start()
    token = host.token()
    keyed_post(host, token, str(uuid.uuid4()), book(tag, -1))  # the schema exists
    cases, wrong = {"stored, then killed": 0, "killed before the store": 0}, []

    def rows(title, key):  # the book, and the book its key holds
        return (host.rows(f"SELECT id, title, author, year FROM books WHERE title = '{title}'"),
                host.rows(f"SELECT {', '.join(key_book(ctx, f) for f in ('id', 'title', 'author', 'year'))} "
                          f"FROM idempotency_keys WHERE key = '{key}'"))

    for k in range(rounds):
        key, body = str(uuid.uuid4()), book(tag, k)
        sock = send_and_leave(host.port, token, key, body)
        # k % 3 == 0: SIGKILL at once
        if k % 3 == 1:  # SIGKILL once the book is in the store (or after 5 s)
            lib.wait_until(lambda: rows(body["title"], key)[0], 5, 0)
        elif k % 3 == 2:  # at once, or up to 2 ms later
            time.sleep(random.uniform(0, 0.002))
        host.kill()
        sock.close()
        books, keys = rows(body["title"], key)
        cases["stored, then killed" if books else "killed before the store"] += 1
        host.start()
        token = host.token()
        retries = [keyed_post(host, token, key, body) for _ in range(2)]
        stored = titled(host, token, body["title"])
        book_id = stored[0]["id"] if len(stored) == 1 else None
        if not (books == keys and books in ([], [tuple(str(v) for v in stored[0].values())])
                and book_id is not None and all(created_once(r, body, book_id) for r in retries)
                and retries[0].raw == retries[1].raw):
            wrong.append((k, books, keys, stored, retries))
    t.check(not wrong, f"{rounds} SIGKILLs with a keyed POST in flight, each retried after a restart: "
            "right after the kill its book and its key both stored or neither; one book, the retries "
            "201 with its id and the same bytes", f"{len(wrong)} wrong, e.g. {wrong[:2]}")
    orphans = host.rows("SELECT 'book', CAST(id AS TEXT) FROM books WHERE id NOT IN "
                        f"(SELECT CAST({key_book(ctx, 'id')} AS BIGINT) FROM idempotency_keys) UNION ALL "
                        f"SELECT 'key', key FROM idempotency_keys WHERE CAST({key_book(ctx, 'id')} AS BIGINT) "
                        "NOT IN (SELECT id FROM books)")
    t.check(not orphans, "no book without its key and no key without its book", f"{orphans[:5]}")
    t.note(f"kills: {cases}")
    t.check(host.stop() == 0, "the restarted host exits 0 on SIGTERM")


def run(ctx):
    host = ctx.host().start()
    token = host.token()
    races(ctx, host, token)
    cut_connections(ctx, host, token)
    same_key_at_once(ctx, [host], token, 100 if ctx.full else 20, 12, "one host")
    t = ctx.tally
    t.check(host.stop() == 0, "the host is still up and exits 0 on SIGTERM")
    kills(ctx)
    if not ctx.only_on("postgres", "3 replicas with one key: SQLite replicas share no database"):
        return
    hosts = ctx.replicas(3)
    same_key_at_once(ctx, hosts, hosts[0].token(), 100 if ctx.full else 20, 3, "3 replicas on one PostgreSQL")
    t.check(all(h.stop() == 0 for h in hosts), "the replicas exit 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("safe_writes", run)
