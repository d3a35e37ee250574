//! The stores on any SQL connection: `BookStore` and `LoginAttemptStore`
//! for whatever runs a `sql::Statement` and hands back its rows. The
//! adapters (Spin SQLite, Spin PostgreSQL, the native benchmark's) implement
//! only `SqlConnection`: connecting, binding values, converting columns.

use anyhow::{anyhow, bail};

use crate::model::{Book, BookChanges, BookId, NewBook};
use crate::query::BookQuery;
use crate::sql::{self, Column, Dialect, Statement};
use crate::store::{BookStore, LoginAttemptStore, LoginAttempts};

/// A database connection as the stores use it.
pub trait SqlConnection {
    /// The dialect its statements are written in.
    const DIALECT: Dialect;
    /// Runs `statement` and returns its rows, in the statement's order.
    fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>>;
}

/// Books and login attempts on a SQL connection, one statement a method.
pub struct SqlStore<C>(pub C);

impl<C: SqlConnection> SqlStore<C> {
    fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
        self.0.rows(statement)
    }
}

impl<C: SqlConnection> BookStore for SqlStore<C> {
    fn list(&mut self) -> anyhow::Result<Vec<Book>> {
        sql::books_from_rows(self.rows(&sql::list(C::DIALECT))?)
    }

    fn list_page(&mut self, query: &BookQuery) -> anyhow::Result<Vec<Book>> {
        sql::books_from_rows(self.rows(&sql::page(C::DIALECT, query))?)
    }

    fn get(&mut self, id: BookId) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.rows(&sql::get(C::DIALECT, id))?)
    }

    fn create(&mut self, book: &NewBook) -> anyhow::Result<Book> {
        let rows = self.rows(&sql::insert(C::DIALECT, book))?;
        let id = sql::id_from_row(rows.first().map_or(&[], Vec::as_slice))?;
        Ok(book.with_id(id))
    }

    fn update(&mut self, id: BookId, changes: &BookChanges) -> anyhow::Result<Option<Book>> {
        sql::first_book(self.rows(&sql::update(C::DIALECT, id, changes))?)
    }

    fn delete(&mut self, id: BookId) -> anyhow::Result<bool> {
        Ok(!self.rows(&sql::delete(C::DIALECT, id))?.is_empty())
    }

    /// `GET /health`: connects (or takes a pooled connection) and runs the
    /// most trivial query.
    fn ping(&mut self) -> anyhow::Result<()> {
        match self.rows(&sql::ping(C::DIALECT))?.as_slice() {
            [row] if row.as_slice() == [Column::Integer(1)] => Ok(()),
            other => bail!("SELECT 1 returned {other:?}"),
        }
    }
}

impl<C: SqlConnection> LoginAttemptStore for SqlStore<C> {
    fn login_attempts(&mut self, client: &str) -> anyhow::Result<Option<LoginAttempts>> {
        sql::first_attempts(&self.rows(&sql::login_attempts(C::DIALECT, client))?)
    }

    fn count_login_attempt(
        &mut self,
        client: &str,
        now: u64,
        window_seconds: u64,
    ) -> anyhow::Result<LoginAttempts> {
        let statement = sql::count_login_attempt(C::DIALECT, client, now, window_seconds);
        sql::first_attempts(&self.rows(&statement)?)?
            .ok_or_else(|| anyhow!("the login-attempt upsert returned no row"))
    }

    fn clear_login_attempts(&mut self, client: &str) -> anyhow::Result<()> {
        self.rows(&sql::clear_login_attempts(C::DIALECT, client))
            .map(drop)
    }

    fn prune_login_attempts(&mut self, now: u64, limit: u32) -> anyhow::Result<()> {
        self.rows(&sql::prune_login_attempts(C::DIALECT, now, limit))
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers each statement with canned rows and records what it ran.
    struct Canned {
        ran: Vec<String>,
        answer: Vec<Vec<Column>>,
    }

    impl SqlConnection for Canned {
        const DIALECT: Dialect = Dialect::Postgres;
        fn rows(&mut self, statement: &Statement) -> anyhow::Result<Vec<Vec<Column>>> {
            self.ran.push(statement.sql.clone());
            Ok(self.answer.clone())
        }
    }

    fn store(answer: Vec<Vec<Column>>) -> SqlStore<Canned> {
        SqlStore(Canned {
            ran: Vec::new(),
            answer,
        })
    }

    #[test]
    fn each_method_is_one_statement_read_back_by_sql() {
        let row = vec![
            Column::Integer(4),
            Column::Text("T".into()),
            Column::Text("A".into()),
            Column::Integer(1999),
        ];
        let mut one = store(vec![row]);
        let id = BookId::new(4).unwrap();
        assert_eq!(one.get(id).unwrap().map(|b| b.year), Some(1999));
        assert!(one.delete(id).unwrap());
        assert_eq!(one.0.ran.len(), 2);
        assert!(one.0.ran[0].ends_with("WHERE id = $1"));
        let mut none = store(Vec::new());
        assert_eq!(none.get(id).unwrap(), None);
        assert!(!none.delete(id).unwrap());
        assert!(none.ping().is_err(), "no row is not a healthy SELECT 1");
        assert!(none.count_login_attempt("c", 1, 1).is_err());
        let mut healthy = store(vec![vec![Column::Integer(1)]]);
        assert!(healthy.ping().is_ok());
    }
}
