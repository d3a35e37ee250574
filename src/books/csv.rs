//! Books as CSV (RFC 4180), both ways: the lines `GET /books` writes, and a
//! reader fed a body's bytes as they come that hands back whole records,
//! numbered as a spreadsheet numbers its rows. A title or author that a
//! spreadsheet would run as a formula is written with a leading `'`, which
//! the import takes off again (docs/api.md, "Import and export").

use std::io::Write;

use super::model::Book;

/// The export's first line.
pub const HEADER: &[u8] = b"id,title,author,year\r\n";

/// `book` as one line, CRLF-terminated.
pub fn write_book(out: &mut Vec<u8>, book: &Book) {
    // Writing to a `Vec` cannot fail.
    let _ = write!(out, "{},", book.id.get());
    write_text(out, &book.title);
    out.push(b',');
    write_text(out, &book.author);
    let _ = write!(out, ",{}\r\n", book.year);
}

/// A text field: marked if a spreadsheet would run it, quoted if it holds
/// a separator, a quote or a line break.
fn write_text(out: &mut Vec<u8>, text: &str) {
    let quoted = text.bytes().any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'));
    if quoted {
        out.push(b'"');
    }
    if runs_in_a_spreadsheet(text) {
        out.push(b'\'');
    }
    out.extend_from_slice(text.replace('"', "\"\"").as_bytes());
    if quoted {
        out.push(b'"');
    }
}

/// Whether a text gets the leading `'` (OWASP's "CSV injection"): it starts
/// with `=`, `+`, `-`, `@`, a tab or a carriage return, or with a `'` before
/// one of those or another `'` (so that taking the mark off is exact).
fn runs_in_a_spreadsheet(text: &str) -> bool {
    let mut chars = text.chars();
    let starts = |c: Option<char>| matches!(c, Some('=' | '+' | '-' | '@' | '\t' | '\r'));
    match chars.next() {
        Some('\'') => {
            let next = chars.next();
            next == Some('\'') || starts(next)
        }
        first => starts(first),
    }
}

/// A text read from an import: the export's mark, if any, taken off.
pub fn unmarked(text: String) -> String {
    match text.strip_prefix('\'') {
        Some(rest) if runs_in_a_spreadsheet(rest) => rest.to_string(),
        _ => text,
    }
}

/// Why a CSV body cannot be read, at a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    pub row: u64,
    pub reason: &'static str,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote inside a quoted field: its end, or the first of `""`.
    QuoteInQuoted,
    /// After a CR: an LF next belongs to the same line end.
    AfterCr,
}

/// An incremental RFC 4180 reader: CRLF, LF or CR line ends, quoted fields
/// with `""` and line breaks, a UTF-8 byte order mark skipped. A record's
/// row is its number in the file (the first is 1), however many lines its
/// fields span.
#[derive(Default)]
pub struct Reader {
    state: State,
    /// The first bytes, until it is known whether they are a byte order mark.
    start: Vec<u8>,
    started: bool,
    field: Vec<u8>,
    record: Vec<String>,
    row: u64,
}

