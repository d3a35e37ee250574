//! Which PostgreSQL servers the component may reach.
//!
//! Like Spin: every host:port of an address must match an
//! `allowed_outbound_hosts` entry `postgres://host:port` (no port = 5432, host
//! strings compared literally). Messages never contain the password.

use std::str::FromStr;

use tokio_postgres::config::Host;

use super::pool::CONNECT_TIMEOUT;

pub const DEFAULT_PORT: u16 = 5432;

/// One `allowed_outbound_hosts` entry that can admit PostgreSQL addresses.
#[derive(Debug, Clone, PartialEq)]
pub enum AllowedHost {
    /// `insecure:allow-all`, or `*://*:*`.
    Any,
    Host {
        host: HostPattern,
        port: PortPattern,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum HostPattern {
    Any,
    /// `*.example.com`: any subdomain.
    Suffix(String),
    Exact(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PortPattern {
    Any,
    Range(u16, u16),
}

impl AllowedHost {
    /// Parses an (already template-expanded) entry. `Ok(None)`: an entry for
    /// another scheme (e.g. `https://...`), irrelevant here.
    pub fn parse(entry: &str) -> Result<Option<AllowedHost>, String> {
        if entry == "insecure:allow-all" {
            return Ok(Some(AllowedHost::Any));
        }
        let Some((scheme, rest)) = entry.split_once("://") else {
            return Err(format!("{entry:?} is not scheme://host[:port]"));
        };
        if !matches!(scheme, "postgres" | "postgresql" | "*") {
            return Ok(None);
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '@', '?', '#']) {
            return Err(format!("{entry:?} must be scheme://host[:port] only"));
        }
        let (host, port) = split_host_port(rest);
        let port = match port {
            None => PortPattern::Range(DEFAULT_PORT, DEFAULT_PORT),
            Some("*") => PortPattern::Any,
            Some(p) => match p.split_once("..") {
                Some((a, b)) => match (a.parse(), b.parse()) {
                    (Ok(a), Ok(b)) => PortPattern::Range(a, b),
                    _ => return Err(format!("{entry:?} has an invalid port range")),
                },
                None => match p.parse() {
                    Ok(p) => PortPattern::Range(p, p),
                    Err(_) => return Err(format!("{entry:?} has an invalid port")),
                },
            },
        };
        let host = host.to_ascii_lowercase();
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(suffix) = host.strip_prefix("*.") {
            HostPattern::Suffix(format!(".{suffix}"))
        } else {
            HostPattern::Exact(host)
        };
        if host == HostPattern::Any && port == PortPattern::Any && scheme == "*" {
            return Ok(Some(AllowedHost::Any));
        }
        Ok(Some(AllowedHost::Host { host, port }))
    }

    /// Whether the entry admits a connection to host:port.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            AllowedHost::Any => true,
            AllowedHost::Host { host: hp, port: pp } => {
                let host = host.to_ascii_lowercase();
                let host_ok = match hp {
                    HostPattern::Any => true,
                    HostPattern::Suffix(s) => host.ends_with(s.as_str()),
                    HostPattern::Exact(h) => *h == host,
                };
                let port_ok = match pp {
                    PortPattern::Any => true,
                    PortPattern::Range(a, b) => (*a..=*b).contains(&port),
                };
                host_ok && port_ok
            }
        }
    }
}

/// `host:port`, `[v6]:port`, `host`: brackets removed from IPv6 literals.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(v6) = s.strip_prefix('[') {
        if let Some((host, rest)) = v6.split_once(']') {
            return (host, rest.strip_prefix(':'));
        }
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

fn display_host(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Parses an address (URL or key=value) as Spin 4.0.2 does, with
/// tokio-postgres: `sslmode` is `disable`, `prefer` (the default) or
/// `require`; Spin refuses `allow`, `verify-ca` and `verify-full` as invalid,
/// and so does this. Messages never contain the password.
pub fn parse(address: &str) -> Result<tokio_postgres::Config, String> {
    let mut config = tokio_postgres::Config::from_str(address).map_err(|e| {
        // "invalid connection string: invalid value for option `sslmode`",
        // as Spin reports it (the reason is the error's source).
        match std::error::Error::source(&e) {
            Some(reason) => format!("{e}: {reason}"),
            None => e.to_string(),
        }
    })?;
    config.connect_timeout(CONNECT_TIMEOUT);
    Ok(config)
}

/// Every host:port the settings would connect to (a host, then each
/// `hostaddr`, which is where a connection really goes); `Err` with the path
/// of a Unix socket, which no entry admits.
pub fn targets(config: &tokio_postgres::Config) -> Result<Vec<(String, u16)>, std::path::PathBuf> {
    let ports = config.get_ports();
    let port_of = |i: usize| match ports.len() {
        0 => DEFAULT_PORT,
        1 => ports[0],
        _ => ports.get(i).copied().unwrap_or(DEFAULT_PORT),
    };
    let mut targets: Vec<(String, u16)> = Vec::new();
    for (i, host) in config.get_hosts().iter().enumerate() {
        match host {
            Host::Tcp(h) => targets.push((h.clone(), port_of(i))),
            #[cfg(unix)]
            Host::Unix(path) => return Err(path.clone()),
        }
    }
    for (i, ip) in config.get_hostaddrs().iter().enumerate() {
        targets.push((ip.to_string(), port_of(i)));
    }
    Ok(targets)
}

/// Parses an address and checks every host:port it would connect to.
pub fn parse_and_check(
    address: &str,
    allowed: &[AllowedHost],
) -> Result<tokio_postgres::Config, String> {
    let config = parse(address)?;
    let targets = targets(&config)
        .map_err(|path| format!("address postgres://{} is not permitted", path.display()))?;
    if targets.is_empty() {
        return Err("address has no host".into());
    }
    for (host, port) in &targets {
        if !allowed.iter().any(|a| a.allows(host, *port)) {
            return Err(format!(
                "address postgres://{}:{port} is not permitted",
                display_host(host)
            ));
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> Vec<AllowedHost> {
        entries
            .iter()
            .filter_map(|e| AllowedHost::parse(e).unwrap())
            .collect()
    }

    fn check(address: &str, entries: &[&str]) -> Result<(), String> {
        parse_and_check(address, &allowed(entries)).map(|_| ())
    }

    #[test]
    fn host_and_port_must_match() {
        let ours = ["postgres://127.0.0.1:5432"];
        assert!(check("postgres://u:p@127.0.0.1:5432/db", &ours).is_ok());
        assert!(
            check("postgres://u:p@127.0.0.1/db", &ours).is_ok(),
            "no port means 5432"
        );
        assert!(check("host=127.0.0.1 user=u password=p dbname=db", &ours).is_ok());
        assert_eq!(
            check("postgres://u:p@127.0.0.1:5433/db", &ours).unwrap_err(),
            "address postgres://127.0.0.1:5433 is not permitted"
        );
        assert_eq!(
            check("postgres://u:p@localhost:5432/db", &ours).unwrap_err(),
            "address postgres://localhost:5432 is not permitted"
        );
        assert!(check("postgres://u:p@localhost/db", &["postgres://localhost"]).is_ok());
        // Every host of a multi-host address is checked.
        assert!(check("host=127.0.0.1,evil user=u", &ours).is_err());
        // hostaddr is where the connection really goes.
        assert!(check("host=127.0.0.1 hostaddr=10.0.0.1 user=u", &ours).is_err());
    }

    #[test]
    fn wildcards_and_other_schemes() {
        assert!(check(
            "postgres://db.example.com:5432",
            &["postgres://*.example.com:5432"]
        )
        .is_ok());
        assert!(check(
            "postgres://example.com:5432",
            &["postgres://*.example.com:5432"]
        )
        .is_err());
        assert!(check("postgres://h:6000", &["postgres://h:*"]).is_ok());
        assert!(check("postgres://h:6000", &["postgres://h:5000..7000"]).is_ok());
        assert!(check("postgres://h:6000", &["*://*:*"]).is_ok());
        assert!(check("postgres://h:6000", &["https://h:6000"]).is_err());
        assert!(check("postgres://[::1]:5432", &["postgres://[::1]:5432"]).is_ok());
        assert!(AllowedHost::parse("postgres://u:p@h:1").is_err());
        assert!(AllowedHost::parse("h:1").is_err());
    }

    #[test]
    fn messages_never_carry_the_password() {
        for address in [
            "postgres://user:s3cr3t@10.1.1.1:5432/db",
            "postgresql://user:s3cr3t@10.1.1.1/db?sslmode=require",
            "host=10.1.1.1 user=user password=s3cr3t",
            "postgres://user:s3cr3t@10.1.1.1:5432/db?bogus=1",
            "postgres://user:s3cr3t@/db",
        ] {
            let err = check(address, &["postgres://127.0.0.1:5432"]).unwrap_err();
            assert!(!err.contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn sslmodes_are_spins() {
        use tokio_postgres::config::SslMode;
        let allowed = allowed(&["postgres://h"]);
        for (mode, expected) in [
            ("", SslMode::Prefer),
            ("?sslmode=disable", SslMode::Disable),
            ("?sslmode=prefer", SslMode::Prefer),
            ("?sslmode=require", SslMode::Require),
        ] {
            let config = parse_and_check(&format!("postgres://h/db{mode}"), &allowed).unwrap();
            assert_eq!(config.get_ssl_mode(), expected, "{mode}");
        }
        for mode in ["allow", "verify-ca", "verify-full", "bogus"] {
            let error =
                parse_and_check(&format!("postgres://h/db?sslmode={mode}"), &allowed).unwrap_err();
            assert!(
                error.contains("invalid value for option `sslmode`"),
                "{error}"
            );
        }
    }
}
