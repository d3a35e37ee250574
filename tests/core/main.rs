//! The native tests of the core, one binary (tests/README.md).

mod support;

mod accounts;
mod books;
mod catalog;
mod changes;
mod cors;
mod deploy;
mod health;
mod login;
mod openapi;
mod requests;
mod safe_writes;
mod tokens;
mod transfer;
mod upgrade;
mod world;
