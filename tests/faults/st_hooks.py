"""Schemathesis hooks for scripts/fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

What schemathesis would flag in a correct answer, handled here rather than
by dropping a check:

* `year` is "a JSON integer literal (no fraction, no exponent)" (docs/api.md,
  "Book rules"), so `1999.0` is refused with
  400 "Invalid input". JSON Schema (draft 6 and later, hence OpenAPI 3.1)
  counts any number with a zero fraction as an `integer`, and no keyword can
  tell `1999.0` from `1999`. Schemathesis therefore sends `"year": 1999.0` as
  *valid* data and its `positive_data_acceptance` check (ST202) fails on our
  400. We spell such whole floats back as integers before they are sent: the
  value stays the same number, every other generated body is untouched, and
  the check keeps judging everything else. The refusal of `1999.0` itself is
  covered by tests/hurl/validation.hurl and the native tests.

* A repeated `Idempotency-Key` answers the first 201 again, even for a book
  deleted since (docs/api.md, "Safe writes"). Hypothesis replays data across
  stateful scenarios, so a replayed create links to a book an earlier
  scenario deleted and ST302 ("created resource not found") fails on the
  correct 404. In the stateful phase only, each keyed create gets a fresh
  UUID; the other phases keep the drawn keys (replays, 422 and 400 included).
"""

import uuid

import schemathesis


@schemathesis.hook
def map_body(context, body):
    if isinstance(body, dict):
        year = body.get("year")
        if isinstance(year, float) and year.is_integer() and abs(year) < 2**63:
            body = dict(body)
            body["year"] = int(year)
    return body


@schemathesis.hook
def before_call(context, case, **kwargs):
    meta = case.meta
    if (case.method.upper() == "POST" and case.path == "/book" and meta is not None
            and meta.phase.name == "stateful" and case.headers
            and "Idempotency-Key" in case.headers):
        case.headers["Idempotency-Key"] = str(uuid.uuid4())
