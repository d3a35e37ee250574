//! The tests' host of the core (tests/README.md), the expected envelopes and
//! the one HS256 forger.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use book_catalog::db::native::{self, rusqlite};
use book_catalog::db::StoreKind;
use book_catalog::db::{migrations, Connection, Row, Statement, StoreError};
use book_catalog::log::request;
use book_catalog::login::limit::LoginAttempts;
use book_catalog::login::sql as login_sql;
use book_catalog::settings::{Database, SettingSource, SettingUnavailable};
pub use book_catalog::settings::{Role, Setting};
pub use book_catalog::token::Holder;
use book_catalog::{handle, ApiError, Body, BodyError, BodyStream, Context, RequestHead, Response};
use futures::StreamExt;

/// Runs a future of the core over the test database: every step is ready.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

/// The fixed clock (Unix seconds).
pub const NOW: u64 = 1_700_000_000;
/// A signing secret of 48 bytes (no short-key warning).
pub const SECRET: &str = "test-signing-secret-0123456789-abcdefghijklmnop";
/// A previous signing secret (`secret_token_previous`), 45 bytes.
pub const PREVIOUS: &str = "the-previous-signing-secret-0123456789-abcdef";
/// `{"alg":"HS256","typ":"JWT"}`, exactly as issued.
pub const HS256_HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;
pub const DUNE: (&str, &str, i64) = ("Dune", "Frank Herbert", 1965);
/// The default credentials, as a login body.
pub const LOGIN: &str = r#"{"username":"admin","password":"password"}"#;

/// The protected routes, one request each: (method, path, a valid body).
pub const PROTECTED: [(&str, &str, &str); 5] = [
    ("POST", "/book", r#"{"title":"Dune","author":"Frank Herbert","year":1965}"#),
    ("GET", "/books", ""),
    ("GET", "/book/1", ""),
    ("PUT", "/book/1", r#"{"year":1966}"#),
    ("DELETE", "/book/1", ""),
];

pub fn cells<const N: usize>(row: &str) -> [&str; N] {
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    cells.try_into().unwrap_or_else(|_| panic!("{N} cells: {row}"))
}

/// What a call returns: HTTP status, the parsed envelope, the `Allow` value.
pub type Outcome = (u16, Value, Option<String>);

/// What a statement of the resources' `sql.rs` does, read from its text.
fn statement_name(sql: &str) -> &'static str {
    let books = "SELECT id, title, author, year, version FROM books";
    let names = [
        ("SELECT fingerprint", "find key"),
        ("INSERT INTO idempotency_keys", "remember key"),
        ("DELETE FROM idempotency_keys", "prune keys"),
        ("INSERT INTO temp.import_books", "stage"),
        ("INSERT INTO books", "create"),
        ("UPDATE books", "update"),
        ("DELETE FROM books", "delete"),
        ("SELECT attempts", "read attempts"),
        ("INSERT INTO login_attempts", "count attempt"),
        ("DELETE FROM login_attempts WHERE client =", "clear attempts"),
        ("DELETE FROM login_attempts WHERE client IN", "prune attempts"),
        ("SELECT 1", "ping"),
        ("SELECT COALESCE((SELECT seq FROM sqlite_sequence", "read sequence"),
        ("SELECT version FROM schema_migrations", "read versions"),
    ];
    // A write is its change, applied by a trigger: named by its operation.
    if sql.starts_with("INSERT INTO changes") && sql.contains("import_books") {
        return "move";
    }
    if sql.starts_with("INSERT INTO changes") {
        let ops = ["create", "update", "delete", "restore"];
        return ops.into_iter().find(|op| sql.contains(&format!("'{op}'"))).unwrap_or("change");
    }
    let names_of_changes = [
        ("SELECT 0, COALESCE((SELECT seq FROM sqlite_sequence", "feed position"),
        ("SELECT 0, seq FROM changes_pruned", "pruned through"),
        ("DELETE FROM changes", "prune changes"),
    ];
    if sql.starts_with("SELECT 0, seq, op") {
        return if sql.contains("WHERE book_id") { "history" } else { "changes" };
    }
    match names.iter().chain(&names_of_changes).find(|(start, _)| sql.starts_with(start)) {
        Some((_, name)) => name,
        None if sql == format!("{books} WHERE id = ?1") => "get",
        None if sql.starts_with(books) => "page",
        None => panic!("a statement the harness does not know: {sql}"),
    }
}

pub fn sqlite(label: &str) -> Database {
    Database { kind: StoreKind::Sqlite, address: label.into(), synchronous: Default::default() }
}

pub fn postgres(url: &str) -> Database {
    Database { kind: StoreKind::Postgres, address: url.into(), synchronous: Default::default() }
}

/// The test database as the handlers get it: each statement recorded, and
/// failing with `fail` (or, named `fail_on`, failing) when set.
pub struct RecordingConnection {
    db: Rc<RefCell<rusqlite::Connection>>,
    statements: Rc<RefCell<Vec<&'static str>>>,
    fail: Option<String>,
    fail_on: Option<&'static str>,
    fail_after: Option<usize>,
}

impl Connection for RecordingConnection {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }
    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let name = statement_name(&statement.sql);
        self.statements.borrow_mut().push(name);
        if self.fail_after.is_some_and(|ran| self.statements.borrow().len() > ran) {
            return Err(StoreError::other("the database went away"));
        }
        match &self.fail {
            Some(detail) => Err(StoreError::sqlite(detail.clone())),
            None if self.fail_on == Some(name) => Err(StoreError::other(format!("{name} failed"))),
            None => native::query(&self.db.borrow(), statement),
        }
    }
    /// Migrations and transactions: not recorded.
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        native::execute(&self.db.borrow(), sql)
    }
    async fn pause(&mut self, _: Duration) {}
}

