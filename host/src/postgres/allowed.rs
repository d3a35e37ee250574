//! `allowed_outbound_hosts`, as far as PostgreSQL is concerned. Like Spin, a
//! bad or unresolvable entry does not stop start-up; it admits nothing.

pub const DEFAULT_PORT: u16 = 5432;

/// One `allowed_outbound_hosts` entry that can admit PostgreSQL addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowedHost {
    host: HostPattern,
    ports: std::ops::RangeInclusive<u16>,
}

#[derive(Debug, Clone, PartialEq)]
enum HostPattern {
    Any,
    /// `*.example.com`: any subdomain.
    Suffix(String),
    Exact(String),
}

impl AllowedHost {
    /// Parses an (already template-expanded) entry. `Ok(None)`: an entry for
    /// another scheme (e.g. `https://...`), irrelevant here.
    pub fn parse(entry: &str) -> Result<Option<AllowedHost>, String> {
        if entry == "insecure:allow-all" {
            return Ok(Some(AllowedHost { host: HostPattern::Any, ports: 0..=u16::MAX }));
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
        let ports = match port {
            None => DEFAULT_PORT..=DEFAULT_PORT,
            Some("*") => 0..=u16::MAX,
            Some(p) => match p.split_once("..") {
                Some((a, b)) => match (a.parse(), b.parse()) {
                    (Ok(a), Ok(b)) => a..=b,
                    _ => return Err(format!("{entry:?} has an invalid port range")),
                },
                None => match p.parse() {
                    Ok(p) => p..=p,
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
        Ok(Some(AllowedHost { host, ports }))
    }

    /// Whether the entry admits a connection to host:port.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        let host_ok = match &self.host {
            HostPattern::Any => true,
            HostPattern::Suffix(s) => host.ends_with(s.as_str()),
            HostPattern::Exact(h) => *h == host,
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

#[cfg(test)]
mod tests {
    use super::*;

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
