//! Who the client of a request is, for counting failed logins per client,
//! in the order docs/configuration.md ("Who the client is") gives: the
//! client address header, else with N trusted proxies the address N places
//! from the right of "every `X-Forwarded-For` entry, then the peer" (the
//! entries a client wrote itself are left of those its proxies appended),
//! else the peer. An IPv6 address counts by its /64: one end site holds at
//! least a /64, so single addresses would give it 2^64 budgets.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use crate::port::header_values;
use crate::settings::ClientIdentity;

/// The shared key of every client whose address cannot be read.
pub const UNKNOWN_CLIENT: &str = "unknown";

/// The request header Spin puts the peer's `ip:port` in.
const PEER_ADDRESS_HEADER: &str = "spin-client-addr";
const FORWARDED_FOR_HEADER: &str = "x-forwarded-for";

/// The request headers the client is read from.
#[derive(Debug, Clone, Default)]
pub struct ClientHeaders<'a> {
    /// `spin-client-addr`: set by the platform, `ip:port`.
    pub peer: Option<&'a [u8]>,
    /// Every `X-Forwarded-For` field value, in the order received.
    pub forwarded_for: Vec<&'a [u8]>,
    /// The value of `ClientIdentity::ip_header`, when the request has it.
    pub ip_header: Option<&'a [u8]>,
}

impl ClientIdentity {
    /// The key of the client of a request with these header fields (names
    /// in lower case, in the order received). Spin appends its own
    /// `spin-client-addr` after any the client sent, so the platform's value
    /// is the last one.
    pub fn key_of_request(&self, fields: &[(String, Vec<u8>)]) -> String {
        let values = |name| header_values(fields, name);
        self.key(&ClientHeaders {
            peer: values(PEER_ADDRESS_HEADER).next_back(),
            forwarded_for: values(FORWARDED_FOR_HEADER).collect(),
            ip_header: self.ip_header.as_deref().and_then(|name| values(name).next_back()),
        })
    }

    /// The key the client's failed logins are counted under.
    pub fn key(&self, headers: &ClientHeaders) -> String {
        let from_header = self.ip_header.as_ref().and(headers.ip_header).and_then(parse_address);
        let address = match from_header {
            Some(ip) => Some(ip),
            None if self.proxy_hops > 0 => self.forwarded(headers),
            None => headers.peer.and_then(parse_address),
        };
        address.map_or_else(|| UNKNOWN_CLIENT.to_string(), key_of)
    }

    /// The entry `proxy_hops` places from the right of the `X-Forwarded-For`
    /// entries followed by the peer; the leftmost when there are fewer.
    fn forwarded(&self, headers: &ClientHeaders) -> Option<IpAddr> {
        let entries: Vec<&[u8]> = headers
            .forwarded_for
            .iter()
            .flat_map(|value| value.split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .filter(|entry| !entry.is_empty())
            .chain(headers.peer)
            .collect();
        let hops = usize::try_from(self.proxy_hops).unwrap_or(usize::MAX);
        let chosen = entries.len().checked_sub(1)?.saturating_sub(hops);
        entries.get(chosen).copied().and_then(parse_address)
    }
}

/// `1.2.3.4`, `1.2.3.4:5678`, `::1`, `[::1]`, `[::1]:5678` -> the IP,
/// IPv4-mapped IPv6 as IPv4.
pub fn parse_address(value: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.is_empty() || text.len() > 64 {
        return None;
    }
    let ip = text
        .parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|addr| addr.ip()))
        .or_else(|| {
            let inner = text.strip_prefix('[')?.strip_suffix(']')?;
            inner.parse::<IpAddr>().ok()
        })?;
    Some(ip.to_canonical())
}

