//! Catalog queries on `GET /books` (decisions.md, "Catalog queries"): the
//! query string read into a `BookQuery` (percent-decoding, `+` as a space,
//! repeated parameters refused, every value checked), the rule a book must
//! meet to match, the SQL both real stores run for it, and the `Link` header
//! of a page that has a next one.
//!
//! Without any known parameter, `GET /books` keeps its original path
//! (`BookStore::list`), so its answer stays byte for byte what it was.

use crate::books::{Book, MAX_TEXT_CHARS};
use crate::error::ApiError;
use crate::router::BookId;
use crate::store::{SqlParam, BOOK_COLUMNS};

/// The most books one page may ask for.
pub const MAX_LIMIT: u32 = 1000;

/// A text filter: the text as given (for the `Link` header) and its ASCII
/// lowercase form (what is compared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFilter {
    given: String,
    folded: String,
}

impl TextFilter {
    fn new(given: String) -> TextFilter {
        let folded = given.to_ascii_lowercase();
        TextFilter { given, folded }
    }

    /// The text as the client sent it (percent-decoded).
    pub fn text(&self) -> &str {
        &self.given
    }

    /// The text with only ASCII letters lowered; every other character as is.
    pub fn folded(&self) -> &str {
        &self.folded
    }

    /// ASCII letters compared case-insensitively, every other character
    /// exactly; `%`, `_` and `\` are plain characters.
    pub fn matches(&self, field: &str) -> bool {
        field.to_ascii_lowercase().contains(&self.folded)
    }
}

/// The parameters of a `GET /books`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookQuery {
    /// Only books with a larger id.
    pub after: Option<BookId>,
    /// At most this many books (1 ..= `MAX_LIMIT`).
    pub limit: Option<u32>,
    pub title: Option<TextFilter>,
    pub author: Option<TextFilter>,
    pub year: Option<i32>,
}

/// The parameters `GET /books` knows; any other is ignored.
const PARAMETERS: [&str; 5] = ["after", "limit", "title", "author", "year"];

impl BookQuery {
    /// Reads a query string (the part after `?`, if any). A known parameter
    /// given twice, or with a value outside its rules, is 400 "Invalid query
    /// parameters"; unknown parameters (and their repetitions) are ignored.
    pub fn parse(query: Option<&str>) -> Result<BookQuery, ApiError> {
        let mut parsed = BookQuery::default();
        let mut seen = [false; PARAMETERS.len()];
        for pair in query.unwrap_or("").split('&') {
            if pair.is_empty() {
                continue;
            }
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            // A name that does not decode is no parameter we know.
            let Some(name) = percent_decode(raw_name) else {
                continue;
            };
            let Some(index) = PARAMETERS.iter().position(|known| *known == name) else {
                continue;
            };
            if std::mem::replace(&mut seen[index], true) {
                return Err(ApiError::InvalidQuery);
            }
            let value = percent_decode(raw_value).ok_or(ApiError::InvalidQuery)?;
            match PARAMETERS[index] {
                "after" => {
                    parsed.after = Some(BookId::parse(&value).ok_or(ApiError::InvalidQuery)?)
                }
                "limit" => {
                    let limit = integer_literal(&value)
                        .and_then(|limit| u32::try_from(limit).ok())
                        .filter(|limit| (1..=MAX_LIMIT).contains(limit))
                        .ok_or(ApiError::InvalidQuery)?;
                    parsed.limit = Some(limit);
                }
                "title" => parsed.title = Some(text_filter(value)?),
                "author" => parsed.author = Some(text_filter(value)?),
                _ => {
                    let year = integer_literal(&value)
                        .and_then(|year| i32::try_from(year).ok())
                        .ok_or(ApiError::InvalidQuery)?;
                    parsed.year = Some(year);
                }
            }
        }
        Ok(parsed)
    }

    /// No known parameter: every book, as `GET /books` always answered.
    pub fn is_everything(&self) -> bool {
        *self == BookQuery::default()
    }

    /// Whether `book` passes the filters (not `after` or `limit`).
    pub fn matches(&self, book: &Book) -> bool {
        self.title.as_ref().is_none_or(|t| t.matches(&book.title))
            && self.author.as_ref().is_none_or(|a| a.matches(&book.author))
            && self.year.is_none_or(|year| book.year == year)
    }

    /// A text filter holding NUL matches no book: no stored title or author
    /// can hold one (and PostgreSQL could not even bind it). Such a query is
    /// answered without asking the store.
    pub fn matches_nothing(&self) -> bool {
        [&self.title, &self.author]
            .into_iter()
            .flatten()
            .any(|filter| filter.given.contains('\0'))
    }

    /// How many books a store returns for this query: one more than the
    /// limit, so that the caller knows whether a next page exists without a
    /// second query. `None`: all of them.
    pub fn fetch_limit(&self) -> Option<u32> {
        self.limit.map(|limit| limit + 1)
    }

    /// The query applied to books in ascending id order (the in-memory
    /// definition the SQL stores must agree with): at most `fetch_limit`.
    pub fn select(&self, books: impl IntoIterator<Item = Book>) -> Vec<Book> {
        let after = self.after.map_or(0, BookId::get);
        let fetch = self.fetch_limit().map_or(usize::MAX, |n| n as usize);
        books
            .into_iter()
            .filter(|book| book.id > after && self.matches(book))
            .take(fetch)
            .collect()
    }

    /// Cuts what a store returned (up to `fetch_limit` books) to the page,
    /// and gives the `Link` header value when more books remain.
    pub fn page(&self, mut books: Vec<Book>) -> (Vec<Book>, Option<String>) {
        let Some(limit) = self.limit else {
            return (books, None);
        };
        if books.len() <= limit as usize {
            return (books, None);
        }
        books.truncate(limit as usize);
        let link = books.last().map(|last| self.next_link(last.id, limit));
        (books, link)
    }

