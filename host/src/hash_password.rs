//! `book-host hash-password`: reads a password from standard input and
//! prints its Argon2id PHC string, for `auth_password_hash` /
//! `AUTH_PASSWORD_HASH`.
//!
//! Parameters: OWASP's Password Storage Cheat Sheet's first Argon2id
//! setting, m=19456 KiB (19 MiB), t=2, p=1; a random 16-byte salt from the
//! operating system. The component reads the parameters back from the string.

use std::io::Read;

use anyhow::{bail, Context, Result};
use argon2::password_hash::{PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// OWASP: "m=19456 (19 MiB), t=2, p=1".
pub const MEMORY_KIB: u32 = 19_456;
pub const PASSES: u32 = 2;
pub const LANES: u32 = 1;

/// The password as read: everything on standard input but one trailing line
/// end (`echo` and a typed line add one), so spaces inside and at the ends
/// are kept as typed.
pub fn password_from(input: &str) -> Result<&str> {
    let password = input
        .strip_suffix("\r\n")
        .or_else(|| input.strip_suffix('\n'))
        .unwrap_or(input);
    if password.is_empty() {
        bail!("no password on standard input (e.g. printf '%s' 'the password' | book-host hash-password)");
    }
    if password.contains('\n') {
        bail!("the password spans several lines; give one line on standard input");
    }
    Ok(password)
}

/// The PHC string of `password` with `salt` (16 random bytes in use).
pub fn phc(password: &str, salt: &[u8]) -> Result<String> {
    let params = Params::new(MEMORY_KIB, PASSES, LANES, None)
        .map_err(|e| anyhow::anyhow!("Argon2 parameters: {e}"))?;
    let salt = SaltString::encode_b64(salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
    let hash = Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("hashing: {e}"))?;
    Ok(hash.to_string())
}

/// 16 bytes from the kernel's random source.
fn random_salt() -> Result<[u8; 16]> {
    let mut salt = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut salt))
        .context("reading /dev/urandom")?;
    Ok(salt)
}

/// The subcommand: stdin in, the PHC string on stdout. Never echoes the password.
pub fn run() -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the password from standard input (UTF-8)")?;
    let password = password_from(&input)?;
    println!("{}", phc(password, &random_salt()?)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHash, PasswordVerifier};

    #[test]
    fn one_trailing_line_end_is_dropped() {
        assert_eq!(password_from("pw\n").unwrap(), "pw");
        assert_eq!(password_from("pw\r\n").unwrap(), "pw");
        assert_eq!(password_from(" pw ").unwrap(), " pw ");
        assert!(password_from("").is_err());
        assert!(password_from("\n").is_err());
        assert!(password_from("a\nb\n").is_err());
    }

    #[test]
    fn the_hash_is_argon2id_with_owasp_parameters_and_verifies() {
        let phc = phc("correct horse", &[7u8; 16]).unwrap();
        assert!(
            phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$BwcHBwcHBwcHBwcHBwcHBw$"),
            "{phc}"
        );
        let parsed = PasswordHash::new(&phc).unwrap();
        assert!(Argon2::default()
            .verify_password(b"correct horse", &parsed)
            .is_ok());
        assert!(Argon2::default()
            .verify_password(b"correct horse!", &parsed)
            .is_err());
        assert_ne!(random_salt().unwrap(), random_salt().unwrap());
        // The component accepts what this writes.
        let hashed = book_catalog::password::HashedPassword::parse(&phc).unwrap();
        assert!(hashed.verify("correct horse"));
    }
}