/// An IPv4 address as it is; an IPv6 address as its /64 (`2001:db8:1:2::/64`).
fn key_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            format!("{}/64", Ipv6Addr::from(prefix))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(
        identity: &ClientIdentity,
        peer: &str,
        forwarded: &[&str],
        header: Option<&str>,
    ) -> String {
        identity.key(&ClientHeaders {
            peer: Some(peer.as_bytes()),
            forwarded_for: forwarded.iter().map(|v| v.as_bytes()).collect(),
            ip_header: header.map(str::as_bytes),
        })
    }

    fn hops(n: u32) -> ClientIdentity {
        ClientIdentity { ip_header: None, proxy_hops: n }
    }

    #[test]
    fn by_default_the_client_is_the_peer_without_its_port() {
        let direct = hops(0);
        assert_eq!(key(&direct, "127.0.0.1:54321", &[], None), "127.0.0.1");
        assert_eq!(key(&direct, "203.0.113.9", &[], None), "203.0.113.9");
        assert_eq!(key(&direct, "[::ffff:198.51.100.7]:80", &[], None), "198.51.100.7");
        // X-Forwarded-For is not read without trusted proxies.
        assert_eq!(key(&direct, "10.0.0.2:1", &["198.51.100.1"], None), "10.0.0.2");
        assert_eq!(key(&direct, "not an address", &[], None), UNKNOWN_CLIENT);
        assert_eq!(direct.key(&ClientHeaders::default()), UNKNOWN_CLIENT);
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64_prefix() {
        let direct = hops(0);
        assert_eq!(key(&direct, "[2001:db8:1:2::1]:443", &[], None), "2001:db8:1:2::/64");
        assert_eq!(
            key(&direct, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", &[], None),
            "2001:db8:1:2::/64"
        );
        assert_eq!(key(&direct, "[2001:db8:1:3::1]:1", &[], None), "2001:db8:1:3::/64");
        assert_eq!(key(&direct, "[::1]:1", &[], None), "::/64");
    }

    #[test]
    fn one_hop_takes_what_the_proxy_appended() {
        let ingress = hops(1);
        // The ingress (the peer) appended the address it received from.
        assert_eq!(key(&ingress, "10.0.0.2:1", &["198.51.100.1"], None), "198.51.100.1");
        // Whatever the client wrote itself stays to the left.
        assert_eq!(
            key(&ingress, "10.0.0.2:1", &["1.1.1.1, 2.2.2.2", "198.51.100.1"], None),
            "198.51.100.1"
        );
        assert_eq!(
            key(&ingress, "10.0.0.2:1", &["spoofed, [2001:db8::7]:99"], None),
            "2001:db8::/64"
        );
        // No X-Forwarded-For at all (a request that bypassed the proxy): the peer.
        assert_eq!(key(&ingress, "10.0.0.2:1", &[], None), "10.0.0.2");
        // The proxy's entry is unreadable: one shared key, not the client's choice.
        assert_eq!(key(&ingress, "10.0.0.2:1", &["1.2.3.4, garbage"], None), UNKNOWN_CLIENT);
    }

    #[test]
    fn more_hops_count_from_the_right_and_stop_at_the_leftmost() {
        let cdn_and_ingress = hops(2);
        assert_eq!(
            key(&cdn_and_ingress, "10.0.0.2:1", &["6.6.6.6, 198.51.100.1, 10.0.0.9"], None),
            "198.51.100.1"
        );
        assert_eq!(key(&cdn_and_ingress, "10.0.0.2:1", &["198.51.100.1"], None), "198.51.100.1");
        assert_eq!(key(&hops(5), "10.0.0.2:1", &["198.51.100.1"], None), "198.51.100.1");
        // Empty entries are not entries.
        assert_eq!(
            key(&cdn_and_ingress, "10.0.0.2:1", &["198.51.100.1,, 10.0.0.9,"], None),
            "198.51.100.1"
        );
    }

    #[test]
    fn a_client_address_header_comes_first_when_readable() {
        let akamai = ClientIdentity { ip_header: Some("true-client-ip".into()), proxy_hops: 1 };
        assert_eq!(
            key(&akamai, "10.0.0.2:1", &["198.51.100.1"], Some("203.0.113.5")),
            "203.0.113.5"
        );
        // Missing or unparsable: the next rule (here one hop).
        assert_eq!(key(&akamai, "10.0.0.2:1", &["198.51.100.1"], None), "198.51.100.1");
        assert_eq!(key(&akamai, "10.0.0.2:1", &["198.51.100.1"], Some("x")), "198.51.100.1");
        // A header the deployment did not name is never read.
        assert_eq!(key(&hops(0), "10.0.0.2:1", &[], Some("203.0.113.5")), "10.0.0.2");
    }
}
