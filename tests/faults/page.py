#!/usr/bin/env -S python3 -B
"""The catalog page (/ui/) in headless Chromium through selenium, every
control found by its accessible name (label, button text), never by id or
class: the steps a person takes, each a check (tests/README.md lists them),
and the headers as the host serves them (their rules: ui/src/lib.rs's tests).
Writes a screenshot to build/page.png, or $PAGE_SCREENSHOT (docs/page.png).
"""

import csv
import io
import json
import os
import shutil
import time
from pathlib import Path

import lib

lib.use_venv()
try:
    from selenium import webdriver
    from selenium.common.exceptions import (NoAlertPresentException, StaleElementReferenceException,
                                            TimeoutException)
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
    MISSING = None
except ImportError as e:
    MISSING = e

BOOKS = [("Dune", "Frank Herbert", 1965), ("Emma", "Jane Austen", 1815),
         ("<img src=x onerror=alert(1)>", "Mallory", 2024)]
SCRIPT_TITLE = BOOKS[2][0]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
READER, READER_PASSWORD = "rita", "Reader." + lib.random_text(12)
EDITOR, EDITOR_PASSWORD = "ed", "Editor." + lib.random_text(12)
# Records what the page sends (window.sent: method, path, Idempotency-Key; `done` once the
# answer is read and the page has acted on it); window.hold (a RegExp) keeps matching
# requests until window.release(); window.lose drops the next POST's answer (sent, stored).
RECORDER = """
const real = window.realFetch ??= window.fetch;
[window.sent, window.held] = [[], []];
window.release = () => window.held.splice(0).forEach((go) => go());
window.fetch = async (path, init = {}) => {
  const entry = {method: init.method, path: String(path), key: init.headers?.['Idempotency-Key'], done: false};
  const finish = () => setTimeout(() => { entry.done = true; });
  window.sent.push(entry);
  if (window.hold?.test(entry.path)) await new Promise((go) => window.held.push(go));
  try {
    const response = await real(path, init);
    if (window.lose && init.method === 'POST') throw new TypeError(window.lose = false);
    const json = response.json.bind(response);
    response.json = () => json().finally(finish);
    return response;
  } catch (e) { finish(); throw e; }
};"""


def headers(host):
    """What the host answers for the page: its headers, 304, the redirect, another path."""
    page, moved, missing = (host.call("GET", path) for path in ("/ui/", "/ui", "/ui/nope"))
    h = page.headers
    again = host.call("GET", "/ui/", headers={"If-None-Match": h.get("etag", "")}).status
    return [page.status, h.get("content-type"), h.get("content-security-policy") == CSP,
            h.get("x-content-type-options"), h.get("referrer-policy"), again, moved.status,
            moved.headers.get("location"), missing.status, missing.headers.get("content-type"), missing.raw]


