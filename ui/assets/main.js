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

function show(text, problem = false) {
  $("notice").textContent = problem ? "" : text;
  $("problem").textContent = problem ? text : "";
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
  const editor = c?.role !== "reader";
  for (const id of ["catalog", "sign-out", "who"]) $(id).hidden = !c;
  $("sign-in").hidden = Boolean(c);
  $("book").hidden = $("edit-column").hidden = !editor;
  $("who").textContent = `Signed in${c?.sub ? ` as ${c.sub}` : ""}${editor ? "" : " (read only)"}`;
}

function firstPage() {
  const query = new URLSearchParams();
  for (const [name, value] of new FormData(filters)) if (value !== "") query.set(name, value);
  return `/books?${query}`;
}

async function go(stack) {
  const asked = ++latest;
  const { data, next: following } = await call("GET", stack.at(-1));
  if (asked !== latest) return;
  if (!data.length && stack.length > 1) return go(stack.slice(0, -1));
  pages = stack;
  next = following;
  render(data);
  $("next").disabled = !next;
  $("previous").disabled = pages.length < 2;
  $("page-caption").textContent = `Books, page ${pages.length}${data.length ? "" : ": none found"}`;
}

function render(books) {
  const editor = !$("edit-column").hidden;
  $("rows").replaceChildren(...books.map((book) => {
    const row = document.createElement("tr");
    row.tabIndex = -1;
    for (const name of fields) row.insertCell().textContent = book[name];
    if (editor) {
      row.cells[0].id = `book-${book.id}`;
      const edit = row.insertCell().appendChild(document.createElement("button"));
      Object.assign(edit, { type: "button", textContent: "Edit" });
      edit.setAttribute("aria-describedby", row.cells[0].id);
      edit.addEventListener("click", () => act(() => openBook(book.id)));
    }
    return row;
  }));
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
  (put ? $(`book-${data.id}`)?.parentElement ?? $("books") : $("title")).focus();
}

async function remove() {
  const { title } = editing;
  await write("DELETE");
  show(`Deleted “${title}”.`);
  mode("adding");
  await go(pages);
  $("books").focus();
}

const on = (id, type, handler) => $(id).addEventListener(type, handler);
const onSubmit = (id, work, within = $(id)) => on(id, "submit", (event) => { event.preventDefault(); act(work, within); });
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
  [retry, pages] = [null, []];
  mode("adding");
  filters.reset();
  $("rows").replaceChildren();
  enter();
  show("Signed out.");
  $("username").focus();
});
onSubmit("book", save);
on("cancel-edit", "click", () => mode("adding"));
on("delete", "click", () => {
  $("confirm-question").textContent = `Delete “${editing.title}”? This cannot be undone.`;
  mode("confirming");
  $("confirm-delete").focus();
});
on("cancel-delete", "click", () => { mode("editing"); $("delete").focus(); });
on("confirm-delete", "click", () => act(remove, form));
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