/// The test host. On drop (unless already panicking) it checks that no log
/// line holds a secret, a configured password or hash, or a token seen.
pub struct TestContext {
    /// Only `SECRET` set at first.
    pub settings: Vec<(Setting, String)>,
    /// Reading this setting fails, as when a Spin variables provider errors.
    pub failing_setting: Option<Setting>,
    /// `spin-client-addr`, sent after the request's own header fields.
    pub client_addr: Option<String>,
    pub request_headers: Vec<(String, String)>,
    pub now: u64,
    pub db: Rc<RefCell<rusqlite::Connection>>,
    /// Since the last `reset_calls`: opens, databases opened, statements run.
    pub opens: usize,
    pub opened: Vec<Database>,
    statements: Rc<RefCell<Vec<&'static str>>>,
    pub logs: Vec<String>,
    /// The request line (`log::request`, duration 0) of every request.
    pub request_lines: Vec<String>,
    /// Every statement fails with this detail; the statements of this name fail.
    pub fail_store: Option<String>,
    pub fail_on: Option<&'static str>,
    /// Opening the store fails with this detail.
    pub fail_open: Option<String>,
    /// Statements fail ("the database went away") once this many ran.
    pub fail_after_statements: Option<usize>,
    /// Never in a log line (tokens sent or issued, passwords submitted, ...).
    pub never_logged: Vec<String>,
    /// Why the last whole list was cut short (its body then ends unfinished).
    pub cut_short: Option<ApiError>,
}

impl TestContext {
    /// The secret set, default credentials (admin/password), default store.
    pub fn new() -> TestContext {
        let mut db = rusqlite::Connection::open_in_memory().expect("an in-memory SQLite database");
        block_on(migrations::migrate(&mut db)).expect("the migrations apply");
        TestContext {
            settings: vec![(Setting::SecretToken, SECRET.to_string())],
            failing_setting: None,
            client_addr: Some("192.0.2.10:40000".to_string()),
            request_headers: Vec::new(),
            now: NOW,
            db: Rc::new(RefCell::new(db)),
            opens: 0,
            opened: Vec::new(),
            statements: Rc::default(),
            logs: Vec::new(),
            request_lines: Vec::new(),
            fail_store: None,
            fail_on: None,
            fail_open: None,
            fail_after_statements: None,
            never_logged: Vec::new(),
            cut_short: None,
        }
    }