class Page:
    """One browser window, its controls by accessible name."""

    def __init__(self, driver, url):
        self.driver = driver
        driver.get(url)

    @staticmethod
    def is_named(element, name):
        try:
            return element.is_displayed() and element.accessible_name == name
        except StaleElementReferenceException:  # a row drawn again meanwhile
            return False

    def named(self, kinds, name, within=None):
        found = [e for e in (within or self.driver).find_elements("xpath", kinds) if self.is_named(e, name)]
        if len(found) != 1:
            raise LookupError(f"{len(found)} visible {kinds} named {name!r}")
        return found[0]

    def shown(self, kinds, name):
        return any(self.is_named(e, name) for e in self.driver.find_elements("xpath", kinds))

    def value(self, label):
        return self.named("//input|//select", label).get_attribute("value")

    def rows(self):
        return self.driver.execute_script(
            "return [...document.querySelectorAll('table tbody tr')].map(r => [...r.cells].map(c => c.textContent))")

    def titles(self):
        return [row[0] for row in self.rows()]

    def said(self):
        return self.driver.execute_script(
            "return [...document.querySelectorAll('[role=status], [role=alert]')].map(e => e.textContent)")

    def wait(self, what, ok, seconds=10):
        """Whether `ok()` came true within `seconds`."""
        try:
            # A control not (yet) there, or drawn again meanwhile: look again.
            ignored = [StaleElementReferenceException, LookupError]
            WebDriverWait(self.driver, seconds, ignored_exceptions=ignored).until(lambda _: ok(), message=what)
            return True
        except TimeoutException:
            return False

    def fill(self, values):
        for label, value in values.items():
            self.named("//input|//select", label).clear()
            self.named("//input|//select", label).send_keys(str(value))

    def says(self, says):
        return self.wait(f"the page says {says!r}", lambda: any(says in text for text in self.said()))

    def submit(self, values, button, says=None):
        """Types each value into its field, presses the button; whether the page then says `says`."""
        self.fill(values)
        self.named(".//button", button).click()
        return not says or self.says(says)

    def double_click(self, values, button, says):
        self.fill(values)
        ActionChains(self.driver).double_click(self.named(".//button", button)).perform()
        return self.says(says)

    def sent(self):
        """What the page sent since RECORDER, once every answer but the feed's is handled."""
        sent = lambda: self.driver.execute_script("return window.sent")  # noqa: E731
        self.wait("every answer handled", lambda: all(e["done"] for e in sent() if "/changes" not in e["path"]))
        return sent()

    def focused(self):
        """The focused element: its tag and accessible name, or a row's first cell."""
        for _ in range(9):  # read again when the feed drew the rows anew meanwhile
            try:
                e = self.driver.switch_to.active_element
                return [e.tag_name, e.find_element("xpath", "td").text if e.tag_name == "tr" else e.accessible_name]
            except StaleElementReferenceException:
                pass
        return None

    def press(self, title, button):
        """`button` in the row of `title` (again if the rows were drawn again meanwhile)."""
        def pressed():
            rows = self.driver.find_elements("xpath", "//table//tbody/tr")
            row = next((r for r in rows if r.find_element("xpath", "td").text == title), None)
            return row and self.named(".//button", button, row).click() is None
        self.wait(f"{button} of {title!r} pressed", pressed)

    def edit(self, title):
        self.press(title, "Edit")
        self.wait(f"the form holds {title!r}", lambda: self.value("Title") == title)

    def told(self, region):
        """The items of the region named `region`, each without its time."""
        items = "return [...arguments[0].querySelectorAll('li')].map(li => li.textContent)"
        return [text.split(": ", 1)[-1] for text in self.driver.execute_script(items, self.named("//section", region))]


def browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in lib.CHROMIUM_FLAGS + [f"--user-data-dir={profile}", "--window-size=1000,800"]:
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": f"{profile}/downloads",
                                              "download.prompt_for_download": False})
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))


def once(t, host, page, editor):
    """Double clicks, quick Enters, a lost answer: one book each; one Save at a time; the
    latest filter's answer shown; focus where the person goes next."""
    page.submit(editor, "Sign in")
    status = "var s = document.querySelector('[role=status]'); return [s.textContent, getComputedStyle(s).display]"
    t.check(page.wait("focus in the add form", lambda: page.focused() == ["input", "Title"])
            and page.driver.execute_script(status)[1] != "none", "after Sign in the focus is in the first field; "
            "the empty status region stays in the accessibility tree", f"{page.focused()} "
            f"{page.driver.execute_script(status)}")
    page.driver.execute_script(RECORDER)
    page.double_click({"Title": "Middlemarch", "Author": "George Eliot", "Year": 1871}, "Add book",
                      "Added “Middlemarch”.")
    page.fill({"Title": "Ivanhoe", "Author": "Walter Scott", "Year": 1819})
    ActionChains(page.driver).send_keys(Keys.ENTER, Keys.ENTER).perform()
    page.says("Added “Ivanhoe”.")
    page.driver.execute_script("window.lose = true")
    page.submit({"Title": "Walden", "Author": "Henry David Thoreau", "Year": 1854}, "Add book",
                "The service could not be reached.")
    page.submit({}, "Add book", "Added “Walden”.")
    keys = [e["key"] for e in page.sent() if e["method"] == "POST"]
    titles = [b["title"] for b in host.call("GET", "/books", token=host.token()).data]
    made = [titles.count(title) for title in ("Middlemarch", "Ivanhoe", "Walden")]
    t.check(made == [1, 1, 1] and len(keys) == 4 and keys[2] == keys[3] and len(set(keys)) == 3,
            "a double click on Add book, two quick Enters, a lost answer and a second click: one book "
            "each (an Idempotency-Key per filled form, the form busy meanwhile)", f"{made} {keys}")

    page.edit("Dune")
    page.driver.execute_script(RECORDER)
    page.double_click({"Year": 1967}, "Save", "Saved “Dune”.")
    puts = [e["method"] for e in page.sent()].count("PUT")
    t.check(puts == 1 and page.said() == ["Saved “Dune”.", ""] and page.focused() == ["tr", "Dune"],
            "a double click on Save sends one PUT (no false conflict); the focus on the saved row",
            f"{puts} {page.said()} {page.focused()}")
    page.edit("Walden")
    page.submit({}, "Delete")
    page.submit({}, "Delete", "Deleted “Walden”.")
    t.check(page.wait("focus on the table", lambda: page.focused()[0] == "table"),
            "after Delete the focus is on the table", f"{page.focused()}")

    page.driver.execute_script(RECORDER + "window.hold = /title=Du/")
    page.submit({"Title contains": "Du"}, "Filter")
    page.submit({"Title contains": "Midd"}, "Filter")
    page.wait("the later filter shown", lambda: page.titles() == ["Middlemarch"])
    page.driver.execute_script("window.release()")
    page.sent()
    t.check(page.titles() == ["Middlemarch"], "an earlier filter answering after a later one is not shown",
            f"{page.titles()}")
    page.submit({"Title contains": ""}, "Filter")


