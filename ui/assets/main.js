// The page's state and events. Book text only ever reaches the DOM as text
// (textContent, form values), never as markup.
import { ApiError, call, claims, newKey, signIn, signedIn, signOut } from "./api.js";

const $ = (id) => document.getElementById(id);
const [form, filters] = [$("book"), $("filters")];
const fields = ["title", "author", "year"];
let pages = []; // the address of every page up to the one shown
let next = null; // the following page's address (the Link header)
let editing = null; // {id, etag, title} of the book in the form
let retry = null; // what an expired token interrupted, done again after signing in
let addKey = null; // the Idempotency-Key of the book typed in the add form: one per book
let latest = 0; // the latest list asked for: an earlier one answering later is not shown
let asked = []; // that list's pages (the feed reads it again)
let editor = false; // offered writes (the token's role)
let feed = null; // the running follower of the feed: replaced or set to null, it stops
let importKey = null; // the Idempotency-Key of the file chosen to import
let aim = null; // the book whose row gets the focus when drawn (a later list may draw it)
let undone = null; // the id of the person's own last delete, while "Undo" is offered
const titles = new Map(); // each book's last title seen, to name it once deleted
const verbs = { create: "added", update: "changed", delete: "deleted", restore: "restored" };

function show(text, problem = false) {
  $("notice").textContent = problem ? "" : text;
  $("problem").textContent = problem ? text : "";
  $("undo").hidden = true;
}

// Runs `work`; with a form, one at a time: the form is busy (its buttons
// disabled) until the answer, so a double click or a second Enter sends nothing.
async function act(work, within) {
  if (within?.ariaBusy === "true") return;
  const busy = (on) => {
    if (!within) return;
    within.ariaBusy = String(on);
    for (const button of within.querySelectorAll("button")) button.disabled = on;
  };
  try {
    busy(true);
    show("");
    await work();
  } catch (e) {
    if (e.status === 401 && signedIn()) return expire(() => act(work, within));
    show(e instanceof ApiError ? e.message : String(e), true);
  } finally {
    busy(false);
  }
}

// The token expired (or was revoked): sign in again; the forms keep what was
// typed (and the add its key), and the interrupted action runs once more afterwards.
function expire(again) {
  retry = again;
  signOut();
  enter();
  show("Your session has ended: sign in again to carry on (what you typed is kept).", true);
  $("username").focus();
}

function enter() {
  const c = signedIn() ? claims() : null;
  editor = c?.role !== "reader";
  for (const id of ["catalog", "sign-out", "who"]) $(id).hidden = !c;
  $("sign-in").hidden = Boolean(c);
  $("book").hidden = $("import").hidden = !editor;
  $("who").textContent = `Signed in${c?.sub ? ` as ${c.sub}` : ""}${editor ? "" : " (read only)"}`;
}

function firstPage() {
  const query = new URLSearchParams();
  for (const [name, value] of new FormData(filters)) if (value !== "") query.set(name, value);
  return `/books?${query}`;
}

// Shows the last page of `stack`; answers the list's Changes-Cursor.
async function go(stack) {
  const mine = ++latest;
  asked = stack;
  const { data, next: following, cursor } = await call("GET", stack.at(-1));
  if (mine !== latest) return;
  if (!data.length && stack.length > 1) return go(stack.slice(0, -1));
  if (cursor && !feed) follow(cursor);
  pages = stack;
  next = following;
  render(data);
  $("next").disabled = !next;
  $("previous").disabled = pages.length < 2;
  $("page-caption").textContent = `Books, page ${pages.length}${data.length ? "" : ": none found"}`;
  return cursor;
}

function button(text, work, describedBy) {
  const made = Object.assign(document.createElement("button"), { type: "button", textContent: text });
  if (describedBy) made.setAttribute("aria-describedby", describedBy);
  made.addEventListener("click", () => act(work));
  return made;
}