    /// A context holding `books` (title, author, year), ids 1, 2, ...
    pub fn with_books(books: &[(&str, &str, i64)]) -> TestContext {
        let mut ctx = TestContext::new();
        for (title, author, year) in books {
            ctx.create_book(title, author, *year);
        }
        ctx.reset_calls();
        ctx
    }

    pub fn set(&mut self, setting: Setting, value: &str) {
        self.unset(setting);
        self.settings.push((setting, value.to_string()));
    }

    pub fn unset(&mut self, setting: Setting) {
        self.settings.retain(|(set, _)| *set != setting);
    }

    fn value(&self, setting: Setting) -> Option<&str> {
        let mut set = self.settings.iter().filter(|(name, _)| *name == setting);
        set.next().map(|(_, value)| value.as_str())
    }

    /// The one way to `book_catalog::handle`: the response unchecked (`call*`
    /// check it). A token sent is never to be logged.
    pub fn respond(
        &mut self,
        method: &str,
        path: &str,
        query: Option<&str>,
        auth: Option<&[u8]>,
        body: impl BodyStream,
    ) -> Response {
        if let Some(auth) = auth {
            let text = String::from_utf8_lossy(auth).trim().to_string();
            if text.len() >= 16 {
                self.never_logged.push(text);
            }
        }
        // The client's own header fields first, then Spin's `spin-client-addr`.
        let field = |(name, value): (&str, &str)| (name.to_ascii_lowercase(), value.into());
        let auth = auth.map(|auth| field(("authorization", &String::from_utf8_lossy(auth))));
        let own = self.request_headers.iter().map(|(name, value)| field((name, value)));
        let peer = self.client_addr.iter().map(|peer| field(("spin-client-addr", peer)));
        let headers: Vec<(String, Vec<u8>)> = auth.into_iter().chain(own).chain(peer).collect();
        let head = RequestHead { method, path, query, headers: &headers };
        let served = block_on(handle(self, &head, body));
        let line = request(&served.fields, served.response.status, 0);
        self.request_lines.push(line);
        let mut response = served.response;
        // A whole list's pieces, read as an adapter writes them.
        self.cut_short = None;
        if let Body::Pieces(pieces) = &mut response.body {
            let mut bytes = Vec::new();
            for piece in block_on(pieces.collect::<Vec<_>>()) {
                match piece {
                    Ok(piece) => bytes.extend_from_slice(&piece),
                    Err(error) => self.cut_short = Some(error),
                }
            }
            response.body = Body::Bytes(bytes);
        }
        response
    }

    pub fn call_with(
        &mut self,
        method: &str,
        path: &str,
        auth: Option<&[u8]>,
        body: impl BodyStream,
    ) -> Outcome {
        let response = self.respond(method, path, None, auth, body);
        self.check_response(&response)
    }

    pub fn call(&mut self, method: &str, path: &str, auth: Option<&str>, body: &str) -> Outcome {
        self.call_with(method, path, auth.map(str::as_bytes), body.as_bytes())
    }

    /// The token `POST /token` would issue now (tokens.rs checks it).
    pub fn token(&self) -> String {
        token_with_exp(&(self.now + 900).to_string())
    }

    pub fn authed(&mut self, method: &str, path: &str, body: &str) -> Outcome {
        let token = self.token();
        self.call(method, path, Some(&token), body)
    }

