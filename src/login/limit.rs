//! The failed-login limit (docs/configuration.md, "Login protection"),
//! counted per client (`client`) in the store. An attempt is counted before
//! its password is checked, in one atomic statement that hands each
//! concurrent attempt its own number, so at most the limit's number of
//! passwords of a client are checked per window, whatever arrives at once.
//! A failure that began a new window also deletes up to `PRUNE_BATCH` ended
//! windows through the `window_end` index, so old rows go without a scan.

use crate::settings::LoginLimit;

/// Ended windows deleted at most per cleanup.
pub const PRUNE_BATCH: u32 = 100;

impl LoginLimit {
    pub fn enabled(self) -> bool {
        self.max_failures > 0
    }

    /// Whether a count read as stored blocks a login at `now`: the window
    /// still runs and its limit is used up. `Some(retry_after)` if so.
    pub fn blocks(self, known: Option<LoginAttempts>, now: u64) -> Option<u64> {
        let known = known?;
        let blocked =
            self.enabled() && known.window_end > now && known.count >= u64::from(self.max_failures);
        blocked.then(|| self.retry_after(known.window_end, now))
    }

    /// After an attempt was counted (`counted` includes it): whether it is
    /// past the limit, and so refused without checking its password. The
    /// first `max_failures` attempts of a window are checked.
    pub fn refuses(self, counted: LoginAttempts, now: u64) -> Option<u64> {
        (self.enabled() && counted.count > u64::from(self.max_failures))
            .then(|| self.retry_after(counted.window_end, now))
    }

    /// Seconds until `window_end`: at least 1 (`Retry-After: 0` would invite
    /// an immediate retry that is still refused), and never more than a
    /// window (a request whose clock read a second earlier than the one that
    /// began the window, on another instance, would otherwise say window + 1).
    fn retry_after(self, window_end: u64, now: u64) -> u64 {
        window_end.saturating_sub(now).clamp(1, self.window_seconds.max(1))
    }
}

/// The login attempts of one client in its current window that no
/// successful login has cleared: failures, and attempts still being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginAttempts {
    /// Attempts counted since the window began.
    pub count: u64,
    /// Unix time (seconds) at which the window ends and the count lapses.
    pub window_end: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_used_up_window_blocks_until_it_ends() {
        let limit = LoginLimit { max_failures: 3, window_seconds: 60 };
        let now = 1_000;
        let at = |count, window_end| Some(LoginAttempts { count, window_end });
        assert_eq!(limit.blocks(None, now), None);
        assert_eq!(limit.blocks(at(2, 1_060), now), None);
        assert_eq!(limit.blocks(at(3, 1_060), now), Some(60));
        assert_eq!(limit.blocks(at(9, 1_001), now), Some(1));
        assert_eq!(limit.blocks(at(9, 1_000), now), None, "the window has ended");
        let off = LoginLimit { max_failures: 0, window_seconds: 60 };
        assert_eq!(off.blocks(at(100, 1_060), now), None);
    }

    #[test]
    fn attempts_past_the_limit_are_refused_unchecked() {
        let limit = LoginLimit { max_failures: 2, window_seconds: 60 };
        let counted = |count| LoginAttempts { count, window_end: 1_030 };
        assert_eq!(limit.refuses(counted(1), 1_000), None);
        assert_eq!(limit.refuses(counted(2), 1_000), None);
        assert_eq!(limit.refuses(counted(3), 1_000), Some(30));
        assert_eq!(limit.refuses(counted(300), 1_029), Some(1));
        assert_eq!(limit.refuses(counted(3), 1_030), Some(1), "never 0");
        // Another instance began the window with a clock a second ahead.
        let window = LoginLimit { max_failures: 2, window_seconds: 30 };
        assert_eq!(window.refuses(counted(3), 999), Some(30), "never more than the window");
    }
}
