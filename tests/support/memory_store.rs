//! The test double of a database: books and login attempts in memory, with
//! the same rules as the real stores (ids never reused, windows that start
//! over), so the core's tests need no database.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use book_catalog::model::{Book, BookChanges, BookId, NewBook};
use book_catalog::query::BookQuery;
use book_catalog::store::{BookStore, LoginAttemptStore, LoginAttempts};

#[derive(Debug, Default)]
pub struct MemoryStore {
    books: BTreeMap<BookId, Book>,
    last_id: i64,
    login_attempts: HashMap<String, LoginAttempts>,
}

impl MemoryStore {
    /// How many login-attempt rows are kept (ended windows included).
    pub fn login_attempt_rows(&self) -> usize {
        self.login_attempts.len()
    }
}

impl BookStore for MemoryStore {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        Ok(self.books.values().cloned().collect())
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        let after = query.after.map_or(Bound::Unbounded, Bound::Excluded);
        let books = self.books.range((after, Bound::Unbounded));
        Ok(query.select(books.map(|(_, book)| book.clone())))
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        Ok(self.books.get(&id).cloned())
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let id = self
            .last_id
            .checked_add(1)
            .and_then(BookId::new)
            .ok_or_else(|| anyhow::anyhow!("book ids exhausted"))?;
        self.last_id = id.get();
        let book = book.with_id(id.get());
        self.books.insert(id, book.clone());
        Ok(book)
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        Ok(self.books.get_mut(&id).map(|book| {
            changes.clone().apply_to(book);
            book.clone()
        }))
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(self.books.remove(&id).is_some())
    }

    fn ping(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

impl LoginAttemptStore for MemoryStore {
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
        Ok(self.login_attempts.get(client).copied())
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts> {
        let fresh = LoginAttempts {
            count: 1,
            window_end: now.saturating_add(window_seconds),
        };
        let entry = self
            .login_attempts
            .entry(client.to_string())
            .and_modify(|attempts| {
                if attempts.window_end > now {
                    attempts.count += 1;
                } else {
                    *attempts = fresh;
                }
            })
            .or_insert(fresh);
        Ok(*entry)
    }

    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()> {
        self.login_attempts.remove(client);
        Ok(())
    }

    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        let mut ended: Vec<(u64, String)> = self
            .login_attempts
            .iter()
            .filter(|(_, attempts)| attempts.window_end <= now)
            .map(|(client, attempts)| (attempts.window_end, client.clone()))
            .collect();
        ended.sort_unstable();
        for (_, client) in ended.into_iter().take(limit as usize) {
            self.login_attempts.remove(&client);
        }
        Ok(())
    }
}