def live(t, page, other, admin):
    """Two windows, two editors: what one does the other lists within 2 s, told in Recent
    changes; History and Restore this version, Restore of a delete, Undo of one's own."""
    page.fill({"Title": "Half typed"})
    other.submit({"Title": "Beloved", "Author": "Toni Morrison", "Year": 1987}, "Add book", "Added “Beloved”.")
    seen = page.wait("Beloved listed", lambda: "Beloved" in page.titles(), 2)
    t.check(seen and page.value("Title") == "Half typed" and page.focused() == ["input", "Title"],
            "a book another editor adds is listed within 2 s, without a reload; what is being typed, "
            "and the focus, stay", f"{page.titles()} {page.value('Title')} {page.focused()}")
    other.edit("Beloved")
    other.submit({"Year": 1988}, "Save", "Saved “Beloved”.")
    changed = page.wait("1988", lambda: ["Beloved", "Toni Morrison", "1988"] in [r[:3] for r in page.rows()], 2)
    other.edit("Beloved")
    other.submit({}, "Delete")
    other.submit({}, "Delete", "Deleted “Beloved”.")
    gone = page.wait("Beloved gone", lambda: "Beloved" not in page.titles(), 2)
    told = page.told("Recent changes")[:3]
    t.check(changed and gone and told == [f"{EDITOR} deleted “Beloved” Restore", f"{EDITOR} changed “Beloved”",
                                          f"{EDITOR} added “Beloved”"],
            "another editor's change and delete are shown within 2 s; Recent changes says who did what, "
            "when, with Restore on a delete", f"{changed} {gone} {told}")
    page.named(".//button", "Restore", page.named("//section", "Recent changes").find_element("xpath", ".//li"))\
        .click()
    back = page.says("Restored “Beloved”.") and other.wait("restored", lambda: "Beloved" in other.titles(), 2)
    t.check(back and other.told("Recent changes")[0] == f"{admin} restored “Beloved”", "Restore brings a deleted "
            "book back, listed in the other window", f"{back} {other.told('Recent changes')[:1]}")

    page.press("Beloved", "History")
    page.wait("the history", lambda: page.shown("//section", "History of “Beloved”"))
    versions = page.told("History of “Beloved”")
    first = page.named("//section", "History of “Beloved”").find_element("xpath", ".//li")
    page.named(".//button", "Restore this version", first).click()
    again = other.wait("the first version", lambda: ["Beloved", "Toni Morrison", "1987"] in
                       [r[:3] for r in other.rows()], 2)
    t.check(versions == [f"{EDITOR} added “Beloved”, Toni Morrison, 1987 Restore this version",
                         f"{EDITOR} changed “Beloved”, Toni Morrison, 1988 Restore this version",
                         f"{EDITOR} deleted “Beloved”",
                         f"{admin} restored “Beloved”, Toni Morrison, 1988 Restore this version"] and again,
            "a row's History says who changed what, when; Restore this version puts it back",
            f"{versions} {again}")
    page.edit("Beloved")
    page.submit({}, "Delete")
    page.submit({}, "Delete", "Deleted “Beloved”.")
    page.submit({}, "Undo", "Restored “Beloved”.")
    t.check(page.wait("back", lambda: page.focused() == ["tr", "Beloved"]), "Undo after one's own delete "
            "brings the book back, the focus on its row", f"{page.focused()} {page.titles()}")