    /// `POST /token`: the outcome and its `Retry-After` in seconds.
    pub fn post_token(&mut self, body: &str) -> (Outcome, Option<u64>) {
        let response = self.respond("POST", "/token", None, None, body.as_bytes());
        let retry_after = response.header("retry-after").map(|s| s.parse().expect("seconds"));
        (self.check_response(&response), retry_after)
    }

    /// `GET /books` with a query string (`None`: no `?`) and a valid token;
    /// the outcome and the `Link` header.
    pub fn get_books(&mut self, query: Option<&str>) -> (Outcome, Option<String>) {
        let response = self.get_unchecked("/books", query);
        (self.check_response(&response), response.header("link").map(str::to_string))
    }

    /// `GET path?query` with a valid token, the response unchecked.
    pub fn get_unchecked(&mut self, path: &str, query: Option<&str>) -> Response {
        let token = self.token();
        self.respond("GET", path, query, Some(token.as_bytes()), &b""[..])
    }

    pub fn check_response(&mut self, response: &Response) -> Outcome {
        assert_eq!(response.header("access-control-allow-credentials"), None);
        if let Some(origin) = response.header("access-control-allow-origin") {
            assert_eq!(response.header("vary"), Some("Origin"), "{origin}");
        }
        if response.status == 204 {
            // A CORS preflight's answer: no body, so no content type.
            assert!(response.bytes().is_empty() && response.header("content-type").is_none());
            assert_eq!(response.header("cache-control"), Some("no-store"));
            return (204, Value::Null, None);
        }
        let envelope: Value = serde_json::from_slice(response.bytes()).unwrap_or_else(|e| {
            let body = String::from_utf8_lossy(response.bytes());
            panic!("body is not JSON ({e}): {body:?}")
        });
        let object = envelope.as_object().expect("envelope is an object");
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["data", "message", "status"], "envelope fields");
        assert_eq!(envelope["status"], json!(response.status), "envelope status is HTTP's");
        assert!(envelope["message"].is_string(), "message is a string");
        // But an import's refusal, which names its row.
        if response.status >= 400 && envelope["data"].get("row").is_none() {
            assert_eq!(envelope["data"], Value::Null, "data is null on errors");
        }
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.header("cache-control"), Some("no-store"), "never for shared caches");
        let data = &envelope["data"];
        match response.header("etag") {
            Some(tag) => assert!(
                tag.starts_with(&format!("\"{}.", data["id"])) && tag.ends_with('"'),
                "an ETag is sent only with one book, and is its own: {tag} {data}"
            ),
            None => assert!(data.get("id").is_none(), "a book comes with its ETag"),
        }
        let allow = response.header("allow").map(str::to_string);
        assert_eq!(allow.is_some(), response.status == 405, "Allow exactly with 405");
        let link = response.header("link");
        assert!(link.is_none() || response.status == 200, "Link only with a page");
        let retry_after = response.header("retry-after");
        assert_eq!(retry_after.is_some(), response.status == 429, "Retry-After exactly with 429");
        if let Some(token) = data["token"].as_str() {
            self.never_logged.push(token.to_string());
        }
        (response.status, envelope, allow)
    }

    pub fn login(&mut self) -> String {
        let username = self.value(Setting::AuthUsername).unwrap_or("admin");
        let password = self.value(Setting::AuthPassword).unwrap_or("password");
        let body = json!({"username": username, "password": password}).to_string();
        let (status, envelope, _) = self.call("POST", "/token", None, &body);
        assert_eq!(status, 200, "login: {envelope}");
        envelope["data"]["token"].as_str().expect("data.token").to_string()
    }

    /// A login's token, or the refusal.
    pub fn login_as(&mut self, username: &str, password: &str) -> Result<String, Outcome> {
        let (outcome, _) =
            self.post_token(&json!({"username": username, "password": password}).to_string());
        outcome.1["data"]["token"].as_str().map(str::to_string).ok_or(outcome)
    }

    /// The editor `ed` and the reader `rita` as accounts: their tokens.
    pub fn ed_and_rita(&mut self) -> (String, String) {
        let accounts = json!([entry("rita", "reader", RITA), entry("ed", "editor", ED)]);
        self.set(Setting::Accounts, &accounts.to_string());
        (self.login_as("ed", ED).unwrap(), self.login_as("rita", RITA).unwrap())
    }

    pub fn create_book(&mut self, title: &str, author: &str, year: i64) -> Value {
        let (status, envelope, _) = self.authed("POST", "/book", &book_body(title, author, year));
        assert_eq!(status, 201, "create: {envelope}");
        envelope["data"].clone()
    }

    pub fn all_books(&mut self) -> Value {
        let (status, envelope, _) = self.authed("GET", "/books", "");
        assert_eq!(status, 200);
        envelope["data"].clone()
    }

    pub fn reset_calls(&mut self) {
        self.opens = 0;
        self.opened.clear();
        self.statements.borrow_mut().clear();
    }

    /// The statements run since the last `reset_calls`, by name.
    pub fn statements(&self) -> Vec<&'static str> {
        self.statements.borrow().clone()
    }

    /// `work` on the test database itself (no statement recorded).
    pub fn with_db<T>(&self, work: impl FnOnce(&mut rusqlite::Connection) -> T) -> T {
        work(&mut self.db.borrow_mut())
    }

    pub fn login_attempts(&mut self, key: &str) -> Option<LoginAttempts> {
        self.with_db(|db| block_on(login_sql::attempts(db, key))).expect("reading login attempts")
    }

    /// Counts an attempt of the client `key` now, as another instance would.
    pub fn count_login_attempt(&mut self, key: &str) {
        let count = self.with_db(|db| block_on(login_sql::count_attempt(db, key, self.now, 900)));
        count.expect("counting a login attempt");
    }

    pub fn rows(&self, table: &str) -> i64 {
        let count = format!("SELECT count(*) FROM {table}");
        self.with_db(|db| db.query_row(&count, [], |row| row.get(0))).expect("counting rows")
    }

    pub fn logged(&self, start: &str, part: &str) -> bool {
        self.logs.iter().any(|line| line.starts_with(start) && line.contains(part))
    }

    /// Every log line holding a secret (`SECRET` too), the password, the
    /// hash (or its salt or digest) or a string of `never_logged`.
    pub fn leaks(&self) -> Vec<String> {
        let mut forbidden: Vec<&str> = self.never_logged.iter().map(String::as_str).collect();
        forbidden.push(SECRET);
        for setting in [Setting::SecretToken, Setting::SecretTokenPrevious, Setting::AuthPassword] {
            forbidden.extend(self.value(setting).filter(|value| !value.is_empty()));
        }
        let accounts = self.value(Setting::Accounts).unwrap_or_default().split('"');
        let hashes = accounts.filter(|text| text.starts_with("$argon2"));
        for hash in self.value(Setting::AuthPasswordHash).into_iter().chain(hashes) {
            if hash.len() >= 16 {
                forbidden.push(hash);
                forbidden.extend(hash.rsplit('$').take(2).filter(|part| part.len() >= 8));
            }
        }
        let mut leaks = Vec::new();
        for line in &self.logs {
            for bad in forbidden.iter().filter(|bad| line.contains(**bad)) {
                leaks.push(format!("log line {line:?} contains {bad:?}"));
            }
        }
        leaks
    }
}