// The rows drawn again keep the focus where it was (the same row, the same button).
function render(books) {
  const at = document.activeElement;
  const kept = $("rows").contains(at) && [at.closest("tr").cells[0].id, at.tagName === "TR" ? "" : at.textContent];
  $("rows").replaceChildren(...books.map((book) => {
    titles.set(book.id, book.title);
    const row = Object.assign(document.createElement("tr"), { tabIndex: -1 });
    for (const name of fields) row.insertCell().textContent = book[name];
    const name = (row.cells[0].id = `book-${book.id}`);
    const cell = row.insertCell();
    if (editor) cell.append(button("Edit", () => openBook(book.id), name), " ");
    cell.append(button("History", () => history(book.id), name));
    return row;
  }));
  const row = $(kept?.[0] ?? (document.activeElement === $("books") ? `book-${aim}` : ""))?.parentElement;
  const same = row && [...row.querySelectorAll("button")].find((b) => b.textContent === kept?.[1]);
  if (kept || row) (same ?? row ?? $("books")).focus();
}

function focusRow(id) {
  aim = id;
  ($(`book-${id}`)?.parentElement ?? $("books")).focus();
}

// Who did what, when.
const told = (c) => `${new Date(c.at).toLocaleTimeString()}: ${c.account ?? "someone"} ${verbs[c.op]} ` +
  `“${c.book?.title ?? titles.get(c.id) ?? c.id}”`;

// Follows GET /changes from the list's Changes-Cursor: each change is told in
// "Recent changes" and the list is read again; the forms are left as they are.
async function follow(cursor) {
  const me = (feed = {});
  while (feed === me) {
    try {
      const { data } = await call("GET", `/changes?${new URLSearchParams({ after: cursor, wait: 20 })}`);
      if (feed !== me || !data.length) continue;
      cursor = data.at(-1).cursor;
      for (const c of data) {
        const item = document.createElement("li");
        item.textContent = told(c);
        if (c.book) titles.set(c.id, c.book.title);
        if (editor && c.op === "delete") item.append(" ", button("Restore", () => restore(c.id)));
        $("recent").prepend(item);
        $("recent").children[100]?.remove(); // the last hundred
      }
      await go(asked);
    } catch (e) {
      if (e.status === 401) feed = null; // the next action asks to sign in again
      // 410: the feed was pruned past this cursor: list again, follow from its cursor
      else if (e.status === 410) cursor = (await go(asked).catch(() => null)) ?? cursor;
      else await new Promise((wake) => setTimeout(wake, 2000));
    }
  }
}

async function history(id) {
  const data = [];
  for (let path = `/book/${id}/history?limit=1000`; path; ) {
    const { data: some, next: more } = await call("GET", path); // every page, by Link
    data.push(...some);
    path = more;
  }
  $("history-heading").textContent = `History of “${titles.get(id)}”`;
  $("versions").replaceChildren(...data.map((c) => {
    const item = document.createElement("li");
    item.textContent = told(c) + (c.book ? `, ${c.book.author}, ${c.book.year}` : "");
    if (editor && c.book) item.append(" ", button("Restore this version", () => putBack(c.book)));
    return item;
  }));
  $("history").hidden = false;
  $("history-heading").focus();
}

// "Restore this version": a PUT of its fields with the book's current ETag.
async function putBack({ id, title, author, year }) {
  const { etag } = await call("GET", `/book/${id}`);
  await call("PUT", `/book/${id}`, { body: { title, author, year }, etag });
  show(`Restored “${title}”, ${author}, ${year}.`);
  await go(asked);
  await history(id);
}

// A deleted book back under its id ("Undo", "Restore").
async function restore(id) {
  const { data } = await call("POST", `/book/${id}/restore`);
  show(`Restored “${data.title}”.`);
  await go(asked);
  focusRow(id);
}

function mode(name) {
  for (const id of ["adding", "editing", "confirming"]) $(id).hidden = id !== name;
  if (name !== "adding") return;
  editing = null;
  form.reset();
  $("book-heading").textContent = "Add a book";
}

function fill(book, etag) {
  editing = { id: book.id, etag, title: book.title };
  for (const name of fields) form.elements[name].value = book[name];
  $("book-heading").textContent = `Edit “${book.title}”`;
  mode("editing");
}

async function openBook(id) {
  const { data, etag } = await call("GET", `/book/${id}`);
  fill(data, etag);
  $("title").focus();
}

// A PUT or DELETE of the book in the form, sent with its ETag: on 412 the
// form shows the values someone else saved first.
async function write(method, body) {
  try {
    return await call(method, `/book/${editing.id}`, { body, etag: editing.etag });
  } catch (e) {
    if (e.status !== 412) throw e;
    const { data, etag } = await call("GET", `/book/${editing.id}`);
    fill(data, etag);
    $("title").focus();
    throw new ApiError(412, `${e.message}: someone else changed this book first. The form now shows its current values.`);
  }
}