def transfer(t, host, page, tmp):
    """Export CSV: the books the filters show, every page; Import books: a file with a bad row
    in the middle stores nothing and says which row and why, a good one how many it imported."""
    listed = lambda: host.call("GET", "/books?author=e", token=host.token()).data  # noqa: E731
    Select(page.named("//select", "Books per page")).select_by_visible_text("2")
    page.submit({"Author contains": "e"}, "Filter")
    page.submit({}, "Export CSV", "Exported books.csv.")
    path = tmp / "chromium/downloads/books.csv"
    page.wait("books.csv downloaded", path.exists)
    got = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8") if path.exists() else "", newline="")))
    want = [["id", "title", "author", "year"]] + [[str(b["id"]), b["title"], b["author"], str(b["year"])]
                                                  for b in listed()]
    t.check(got == want and len(want) > 3, "Export CSV downloads books.csv: every book the filters show, "
            "not only the page on screen", f"{got} {want}")
    before = listed()
    (tmp / "bad.csv").write_text("title,author,year\r\nUlysses,James Joyce,1922\r\nBad,Nobody,abc\r\n"
                                 "Orlando,Virginia Woolf,1928\r\n")
    (tmp / "good.json").write_text(json.dumps([{"title": "Ulysses", "author": "James Joyce", "year": 1922},
                                               {"title": "Orlando", "author": "Virginia Woolf", "year": 1928}]))
    page.named("//input", "Import books").send_keys(str(tmp / "bad.csv"))
    refused = page.submit({}, "Import", "row 3 (year)") and page.says("Nothing was imported.")
    t.check(refused and listed() == before, "Import books with a bad row in the middle stores nothing and "
            "says which row was refused and why", f"{page.said()}")
    page.named("//input", "Import books").send_keys(str(tmp / "good.json"))
    said = page.submit({}, "Import", "Imported 2 books from “good.json”.")
    titles = [b["title"] for b in host.call("GET", "/books", token=host.token()).data]
    t.check(said and [titles.count("Ulysses"), titles.count("Orlando")] == [1, 1], "Import books of a .json file "
            "stores them and says how many were imported", f"{titles}")


