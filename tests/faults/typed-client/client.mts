// The lifecycle through a client typed from openapi.yaml: the types by
// openapi-typescript (schema.mts, generated beside this file by
// tests/faults/typed_client.py), the requests by openapi-fetch, compiled by
// tsc with `strict` and `noUncheckedIndexedAccess`, with no cast, no `!` and
// no `any`: each answer is assigned to the `Envelope` the API documents.
//   node client.mjs BASE_URL USERNAME PASSWORD  (a JSON line for each of its 8 checks)
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.mjs";

type Book = components["schemas"]["Book"];
type Envelope<Data> = { status: number; message: string; data: Data };

const [baseUrl = "", username = "", password = ""] = process.argv.slice(2);

function check(ok: boolean, name: string, detail: unknown): void {
    console.log(JSON.stringify({ ok, name, detail }));
}

/** `book` has exactly a book's four fields, with `expected`'s values. */
function same(book: Book, expected: Book): boolean {
    const values = (b: Book) => JSON.stringify([b.id, b.title, b.author, b.year]);
    return Object.keys(book).sort().join() === "author,id,title,year" && values(book) === values(expected);
}

/** The lifecycle, step by step; a step that leaves nothing to go on with ends it. */
async function lifecycle(): Promise<void> {
    const login = await createClient<paths>({ baseUrl }).POST("/token", { body: { username, password } });
    const issued: Envelope<{ token: string }> | undefined = login.data;
    check(login.response.status === 200 && issued?.data.token.split(".").length === 3,
        "login: 200, `data.token` a `string` (a JWT)", login.error ?? issued?.message);
    if (issued === undefined) return;

    const client = createClient<paths>({ baseUrl, headers: { Authorization: issued.data.token } });
    const sent = { title: `Typed ${crypto.randomUUID()}`, author: "A. Client", year: 2001 };
    const key = crypto.randomUUID();
    const create = await client.POST("/book", { body: sent, params: { header: { "Idempotency-Key": key } } });
    const created: Envelope<Book> | undefined = create.data;
    const etag = create.response.headers.get("etag");
    check(create.response.status === 201 && created !== undefined && Number.isSafeInteger(created.data.id)
        && same(created.data, { ...sent, id: created.data.id }) && etag === `"${created.data.id}.1"`,
        "create: 201, `data` a `Book` with a number id and the fields sent, its ETag",
        [create.error ?? created, etag]);
    if (created === undefined || etag === null) return;
    const book = created.data;
    const path = { id: book.id };

    const read = await client.GET("/book/{id}", { params: { path } });
    const got: Envelope<Book> | undefined = read.data;
    check(read.response.status === 200 && got !== undefined && same(got.data, book)
        && read.response.headers.get("etag") === etag,
        "read: 200, the same `Book` and ETag", read.error ?? got);

    const list = await client.GET("/books");
    const listed: Envelope<Book[]> | undefined = list.data;
    const first = listed?.data[0];
    check(list.response.status === 200 && listed?.data.length === 1 && first !== undefined
        && same(first, book), "list: 200, `data` an array of `Book`, the one created", list.error ?? listed);

    const update = await client.PUT("/book/{id}", {
        params: { path, header: { "If-Match": etag } }, body: { year: 2002 } });
    const updated: Envelope<Book> | undefined = update.data;
    const next = update.response.headers.get("etag");
    check(update.response.status === 200 && updated !== undefined
        && same(updated.data, { ...book, year: 2002 }) && next === `"${book.id}.2"`,
        "update through If-Match with the ETag: 200, the changed `Book`, the next ETag",
        [update.error ?? updated, next]);
    if (next === null) return;

    const stale = await client.PUT("/book/{id}", {
        params: { path, header: { "If-Match": etag } }, body: { year: 1 } });
    const refused: Envelope<null> | undefined = stale.error;
    check(stale.response.status === 412 && refused?.status === 412
        && refused.message === "Precondition failed" && refused.data === null,
        "update with the stale ETag: 412, its typed error, `data` null", stale.data ?? refused);

    const remove = await client.DELETE("/book/{id}", { params: { path, header: { "If-Match": next } } });
    const deleted: Envelope<null> | undefined = remove.data;
    check(remove.response.status === 200 && deleted?.message === "Book deleted successfully"
        && deleted.data === null, "delete through If-Match: 200, `data` null", remove.error ?? deleted);

    const gone = await client.GET("/book/{id}", { params: { path } });
    const missing: Envelope<null> | undefined = gone.error;
    check(gone.response.status === 404 && missing?.status === 404 && missing.message === "Book not found"
        && missing.data === null, "read after delete: 404 \"Book not found\", `data` null",
        gone.data ?? missing);
}

await lifecycle();
