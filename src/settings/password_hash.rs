//! `auth_password_hash`: an Argon2id hash in PHC form (docs/configuration.md,
//! "Password hash"), refused unless its costs are within sane bounds, and
//! the check of a password against it.

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The largest Argon2 memory accepted, in KiB (64 MiB, RFC 9106's second
/// recommended setting): verifying allocates it in the component's memory,
/// and far more could exhaust it and trap.
pub const MAX_MEMORY_KIB: u32 = 64 * 1024;
/// The most passes accepted: a login costs passes times memory in CPU
/// (OWASP's settings use 1 to 5; 100 would tie the service up).
pub const MAX_TIME_COST: u32 = 10;
/// The most lanes accepted. A component computes them one after another (no
/// threads), so more lanes only cost more time.
pub const MAX_PARALLELISM: u32 = 4;

/// Why a configured hash cannot be used. Never holds the hash itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHash(pub String);

impl std::fmt::Display for InvalidHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not a usable Argon2id PHC string ($argon2id$v=19$m=...,t=...,p=...$salt$hash): {}",
            self.0
        )
    }
}

/// An Argon2id PHC string, parsed and checked, ready to verify against.
#[derive(Debug)]
pub struct HashedPassword<'a> {
    hash: PasswordHash<'a>,
    params: Params,
}

impl<'a> HashedPassword<'a> {
    /// Parses `phc`; the algorithm must be Argon2id, and the parameters
    /// (memory, passes, lanes, output length) must be valid Argon2 ones, with
    /// at most `MAX_MEMORY_KIB` of memory.
    pub fn parse(phc: &'a str) -> Result<HashedPassword<'a>, InvalidHash> {
        // The reasons below are fixed texts or the parser's own words about
        // which part is wrong, never the string's content.
        let hash = PasswordHash::new(phc.trim())
            .map_err(|error| InvalidHash(format!("not a PHC string ({error})")))?;
        if Algorithm::try_from(hash.algorithm) != Ok(Algorithm::Argon2id) {
            return Err(InvalidHash("the algorithm is not argon2id".into()));
        }
        if hash.salt.is_none() || hash.hash.is_none() {
            return Err(InvalidHash("the salt or the hash is missing".into()));
        }
        let params = Params::try_from(&hash)
            .map_err(|error| InvalidHash(format!("invalid parameters ({error})")))?;
        if params.m_cost() > MAX_MEMORY_KIB {
            return Err(InvalidHash(format!(
                "m={} KiB is more memory than the {MAX_MEMORY_KIB} KiB allowed",
                params.m_cost()
            )));
        }
        if params.t_cost() > MAX_TIME_COST {
            return Err(InvalidHash(format!(
                "t={} is more passes than the {MAX_TIME_COST} allowed",
                params.t_cost()
            )));
        }
        if params.p_cost() > MAX_PARALLELISM {
            return Err(InvalidHash(format!(
                "p={} is more lanes than the {MAX_PARALLELISM} allowed",
                params.p_cost()
            )));
        }
        if let Some(version) = hash.version {
            argon2::Version::try_from(version)
                .map_err(|_| InvalidHash("unknown Argon2 version".into()))?;
        }
        Ok(HashedPassword { hash, params })
    }

    /// Its Argon2 parameters, `m=..,t=..,p=..`: what one verification costs.
    pub fn parameters(&self) -> String {
        let params = &self.params;
        format!("m={},t={},p={}", params.m_cost(), params.t_cost(), params.p_cost())
    }

    /// Whether `password` is the one hashed, computed with the string's own
    /// parameters and salt; the outputs compare in constant time.
    pub fn verify(&self, password: &str) -> bool {
        Argon2::default().verify_password(password.as_bytes(), &self.hash).is_ok()
    }
}

/// Compares in time independent of where the texts differ and of their
/// lengths: both are hashed to fixed-size digests, which `subtle` compares
/// in constant time.
pub fn same_text(given: &str, expected: &str) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    given.ct_eq(&expected).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Argon2 reference implementation's own test vector (phc-winner-argon2
    /// src/test.c): "password", salt "somesalt", t=2, m=65536, p=1, v=19.
    const REFERENCE: &str =
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";

