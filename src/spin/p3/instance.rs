//! What one instance keeps between the requests it serves (Spin: up to 128,
//! 16 at once): the settings, read again once `SETTINGS_KEPT` old, so that a
//! changed variable (a secret rotated in Vault) is in use within that long
//! whatever the host's reuse; and idle SQLite connections (`sqlite`). Books,
//! keys and login counts stay in the store, and every request is
//! authenticated: nothing kept changes an answer.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::super::resolve;
use crate::settings::{Setting, SettingUnavailable};

/// How long an instance answers with the settings it read.
pub const SETTINGS_KEPT: Duration = Duration::from_secs(5);

/// Every setting as read: its value, or why its source failed.
pub struct Settings(Vec<Result<Option<String>, SettingUnavailable>>);

impl Settings {
    pub fn get(&self, setting: Setting) -> Result<Option<String>, SettingUnavailable> {
        self.0[setting as usize].clone()
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
    let settings = Rc::new(Settings(futures::future::join_all(reads).await));
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
