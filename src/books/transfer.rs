//! Catalogs in and out (docs/api.md, "Import and export"): the forms of
//! `GET /books` (JSON, or CSV when `Accept` prefers it), and `POST /books`,
//! an import of a JSON array or a CSV file, all or nothing. The body is
//! read as it comes: each book judged by `POST /book`'s rules (`model`),
//! staged in batches on the request's connection, and moved into the
//! catalog at the end in one short write (`sql::import_staged`).

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::csv;
use super::model::{judge_text, judge_year, Book, NewBook, Refusal};
use super::sql::{self, Keyed, StoredAnswer};
use super::LISTED;
use crate::db::Connection;
use crate::envelope::{envelope_start, Response, ENVELOPE_END};
use crate::error::ApiError;
use crate::port::{read_body, BodyStream};

/// A catalog's form: of the list `GET /books` answers (by `Accept`), and of
/// an import's body (by `Content-Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Json,
    Csv,
}

impl Form {
    /// The form `Accept` prefers: its highest `q`, the first of equals;
    /// JSON when it names neither.
    pub fn accepted(accept: Option<&[u8]>) -> Form {
        let accept = accept.and_then(|accept| std::str::from_utf8(accept).ok()).unwrap_or("");
        let mut best: Option<(f32, Form)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts.find_map(|part| part.trim().strip_prefix("q="));
            let q = q.map_or(Some(1.0), |q| q.trim().parse::<f32>().ok()).unwrap_or(0.0);
            let listing = match media.as_str() {
                "text/csv" | "text/*" => Form::Csv,
                "application/json" | "application/*" | "*/*" => Form::Json,
                _ => continue,
            };
            if q > 0.0 && best.is_none_or(|(most, _)| q > most) {
                best = Some((q, listing));
            }
        }
        best.map_or(Form::Json, |(_, listing)| listing)
    }

    /// `books` answered at once.
    pub fn whole(self, books: &[Book]) -> Result<Response, ApiError> {
        if self == Form::Json {
            return Response::ok(200, LISTED, &books);
        }
        let mut body = self.start();
        self.write(&mut body, books, false)?;
        Ok(self.headed(Response::new(200, body)))
    }

    /// What comes before the first book.
    pub fn start(self) -> Vec<u8> {
        match self {
            Form::Json => {
                let mut start = envelope_start(200, LISTED);
                start.push(b'[');
                start
            }
            Form::Csv => csv::HEADER.to_vec(),
        }
    }

    /// `books`, after others when `leading`.
    pub fn write(self, out: &mut Vec<u8>, books: &[Book], leading: bool) -> Result<(), ApiError> {
        for (index, book) in books.iter().enumerate() {
            match self {
                Form::Json => {
                    if leading || index > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, book).map_err(ApiError::internal)?;
                }
                Form::Csv => csv::write_book(out, book),
            }
        }
        Ok(())
    }

    /// What comes after the last book.
    pub fn end(self, out: &mut Vec<u8>) {
        if self == Form::Json {
            out.push(b']');
            out.extend_from_slice(ENVELOPE_END);
        }
    }

    /// The response with this form's headers.
    pub fn headed(self, response: Response) -> Response {
        match self {
            Form::Json => response,
            Form::Csv => response
                .with_header("content-type", "text/csv; charset=utf-8".to_string())
                .with_header("content-disposition", "attachment; filename=\"books.csv\"".into()),
        }
    }

    /// An import's: CSV when its `Content-Type` is `text/csv`, otherwise a
    /// JSON array (as `POST /book` reads JSON whatever the type).
    pub fn of(content_type: Option<&[u8]>) -> Form {
        let media = content_type.and_then(|value| value.split(|b| *b == b';').next());
        match media.map(|media| media.trim_ascii().to_ascii_lowercase()) {
            Some(media) if media == b"text/csv" => Form::Csv,
            _ => Form::Json,
        }
    }
}

/// Books staged by one statement: 500 rows of three values stay within
/// either store's limit on a statement's parameters.
pub const BOOKS_PER_BATCH: usize = 500;

#[derive(Serialize)]
struct Imported<'a> {
    imported: usize,
    ids: &'a [i64],
}

/// The 201 of an import: how many, and their ids in the file's order. A
/// keyed import stores it to answer a retry.
fn imported(ids: &[i64]) -> anyhow::Result<StoredAnswer> {
    let data = Imported { imported: ids.len(), ids };
    let response = Response::ok(201, "Books imported successfully", &data)?;
    let body = String::from_utf8(response.bytes().to_vec())?;
    Ok(StoredAnswer { status: response.status, etag: String::new(), body })
}

