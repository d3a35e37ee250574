//! The minimal correct component `make bench` compares ours with under Spin:
//! `GET /book/{id}` and `POST /book` as a Spin user would write them, no
//! more. Per request: one variable read (`secret_token`), an HS256 check of
//! the `Authorization` token (alg, signature, exp), the default SQLite
//! database opened, one statement, the envelope. Success answers are ours
//! byte for byte (status, headers, body); failures are plain envelopes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use spin_sdk::http::{Fields, IncomingRequest, Method, OutgoingResponse, ResponseOutparam};
use spin_sdk::sqlite::{Connection, Value};

#[derive(Deserialize)]
struct Header {
    alg: String,
}

#[derive(Deserialize)]
struct Claims {
    exp: f64,
}

#[derive(Deserialize)]
struct NewBook {
    title: String,
    author: String,
    year: i32,
}

#[derive(Serialize)]
struct Book<'a> {
    id: i64,
    title: &'a str,
    author: &'a str,
    year: i64,
}

#[derive(Serialize)]
struct Envelope<'a, T> {
    status: u16,
    message: &'a str,
    data: T,
}

type Answer = (u16, Vec<u8>, Option<String>);

#[spin_sdk::http_component]
async fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
    let (status, body, etag) = answer(request).await;
    let mut headers = vec![
        ("content-type".to_string(), b"application/json".to_vec()),
        ("cache-control".to_string(), b"no-store".to_vec()),
    ];
    if let Some(etag) = etag {
        headers.push(("etag".to_string(), etag.into_bytes()));
    }
    let Ok(fields) = Fields::from_list(&headers) else {
        return;
    };
    let response = OutgoingResponse::new(fields);
    let _ = response.set_status_code(status);
    let _ = response_out.set_with_body(response, body).await;
}

async fn answer(request: IncomingRequest) -> Answer {
    let path = request.path_with_query().unwrap_or_default();
    let id = path.strip_prefix("/book/").and_then(|id| id.parse::<i64>().ok());
    let method = request.method();
    if !(matches!(method, Method::Get) && id.is_some()
        || matches!(method, Method::Post) && path == "/book")
    {
        return error(404, "Not found");
    }
    let token = request.headers().get("authorization").into_iter().next().unwrap_or_default();
    if !authorized(&token) {
        return error(401, "Invalid token");
    }
    let Ok(db) = Connection::open_default() else {
        return error(500, "Internal server error");
    };
    match id {
        Some(id) => get(&db, id),
        None => {
            match request.into_body().await.map(|body| serde_json::from_slice::<NewBook>(&body)) {
                Ok(Ok(book)) if valid(&book.title) && valid(&book.author) => create(&db, &book),
                _ => error(400, "Invalid input"),
            }
        }
    }
}

fn get(db: &Connection, id: i64) -> Answer {
    let sql = "SELECT id, title, author, year, version FROM books WHERE id = ?";
    let Ok(result) = db.execute(sql, &[Value::Integer(id)]) else {
        return error(500, "Internal server error");
    };
    match result.rows.first().map(|row| row.values.as_slice()) {
        Some(
            [Value::Integer(id), Value::Text(title), Value::Text(author), Value::Integer(year), Value::Integer(version)],
        ) => {
            let book = Book { id: *id, title, author, year: *year };
            ok(200, "Book retrieved successfully", &book, *version)
        }
        _ => error(404, "Book not found"),
    }
}

fn create(db: &Connection, book: &NewBook) -> Answer {
    let sql = "INSERT INTO books (title, author, year) VALUES (?, ?, ?) RETURNING id";
    let params = [
        Value::Text(book.title.clone()),
        Value::Text(book.author.clone()),
        Value::Integer(book.year.into()),
    ];
    match db.execute(sql, &params).map(|result| result.rows.into_iter().next()) {
        Ok(Some(row)) => match row.values.as_slice() {
            [Value::Integer(id)] => {
                let created = Book {
                    id: *id,
                    title: &book.title,
                    author: &book.author,
                    year: book.year.into(),
                };
                ok(201, "Book created successfully", &created, 1)
            }
            _ => error(500, "Internal server error"),
        },
        _ => error(500, "Internal server error"),
    }
}

/// The token: three base64url segments, header alg HS256, a valid
/// signature under `secret_token`, exp in the future.
fn authorized(token: &[u8]) -> bool {
    let token = token.trim_ascii();
    let Ok(secret) = spin_sdk::variables::get("secret_token") else {
        return false;
    };
    let mut segments = token.split(|&b| b == b'.');
    let (Some(header), Some(claims), Some(signature), None) =
        (segments.next(), segments.next(), segments.next(), segments.next())
    else {
        return false;
    };
    let header: Option<Header> = decode(header);
    let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(&token[..header_len(token)]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    !secret.is_empty()
        && header.is_some_and(|header| header.alg == "HS256")
        && mac.verify_slice(&signature).is_ok()
        && decode::<Claims>(claims).is_some_and(|claims| claims.exp > now as f64)
}

/// The signed input's length: up to the second dot.
fn header_len(token: &[u8]) -> usize {
    token.iter().rposition(|&b| b == b'.').unwrap_or(0)
}

fn decode<T: for<'de> Deserialize<'de>>(segment: &[u8]) -> Option<T> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).ok()?).ok()
}

fn valid(text: &str) -> bool {
    !text.trim().is_empty() && !text.contains('\0') && text.chars().count() <= 1000
}

fn ok(status: u16, message: &str, book: &Book, version: i64) -> Answer {
    let body = serde_json::to_vec(&Envelope { status, message, data: book }).unwrap_or_default();
    (status, body, Some(format!("\"{}.{version}\"", book.id)))
}

fn error(status: u16, message: &str) -> Answer {
    let body = serde_json::to_vec(&Envelope { status, message, data: () }).unwrap_or_default();
    (status, body, None)
}
