#!/usr/bin/env -S python3 -B
"""Paged, filtered catalog queries on a real PostgreSQL (its own matching
and ordering; SQLite runs the same statements in tests/core/catalog.rs).

An empty database gets books whose titles and authors mix ASCII letters of
both cases, `%` `_` `\\`, and non-ASCII letters that must not fold (É/é, ß,
İ/i/ı), a fifth deleted again (gaps in ids). For random filters (seeded):
the unpaged answer equals an independent model (ASCII folded, the rest
exact, literal substring) in id order without Link, and following `Link`
from `limit=L` yields exactly that list, every page but the last full with
a Link. quick: 400 books, 150 queries; full: 3,000 and 1,000. Then the same
on a database whose role may not create pg_trgm (half the books, a third of
the queries): migrated without the index, the same answers.
"""

import random
import re
import secrets
from urllib.parse import quote, urlsplit

import lib

SEED = 20261122
ALPHABET = list("aAbBzZ %_\\+&/é") + ["É", "ß", "İ", "i", "ı", "I", "ﬀ", "K"]
LINK = re.compile(r'^</books\?([!-~]*)>; rel="next"$')


def fold(text):
    """ASCII letters lowered, one by one; every other character kept."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def model(books, title=None, author=None, year=None):
    return [b["id"] for b in books
            if (title is None or fold(title) in fold(b["title"]))
            and (author is None or fold(author) in fold(b["author"]))
            and (year is None or b["year"] == year)]


def text(rng, n):
    while True:
        value = "".join(rng.choice(ALPHABET) for _ in range(n))
        if value.strip():
            return value


def needle(rng, books, field):
    """Mostly a piece of an existing value with its ASCII case shuffled (so it
    matches something), sometimes random text (which mostly does not)."""
    if books and rng.random() < 0.8:
        source = rng.choice(books)[field]
        start = rng.randrange(len(source))
        piece = source[start:start + rng.randint(1, 3)]
        return "".join(c.swapcase() if c.isascii() and rng.random() < 0.5 else c for c in piece)
    return text(rng, rng.randint(1, 2))


def encode(value, rng):
    """Percent-encoded, a space as `+` or `%20` at random."""
    encoded = quote(value, safe="")
    return encoded.replace("%20", "+") if rng.random() < 0.5 else encoded


def books_page(host, token, query):
    r = host.call("GET", "/books?" + query, token=token)
    return r, (r.data if r.status == 200 and isinstance(r.data, list) else None)


def run(ctx):
    if not ctx.only_on("postgres", "SQLite runs the same statements in tests/core/catalog.rs"):
        return
    n_books, n_queries = (3000, 1000) if ctx.full else (400, 150)
    db_url = ctx.fresh_database()
    filters_match_the_model(ctx, db_url, n_books, n_queries, "")
    trigrams(ctx, db_url, "1|2", "as the database's owner (no superuser): pg_trgm and its two indexes made")
    # A role that may not create extensions, as on some managed services:
    # 0006 goes on without pg_trgm, and the filters read every book.
    owned = ctx.fresh_database()
    database = urlsplit(owned).path[1:]
    role, password = database + "_app", secrets.token_hex(8)
    lib.psql(ctx.pg.admin_url, f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    lib.psql(owned, f"GRANT USAGE, CREATE ON SCHEMA public TO {role}")  # as its owner
    url = ctx.pg.url_of(database, role, password)
    filters_match_the_model(ctx, url, n_books // 2, n_queries // 3, "without pg_trgm: ")
    trigrams(ctx, url, "0|0", "without pg_trgm: the schema migrated without it or its indexes")


def trigrams(ctx, url, expected, name):
    found = lib.psql(url, "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'), "
                     "(SELECT count(*) FROM pg_indexes WHERE indexname LIKE '%trigrams')")
    ctx.tally.check(found == expected, name, found)


def filters_match_the_model(ctx, db_url, n_books, n_queries, label):
    t = ctx.tally
    rng = random.Random(SEED)
    host = ctx.host(db_url=db_url).start()
    token = host.token()

    created = list(host.seed(token, [{"title": text(rng, rng.randint(1, 8)), "author": text(
        rng, rng.randint(1, 5)), "year": rng.randint(-2, 3)} for _ in range(n_books)]))
    deleted = [host.call("DELETE", f"/book/{i}", token=token).status
               for i in rng.sample(created, min(n_books // 5, len(created)))]
    if len(created) != n_books or set(deleted) != {200}:
        t.check(False, label + "seeding the books, a fifth deleted again", f"{len(created)} created, {lib.counts(deleted)}")
        return
    r = host.call("GET", "/books", token=token)
    books = r.data
    ids = [b["id"] for b in books]
    t.check(r.status == 200 and ids == sorted(ids) and len(ids) == n_books - n_books // 5
            and "link" not in r.headers,
            f"{label}GET /books lists the {len(ids)} books in ascending id order, no Link")

    unpaged_bad, paged_bad, link_bad, matched = [], [], [], 0
    pages_seen = 0
    for _ in range(n_queries):
        filters, params = {}, []
        while not filters:
            if rng.random() < 0.6:
                filters["title"] = needle(rng, books, "title")
            if rng.random() < 0.4:
                filters["author"] = needle(rng, books, "author")
            if rng.random() < 0.3:
                filters["year"] = rng.randint(-2, 3)
        for name, value in filters.items():
            params.append(f"{name}={encode(value, rng) if name != 'year' else value}")
        rng.shuffle(params)
        expected = model(books, **filters)
        matched += bool(expected)

        query = "&".join(params)
        r, data = books_page(host, token, query)
        got = [b["id"] for b in data] if data is not None else r
        if got != expected or "link" in r.headers:
            unpaged_bad.append((query, expected[:10], got if not isinstance(got, list) else got[:10]))
            continue

        limit = rng.randint(1, 12)
        query = f"{query}&limit={limit}"
        paged = []
        for _page in range(len(expected) + 2):
            r, data = books_page(host, token, query)
            if data is None:
                paged = r
                break
            pages_seen += 1
            paged.extend(b["id"] for b in data)
            links = [r.headers["link"]] if "link" in r.headers else []
            more = len(paged) < len(expected)
            if more != bool(links) or len(data) > limit or (links and len(data) != limit):
                link_bad.append((query, len(data), links, more))
                break
            if not links:
                break
            match = LINK.match(links[0])
            if not match or not match.group(1).endswith(f"&after={paged[-1]}"):
                link_bad.append((query, links[0]))
                break
            query = match.group(1)
        if paged != expected:
            paged_bad.append((query, expected[:10], paged if not isinstance(paged, list) else paged[:10]))

    t.note(f"{label}{n_queries} filters ({matched} matching some book), {pages_seen} pages followed")
    t.check(not unpaged_bad, f"{label}{n_queries} random filters equal the model (ASCII folding only, "
            "literal %/_/\\, non-ASCII exact)", f"{len(unpaged_bad)} differ, e.g. {unpaged_bad[:2]}")
    t.check(not paged_bad, label + "paging through each filter by its Link headers yields exactly "
            "the unpaged list", f"{len(paged_bad)} differ, e.g. {paged_bad[:2]}")
    t.check(not link_bad, label + "a Link (same filters and limit, after = last id) on every page "
            "but the last, full pages before it", f"{len(link_bad)} wrong, e.g. {link_bad[:2]}")


if __name__ == "__main__":
    lib.main("catalog", run)
