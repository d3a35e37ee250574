//! Login throttling (decisions.md, "Login protection"): failed logins are
//! counted per client address in the configured store; past
//! `login_max_failures` failures within `login_window_seconds` of the first,
//! every `POST /token` from that address answers 429 "Too many login
//! attempts" with `Retry-After`, until the window ends. A successful login
//! clears the address's count.
//!
//! What a login costs the store (each item one statement):
//! - before the credentials are checked: read the address's count (so that
//!   a blocked address never costs a password check, which with an Argon2id
//!   hash is tens of milliseconds);
//! - a success: nothing more, unless the address had a count: then delete it;
//! - a failure: count it (an atomic upsert that also restarts an ended
//!   window); when that starts a new window, also delete up to
//!   `PRUNE_BATCH` ended windows of any address through the `window_end`
//!   index, so old rows go without a scan on every request.

use std::net::{IpAddr, SocketAddr};

use crate::app::Context;
use crate::settings::{self, Setting, DEFAULT_LOGIN_MAX_FAILURES, DEFAULT_LOGIN_WINDOW_SECONDS};
use crate::store::LoginFailures;

/// Ended windows deleted at most per cleanup.
pub const PRUNE_BATCH: u32 = 100;

/// The key of a client whose address is unknown (a host that reports none).
pub const UNKNOWN_CLIENT: &str = "unknown";

/// The limit in force: `max_failures` failures per `window_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimit {
    /// 0: no limit, and no store call for it.
    pub max_failures: u32,
    pub window_seconds: u64,
}

impl LoginLimit {
    pub const DEFAULT: LoginLimit = LoginLimit {
        max_failures: DEFAULT_LOGIN_MAX_FAILURES,
        window_seconds: DEFAULT_LOGIN_WINDOW_SECONDS,
    };

    pub fn enabled(self) -> bool {
        self.max_failures > 0
    }

    /// Whether `failures` (as stored) block a login at `now`: the window
    /// still runs and holds the limit or more. `Some(retry_after)` if so.
    pub fn blocks(self, failures: Option<LoginFailures>, now: u64) -> Option<u64> {
        let failures = failures?;
        let blocked = self.enabled()
            && failures.window_end > now
            && failures.count >= u64::from(self.max_failures);
        blocked.then(|| retry_after(failures.window_end, now))
    }

    /// After a failure was counted: whether this one went over the limit
    /// (the first `max_failures` of a window answer 401, the rest 429).
    pub fn exceeded_by(self, counted: LoginFailures, now: u64) -> Option<u64> {
        (self.enabled() && counted.count > u64::from(self.max_failures))
            .then(|| retry_after(counted.window_end, now))
    }
}

/// Seconds until `window_end`, at least 1 (`Retry-After: 0` would invite an
/// immediate retry that is still refused).
pub fn retry_after(window_end: u64, now: u64) -> u64 {
    window_end.saturating_sub(now).max(1)
}

/// `login_max_failures`: a set value that is not a whole number 0..2^32-1
/// is logged (never echoed: settings may sit beside secrets) and the
/// default is used.
pub fn max_failures(ctx: &mut impl Context) -> u32 {
    match ctx.setting(Setting::LoginMaxFailures) {
        None => DEFAULT_LOGIN_MAX_FAILURES,
        Some(value) => settings::parse_max_failures(&value).unwrap_or_else(|| {
            ctx.log(&format!(
                "warning: login_max_failures / LOGIN_MAX_FAILURES is not a whole number from 0 \
                 to 4294967295: using the default, {DEFAULT_LOGIN_MAX_FAILURES}"
            ));
            DEFAULT_LOGIN_MAX_FAILURES
        }),
    }
}

/// `login_window_seconds`: invalid values as in `max_failures`.
pub fn window_seconds(ctx: &mut impl Context) -> u64 {
    match ctx.setting(Setting::LoginWindowSeconds) {
        None => DEFAULT_LOGIN_WINDOW_SECONDS,
        Some(value) => settings::parse_window_seconds(&value).unwrap_or_else(|| {
            ctx.log(&format!(
                "warning: login_window_seconds / LOGIN_WINDOW_SECONDS is not a whole number of \
                 seconds from 1 to {}: using the default, {DEFAULT_LOGIN_WINDOW_SECONDS}",
                settings::MAX_LOGIN_WINDOW_SECONDS
            ));
            DEFAULT_LOGIN_WINDOW_SECONDS
        }),
    }
}

/// `trust_forwarded_for`: off unless set to a true value; an invalid value
/// is logged and counts as off.
pub fn trust_forwarded_for(ctx: &mut impl Context) -> bool {
    match ctx.setting(Setting::TrustForwardedFor) {
        None => false,
        Some(value) => settings::parse_flag(&value).unwrap_or_else(|| {
            ctx.log(
                "warning: trust_forwarded_for / TRUST_FORWARDED_FOR is neither true nor false: \
                 X-Forwarded-For is not trusted",
            );
            false
        }),
    }
}

