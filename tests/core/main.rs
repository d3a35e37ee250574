//! The native tests of the core, one binary: each module owns the rules
//! named in its first lines (tests/README.md maps them), through
//! `book_catalog::handle` and the tests' host in `support`.

mod support;

mod books;
mod catalog;
mod cors;
mod deploy;
mod health;
mod login;
mod openapi;
mod requests;
mod safe_writes;
mod tokens;
mod upgrade;
mod world;
