#!/usr/bin/env -S python3 -B
"""A web page on another origin drives the API in a real browser process
(headless Chromium): from a listed origin (`cors_allowed_origins`) it logs
in, creates a book and reads its `ETag`, updates it with `If-Match`, pages by
`Link` and deletes, each a cross-origin `fetch` with its preflight; from an
unlisted origin (another loopback address) it reads nothing. The CORS rules
themselves are tests/core/cors.rs's.
"""

import html
import json
import re
import shutil
import subprocess

import lib

PAGE = """<!doctype html><meta charset="utf-8"><pre id="result">running</pre><script>
const q = new URLSearchParams(location.search), api = q.get("api"), out = {};
const call = async (method, path, opts = {}) => {
  const r = await fetch(api + path, {method, ...opts});
  return [r, r.status === 204 ? null : await r.json()];
};
(async () => {
  try {
    const json = {"Content-Type": "application/json"};
    let [r, body] = await call("POST", "/token",
      {headers: json, body: JSON.stringify({username: q.get("user"), password: q.get("pass")})});
    out.login = r.status;
    const auth = {Authorization: body.data.token};
    const title = "Browser " + q.get("run");
    [r, body] = await call("POST", "/book", {headers: {...auth, ...json},
      body: JSON.stringify({title: title + " 1", author: "Page", year: 2024})});
    out.created = r.status; out.etag = r.headers.get("ETag"); const id = body.data.id;
    await call("POST", "/book", {headers: {...auth, ...json},
      body: JSON.stringify({title: title + " 2", author: "Page", year: 2024})});
    [r, body] = await call("PUT", "/book/" + id, {headers: {...auth, ...json, "If-Match": out.etag},
      body: JSON.stringify({year: 2025})});
    out.updated = r.status; out.etag2 = r.headers.get("ETag");
    [r, body] = await call("GET", "/books?limit=1&title=" + encodeURIComponent(title), {headers: auth});
    out.page1 = body.data.map(b => b.title); out.link = r.headers.get("Link");
    const next = out.link && out.link.match(/<([^>]+)>/)[1];
    [r, body] = await call("GET", next, {headers: auth});
    out.page2 = body.data.map(b => b.title); out.link2 = r.headers.get("Link");
    for (const b of [id, id + 1]) {
      [r, body] = await call("DELETE", "/book/" + b, {headers: {...auth, "If-Match": '"' + b + '.' + (b === id ? 2 : 1) + '"'}});
      out["deleted" + (b === id ? "" : "2")] = r.status;
    }
  } catch (e) { out.error = String(e); }
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script>"""


def serve_page(address):
    return lib.http_server(lambda request: lib.reply(request, 200, PAGE.encode(),
                                                     "text/html; charset=utf-8"), address)


def browse(url, tmp):
    """The page's result once its script has run, read from the DOM."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    dom = subprocess.run(
        [chromium, *lib.CHROMIUM_FLAGS, f"--user-data-dir={tmp}", "--virtual-time-budget=20000", "--dump-dom", url],
        capture_output=True, text=True, timeout=90).stdout
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    text = html.unescape(found.group(1)) if found else ""
    try:
        return json.loads(text)
    except ValueError:
        return {"unreadable": text or dom[-300:]}


def run(ctx):
    if not ctx.only_on("sqlite", "CORS is the component's, whatever the store"):
        return
    t = ctx.tally
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        t.check(False, "chromium is installed (scripts/ensure-tools.sh browser)")
        return
    listed, unlisted = serve_page("127.0.0.1"), serve_page("127.0.0.2")
    origin = f"http://127.0.0.1:{listed.server_address[1]}"

    host = ctx.host()
    host.own_settings["CORS_ALLOWED_ORIGINS"] = origin
    host.start()
    query = (f"api=http://127.0.0.1:{host.port}&user={host.username}&pass={host.password}"
             f"&run={lib.random_text(8)}")
    try:
        got = browse(f"{origin}/?{query}", f"{ctx.tmp}/chromium-listed")
        run_titles = lambda n: got.get(f"page{n}", [])  # noqa: E731
        t.check(got.get("login") == 200 and got.get("created") == 201,
                "a page from the listed origin logs in and creates a book", f"{got}")
        t.check(bool(re.fullmatch(r'"\d+\.1"', got.get("etag") or "")) and got.get("updated") == 200
                and (got.get("etag2") or "").endswith('.2"'),
                "... reads its ETag and updates it with If-Match (new ETag)", f"{got}")
        t.check(len(run_titles(1)) == 1 and len(run_titles(2)) == 1 and run_titles(1) != run_titles(2)
                and "rel=\"next\"" in (got.get("link") or "") and got.get("link2") is None,
                "... pages the list by its Link header to the end", f"{got}")
        t.check(got.get("deleted") == 200 and got.get("deleted2") == 200 and "error" not in got,
                "... and deletes its books", f"{got}")
        other = browse(f"http://127.0.0.2:{unlisted.server_address[1]}/?{query}", f"{ctx.tmp}/chromium-unlisted")
        t.check(list(other) == ["error"] and "Failed to fetch" in other["error"],
                "a page from an unlisted origin can read nothing (its first fetch fails)", f"{other}")
    finally:
        listed.shutdown()
        unlisted.shutdown()


if __name__ == "__main__":
    lib.main("browser", run)