impl Drop for TestContext {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_eq!(self.leaks(), Vec::<String>::new(), "secrets in the log");
        }
    }
}

impl SettingSource for TestContext {
    fn setting(&mut self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        if self.failing_setting == Some(setting) {
            let reason = "the variables provider failed: vault unreachable".into();
            return Err(SettingUnavailable { setting, reason });
        }
        Ok(self.value(setting).map(str::to_string))
    }

    fn log(&mut self, line: &str) {
        self.logs.push(line.to_string());
    }
}

impl Context for TestContext {
    type Store = RecordingConnection;

    fn now(&self) -> u64 {
        self.now
    }

    /// Whichever database `database` names, the test database.
    fn connect(&mut self, database: &Database) -> anyhow::Result<RecordingConnection> {
        self.opens += 1;
        self.opened.push(database.clone());
        if let Some(detail) = &self.fail_open {
            return Err(anyhow::anyhow!("{detail}"));
        }
        Ok(RecordingConnection {
            db: self.db.clone(),
            statements: self.statements.clone(),
            fail: self.fail_store.clone(),
            fail_on: self.fail_on,
            fail_after: self.fail_after_statements,
        })
    }

    /// No time passes: a waiting request's reads are what its tests see.
    async fn pause(&mut self, _: Duration) {}
}