def run(ctx):
    if not ctx.only_on("sqlite", "the page is the same whatever the store"):
        return
    t = ctx.tally
    if MISSING:
        t.check(False, "selenium is installed (scripts/ensure-tools.sh browser)", repr(MISSING))
        return
    host = ctx.host(username="admin")  # as in the README's picture
    host.own_settings["ACCOUNTS"] = json.dumps([lib.account(READER, "reader", READER_PASSWORD),
                                                lib.account(EDITOR, "editor", EDITOR_PASSWORD)])
    host.start()
    got = headers(host)
    t.check(got == [200, "text/html; charset=utf-8", True, "nosniff", "no-referrer", 304, 308, "/ui/", 404,
                    "application/json", b'{"status":404,"message":"Not found","data":null}'],
            "/ui/ with its CSP, nosniff, no referrer, an ETag (304); /ui redirected; another /ui/ path "
            "the API's 404 envelope", f"{got}")
    driver = browser(f"{ctx.tmp}/chromium")
    editor = {"Username": host.username, "Password": host.password}
    try:
        page = Page(driver, host.base_url + "/ui")
        ActionChains(driver).send_keys(Keys.TAB).perform()
        first = driver.switch_to.active_element.accessible_name
        ActionChains(driver).send_keys(host.username, Keys.TAB, host.password, Keys.ENTER).perform()
        page.wait("signed in by keyboard", lambda: page.shown("//button", "Sign out"))
        t.check(first == "Username", "an editor signs in by keyboard alone (Tab, type, Enter)", first)
        stored = driver.execute_script("return [localStorage.length, document.cookie]")
        t.check(stored == [0, ""], "the token is in no cookie and not in localStorage", f"{stored}")

        Select(page.named("//select", "Books per page")).select_by_visible_text("2")
        for title, author, year in BOOKS:
            page.submit({"Title": title, "Author": author, "Year": year}, "Add book", f"Added “{title}”.")
        page.wait("two books a page", lambda: len(page.rows()) == 2)
        pages = [page.rows()]
        page.submit({}, "Next page")
        page.wait("the second page", lambda: page.rows() != pages[0])
        pages.append(page.rows())
        last = not driver.find_element("xpath", "//button[.='Next page']").is_enabled()
        page.submit({}, "Previous page")
        page.wait("the first page again", lambda: page.rows() == pages[0])
        t.check([r[:3] for r in pages[0] + pages[1]] == [[a, b, str(c)] for a, b, c in BOOKS] and last,
                "three books added, shown page by page (Next page, Previous page)", f"{pages}")

        for values, titles in [({"Title contains": "mm"}, ["Emma"]),
                               ({"Title contains": "", "Author contains": "herb"}, ["Dune"]),
                               ({"Author contains": "", "Published in": "2024"}, [SCRIPT_TITLE])]:
            page.submit(values, "Filter")
            page.wait(f"filtered by {values}", lambda: page.titles() == titles)
        try:
            alert = driver.switch_to.alert.text
        except NoAlertPresentException:
            alert = None
        images = driver.find_elements("xpath", "//table//img")
        t.check(page.titles() == [SCRIPT_TITLE] and not images and alert is None, "filters by title, author "
                "and year; a title of markup is shown as text, nothing runs, no alert", f"{images} {alert}")

        Select(page.named("//select", "Books per page")).select_by_visible_text("10")
        page.submit({"Published in": ""}, "Filter")
        page.wait("every book on one page", lambda: len(page.rows()) == 3)
        page.edit("Dune")
        page.submit({"Year": 1966}, "Save", "Saved “Dune”.")
        t.check(page.wait("the new year listed", lambda: ["Dune", "Frank Herbert", "1966"] in
                          [r[:3] for r in page.rows()]), "an edit is saved (Edit, Save) and listed")
        shot = os.environ.get("PAGE_SCREENSHOT") or str(lib.ROOT / "build/page.png")
        driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
        driver.save_screenshot(shot)
        t.note(f"screenshot: {shot}")

        page.edit("Emma")
        mine = driver.current_window_handle
        driver.switch_to.new_window("window")
        other = Page(driver, host.base_url + "/ui/")
        other.submit(editor, "Sign in")
        other.wait("the books", lambda: "Emma" in other.titles())
        other.edit("Emma")
        other.submit({"Author": "J. Austen"}, "Save", "Saved “Emma”.")
        driver.close()
        driver.switch_to.window(mine)
        page.submit({"Year": 1816}, "Save", "Precondition failed: someone else changed this book first")
        values = [page.value(label) for label in ("Title", "Author", "Year")]
        t.check(values == ["Emma", "J. Austen", "1815"], "an edit another window saved first is refused "
                "(412), saying so, and the form shows the current values", f"{values}")

        page.submit({}, "Delete")
        question = "Delete “Emma”?"
        asked = page.wait("the question", lambda: question in driver.find_element("xpath", "//main").text)
        page.submit({}, "Delete", "Deleted “Emma”.")
        t.check(asked and page.wait("Emma gone", lambda: "Emma" not in page.titles()),
                "a book is deleted after its confirmation (Delete, then the question's Delete)")

        expires = int(time.time()) + 3
        driver.execute_script("sessionStorage.setItem('token', arguments[0])",
                              lib.jwt(host.secret.encode(), {"exp": expires}))
        driver.refresh()
        page.wait("signed in with a short token", lambda: page.shown("//button", "Sign out"))
        time.sleep(max(0.0, expires + 1.1 - time.time()))
        page.submit({"Title": "Persuasion", "Author": "Jane Austen", "Year": 1817}, "Add book")
        page.wait("asked to sign in again", lambda: page.shown("//input", "Username"))
        t.check(page.submit(editor, "Sign in", "Added “Persuasion”."),
                "an expired token asks to sign in again; what was typed is added afterwards")

        driver.set_window_size(390, 844)
        fits = driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        t.check(fits, "the page fits a phone's width (390 px)")
        page.submit({}, "Sign out")
        page.wait("signed out", lambda: page.shown("//input", "Username"))
        t.check(page.rows() == [], "signing out leaves the sign-in form and no book")

        page.submit({"Username": READER, "Password": READER_PASSWORD}, "Sign in")
        page.wait("the reader's first page", lambda: len(page.rows()) == 3)
        offered = [name for name in ("Add book", "Edit", "Save", "Delete", "Import") if page.shown("//button", name)]
        t.check(len(page.rows()) == 3 and offered == [], "a reader (the accounts setting) sees the books "
                "and no add, edit, delete or import", f"{page.rows()} {offered} {page.said()}")
        page.submit({}, "Sign out")
        once(t, host, page, editor)
        driver.set_window_size(1000, 800)
        second = browser(f"{ctx.tmp}/chromium-2")
        try:
            other = Page(second, host.base_url + "/ui/")
            other.submit({"Username": EDITOR, "Password": EDITOR_PASSWORD}, "Sign in")
            other.wait("the books", lambda: "Dune" in other.titles())
            live(t, page, other, host.username)
        finally:
            second.quit()
        transfer(t, host, page, Path(ctx.tmp))
    except Exception:
        driver.save_screenshot(str(lib.ROOT / "build/page-failed.png"))
        lib.log("page: the browser's view when it failed: build/page-failed.png")
        raise
    finally:
        driver.quit()


if __name__ == "__main__":
    lib.main("page", run)
