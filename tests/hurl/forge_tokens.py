#!/usr/bin/env python3
"""Forge the tokens the end-to-end suite needs, given the signing secret.

The service's own `POST /token` only hands out good tokens; to test that the
service refuses everything else (docs/api.md, "Tokens") we build the bad ones
here: expired, signed with another key, tampered, other algorithms, no `exp`,
padded or wrongly split segments. One good token with a fractional `exp` is
also made, because a NumericDate may carry a fraction (RFC 7519 section 2).

Standard library only; the tokens are signed by tests/faults/lib.py (the one
forger the Python tests share). The secret is read from the environment variable
SECRET_TOKEN (or the one named by --secret-env), never from the command line,
so that it does not show in `ps`.

Output: hurl variables, one `name=value` per line (the `--variables-file`
format), to stdout or to --output FILE; with --args, `--variable name=value`
lines instead.
"""

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
# The one HS256 forger in Python, shared with the fault tests.
from lib import HS256_HEADER, jwt, segment, sign  # noqa: E402


def std_alphabet_token(key: bytes, exp: int) -> str:
    """A correctly signed token whose claims segment uses the standard base64
    alphabet (`+` or `/`), which base64url forbids: malformed."""
    # "???" in some alignment encodes to a 6-bit group of all ones: `_`.
    for pad in range(1, 7):
        claims_b64 = segment({"exp": exp, "n": "?" * pad})
        if "-" in claims_b64 or "_" in claims_b64:
            claims_std = claims_b64.replace("-", "+").replace("_", "/")
            signing_input = segment(HS256_HEADER) + "." + claims_std
            return signing_input + "." + sign(key, signing_input)
    raise RuntimeError("no padding gave a '-' or '_'")  # unreachable


def forge(secret: str, now: int) -> dict:
    key = secret.encode("utf-8")
    future = now + 600
    good = jwt(key, {"exp": future})
    header, claims, signature = good.split(".")
    tokens = {}

    # A valid token made here, with a fractional exp: the service must accept it.
    tokens["future_fraction_token"] = jwt(key, {"exp": future + 0.5})
    # Everything below must be refused with 401 "Invalid token".
    tokens["expired_token"] = jwt(key, {"exp": now - 120})
    tokens["expired_fraction_token"] = jwt(key, {"exp": now - 120.5})
    tokens["wrong_key_token"] = jwt(b"not-the-secret-" + key[::-1], {"exp": future})
    # Claims changed after signing (a later exp), signature kept.
    tokens["tampered_token"] = header + "." + segment({"exp": future + 3600}) + "." + signature
    # Signature segment changed: one character flipped.
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    tokens["bad_signature_token"] = header + "." + claims + "." + flipped
    tokens["none_alg_token"] = (
        segment({"alg": "none", "typ": "JWT"}) + "." + segment({"exp": future}) + "."
    )
    # alg none, yet carrying a correct HS256 signature: still refused.
    tokens["none_alg_signed_token"] = jwt(key, {"exp": future}, {"alg": "none", "typ": "JWT"})
    tokens["hs512_token"] = jwt(key, {"exp": future}, {"alg": "HS512", "typ": "JWT"}, hashlib.sha512)
    tokens["hs384_token"] = jwt(key, {"exp": future}, {"alg": "HS384", "typ": "JWT"}, hashlib.sha384)
    # Algorithm confusion: an RS256 header over an HMAC-SHA256 signature made
    # with the secret as key.
    tokens["rs256_token"] = jwt(key, {"exp": future}, {"alg": "RS256", "typ": "JWT"})
    tokens["lowercase_alg_token"] = jwt(key, {"exp": future}, {"alg": "hs256", "typ": "JWT"})
    tokens["no_alg_token"] = jwt(key, {"exp": future}, {"typ": "JWT"})
    tokens["no_exp_token"] = jwt(key, {"sub": "e2e"})
    tokens["string_exp_token"] = jwt(key, {"exp": str(future)})
    tokens["null_exp_token"] = jwt(key, {"exp": None})
    tokens["array_claims_token"] = jwt(key, [future])
    # `=` padding on the signature segment (43 characters -> 44).
    tokens["padded_token"] = good + "="
    tokens["std_alphabet_token"] = std_alphabet_token(key, future)
    tokens["two_segment_token"] = header + "." + claims
    tokens["four_segment_token"] = good + "." + signature
    tokens["empty_segments_token"] = ".."
    # A valid token plus a trailing dot: four segments, the last one empty.
    tokens["trailing_dot_token"] = good + "."
    return tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--secret-env", default="SECRET_TOKEN",
                        help="environment variable holding the secret (default SECRET_TOKEN)")
    parser.add_argument("--output", "-o", help="write the variables file here instead of stdout")
    parser.add_argument("--args", action="store_true",
                        help="print `--variable name=value` lines instead of a variables file")
    parser.add_argument("--now", type=int, default=None, help="Unix time to forge against (tests)")
    options = parser.parse_args()

    secret = os.environ.get(options.secret_env, "")
    if not secret:
        print(f"forge_tokens.py: environment variable {options.secret_env} is empty", file=sys.stderr)
        return 2
    now = options.now if options.now is not None else int(time.time())
    tokens = forge(secret, now)
    prefix = "--variable " if options.args else ""
    text = "".join(f"{prefix}{name}={value}\n" for name, value in sorted(tokens.items()))
    if options.output:
        with open(options.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
