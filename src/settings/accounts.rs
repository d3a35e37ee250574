//! `accounts` (docs/configuration.md, "Accounts"): a credential and a role
//! per client beside the configured pair, parsed whole or refused whole.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::password_hash::{same_text, HashedPassword};
use super::{pair_username, Setting, SettingSource};
use crate::error::ApiError;

/// What a token's holder may do. The configured pair is an `Editor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `GET /books` and `GET /book/{id}` only.
    Reader,
    /// Every book endpoint.
    Editor,
}

/// One entry of `accounts`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    pub username: String,
    pub role: Role,
    /// An Argon2id PHC string, already checked to parse.
    pub password_hash: String,
    /// Names the credential in its tokens (`fp`): a new hash, a new
    /// fingerprint, and the old tokens are refused. A digest of the PHC
    /// string, whose salt and hash are secret, so it tells nothing of them.
    #[serde(skip)]
    pub fingerprint: String,
    /// The hash's Argon2 parameters (`HashedPassword::parameters`).
    #[serde(skip)]
    pub parameters: String,
}

/// The longest username, in characters.
pub const MAX_USERNAME_CHARS: usize = 64;

/// Every account, in the order configured; empty when `accounts` is unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounts(Vec<Account>);

impl Accounts {
    /// `value` as a JSON array of accounts, none named `pair` (the configured
    /// username). The reason names the entry by position, never a hash.
    pub fn parse(value: &str, pair: &str) -> Result<Accounts, String> {
        let Ok(Value::Array(entries)) = serde_json::from_str(value) else {
            return Err("not a JSON array of accounts".into());
        };
        let total = entries.len();
        let mut accounts: Vec<Account> = Vec::with_capacity(total);
        for (index, entry) in entries.into_iter().enumerate() {
            let at = |reason: &str| format!("entry {} of {total}: {reason}", index + 1);
            let mut account = serde_json::from_value::<Account>(entry)
                .map_err(|error| at(&format!("not an account ({error})")))?;
            let name = &account.username;
            if name.is_empty() || name.chars().count() > MAX_USERNAME_CHARS {
                return Err(at(&format!(
                    "the username is not 1 to {MAX_USERNAME_CHARS} characters"
                )));
            }
            if name.chars().any(char::is_control) {
                return Err(at("the username holds a control character"));
            }
            if name == pair {
                return Err(at("the username is auth_username's"));
            }
            if accounts.iter().any(|other| other.username == *name) {
                return Err(at("the username is another entry's"));
            }
            account.parameters = HashedPassword::parse(&account.password_hash)
                .map_err(|error| at(&format!("password_hash is {error}")))?
                .parameters();
            let digest = Sha256::digest(format!("{name}\0{}", account.password_hash));
            account.fingerprint = URL_SAFE_NO_PAD.encode(&digest[..12]);
            accounts.push(account);
        }
        Ok(Accounts(accounts))
    }

    pub fn find(&self, username: &str) -> Option<&Account> {
        self.0.iter().find(|account| account.username == username)
    }

    /// The account `username` names and whether it does; for a name no
    /// account has, the first account, so that checking a password against
    /// it costs what a known name's check costs (`mixed_parameters` warns
    /// when the accounts' costs differ). Every name is compared, in
    /// time independent of where they differ. `None` only without accounts.
    pub fn to_check(&self, username: &str) -> Option<(&Account, bool)> {
        let mut found = None;
        for account in &self.0 {
            if same_text(username, &account.username) {
                found = Some(account);
            }
        }
        Some(found.map_or((self.0.first()?, false), |account| (account, true)))
    }
}

impl Accounts {
    /// When the hashes do not all share Argon2 parameters, a warning naming
    /// each entry's: an unknown name is checked at the first entry's cost,
    /// so a name whose cost differs can be told from an unknown one by time.
    pub fn mixed_parameters(&self) -> Option<String> {
        let first = &self.0.first()?.parameters;
        if self.0.iter().all(|account| account.parameters == *first) {
            return None;
        }
        let total = self.0.len();
        let each: Vec<String> = (self.0.iter().enumerate())
            .map(|(index, account)| {
                format!("entry {} of {total} {}", index + 1, account.parameters)
            })
            .collect();
        Some(format!(
            "accounts / ACCOUNTS: the password hashes have different Argon2 parameters ({}): \
             a login's time tells a name whose cost differs from the first entry's from an \
             unknown name; hash every password with the same parameters",
            each.join(", ")
        ))
    }
}