/// What an import is asked: the body's form, its most bytes, the key (as
/// scoped to its owner), the time, the account whose changes they are.
pub struct Importing<'a> {
    pub form: Form,
    pub limit: u64,
    pub key: Option<&'a str>,
    pub now: u64,
    pub account: &'a str,
}

/// `POST /books`: every book of the body, or none (the first bad one
/// answered with its row), each a `create` change by the importer; with a
/// key, stored once per key as `POST /book`.
pub async fn import<C: Connection>(
    db: &mut C,
    body: impl BodyStream,
    to: Importing<'_>,
) -> Result<Response, ApiError> {
    if body.declared_length().is_some_and(|length| length > to.limit) {
        // Read to its end, or refused at once when far over (`read_body`).
        let _ = read_body(body, usize::try_from(to.limit).unwrap_or(usize::MAX)).await;
        return Err(ApiError::BodyTooLarge);
    }
    sql::stage_start(db).await?;
    let imported = stage_and_move(db, body, &to).await;
    // A table left full (the connection failed) is dropped by the next import.
    let _ = sql::stage_end(db).await;
    match imported? {
        Keyed::Created(first) | Keyed::Replayed(first) => {
            Ok(Response::new(first.status, first.body.into_bytes()))
        }
        Keyed::Conflict => Err(ApiError::IdempotencyKeyReused),
    }
}

async fn stage_and_move<C: Connection>(
    db: &mut C,
    mut body: impl BodyStream,
    to: &Importing<'_>,
) -> Result<Keyed, ApiError> {
    let (declared, form) = (body.declared_length(), to.form);
    let mut books = Books::new(form);
    let mut fingerprint = Sha256::new();
    fingerprint.update(if form == Form::Csv { "csv\n" } else { "json\n" });
    let (mut batch, mut reserved, mut read) = (Vec::with_capacity(BOOKS_PER_BATCH), Vec::new(), 0);
    let cut = |books: &Books| ApiError::InvalidImport {
        row: books.row() + 1,
        field: None,
        reason: "the body ended early",
    };
    while declared != Some(read) {
        let chunk = match body.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) if declared.is_none() => break,
            Ok(None) | Err(_) => return Err(cut(&books)),
        };
        read += chunk.len() as u64;
        if read > to.limit {
            return Err(ApiError::BodyTooLarge);
        }
        fingerprint.update(&chunk);
        for book in books.feed(&chunk)? {
            batch.push(book);
            if batch.len() == BOOKS_PER_BATCH {
                reserved.extend(sql::stage(db, &batch).await?);
                batch.clear();
            }
        }
    }
    batch.extend(books.finish()?);
    if !batch.is_empty() {
        reserved.extend(sql::stage(db, &batch).await?);
    }
    let fingerprint: String =
        fingerprint.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    let key = to.key.map(|key| (key, fingerprint.as_str()));
    Ok(sql::import_staged(db, key, &reserved, imported, to.now, to.account).await?)
}

/// An import's body read book by book, in its form.
enum Books {
    Json(JsonArray),
    Csv { reader: csv::Reader, columns: Option<Columns> },
}

impl Books {
    fn new(form: Form) -> Books {
        match form {
            Form::Json => Books::Json(JsonArray::default()),
            Form::Csv => Books::Csv { reader: csv::Reader::default(), columns: None },
        }
    }

    /// The row of the last book read (or, in CSV, the header).
    fn row(&self) -> u64 {
        match self {
            Books::Json(array) => array.row,
            Books::Csv { reader, .. } => reader.row(),
        }
    }

    /// The books `bytes` completes, each valid.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<NewBook>, ApiError> {
        match self {
            Books::Json(array) => array.feed(bytes),
            Books::Csv { reader, columns } => {
                let records = reader.feed(bytes).map_err(malformed)?;
                csv_books(columns, records)
            }
        }
    }

    fn finish(self) -> Result<Vec<NewBook>, ApiError> {
        match self {
            Books::Json(array) => array.finish(),
            Books::Csv { reader, mut columns } => {
                let books = csv_books(&mut columns, reader.finish().map_err(malformed)?)?;
                if columns.is_none() {
                    return Err(refused(1, Refusal { field: None, reason: "no header line" }));
                }
                Ok(books)
            }
        }
    }
}

fn refused(row: u64, refusal: Refusal) -> ApiError {
    ApiError::InvalidImport { row, field: refusal.field, reason: refusal.reason }
}

fn malformed(malformed: csv::Malformed) -> ApiError {
    ApiError::InvalidImport { row: malformed.row, field: None, reason: malformed.reason }
}

/// Where a CSV file's header puts each field, and how many it names.
struct Columns {
    title: usize,
    author: usize,
    year: usize,
    width: usize,
}