#[derive(Default)]
pub struct BodyProbe {
    pub read: Cell<bool>,
}

impl BodyProbe {
    pub fn body<'a>(&'a self, bytes: &'a [u8]) -> ProbeBody<'a> {
        ProbeBody { bytes, probe: self }
    }
}

pub struct ProbeBody<'a> {
    bytes: &'a [u8],
    probe: &'a BodyProbe,
}

impl BodyStream for ProbeBody<'_> {
    fn declared_length(&self) -> Option<u64> {
        self.bytes.declared_length()
    }
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        self.probe.read.set(true);
        self.bytes.chunk().await
    }
}

pub struct BrokenBody;

impl BodyStream for BrokenBody {
    fn declared_length(&self) -> Option<u64> {
        None
    }
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, BodyError> {
        Err(BodyError::Unreadable)
    }
}

pub fn ok(status: u16, message: &str, data: Value) -> Outcome {
    (status, json!({"status": status, "message": message, "data": data}), None)
}

pub fn not_allowed(allow: &str) -> Outcome {
    (405, ok(405, "Method not allowed", Value::Null).1, Some(allow.to_string()))
}

/// The answers without data.
macro_rules! answers {
    ($($name:ident: $status:literal $message:literal,)*) => {
        $(pub fn $name() -> Outcome { ok($status, $message, Value::Null) })*
    };
}

answers! {
    deleted: 200 "Book deleted successfully",
    healthy: 200 "Service healthy",
    invalid_payload: 400 "Invalid request payload",
    invalid_input: 400 "Invalid input",
    invalid_query: 400 "Invalid query parameters",
    invalid_key: 400 "Invalid Idempotency-Key",
    invalid_credentials: 401 "Invalid credentials",
    token_required: 401 "Authorization token required",
    invalid_token: 401 "Invalid token",
    book_not_found: 404 "Book not found",
    route_not_found: 404 "Not found",
    precondition_failed: 412 "Precondition failed",
    too_large: 413 "Request body too large",
    key_reused: 422 "Idempotency-Key already used for a different request",
    precondition_required: 428 "Precondition required",
    too_many_attempts: 429 "Too many login attempts",
    internal_error: 500 "Internal server error",
    token_not_issued: 500 "Could not generate token",
    unavailable: 503 "Service unavailable",
}

pub fn created(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(201, "Book created successfully", book(id, title, author, year))
}
pub fn retrieved(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(200, "Book retrieved successfully", book(id, title, author, year))
}
pub fn updated(id: i64, title: &str, author: &str, year: i64) -> Outcome {
    ok(200, "Book updated successfully", book(id, title, author, year))
}
pub fn listed(books: Value) -> Outcome {
    ok(200, "Books retrieved successfully", books)
}
pub fn issued(token: &str) -> Outcome {
    ok(200, "Token generated successfully", json!({ "token": token }))
}

pub fn book(id: i64, title: &str, author: &str, year: i64) -> Value {
    json!({"id": id, "title": title, "author": author, "year": year})
}