pub type Record = (u64, Vec<String>);

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Reader {
    /// The records `bytes` completes.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Record>, Malformed> {
        let mut records = Vec::new();
        if self.started {
            self.read(bytes, &mut records)?;
            return Ok(records);
        }
        self.start.extend_from_slice(bytes);
        if self.start.len() >= BOM.len() {
            self.read_start(&mut records)?;
        }
        Ok(records)
    }

    /// The last record, if the body does not end with a line end.
    pub fn finish(mut self) -> Result<Vec<Record>, Malformed> {
        let mut records = Vec::new();
        self.read_start(&mut records)?;
        if self.state == State::Quoted {
            return Err(self.malformed("a quoted field is not closed"));
        }
        if !self.field.is_empty() || !self.record.is_empty() || self.state == State::QuoteInQuoted {
            self.end_record(&mut records)?;
        }
        Ok(records)
    }

    fn read_start(&mut self, records: &mut Vec<Record>) -> Result<(), Malformed> {
        if !std::mem::replace(&mut self.started, true) {
            let start = std::mem::take(&mut self.start);
            self.read(start.strip_prefix(BOM).unwrap_or(&start), records)?;
        }
        Ok(())
    }

    /// The row of the last record read.
    pub fn row(&self) -> u64 {
        self.row
    }

    fn malformed(&self, reason: &'static str) -> Malformed {
        Malformed { row: self.row + 1, reason }
    }

    fn end_field(&mut self) -> Result<(), Malformed> {
        let field = std::mem::take(&mut self.field);
        let text = String::from_utf8(field).map_err(|_| self.malformed("not UTF-8"))?;
        self.record.push(text);
        Ok(())
    }

    fn end_record(&mut self, records: &mut Vec<Record>) -> Result<(), Malformed> {
        self.end_field()?;
        self.row += 1;
        records.push((self.row, std::mem::take(&mut self.record)));
        Ok(())
    }

    fn read(&mut self, bytes: &[u8], records: &mut Vec<Record>) -> Result<(), Malformed> {
        for &byte in bytes {
            self.state = match (self.state, byte) {
                (State::Quoted, b'"') => State::QuoteInQuoted,
                (State::Quoted, _) => {
                    self.field.push(byte);
                    State::Quoted
                }
                (State::QuoteInQuoted, b'"') => {
                    self.field.push(b'"');
                    State::Quoted
                }
                (State::AfterCr, b'\n') => State::FieldStart,
                (_, b',') => {
                    self.end_field()?;
                    State::FieldStart
                }
                (_, b'\n') => {
                    self.end_record(records)?;
                    State::FieldStart
                }
                (_, b'\r') => {
                    self.end_record(records)?;
                    State::AfterCr
                }
                (State::QuoteInQuoted, _) => {
                    return Err(self.malformed("text after a closing quote"));
                }
                (State::FieldStart | State::AfterCr, b'"') => State::Quoted,
                (State::Unquoted, b'"') => {
                    return Err(self.malformed("a quote inside an unquoted field"));
                }
                (_, _) => {
                    self.field.push(byte);
                    State::Unquoted
                }
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Reading and writing alone; through `POST /books` and `GET /books`:
    //! the core's transfer tests.
    use super::*;
    use crate::books::model::BookId;

    fn records(chunks: &[&[u8]]) -> Result<Vec<Record>, Malformed> {
        let mut reader = Reader::default();
        let mut all = Vec::new();
        for chunk in chunks {
            all.extend(reader.feed(chunk)?);
        }
        all.extend(reader.finish()?);
        Ok(all)
    }

    fn fields(row: u64, fields: &[&str]) -> Record {
        (row, fields.iter().map(|field| field.to_string()).collect())
    }

    #[test]
    fn quotes_line_breaks_and_every_line_end_are_read_in_any_chunks() {
        let body = "\u{feff}title,author\r\n\"a,\"\"b\"\"\r\nc\",d\ne,\"\"\rf,é🙂\r\n,";
        let expected = vec![
            fields(1, &["title", "author"]),
            fields(2, &["a,\"b\"\r\nc", "d"]),
            fields(3, &["e", ""]),
            fields(4, &["f", "é🙂"]),
            fields(5, &["", ""]),
        ];
        assert_eq!(records(&[body.as_bytes()]), Ok(expected.clone()));
        // Byte by byte: the BOM, a CRLF and a character split across chunks.
        let bytes: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
        assert_eq!(records(&bytes), Ok(expected));
        assert_eq!(records(&[b"a\n\"b\"\n"]), Ok(vec![fields(1, &["a"]), fields(2, &["b"])]));
        assert_eq!(records(&[b""]), Ok(vec![]));
    }

    #[test]
    fn malformed_fields_name_their_row() {
        let malformed = |body: &[u8], row, reason| {
            assert_eq!(records(&[body]), Err(Malformed { row, reason }), "{body:?}");
        };
        malformed(b"a\nb\"c\n", 2, "a quote inside an unquoted field");
        malformed(b"a\n\"b\"c\n", 2, "text after a closing quote");
        malformed(b"a\n\"b\nc", 2, "a quoted field is not closed");
        malformed(b"a\n\xff\n", 2, "not UTF-8");
        malformed(b"\xEF\xBB", 1, "not UTF-8");
    }

    #[test]
    fn spreadsheet_formulas_are_marked_and_the_mark_comes_off_exactly() {
        let book = |title: &str| Book {
            id: BookId::new(7).unwrap(),
            title: title.into(),
            author: "A".into(),
            year: -5,
            version: 1,
        };
        let line = |title: &str| {
            let mut out = Vec::new();
            write_book(&mut out, &book(title));
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line("=1+1"), "7,'=1+1,A,-5\r\n");
        assert_eq!(line("a,\"b\""), "7,\"a,\"\"b\"\"\",A,-5\r\n");
        assert_eq!(line("\rx"), "7,\"'\rx\",A,-5\r\n");
        for text in ["=x", "+x", "-x", "@x", "\tx", "\rx", "'=x", "''", "'x", "'", "x", "é"] {
            let written = line(text);
            let cells = records(&[written.as_bytes()]).unwrap().remove(0).1;
            assert_eq!(unmarked(cells[1].clone()), text, "{written:?}");
            let marked = runs_in_a_spreadsheet(text);
            assert_eq!(cells[1].starts_with('\'') && cells[1] != text, marked, "{text:?}");
        }
    }
}
