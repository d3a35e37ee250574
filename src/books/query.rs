//! Catalog queries on `GET /books` (docs/api.md, "Catalog queries"): the
//! query string read into a `BookQuery`, and the `Link` header of a page
//! that has a next one. The SQL of a query is `sql::page`.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::model::{integer_literal, Book, BookId, MAX_TEXT_CHARS};
use crate::error::ApiError;

/// The most books one page may ask for.
pub const MAX_LIMIT: u32 = 1000;

/// A text filter: the text as given (for the `Link` header) and its ASCII
/// lowercase form (what is compared: only ASCII letters lowered).
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

    /// As the client sent it (percent-decoded).
    pub fn text(&self) -> &str {
        &self.given
    }

    pub fn folded(&self) -> &str {
        &self.folded
    }
}

/// The parameters of a `GET /books`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookQuery {
    pub after: Option<BookId>,
    /// 1 ..= `MAX_LIMIT`.
    pub limit: Option<u32>,
    pub title: Option<TextFilter>,
    pub author: Option<TextFilter>,
    pub year: Option<i32>,
}

/// The `known` parameters of a query string (the part after `?`, if any),
/// each percent-decoded, in the order given. A known parameter given twice,
/// or whose value does not decode, is 400 "Invalid query parameters";
/// unknown parameters (and their repetitions) are ignored.
pub fn known_parameters<'k>(
    query: Option<&str>,
    known: &[&'k str],
) -> Result<Vec<(&'k str, String)>, ApiError> {
    let mut found: Vec<(&'k str, String)> = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|pair| !pair.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        // A name that does not decode is no parameter we know.
        let Some(name) = percent_decode(raw_name) else {
            continue;
        };
        let Some(name) = known.iter().find(|known| **known == name) else {
            continue;
        };
        if found.iter().any(|(seen, _)| seen == name) {
            return Err(ApiError::InvalidQuery);
        }
        found.push((name, percent_decode(raw_value).ok_or(ApiError::InvalidQuery)?));
    }
    Ok(found)
}

/// The parameters `GET /books` knows; any other is ignored.
const PARAMETERS: [&str; 5] = ["after", "limit", "title", "author", "year"];

impl BookQuery {
    /// Reads a query string (the part after `?`, if any). A known parameter
    /// given twice, or with a value outside its rules, is 400 "Invalid query
    /// parameters"; unknown parameters (and their repetitions) are ignored.
    pub fn parse(query: Option<&str>) -> Result<BookQuery, ApiError> {
        let mut parsed = BookQuery::default();
        for (name, value) in known_parameters(query, &PARAMETERS)? {
            match name {
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

    /// A page of the whole list: every book after `after`, `limit` of them.
    pub fn everything_after(after: Option<BookId>, limit: u32) -> BookQuery {
        BookQuery { after, limit: Some(limit), ..BookQuery::default() }
    }

    /// No known parameter: every book, as `GET /books` always answered.
    pub fn is_everything(&self) -> bool {
        *self == BookQuery::default()
    }

    /// A text filter holding NUL matches no book: no stored title or author
    /// can hold one (and PostgreSQL could not even bind it). Such a query is
    /// answered without asking the store.
    pub fn matches_nothing(&self) -> bool {
        [&self.title, &self.author].into_iter().flatten().any(|filter| filter.given.contains('\0'))
    }

    /// Cuts what a store returned (up to one more than the limit) to the page,
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
    fn next_link(&self, last_id: BookId, limit: u32) -> String {
        let mut target = String::from("/books?");
        if let Some(title) = &self.title {
            target.push_str(&format!("title={}&", percent_encode(title.text())));
        }
        if let Some(author) = &self.author {
            target.push_str(&format!("author={}&", percent_encode(author.text())));
        }
        if let Some(year) = self.year {
            target.push_str(&format!("year={year}&"));
        }
        target.push_str(&format!("limit={limit}&after={}", last_id.get()));
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
                let hex = |at: usize| (*bytes.get(at)? as char).to_digit(16);
                decoded.push((hex(i + 1)? << 4 | hex(i + 2)?) as u8);
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

/// Every byte but the unreserved characters (RFC 3986: letters, digits,
/// `-`, `.`, `_`, `~`) is written `%XX`, so a value is plain ASCII and safe
/// inside `<...>` of a header.
const LINK_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `text` percent-encoded for a `Link` target.
pub fn percent_encode(text: &str) -> String {
    utf8_percent_encode(text, LINK_VALUE).to_string()
}
