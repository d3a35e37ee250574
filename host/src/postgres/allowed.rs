//! `allowed_outbound_hosts` as far as PostgreSQL is concerned (like Spin, a
//! bad or unresolvable entry does not stop start-up; it admits nothing), and
//! addresses parsed as Spin 4.0.2 parses them (tokio-postgres: `sslmode`
//! `disable`, `prefer` (the default) or `require`; `allow`, `verify-ca`,
//! `verify-full` are invalid) and checked as Spin checks them: every
//! host:port must match an entry (no port: 5432; hosts compared literally).
//! Messages never contain the password.

use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::Host;

const DEFAULT_PORT: u16 = 5432;

/// The longest a connection may take to open (and a pool slot to come).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An entry that can admit PostgreSQL addresses: a host in lower case (`*`,
/// `*.example.com` for any subdomain, or a name) and ports.
pub struct AllowedHost {
    host: String,
    ports: RangeInclusive<u16>,
}

impl AllowedHost {
    /// Parses an (already template-expanded) entry. `Ok(None)`: an entry for
    /// another scheme (e.g. `https://...`), irrelevant here.
    pub fn parse(entry: &str) -> Result<Option<AllowedHost>, ()> {
        if entry == "insecure:allow-all" {
            return Ok(Some(AllowedHost { host: "*".into(), ports: 0..=u16::MAX }));
        }
        let (scheme, rest) = entry.split_once("://").ok_or(())?;
        if !matches!(scheme, "postgres" | "postgresql" | "*") {
            return Ok(None);
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '@', '?', '#']) {
            return Err(());
        }
        let (host, port) = split_host_port(rest);
        let ports = match port {
            None => DEFAULT_PORT..=DEFAULT_PORT,
            Some("*") => 0..=u16::MAX,
            Some(p) => {
                let (first, last) = p.split_once("..").unwrap_or((p, p));
                first.parse().map_err(drop)?..=last.parse().map_err(drop)?
            }
        };
        Ok(Some(AllowedHost { host: host.to_ascii_lowercase(), ports }))
    }

    /// Whether the entry admits a connection to host:port.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        let host_ok = match self.host.strip_prefix('*') {
            Some("") => true,
            Some(suffix) if suffix.starts_with('.') => host.ends_with(suffix),
            _ => self.host == host,
        };
        host_ok && self.ports.contains(&port)
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

/// What the entries admit once `expand` expanded their templates (`Err`
/// names an undefined variable), and a warning for each entry that admits
/// nothing: named as written, never with its value (from variables).
pub fn postgres_hosts(
    entries: &[String],
    expand: impl Fn(&str) -> Result<String, String>,
) -> (Vec<AllowedHost>, Vec<String>) {
    let mut allowed = Vec::new();
    let mut warnings = Vec::new();
    for entry in entries {
        match expand(entry) {
            Err(var) => warnings.push(format!(
                "allowed_outbound_hosts entry {entry:?} uses undefined variable {var:?}; it admits nothing"
            )),
            Ok(expanded) => match AllowedHost::parse(&expanded) {
                Ok(Some(a)) => allowed.push(a),
                Ok(None) => {}
                Err(_) => warnings.push(format!(
                    "allowed_outbound_hosts entry {entry:?} is not scheme://host[:port]; it admits nothing"
                )),
            },
        }
    }
    (allowed, warnings)
}

/// Every host:port the settings would connect to (each host, then each
/// `hostaddr`, where a connection really goes); `Err`: a Unix socket path.
fn targets(config: &tokio_postgres::Config) -> Result<Vec<(String, u16)>, std::path::PathBuf> {
    let ports = config.get_ports();
    let port_of = |i: usize| match ports.len() {
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

pub fn parse_and_check(
    address: &str,
    allowed: &[AllowedHost],
) -> Result<tokio_postgres::Config, String> {
    let mut config = tokio_postgres::Config::from_str(address).map_err(|e| {
        // As Spin reports it: "invalid connection string: invalid value for
        // option `sslmode`" (the reason is the error's source).
        match std::error::Error::source(&e) {
            Some(reason) => format!("{e}: {reason}"),
            None => e.to_string(),
        }
    })?;
    config.connect_timeout(CONNECT_TIMEOUT);
    let targets = targets(&config)
        .map_err(|path| format!("address postgres://{} is not permitted", path.display()))?;
    if targets.is_empty() {
        return Err("address has no host".into());
    }
    for (host, port) in &targets {
        if !allowed.iter().any(|a| a.allows(host, *port)) {
            // IPv6 literals in brackets, as Spin writes them.
            let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
            return Err(format!("address postgres://{host}:{port} is not permitted"));
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> Vec<AllowedHost> {
        entries.iter().filter_map(|e| AllowedHost::parse(e).unwrap()).collect()
    }

    fn check(address: &str, entries: &[&str]) -> Result<(), String> {
        parse_and_check(address, &allowed(entries)).map(|_| ())
    }

    #[test]
    fn host_and_port_must_match_an_entry() {
        let ours = "postgres://127.0.0.1:5432";
        for (address, entry, admitted) in [
            ("postgres://u:p@127.0.0.1:5432/db", ours, true),
            ("postgres://u:p@127.0.0.1/db", ours, true), // no port means 5432
            ("host=127.0.0.1 user=u password=p dbname=db", ours, true),
            ("postgres://u:p@localhost/db", "postgres://localhost", true),
            // Every host of a multi-host address is checked.
            ("host=127.0.0.1,evil user=u", ours, false),
            // hostaddr is where the connection really goes.
            ("host=127.0.0.1 hostaddr=10.0.0.1 user=u", ours, false),
            ("postgres://db.example.com:5432", "postgres://*.example.com:5432", true),
            ("postgres://example.com:5432", "postgres://*.example.com:5432", false),
            ("postgres://h:6000", "postgres://h:*", true),
            ("postgres://h:6000", "postgres://h:5000..7000", true),
            ("postgres://h:6000", "*://*:*", true),
            ("postgres://h:6000", "https://h:6000", false),
            ("postgres://[::1]:5432", "postgres://[::1]:5432", true),
        ] {
            assert_eq!(check(address, &[entry]).is_ok(), admitted, "{address} by {entry}");
        }
        for (address, target) in
            [("127.0.0.1:5433/db", "127.0.0.1:5433"), ("localhost:5432/db", "localhost:5432")]
        {
            let refused = check(&format!("postgres://u:p@{address}"), &[ours]).unwrap_err();
            assert_eq!(refused, format!("address postgres://{target} is not permitted"));
        }
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
            assert!(error.contains("invalid value for option `sslmode`"), "{error}");
        }
    }

    #[test]
    fn entries_expand_and_bad_ones_admit_nothing_with_a_warning() {
        let entries = [
            "postgres://{{ db_host }}",
            "postgres://{{ nope }}",
            "https://example.com",
            "postgres://u:secret@h:1",
        ]
        .map(String::from);
        let (allowed, warnings) = postgres_hosts(&entries, |e| match e {
            "postgres://{{ db_host }}" => Ok("postgres://127.0.0.1:5433".into()),
            "postgres://{{ nope }}" => Err("nope".into()),
            other => Ok(other.to_string()),
        });
        assert_eq!(allowed.len(), 1);
        assert!(allowed[0].allows("127.0.0.1", 5433));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("undefined variable \"nope\""), "{}", warnings[0]);
        assert!(warnings[1].contains("is not scheme://host[:port]"), "{}", warnings[1]);
    }
}
