//! One module per resource: each handler takes what it needs (a store, the
//! host port) and answers a `Response` or an `ApiError`.

pub mod auth;
pub mod books;
pub mod health;
pub mod login;