/// The key a request's failed logins are counted under: the IP address of
/// `client_addr` (Spin's `spin-client-addr`, the port ignored); with
/// `trust_forwarded_for`, the first address of `X-Forwarded-For` instead,
/// when it holds one. Addresses are written canonically (an IPv4-mapped
/// IPv6 address as IPv4), so one client has one key however it is spelled.
pub fn client_key(
    client_addr: Option<&[u8]>,
    forwarded_for: Option<&[u8]>,
    trust_forwarded_for: bool,
) -> String {
    let forwarded = forwarded_for
        .filter(|_| trust_forwarded_for)
        .and_then(|value| value.split(|&b| b == b',').next())
        .and_then(parse_address);
    forwarded
        .or_else(|| client_addr.and_then(parse_address))
        .map_or_else(|| UNKNOWN_CLIENT.to_string(), |ip| ip.to_string())
}

/// `1.2.3.4`, `1.2.3.4:5678`, `::1`, `[::1]`, `[::1]:5678` -> the IP.
fn parse_address(value: &[u8]) -> Option<IpAddr> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(addr: &str, forwarded: Option<&str>, trust: bool) -> String {
        client_key(Some(addr.as_bytes()), forwarded.map(str::as_bytes), trust)
    }

    #[test]
    fn the_client_is_the_peer_ip_without_its_port() {
        assert_eq!(key("127.0.0.1:54321", None, false), "127.0.0.1");
        assert_eq!(key("[2001:db8::1]:443", None, false), "2001:db8::1");
        assert_eq!(key("203.0.113.9", None, false), "203.0.113.9");
        assert_eq!(key("[::ffff:198.51.100.7]:80", None, false), "198.51.100.7");
        assert_eq!(client_key(None, None, false), UNKNOWN_CLIENT);
        assert_eq!(key("not an address", None, false), UNKNOWN_CLIENT);
    }

    #[test]
    fn forwarded_for_counts_only_when_trusted() {
        let xff = Some("198.51.100.1, 10.0.0.1");
        assert_eq!(key("10.0.0.2:1", xff, false), "10.0.0.2");
        assert_eq!(key("10.0.0.2:1", xff, true), "198.51.100.1");
        assert_eq!(
            key("10.0.0.2:1", Some(" [2001:db8::7]:99 ,x"), true),
            "2001:db8::7"
        );
        assert_eq!(
            key("10.0.0.2:1", Some("2001:DB8:0::7"), true),
            "2001:db8::7"
        );
        assert_eq!(
            key("10.0.0.2:1", Some("198.51.100.1:8080"), true),
            "198.51.100.1"
        );
        // Nothing usable in the header: the peer.
        for junk in ["", "unknown", "_hidden", ",198.51.100.1", "1.2.3.4.5"] {
            assert_eq!(key("10.0.0.2:1", Some(junk), true), "10.0.0.2", "{junk:?}");
        }
        assert_eq!(key("10.0.0.2:1", None, true), "10.0.0.2");
    }

    #[test]
    fn a_full_window_blocks_until_it_ends() {
        let limit = LoginLimit {
            max_failures: 3,
            window_seconds: 60,
        };
        let now = 1_000;
        let at = |count, window_end| Some(LoginFailures { count, window_end });
        assert_eq!(limit.blocks(None, now), None);
        assert_eq!(limit.blocks(at(2, 1_060), now), None);
        assert_eq!(limit.blocks(at(3, 1_060), now), Some(60));
        assert_eq!(limit.blocks(at(9, 1_001), now), Some(1));
        assert_eq!(
            limit.blocks(at(9, 1_000), now),
            None,
            "the window has ended"
        );
        let off = LoginLimit {
            max_failures: 0,
            window_seconds: 60,
        };
        assert_eq!(off.blocks(at(100, 1_060), now), None);
    }

    #[test]
    fn the_failure_past_the_limit_is_refused() {
        let limit = LoginLimit {
            max_failures: 2,
            window_seconds: 60,
        };
        let counted = |count| LoginFailures {
            count,
            window_end: 1_030,
        };
        assert_eq!(limit.exceeded_by(counted(1), 1_000), None);
        assert_eq!(limit.exceeded_by(counted(2), 1_000), None);
        assert_eq!(limit.exceeded_by(counted(3), 1_000), Some(30));
        assert_eq!(retry_after(1_000, 1_000), 1);
    }

    #[test]
    fn defaults_are_ten_failures_in_900_seconds() {
        assert_eq!(
            LoginLimit::DEFAULT,
            LoginLimit {
                max_failures: 10,
                window_seconds: 900
            }
        );
    }
}