/// `accounts`, parsed; unset is none. A value that cannot be used refuses
/// every login and every token (500): no entry is guessed at.
pub fn read_accounts(ctx: &mut (impl SettingSource + ?Sized)) -> Result<Accounts, ApiError> {
    let Some(value) = ctx.setting(Setting::Accounts)? else {
        return Ok(Accounts::default());
    };
    let pair = pair_username(ctx)?;
    let accounts = Accounts::parse(&value, &pair).map_err(|reason| {
        ApiError::internal(format!("accounts / ACCOUNTS is unusable: {reason}"))
    })?;
    if let Some(warning) = accounts.mixed_parameters() {
        ctx.warn(&warning);
    }
    Ok(accounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str =
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";

    fn entry(username: &str, role: &str) -> String {
        format!(r#"{{"username":"{username}","role":"{role}","password_hash":"{HASH}"}}"#)
    }

    #[test]
    fn accounts_parse_with_their_roles_and_fingerprints() {
        let value = format!("[{}, {}]", entry("rita", "reader"), entry("ed \u{e9}", "editor"));
        let accounts = Accounts::parse(&value, "admin").unwrap();
        let rita = accounts.find("rita").unwrap();
        assert_eq!((rita.role, rita.password_hash.as_str()), (Role::Reader, HASH));
        assert_eq!(accounts.find("ed \u{e9}").unwrap().role, Role::Editor);
        assert_eq!(accounts.find("Rita"), None);
        assert_eq!(rita.fingerprint.len(), 16);
        assert_ne!(rita.fingerprint, accounts.find("ed \u{e9}").unwrap().fingerprint);
        assert_eq!(Accounts::parse("[]", "admin"), Ok(Accounts::default()));
        let long = "n".repeat(MAX_USERNAME_CHARS);
        assert!(Accounts::parse(&format!("[{}]", entry(&long, "reader")), "admin").is_ok());
    }

    #[test]
    fn an_unusable_value_names_the_entry_never_the_hash() {
        let good = entry("rita", "reader");
        let other_hash = HASH.replace("CTFh", "DTFh");
        let cases = [
            ("", "not a JSON array of accounts"),
            ("{}", "not a JSON array of accounts"),
            ("[1]", "entry 1 of 1: not an account"),
            (&format!("[{good}, {}]", entry("x", "admin")), "entry 2 of 2: not an account"),
            (&format!("[{}]", good.replace("\"role\"", "\"x\":1,\"role\"")), "unknown field"),
            (r#"[{"username":"a","role":"reader"}]"#, "missing field `password_hash`"),
            (&format!("[{}]", entry("", "reader")), "entry 1 of 1: the username is not 1 to 64"),
            (&format!("[{}]", entry(&"n".repeat(65), "editor")), "not 1 to 64 characters"),
            (&format!("[{}]", entry("a\\tb", "editor")), "a control character"),
            (&format!("[{}]", entry("admin", "editor")), "the username is auth_username's"),
            (&format!("[{good}, {good}]"), "entry 2 of 2: the username is another entry's"),
            (&format!("[{}]", good.replace(HASH, "$2b$12$abc")), "password_hash is not a usable"),
            (&format!("[{}]", good.replace(HASH, &other_hash.replace("t=2", "t=11"))), "t=11"),
        ];
        for (value, reason) in cases {
            let error = Accounts::parse(value, "admin").expect_err(value);
            assert!(error.contains(reason), "{value}: {error}");
            assert!(!error.contains("CTFh") && !error.contains("DTFh"), "{error}");
        }
    }

    #[test]
    fn an_unknown_name_is_checked_against_the_first_account() {
        let value = format!("[{}, {}]", entry("rita", "reader"), entry("ed", "editor"));
        let accounts = Accounts::parse(&value, "admin").unwrap();
        let checked =
            |name| accounts.to_check(name).map(|(account, known)| (&*account.username, known));
        assert_eq!(checked("ed"), Some(("ed", true)));
        assert_eq!(checked("rita"), Some(("rita", true)));
        assert_eq!(checked("nobody"), Some(("rita", false)));
        assert_eq!(checked(""), Some(("rita", false)));
        assert_eq!(Accounts::default().to_check("rita"), None);
    }

    #[test]
    fn hashes_of_different_costs_are_named_in_a_warning() {
        let same = format!("[{}, {}]", entry("rita", "reader"), entry("ed", "editor"));
        assert_eq!(Accounts::parse(&same, "admin").unwrap().mixed_parameters(), None);
        assert_eq!(Accounts::default().mixed_parameters(), None);
        let cheap = entry("ed", "editor").replace("m=65536,t=2", "m=19456,t=2");
        let mixed = format!("[{}, {cheap}]", entry("rita", "reader"));
        let warning = Accounts::parse(&mixed, "admin").unwrap().mixed_parameters().unwrap();
        assert!(warning.contains("entry 1 of 2 m=65536,t=2,p=1, entry 2 of 2 m=19456,t=2,p=1"));
        assert!(!warning.contains("CTFh"), "{warning}");
    }
}