pub fn book_body(title: &str, author: &str, year: i64) -> String {
    json!({"title": title, "author": author, "year": year}).to_string()
}

pub fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn b64_decode(text: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(text).expect("base64url")
}

/// The base64url HMAC-SHA256 of `input` under `key`.
pub fn sign(input: &str, key: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(input.as_bytes());
    b64(mac.finalize().into_bytes())
}

/// `b64(header).b64(claims).sig`, signed by hand.
pub fn forge(header_json: &str, claims_json: &str, key: &[u8]) -> String {
    sign_segments(&b64(header_json), &b64(claims_json), key)
}

pub fn sign_segments(header: &str, claims: &str, key: &[u8]) -> String {
    let input = format!("{header}.{claims}");
    let signature = sign(&input, key);
    format!("{input}.{signature}")
}

/// A token of `SECRET` expiring at `exp` (any JSON text).
pub fn token_with_exp(exp: &str) -> String {
    forge(HS256_HEADER, &format!(r#"{{"exp":{exp}}}"#), SECRET.as_bytes())
}

pub fn valid_token() -> String {
    token_with_exp(&(NOW + 900).to_string())
}

pub const RITA: &str = "Rita's reading pass";
pub const ED: &str = "Ed's editing pass";

/// An `accounts` entry.
pub fn entry(username: &str, role: &str, password: &str) -> Value {
    json!({"username": username, "role": role, "password_hash": cheap_hash(password)})
}

/// An Argon2id PHC string with small parameters (fast tests).
pub fn cheap_hash(password: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::from_b64("dGVzdHNhbHR0ZXN0c2FsdA").unwrap();
    let params = argon2::Params::new(64, 1, 1, None).unwrap();
    let argon2 = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    argon2.hash_password(password.as_bytes(), &salt).unwrap().to_string()
}

/// The configured pair (`admin`) as a token's holder.
pub fn admin() -> Holder {
    Holder { username: "admin".into(), role: Role::Editor, pair: true }
}

/// The token a login as `sub` issues at `NOW`, its claims written by hand.
pub fn login_token(sub: &str, role: &str, fp: Option<&str>) -> String {
    let fp = fp.map(|fp| format!(r#","fp":"{fp}""#)).unwrap_or_default();
    let claims = format!(r#"{{"exp":{},"sub":"{sub}","role":"{role}"{fp}}}"#, NOW + 900);
    forge(HS256_HEADER, &claims, SECRET.as_bytes())
}

/// The token the configured pair's login issues at `NOW`.
pub fn pair_token() -> String {
    login_token("admin", "editor", None)
}

/// A store's answers (PostgreSQL's unless `sqlite`), scripted in order; the
/// statements it was sent.
#[derive(Default)]
pub struct Scripted {
    pub sqlite: bool,
    pub answers: Vec<Result<Vec<Row>, StoreError>>,
    pub sent: Vec<String>,
    /// Those not written to return a row whatever the data (the adapters
    /// wrap them: Spin 4.0's zero-row hang).
    pub wrapped: Vec<String>,
}

impl Connection for Scripted {
    fn kind(&self) -> StoreKind {
        if self.sqlite {
            StoreKind::Sqlite
        } else {
            StoreKind::Postgres
        }
    }
    async fn query(&mut self, statement: &Statement<'_>) -> Result<Vec<Row>, StoreError> {
        self.sent.push(statement.sql.clone());
        if !statement.always_a_row {
            self.wrapped.push(statement.sql.clone());
        }
        self.answers.remove(0)
    }
    /// An import's staging table; never a transaction.
    async fn execute(&mut self, sql: &str) -> Result<(), StoreError> {
        assert!(sql.contains("import_books") || self.sqlite, "no transaction on PostgreSQL: {sql}");
        self.sent.push(sql.to_string());
        Ok(())
    }
    async fn pause(&mut self, _: Duration) {}
}
