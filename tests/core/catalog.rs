//! Catalog queries on `GET /books` (docs/api.md, "Catalog queries").
//! Authentication and the method come first: requests.rs; a failing store:
//! books.rs.

use crate::support::*;
use book_catalog::books::query::{percent_encode, BookQuery, MAX_LIMIT};
use book_catalog::books::BOOKS_PER_PAGE;
use book_catalog::ApiError;
use proptest::prelude::*;
use serde_json::{json, Value};

fn ids(outcome: &Outcome) -> Vec<i64> {
    assert_eq!(outcome.0, 200, "{}", outcome.1);
    let books = outcome.1["data"].as_array().expect("data is an array").iter();
    books.map(|book| book["id"].as_i64().expect("id")).collect()
}

/// A list's envelope with these books (JSON texts) in the service's field order.
fn list_envelope(books: &[String]) -> String {
    let message = "Books retrieved successfully";
    format!(r#"{{"status":200,"message":"{message}","data":[{}]}}"#, books.join(","))
}

/// The ids `GET /books?query` returns, asking the feed's position and one
/// page.
fn found(ctx: &mut TestContext, query: &str) -> Vec<i64> {
    ctx.reset_calls();
    let found = ids(&ctx.get_books(Some(query)).0);
    assert_eq!((ctx.opens, &ctx.statements()[..]), (1, &["feed position", "page"][..]), "{query}");
    found
}

/// Each `query=>ids` (comma-separated, none: nothing found) of `cases`.
fn expect_found(ctx: &mut TestContext, cases: &str) {
    for case in cases.split_whitespace() {
        let (query, expected) = case.split_once("=>").expect("query=>ids");
        let expected = expected.split(',').filter(|id| !id.is_empty()).map(|id| id.parse());
        let expected: Vec<i64> = expected.collect::<Result<_, _>>().expect(case);
        assert_eq!(found(ctx, query), expected, "{query}");
    }
}

const SAMPLE: [(&str, &str, i64); 6] = [
    ("Dune", "Frank Herbert", 1965),
    ("dune messiah", "FRANK HERBERT", 1969),
    ("100% Pure_Fun", "A\\B", 2001),
    ("Étoile", "émile", 1900),
    ("Straße", "İnci", -5),
    ("1005 Pure-Fun", "a/b", 2001),
];

/// Each a 400 before any store is opened, by parameter: `limit` (an
/// integer literal 1..1000), `after` (a canonical book id), `year` (a 32-bit
/// integer literal), `title` and `author` (1..1000 characters); a known
/// parameter twice, however spelled; a value that does not decode to UTF-8.
const INVALID_QUERIES: &str = "
    limit=0 limit=1001 limit=x limit= limit limit=-1 limit=-0 limit=01 limit=+5 limit=1.0
    limit=1e2 limit=%201 limit=1+ limit=99999999999999999999 limit=4294967297
    after=-1 after=abc after=0 after=01 after= after after=+1 after=1.5
    after=9223372036854775808 after=%31%20
    year=1.5 year= year year=2147483648 year=-2147483649 year=05 year=+5 year=1e3 year=--1
    year=x year=1999+
    title= title author= author
    limit=1&limit=1 limit=1&limit=2 title=a&title=b author=a&author=a year=1&year=1
    after=1&after=2 %6Cimit=1&limit=2 li%6D%69t=3&limit=3 limit=5&x=1&title=ok&limit=6
    title=%zz title=%4 title=% title=%FF title=%C3 author=%C3%28 limit=% year=%G1";

#[test]
fn every_invalid_value_or_repetition_is_400_before_the_store_is_opened() {
    let mut ctx = TestContext::with_books(&SAMPLE);
    let long = "x".repeat(1001);
    let too_long = [
        format!("title={long}"),
        format!("author={}", "é".repeat(1001)),
        format!("limit=5&title={long}&year=1"),
    ];
    for query in INVALID_QUERIES.split_whitespace().map(str::to_string).chain(too_long) {
        assert_eq!(ctx.get_books(Some(&query)).0, invalid_query(), "{query:?}");
    }
    assert_eq!(ctx.opens, 0, "no store opened for a 400");
}

/// Without parameters, or with none it knows, a catalog of more than a page
/// is written page by page, one statement each: the same bytes as one
/// envelope, every book once; a page that fails leaves the body unfinished
/// (no closing brackets) and says why.
#[test]
fn the_whole_list_is_written_page_by_page_and_a_failed_page_cuts_it_short() {
    let per_page = BOOKS_PER_PAGE as usize;
    for count in [per_page, 2 * per_page + 1] {
        let mut ctx = TestContext::new();
        let insert = "INSERT INTO books (title, author, year) VALUES (?1, ?2, ?3)";
        // SAMPLE's books over and over: texts JSON escapes.
        let books: Vec<String> = (1..=count)
            .map(|id| {
                let (title, author, year) = SAMPLE[id % SAMPLE.len()];
                ctx.with_db(|db| db.execute(insert, (title, author, year))).unwrap();
                let [title, author] = [title, author].map(|text| json!(text).to_string());
                format!(r#"{{"id":{id},"title":{title},"author":{author},"year":{year}}}"#)
            })
            .collect();
        ctx.reset_calls();
        let whole = ctx.get_unchecked("/books", None);
        let expected = list_envelope(&books);
        assert_eq!(String::from_utf8_lossy(whole.bytes()), expected);
        assert_eq!((whole.status, whole.header("link")), (200, None));
        let statements = ctx.statements();
        assert_eq!(statements.len(), count / per_page + 2, "{count} books");
        assert!(ctx.cut_short.is_none());
        let queries = "& && x=1 x=1&x=2 LIMIT=5 Title=x limit2=0 %zz=1 tit%le=x _=123".split(' ');
        for query in queries.chain([""]) {
            ctx.reset_calls();
            let response = ctx.get_unchecked("/books", Some(query));
            assert_eq!((response.status, response.bytes()), (200, whole.bytes()), "{query:?}");
            assert_eq!(response.extra_headers, whole.extra_headers, "{query:?}");
            assert_eq!(ctx.statements(), statements, "{query:?}");
        }
        ctx.reset_calls();
        // The feed's position, the first page, then the failure.
        ctx.fail_after_statements = Some(2);
        let cut = ctx.get_unchecked("/books", None);
        assert!(
            matches!(&ctx.cut_short, Some(ApiError::Internal(why)) if why.contains("went away"))
        );
        assert_eq!(cut.status, 200, "the head went before the failure");
        let prefix = &expected.as_bytes()[..expected.find(&books[per_page - 1]).unwrap()];
        assert!(cut.bytes().starts_with(prefix) && !cut.bytes().ends_with(b"]}"));
        assert!(serde_json::from_slice::<Value>(cut.bytes()).is_err());
    }
}

/// Valid values at their edges; `%`, `_` and `\` are plain characters;
/// non-ASCII letters compare exactly: no folding of É/é, ß/SS, İ/i.
#[test]
fn valid_values_at_their_edges_and_text_filters_that_fold_ascii_letters_only() {
    let mut ctx = TestContext::with_books(&SAMPLE);
    assert_eq!(found(&mut ctx, &format!("limit={MAX_LIMIT}")), [1, 2, 3, 4, 5, 6]);
    // 1,000 characters, not bytes: 1,000 two-byte characters are fine.
    for title in ["é".repeat(1000), "x".repeat(1000)] {
        assert_eq!(found(&mut ctx, &format!("title={title}")), Vec::<i64>::new());
    }
    // A space is a character; unknown parameters beside known ones are
    // ignored, repeated or not; names are case-sensitive.
    let cases = "limit=1=>1 after=9223372036854775807=> after=5=>6 year=-5=>5 year=-0=>
         year=-2147483648=> year=2147483647=> title=+=>2,3,6 x=1&year=2001&x=2&&y=>3,6
         Limit=0&year=2001=>3,6 limit=2=>1,2 after=1&limit=1000&year=2001&author=a=>3,6
         title=dune=>1,2 title=DUNE+M=>2 author=herbert=>1,2 author=Frank&title=messiah=>2
         author=Frank&year=1965=>1 author=Frank&year=1966=> title=%25=>3 title=0%25=>3
         title=_=>3 title=pure_=>3 title=e_f=>3 title=e-f=>6 title=10%25=> author=%5C=>3
         author=a%5Cb=>3 author=a%2Fb=>6 author=a/b=>6 title=%C3%89toile=>4
         title=%C3%A9toile=> title=étoile=> title=ÉTOILE=>4 author=%C3%89mile=>
         author=%C3%A9MILE=>4 title=strasse=> title=STRA%C3%9FE=>5 author=inci=>
         author=%C4%B0NCI=>5 author=%C4%B0nci=>5";
    expect_found(&mut ctx, cases);
}

/// A filter of 3 or more characters is looked up in the trigram index,
/// a shorter one is not: either way the same rule, for quotes, wildcard
/// characters and non-ASCII letters too, alone, together, and paged.
#[test]
fn filters_of_every_length_match_alike_through_the_index_or_not() {
    let mut ctx = TestContext::with_books(&[
        ("Say \"Hi\"", "O'Brien", 1),
        ("100%_\\x", "Zoë Ünal", 2),
        ("Ab", "ab", 3),
        ("ABC abc", "İnci", 4),
    ]);
    let cases =
        "title=%22=>1 title=%22h=>1 title=%22HI%22=>1 title=say+%22hi%22=>1 title=hi%22%22=>
         author=o'b=>1 author='=>1 author='BRIEN=>1 title=%25_%5C=>2 title=0%25_%5CX=>2
         title=0%25%25=> title=__=> title=%25_=>2 author=zo%C3%AB=>2
         author=ZO%C3%AB+%C3%9C=>2 author=%C3%9CNAL=>2 author=%C3%BCnal=> author=%C3%AB=>2
         title=a=>1,3,4 title=ab=>3,4 title=abc=>4 title=c+a=>4 title=abca=>
         author=%C4%B0nc=>4 author=inc=> title=abc&author=nci=>4 title=abc&author=obr=>
         title=b&author=%C4%B0nci=>4 title=abc&after=3=>4 title=abc&after=4=>
         author=b&year=3=>3 author=b&year=1=>1 author=bri&year=1=>1 author=bri&year=2=>";
    expect_found(&mut ctx, cases);
    // Pages through the index follow ids, with their Link.
    let (page, link) = ctx.get_books(Some("title=%22&author=bri&limit=1"));
    assert_eq!((ids(&page), link), (vec![1], None));
    let (page, link) = ctx.get_books(Some("author=%C3%AB+%C3%9C&limit=1&after=1"));
    assert_eq!((ids(&page), link), (vec![2], None));
    // The longest allowed filter, of many different trigrams, quotes among
    // them: one statement, no error.
    let long: String =
        (0..1000).map(|i| ['a', '"', 'é', 'Z', '\'', ' ', '%', 'b'][i * i % 7]).collect();
    assert_eq!(found(&mut ctx, &format!("title={}", percent_encode(&long))), Vec::<i64>::new());
}

/// A filter holding NUL once decoded matches nothing, without asking the store.
#[test]
fn values_are_percent_decoded_with_plus_as_space() {
    // Escapes that do not decode to UTF-8: INVALID_QUERIES.
    let mut ctx = TestContext::with_books(&[("a b", "x", 1), ("a+b", "x", 2), ("a&b=c", "x", 3)]);
    // Hex digits in either case; a parameter name is decoded too.
    let cases = "title=a+b=>1 title=a%20b=>1 title=a%2Bb=>2 title=a%2bb=>2 title=a%26b%3Dc=>3
                 title=a&b=c=>1,2,3 %74itle=a%2Bb=>2";
    expect_found(&mut ctx, cases);
    ctx.reset_calls();
    assert_eq!(ctx.get_books(Some("title=%00&limit=1")), (listed(json!([])), None));
    assert_eq!(ctx.get_books(Some("author=x%00")).0, listed(json!([])));
    // No page read: only the feed's position.
    assert_eq!(ctx.statements(), ["feed position"; 2]);
}

#[test]
fn pages_follow_ids_with_a_link_on_every_page_but_the_last() {
    let mut ctx = TestContext::with_books(&SAMPLE);
    let (first, link) = ctx.get_books(Some("limit=2"));
    let two =
        [book(1, "Dune", "Frank Herbert", 1965), book(2, "dune messiah", "FRANK HERBERT", 1969)];
    assert_eq!(first, listed(json!(two)));
    assert_eq!(link.as_deref(), Some(r#"</books?limit=2&after=2>; rel="next""#));
    assert_eq!(ctx.get_books(Some("after=6&limit=2")), (listed(json!([])), None));
    // Exactly the last two, or every remaining book without a limit: no Link.
    for (query, expected, next) in [
        ("limit=2&after=2", &[3, 4][..], Some("limit=2&after=4")),
        ("after=4&limit=2", &[5, 6], None),
        ("after=3", &[4, 5, 6], None),
    ] {
        let (page, link) = ctx.get_books(Some(query));
        let link = link.as_deref().map(next_query);
        assert_eq!((ids(&page), link), (expected.to_vec(), next), "{query}");
    }
    // `after` need not be an existing id.
    ctx.authed("DELETE", "/book/3", "");
    assert_eq!(found(&mut ctx, "after=2&limit=1"), [4]);
    assert_eq!(found(&mut ctx, "after=3&limit=1"), [4]);
}

#[test]
fn the_link_keeps_every_filter_percent_encoded() {
    let title = "a b&c=d/é%_~+.-";
    let mut ctx =
        TestContext::with_books(&[(title, "Ann", 7), (title, "ann", 7), (title, "ANN", 7)]);
    let query = "year=7&author=aNN&limit=1&x=ignored&title=a+b%26c%3Dd%2F%C3%A9%25_~%2B.-";
    let (page, link) = ctx.get_books(Some(query));
    assert_eq!(ids(&page), [1]);
    let next = "title=a%20b%26c%3Dd%2F%C3%A9%25_~%2B.-&author=aNN&year=7&limit=1&after=1";
    assert_eq!(link.as_deref().map(next_query), Some(next));
    // Following the links walks the rest.
    let (page, link) = ctx.get_books(Some(next));
    assert_eq!(ids(&page), [2]);
    let (page, link) = ctx.get_books(Some(next_query(&link.unwrap())));
    assert_eq!(ids(&page), [3]);
    assert_eq!(link, None);
}

/// The query string of a `Link` value `</books?QUERY>; rel="next"`.
fn next_query(link: &str) -> &str {
    link.strip_prefix("</books?")
        .and_then(|rest| rest.strip_suffix(">; rel=\"next\""))
        .unwrap_or_else(|| panic!("not a next link: {link}"))
}

/// Text drawn from characters that stress the matching: ASCII letters in
/// both cases, wildcard characters of SQL, quotes (of SQL and of FTS5), and
/// non-ASCII letters whose case pairs must not fold.
fn text(max: usize) -> impl Strategy<Value = String> {
    let chars: Vec<char> = "aAbBz %_\\+&\"'éÉßİiı".chars().collect();
    proptest::collection::vec(prop::sample::select(chars), 1..=max)
        .prop_map(|chars| chars.into_iter().collect())
        .prop_filter("a book's text is not blank", |text: &String| !text.trim().is_empty())
}

/// A text filter: text of its own or (so that filters of 3 or more characters
/// find something) 1 to 5 characters of some book's text, its ASCII letters'
/// case maybe flipped.
type Needle = (Option<String>, prop::sample::Index, prop::sample::Index, usize, bool);

fn needle() -> impl Strategy<Value = Needle> {
    let index = any::<prop::sample::Index>;
    (proptest::option::of(text(4)), index(), index(), 1..=5usize, any::<bool>())
}

fn needle_text((own, book, start, len, flip): Needle, texts: &[String]) -> String {
    match own {
        Some(text) => text,
        None if texts.is_empty() => "a".to_string(),
        None => {
            let chars: Vec<char> = book.get(texts).chars().collect();
            let start = start.index(chars.len().saturating_sub(len) + 1);
            let flip = |c: &char| match (flip, c.is_ascii_lowercase()) {
                (false, _) => *c,
                (true, true) => c.to_ascii_uppercase(),
                (true, false) => c.to_ascii_lowercase(),
            };
            chars[start..chars.len().min(start + len)].iter().map(flip).collect()
        }
    }
}

/// The matching rule written independently of the service: ASCII letters
/// lowered one by one, every other character kept, literal substring.
fn oracle_contains(field: &str, needle: &str) -> bool {
    let fold = |s: &str| -> Vec<char> {
        s.chars().map(|c| if c.is_ascii_uppercase() { (c as u8 + 32) as char } else { c }).collect()
    };
    let (field, needle) = (fold(field), fold(needle));
    needle.is_empty() || field.windows(needle.len()).any(|window| window == needle.as_slice())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn paging_through_any_filter_yields_the_unpaged_filtered_list(
        books in proptest::collection::vec((text(6), text(6), 0..4i32), 0..40),
        changed in proptest::collection::vec(
            (proptest::option::of(text(6)), proptest::option::of(text(6))),
            40,
        ),
        deleted in proptest::collection::vec(any::<bool>(), 40),
        title in proptest::option::of(needle()),
        author in proptest::option::of(needle()),
        year in proptest::option::of(0..4i32),
        limit in 1..8u32,
    ) {
        let mut ctx = TestContext::new();
        for (title, author, year) in &books {
            ctx.create_book(title, author, (*year).into());
        }
        for (id, (title, author)) in (1..=books.len()).zip(&changed) {
            let fields = [("title", title), ("author", author)].into_iter();
            let changes =
                fields.filter_map(|(name, text)| Some((name.to_string(), json!(text.as_ref()?))));
            let body = Value::Object(changes.collect()).to_string();
            prop_assert_eq!(ctx.authed("PUT", &format!("/book/{id}"), &body).0, 200);
        }
        for (id, _) in (1..=books.len()).zip(&deleted).filter(|(_, gone)| **gone) {
            ctx.authed("DELETE", &format!("/book/{id}"), "");
        }
        let all: Vec<Value> = ctx.all_books().as_array().unwrap().clone();
        let texts = |field: &str| -> Vec<String> {
            all.iter().map(|book| book[field].as_str().unwrap().to_string()).collect()
        };
        let title = title.map(|needle| needle_text(needle, &texts("title")));
        let author = author.map(|needle| needle_text(needle, &texts("author")));
        let matches = |book: &Value, field: &str, needle: &Option<String>| {
            needle.as_ref().is_none_or(|n| oracle_contains(book[field].as_str().unwrap(), n))
        };
        let expected: Vec<i64> = all
            .iter()
            .filter(|b| matches(b, "title", &title) && matches(b, "author", &author))
            .filter(|b| year.is_none_or(|y| b["year"] == json!(y)))
            .map(|b| b["id"].as_i64().unwrap())
            .collect();
        let mut filters = Vec::new();
        for (name, text) in [("title", &title), ("author", &author)] {
            filters.extend(text.as_ref().map(|text| format!("{name}={}", percent_encode(text))));
        }
        if let Some(year) = year { filters.push(format!("year={year}")); }
        let unpaged_query = if filters.is_empty() { "x=1".to_string() } else { filters.join("&") };
        let (unpaged, link) = ctx.get_books(Some(&unpaged_query));
        prop_assert_eq!(link, None);
        prop_assert_eq!(ids(&unpaged), expected.clone());
        filters.push(format!("limit={limit}"));
        let mut query = filters.join("&");
        let mut paged = Vec::new();
        for _ in 0..=books.len() + 1 {
            let (page, link) = ctx.get_books(Some(&query));
            let page_ids = ids(&page);
            prop_assert!(page_ids.len() <= limit as usize);
            paged.extend(page_ids.iter().copied());
            match link {
                Some(link) => {
                    prop_assert_eq!(page_ids.len(), limit as usize);
                    query = next_query(&link).to_string();
                }
                None => break,
            }
        }
        prop_assert_eq!(paged, expected);
    }

    #[test]
    fn any_query_string_is_a_page_or_a_400_never_a_panic(
        query in prop_oneof![
            ".{0,40}",
            "((limit|after|title|author|year|x)=[0-9a-zA-Z%+&=_.-]{0,6}&?){0,5}",
        ],
    ) {
        let mut ctx = TestContext::with_books(&SAMPLE);
        let ((status, envelope, _), link) = ctx.get_books(Some(&query));
        prop_assert!(status == 200 || status == 400, "{} gave {}", query, status);
        if status == 400 {
            prop_assert_eq!(envelope["message"].as_str(), Some("Invalid query parameters"));
            prop_assert_eq!(ctx.opens, 0);
        }
        if let Some(link) = link {
            // A Link always leads to a valid query.
            prop_assert!(link.is_ascii());
            prop_assert!(BookQuery::parse(Some(next_query(&link))).is_ok());
        }
    }
}
