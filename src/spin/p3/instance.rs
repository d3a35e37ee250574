//! What one instance keeps between the requests it serves (Spin: up to 128,
//! 16 at once): the settings (and `accounts` parsed), read again once
//! `SETTINGS_KEPT` old, so that a changed variable (a secret rotated in
//! Vault, an account removed) is in use within that long whatever the host's
//! reuse; and its idle connections (`Kept`). Books, keys and login counts
//! stay in the store, and every request is authenticated: nothing kept
//! changes an answer.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::thread::LocalKey;
use std::time::{Duration, Instant};

use super::super::resolve;
use crate::db;
use crate::error::ApiError;
use crate::settings::{Accounts, Setting, SettingUnavailable};

/// How long an instance answers with the settings it read.
pub const SETTINGS_KEPT: Duration = Duration::from_secs(5);

/// Every setting as read: its value, or why its source failed; and
/// `accounts` parsed, once the first request needs them.
pub struct Settings {
    values: Vec<Result<Option<String>, SettingUnavailable>>,
    pub accounts: OnceCell<Result<Rc<Accounts>, ApiError>>,
}

impl Settings {
    pub fn get(&self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        self.values[setting as usize].clone()
    }
}

thread_local! {
    static SETTINGS: RefCell<Option<(Instant, Rc<Settings>)>> = const { RefCell::new(None) };
}

/// The instance's settings, read (all at once, concurrently) when it has
/// none younger than `SETTINGS_KEPT`. No borrow is held across the reads:
/// requests that start meanwhile read them too.
pub async fn settings() -> Rc<Settings> {
    let kept = SETTINGS.with_borrow(|kept| {
        kept.as_ref().filter(|(read, _)| read.elapsed() < SETTINGS_KEPT).map(|(_, s)| s.clone())
    });
    if let Some(settings) = kept {
        return settings;
    }
    let reads = Setting::ALL
        .map(|setting| async move { resolve(setting, variable(setting.variable_name()).await) });
    let values = futures::future::join_all(reads).await;
    let settings = Rc::new(Settings { values, accounts: OnceCell::new() });
    SETTINGS.set(Some((Instant::now(), settings.clone())));
    settings
}

/// A Spin variable, as `resolve` takes it.
async fn variable(name: &str) -> Result<Option<String>, String> {
    use spin_sdk::variables::Error;
    match spin_sdk::variables::get(name).await {
        Ok(value) => Ok(Some(value)),
        Err(Error::Undefined(_)) => Ok(None),
        Err(Error::Provider(reason)) => Err(format!("the variables provider failed: {reason}")),
        Err(Error::InvalidName(reason)) => Err(format!("invalid variable name: {reason}")),
        Err(Error::Other(reason)) => Err(reason),
    }
}

/// Idle connections an instance keeps of a store: one per request it may
/// run at once.
const KEPT_IDLE: usize = 16;

/// A connection (with what it has set up, `held`) that the instance keeps
/// between requests: a request takes an idle one for its `address` or opens
/// one, and gives it back when done, so requests running at once never share
/// one, nor a transaction.
pub struct Kept<T> {
    address: String,
    pub held: T,
    in_transaction: bool,
    broken: bool,
}

pub type Idle<T> = RefCell<Vec<Kept<T>>>;

impl<T> Kept<T> {
    /// An idle connection to `address`, if the instance keeps one.
    pub fn take(idle: &'static LocalKey<Idle<T>>, address: &str) -> Option<Kept<T>> {
        idle.with_borrow_mut(|idle| {
            let found = idle.iter().rposition(|kept| kept.address == address)?;
            Some(idle.swap_remove(found))
        })
    }

    pub fn new(address: &str, held: T) -> Kept<T> {
        Kept { address: address.to_string(), held, in_transaction: false, broken: false }
    }

    /// Notes a statement that ran: whether it began or ended a transaction.
    pub fn ran(&mut self, sql: &str) {
        match sql {
            db::BEGIN_WRITE | db::BEGIN => self.in_transaction = true,
            db::COMMIT | db::ROLLBACK => self.in_transaction = false,
            _ => {}
        }
    }

    /// Not to be kept: its statement failed in a way that may have broken it.
    #[cfg(feature = "postgres")]
    pub fn broken(&mut self) {
        self.broken = true;
    }

    /// Kept for the next request, unless a transaction is open on it (a
    /// request cut short in one: closing it rolls that back) or it broke.
    pub fn give_back(self, idle: &'static LocalKey<Idle<T>>) {
        if !self.in_transaction && !self.broken {
            idle.with_borrow_mut(|idle| {
                if idle.len() < KEPT_IDLE {
                    idle.push(self);
                }
            });
        }
    }
}
