// The API on this origin. Every answer is {status, message, data}; a failure
// is thrown as an ApiError with that message and data. The token is kept for this tab
// only (sessionStorage), never in localStorage or a cookie.

export class ApiError extends Error {
  constructor(status, message, data) {
    super(message);
    Object.assign(this, { status, data });
  }
}

let token = sessionStorage.getItem("token");

export const signedIn = () => token !== null;

// The token's claims (exp, sub, role), read to decide what to offer: the API
// checks them again on every call.
export function claims() {
  try {
    const payload = atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(payload, (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

// An Idempotency-Key: 128 random bits (getRandomValues needs no secure origin).
export const newKey = () =>
  Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

// `type`: the body as is, of that Content-Type; `accept`: the answer as a Blob.
export async function call(method, path, { body, etag, key, type, accept } = {}) {
  const headers = {};
  if (token) headers.Authorization = token;
  if (etag) headers["If-Match"] = etag;
  if (key) headers["Idempotency-Key"] = key;
  if (accept) headers.Accept = accept;
  if (body) headers["Content-Type"] = type ?? "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body && (type ? body : JSON.stringify(body)) });
    if (accept && response.ok) return { blob: await response.blob() };
  } catch {
    throw new ApiError(0, "The service could not be reached.");
  }
  const envelope = await response.json().catch(() => ({ message: `The service answered ${response.status}.` }));
  if (!response.ok) throw new ApiError(response.status, envelope.message, envelope.data);
  const next = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.get("Link") ?? "");
  const header = (name) => response.headers.get(name);
  return { data: envelope.data, etag: header("ETag"), next: next && next[1], cursor: header("Changes-Cursor") };
}

export async function signIn(username, password) {
  const { data } = await call("POST", "/token", { body: { username, password } });
  token = data.token;
  sessionStorage.setItem("token", token);
}

export function signOut() {
  token = null;
  sessionStorage.removeItem("token");
}