impl Columns {
    /// The header (row 1): `title`, `author` and `year` once each, in any
    /// order and case; other columns (`id`) are ignored.
    fn of(names: &[String]) -> Result<Columns, ApiError> {
        let find = |field: &'static str| {
            let mut found = names
                .iter()
                .enumerate()
                .filter(|(_, name)| name.trim().eq_ignore_ascii_case(field));
            match (found.next(), found.next()) {
                (Some((index, _)), None) => Ok(index),
                (None, _) => Err(refused(1, Refusal { field: Some(field), reason: "no column" })),
                (Some(_), Some(_)) => {
                    Err(refused(1, Refusal { field: Some(field), reason: "two columns" }))
                }
            }
        };
        Ok(Columns {
            title: find("title")?,
            author: find("author")?,
            year: find("year")?,
            width: names.len(),
        })
    }

    fn book(&self, mut record: Vec<String>) -> Result<NewBook, Refusal> {
        if record.len() != self.width {
            return Err(Refusal { field: None, reason: "not as many fields as the header" });
        }
        let mut take = |index: usize| csv::unmarked(std::mem::take(&mut record[index]));
        let (title, author) = (take(self.title), take(self.author));
        Ok(NewBook {
            title: judge_text("title", title)?,
            author: judge_text("author", author)?,
            year: judge_year(&record[self.year])?,
        })
    }
}

/// The books of CSV records, after the header; a blank line is no book.
fn csv_books(
    columns: &mut Option<Columns>,
    records: Vec<csv::Record>,
) -> Result<Vec<NewBook>, ApiError> {
    let mut books = Vec::with_capacity(records.len());
    for (row, record) in records {
        match columns {
            None => *columns = Some(Columns::of(&record)?),
            Some(_) if record.len() == 1 && record[0].is_empty() => {}
            Some(columns) => books.push(columns.book(record).map_err(|why| refused(row, why))?),
        }
    }
    Ok(books)
}

/// A JSON array read as it comes, element by element, each element judged
/// as `POST /book`'s body.
#[derive(Default)]
struct JsonArray {
    state: Position,
    depth: u32,
    in_string: bool,
    escaped: bool,
    element: Vec<u8>,
    /// Elements read so far: the row of the last.
    row: u64,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Position {
    #[default]
    BeforeArray,
    /// After `[`: an element or `]`.
    First,
    /// After `,`: an element.
    Next,
    Element,
    AfterArray,
}

impl JsonArray {
    fn broken(&self, reason: &'static str) -> ApiError {
        ApiError::InvalidImport { row: self.row + 1, field: None, reason }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<NewBook>, ApiError> {
        let mut books = Vec::new();
        for &byte in bytes {
            let space = matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
            self.state = match self.state {
                Position::BeforeArray if space => Position::BeforeArray,
                Position::BeforeArray if byte == b'[' => Position::First,
                Position::BeforeArray => return Err(self.broken("not a JSON array")),
                Position::First | Position::Next if space => self.state,
                Position::First if byte == b']' => Position::AfterArray,
                Position::Next if byte == b']' => return Err(self.broken("a comma before ]")),
                Position::First | Position::Next | Position::Element => {
                    match self.element_byte(byte)? {
                        Some(end) => {
                            self.row += 1;
                            let element = std::mem::take(&mut self.element);
                            books.push(
                                NewBook::judge(&element).map_err(|why| refused(self.row, why))?,
                            );
                            end
                        }
                        None => Position::Element,
                    }
                }
                Position::AfterArray if space => Position::AfterArray,
                Position::AfterArray => return Err(self.broken("text after the array")),
            };
        }
        Ok(books)
    }

    /// A byte of an element; where the element ended, if it did.
    fn element_byte(&mut self, byte: u8) -> Result<Option<Position>, ApiError> {
        if self.in_string {
            self.in_string = self.escaped || byte != b'"';
            self.escaped = !self.escaped && byte == b'\\';
        } else {
            match byte {
                b'"' => self.in_string = true,
                b'[' | b'{' => self.depth += 1,
                b',' if self.depth == 0 => return Ok(Some(Position::Next)),
                b']' if self.depth == 0 => return Ok(Some(Position::AfterArray)),
                b']' | b'}' if self.depth == 0 => return Err(self.broken("not a JSON array")),
                b']' | b'}' => self.depth -= 1,
                _ => {}
            }
        }
        self.element.push(byte);
        Ok(None)
    }

    fn finish(self) -> Result<Vec<NewBook>, ApiError> {
        match self.state {
            Position::AfterArray => Ok(Vec::new()),
            _ => Err(self.broken("the array is not closed")),
        }
    }
}