    /// `</books?...&after=LAST_ID>; rel="next"`: the same filters and limit,
    /// every value percent-encoded.
    fn next_link(&self, last_id: i64, limit: u32) -> String {
        let mut target = String::from("/books?");
        if let Some(title) = &self.title {
            target.push_str("title=");
            percent_encode_into(&mut target, title.text());
            target.push('&');
        }
        if let Some(author) = &self.author {
            target.push_str("author=");
            percent_encode_into(&mut target, author.text());
            target.push('&');
        }
        if let Some(year) = self.year {
            target.push_str(&format!("year={year}&"));
        }
        target.push_str(&format!("limit={limit}&after={last_id}"));
        format!("<{target}>; rel=\"next\"")
    }
}

/// 1 to `MAX_TEXT_CHARS` characters.
fn text_filter(value: String) -> Result<TextFilter, ApiError> {
    let chars = value.chars().count();
    if (1..=MAX_TEXT_CHARS).contains(&chars) {
        Ok(TextFilter::new(value))
    } else {
        Err(ApiError::InvalidQuery)
    }
}

/// An integer literal as in JSON (`-`? then `0` or a non-zero digit and
/// more digits: no `+`, no leading zero, no fraction or exponent), within
/// 64 bits; the caller narrows it. `-0` is 0.
fn integer_literal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let literal = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if literal {
        text.parse().ok()
    } else {
        None
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a
/// byte; the bytes must be UTF-8. `None` for a bad escape or bad UTF-8.
pub fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => {
                decoded.push(b' ');
                i += 1;
            }
            b'%' => {
                let high = hex_digit(*bytes.get(i + 1)?)?;
                let low = hex_digit(*bytes.get(i + 2)?)?;
                decoded.push(high << 4 | low);
                i += 3;
            }
            byte => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Every byte but the unreserved characters (RFC 3986: letters, digits,
/// `-`, `.`, `_`, `~`) as `%XX`, so the value is plain ASCII and safe inside
/// `<...>` of a header.
pub fn percent_encode_into(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 15)]));
        }
    }
}

/// The SQL dialect of a real store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}"),
        }
    }

    /// `column` contains the placeholder's text (already ASCII-lowered),
    /// ASCII letters folded, nothing else. SQLite's built-in `lower()` folds
    /// ASCII letters only; PostgreSQL's `lower()` would fold others too
    /// (depending on the collation), so there `translate` folds exactly
    /// A-Z. `instr`/`strpos` compare literally: no wildcard characters.
    fn contains(self, column: &str, placeholder: &str) -> String {
        match self {
            Dialect::Sqlite => format!("instr(lower({column}), {placeholder}) > 0"),
            Dialect::Postgres => format!(
                "strpos(translate({column}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', \
                 'abcdefghijklmnopqrstuvwxyz'), {placeholder}) > 0"
            ),
        }
    }
}

/// The one `SELECT` of a catalog query: filters, `id > after`, ascending id,
/// `LIMIT fetch_limit`. Every value is a bound parameter.
pub fn page_statement(query: &BookQuery, dialect: Dialect) -> (String, Vec<SqlParam<'_>>) {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if let Some(after) = query.after {
        params.push(SqlParam::Int64(after.get()));
        conditions.push(format!("id > {}", dialect.placeholder(params.len())));
    }
    for (column, filter) in [("title", &query.title), ("author", &query.author)] {
        if let Some(filter) = filter {
            params.push(SqlParam::Text(filter.folded()));
            conditions.push(dialect.contains(column, &dialect.placeholder(params.len())));
        }
    }
    if let Some(year) = query.year {
        params.push(SqlParam::Int32(year));
        conditions.push(format!("year = {}", dialect.placeholder(params.len())));
    }
    let mut sql = format!("SELECT {BOOK_COLUMNS} FROM books");
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY id");
    if let Some(fetch) = query.fetch_limit() {
        params.push(SqlParam::Int64(fetch.into()));
        sql.push_str(&format!(" LIMIT {}", dialect.placeholder(params.len())));
    }
    (sql, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_bind_every_value() {
        let query =
            BookQuery::parse(Some("title=A%25_&author=x&year=-3&limit=10&after=7")).unwrap();
        let (sql, params) = page_statement(&query, Dialect::Sqlite);
        assert_eq!(
            sql,
            "SELECT id, title, author, year FROM books WHERE id > ?1 AND \
             instr(lower(title), ?2) > 0 AND instr(lower(author), ?3) > 0 AND year = ?4 \
             ORDER BY id LIMIT ?5"
        );
        assert_eq!(
            params,
            [
                SqlParam::Int64(7),
                SqlParam::Text("a%_"),
                SqlParam::Text("x"),
                SqlParam::Int32(-3),
                SqlParam::Int64(11)
            ]
        );
        let query = BookQuery::parse(Some("author=B")).unwrap();
        let (sql, params) = page_statement(&query, Dialect::Postgres);
        assert_eq!(
            sql,
            "SELECT id, title, author, year FROM books WHERE strpos(translate(author, \
             'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), $1) > 0 ORDER BY id"
        );
        assert_eq!(params, [SqlParam::Text("b")]);
        let query = BookQuery::parse(Some("limit=1")).unwrap();
        let (sql, params) = page_statement(&query, Dialect::Postgres);
        assert_eq!(
            sql,
            "SELECT id, title, author, year FROM books ORDER BY id LIMIT $1"
        );
        assert_eq!(params, [SqlParam::Int64(2)]);
    }
}