async function save() {
  const book = { title: $("title").value, author: $("author").value, year: Number($("year").value) };
  const put = Boolean(editing);
  addKey ??= newKey(); // kept until the add succeeds: a retry (a lost answer, a new sign-in) replays
  const { data } = put ? await write("PUT", book) : await call("POST", "/book", { body: book, key: addKey });
  if (!put) addKey = null;
  show(`${put ? "Saved" : "Added"} “${data.title}”.`);
  mode("adding");
  await go(pages.length ? pages : [firstPage()]);
  if (put) focusRow(data.id);
  else $("title").focus();
}

async function remove() {
  const { id, title } = editing;
  await write("DELETE");
  show(`Deleted “${title}”.`);
  [undone, $("undo").hidden] = [id, false];
  mode("adding");
  await go(pages);
  aim = null;
  $("books").focus();
}

// Every book the filters show (every page: no limit), as books.csv.
async function exportCsv() {
  const query = new URLSearchParams(firstPage().split("?")[1]);
  query.delete("limit");
  const { blob } = await call("GET", `/books?${query}`, { accept: "text/csv" });
  const link = Object.assign(document.createElement("a"), { href: URL.createObjectURL(blob), download: "books.csv" });
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  show("Exported books.csv.");
}

// A .csv or .json file, all or nothing: the count, or the row refused and why.
async function importBooks() {
  const file = $("import-file").files[0];
  const type = /\.json$/i.test(file.name) ? "application/json" : "text/csv";
  try {
    const { data } = await call("POST", "/books", { body: file, type, key: importKey });
    show(`Imported ${data.imported} books from “${file.name}”.`);
  } catch (e) {
    const bad = e.data ?? {};
    if (e.status !== 400 || !bad.row) throw e;
    const where = `row ${bad.row}${bad.field ? ` (${bad.field})` : ""}`;
    throw new ApiError(400, `${e.message}: ${where}: ${bad.reason}. Nothing was imported.`);
  }
  $("import").reset();
  await go(asked);
}

const on = (id, type, handler) => $(id).addEventListener(type, handler);
const onSubmit = (id, work, within = $(id)) =>
  on(id, "submit", (event) => { event.preventDefault(); act(work, within); });
let typing;

onSubmit("sign-in", async () => {
  await signIn($("username").value, $("password").value);
  $("password").value = "";
  enter();
  const again = retry;
  retry = null;
  $(claims()?.role === "reader" ? "title-filter" : "title").focus();
  await (again ?? (() => go([firstPage()])))();
});
on("sign-out", "click", () => {
  signOut();
  [retry, pages, feed] = [null, [], null];
  mode("adding");
  filters.reset();
  for (const id of ["rows", "recent", "versions"]) $(id).replaceChildren();
  $("history").hidden = true;
  enter();
  show("Signed out.");
  $("username").focus();
});
onSubmit("book", save);
on("cancel-edit", "click", () => mode("adding"));
on("delete", "click", () => {
  $("confirm-question").textContent = `Delete “${editing.title}”?`;
  mode("confirming");
  $("confirm-delete").focus();
});
on("cancel-delete", "click", () => { mode("editing"); $("delete").focus(); });
on("confirm-delete", "click", () => act(remove, form));
onSubmit("import", importBooks);
on("import-file", "change", () => { importKey = newKey(); });
on("export", "click", () => act(exportCsv));
on("undo", "click", () => act(() => restore(undone)));
on("close-history", "click", () => { $("history").hidden = true; $("books").focus(); });
on("book", "input", () => { addKey = null; }); // another book typed: another key
for (const type of ["input", "change"]) {
  on("filters", type, () => {
    clearTimeout(typing);
    typing = setTimeout(() => act(() => go([firstPage()])), 400);
  });
}
onSubmit("filters", () => { clearTimeout(typing); return go([firstPage()]); }, null);
on("next", "click", () => act(() => go([...pages, next])));
on("previous", "click", () => act(() => go(pages.slice(0, -1))));

if (signedIn() && (claims()?.exp ?? 0) * 1000 <= Date.now()) signOut();
enter();
if (signedIn()) act(() => go([firstPage()]));