    /// `password` hashed by this crate with salt `salt` (base64) and `params`.
    fn hash(password: &str, salt: &str, params: Params) -> String {
        use argon2::password_hash::{PasswordHasher, SaltString};
        let salt = SaltString::from_b64(salt).unwrap();
        let argon2 = Argon2::new(Algorithm::Argon2id, argon2::Version::V0x13, params);
        argon2.hash_password(password.as_bytes(), &salt).unwrap().to_string()
    }

    /// OWASP's parameters (m=19456, t=2, p=1).
    fn owasp_hash() -> String {
        hash("password", "c29tZXNhbHRzb21lc2FsdA", Params::new(19456, 2, 1, None).unwrap())
    }

    #[test]
    fn same_text_compares_whole_values() {
        assert!(same_text("password", "password"));
        assert!(same_text("", ""));
        assert!(!same_text("password", "passwore"));
        assert!(!same_text("password", "password "));
        assert!(!same_text("", "password"));
    }

    #[test]
    fn the_reference_vector_verifies() {
        let hashed = HashedPassword::parse(REFERENCE).unwrap();
        assert!(hashed.verify("password"));
        assert!(!hashed.verify("passwore"));
    }

    #[test]
    fn a_hash_verifies_its_password_only() {
        let phc = owasp_hash();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$"));
        let hashed = HashedPassword::parse(&phc).unwrap();
        assert!(hashed.verify("password"));
        assert!(!hashed.verify("Password"));
        assert!(!hashed.verify("password "));
        assert!(!hashed.verify(""));
    }

    #[test]
    fn parameters_come_from_the_string() {
        let phc = hash("s3cret", "YW5vdGhlcnNhbHQ", Params::new(64, 1, 2, Some(16)).unwrap());
        assert!(phc.contains("m=64,t=1,p=2"), "{phc}");
        let hashed = HashedPassword::parse(&phc).unwrap();
        assert!(hashed.verify("s3cret"));
        assert!(!hashed.verify("s3cret!"));
    }

    #[test]
    fn unusable_strings_are_refused_without_echoing_them() {
        let good = owasp_hash();
        let argon2i = good.replacen("$argon2id$", "$argon2i$", 1);
        let argon2d = good.replacen("$argon2id$", "$argon2d$", 1);
        let huge = good.replacen("m=19456", "m=4194304", 1);
        let slow = good.replacen("t=2", "t=11", 1);
        let wide = good.replacen("p=1", "p=5", 1);
        let zero_t = good.replacen("t=2", "t=0", 1);
        let no_hash = good.rsplit_once('$').unwrap().0.to_string();
        for bad in [
            "",
            "password",
            "$argon2id$",
            "$2b$12$abcdefghijklmnopqrstuv",
            "$pbkdf2-sha256$i=1000$c2FsdA$aGFzaA",
            &argon2i,
            &argon2d,
            &huge,
            &slow,
            &wide,
            &zero_t,
            &no_hash,
            "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$!!!",
            "$argon2id$v=7$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
        ] {
            let error = HashedPassword::parse(bad).expect_err(bad).to_string();
            assert!(error.starts_with("not a usable Argon2id"), "{error}");
            // The message quotes the expected form; anything else of the
            // input (here its last 8 characters) must not appear.
            let tail = &bad[bad.len().saturating_sub(8)..];
            if bad.len() > 8 && !"$argon2id$v=19$m=...,t=...,p=...$salt$hash".contains(tail) {
                assert!(!error.contains(tail), "{error} echoes {bad}");
            }
        }
    }

    #[test]
    fn costs_at_the_bounds_are_accepted() {
        let params = Params::new(64, MAX_TIME_COST, MAX_PARALLELISM, None).unwrap();
        let phc = hash("edge", "Ym91bmRzYm91bmRz", params);
        assert!(HashedPassword::parse(&phc).unwrap().verify("edge"));
        let max_memory = phc.replacen("m=64", &format!("m={MAX_MEMORY_KIB}"), 1);
        assert!(HashedPassword::parse(&max_memory).is_ok());
    }
}
