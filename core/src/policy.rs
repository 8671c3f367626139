//! Overrun policies and the backlog rule (SPEC T5), as pure functions over nominal tick
//! numbers so they can be property-tested apart from any clock or thread.

use crate::clock::Nanos;
use crate::error::{Error, Result};

/// What a repeating timer does when its handler finished late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[repr(u8)]
pub enum OverrunPolicy {
    /// Fixed rate; deliver only the newest due tick, skipping the ones that passed.
    #[default]
    SkipLateTicks = 0,
    /// Fixed rate; deliver missed ticks in order but never more than `max_catch_up_ticks`
    /// of the backlog (the newest ones).
    CatchUpBounded = 1,
    /// Fixed delay: each tick is due one period after the previous handler completed.
    DelayNextTick = 2,
}

impl OverrunPolicy {
    /// Decodes a wire value; unknown values are rejected, never transmuted.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::SkipLateTicks),
            1 => Some(Self::CatchUpBounded),
            2 => Some(Self::DelayNextTick),
            _ => None,
        }
    }
}

/// Checks `max_catch_up_ticks` for a policy and returns the value the timer will use.
/// With `CatchUpBounded` it must be in `1..=i32::MAX`; other policies normalise it to 1.
pub fn normalize_max_catch_up(policy: OverrunPolicy, max_catch_up_ticks: u64) -> Result<u32> {
    match policy {
        OverrunPolicy::CatchUpBounded => {
            if (1..=i32::MAX as u64).contains(&max_catch_up_ticks) {
                Ok(max_catch_up_ticks as u32)
            } else {
                Err(Error::InvalidArgument(format!(
                    "max_catch_up_ticks must be in 1..={} with CatchUpBounded, got {max_catch_up_ticks}",
                    i32::MAX
                )))
            }
        }
        _ => Ok(1),
    }
}

/// The newest nominal tick due at `now` for a fixed-rate timer with first due time `t0`
/// and period `period` (tick k is due at `t0 + (k-1)*period`); 0 when none is due yet.
pub fn newest_due(t0: Nanos, period: Nanos, now: Nanos) -> u64 {
    if now < t0 {
        0
    } else {
        (now - t0) / period + 1
    }
}

/// Due time of nominal tick `k` (k >= 1), saturating.
pub fn due_of(t0: Nanos, period: Nanos, k: u64) -> Nanos {
    t0.saturating_add(period.saturating_mul(k.saturating_sub(1)))
}

/// The backlog rule: with `last` the last delivered nominal tick and `newest` the newest
/// due one (`newest > last`), the nominal tick a fixed-rate policy delivers next.
pub fn next_scheduled(policy: OverrunPolicy, max_catch_up: u32, last: u64, newest: u64) -> u64 {
    debug_assert!(newest > last);
    match policy {
        OverrunPolicy::SkipLateTicks => newest,
        OverrunPolicy::CatchUpBounded => {
            let oldest_kept = newest.saturating_sub(u64::from(max_catch_up)) + 1;
            oldest_kept.max(last + 1)
        }
        // Fixed delay never has a backlog: every delivery is the next tick.
        OverrunPolicy::DelayNextTick => last + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_keeps_newest_n() {
        assert_eq!(next_scheduled(OverrunPolicy::CatchUpBounded, 3, 0, 10), 8);
        assert_eq!(next_scheduled(OverrunPolicy::CatchUpBounded, 3, 8, 10), 9);
        assert_eq!(next_scheduled(OverrunPolicy::CatchUpBounded, 3, 9, 10), 10);
        assert_eq!(next_scheduled(OverrunPolicy::CatchUpBounded, 1, 0, 10), 10);
        assert_eq!(next_scheduled(OverrunPolicy::SkipLateTicks, 1, 2, 10), 10);
    }

    #[test]
    fn newest_due_counts_equal_as_due() {
        assert_eq!(newest_due(100, 10, 99), 0);
        assert_eq!(newest_due(100, 10, 100), 1);
        assert_eq!(newest_due(100, 10, 129), 3);
        assert_eq!(newest_due(100, 10, 130), 4);
    }

    #[test]
    fn max_catch_up_validation() {
        use OverrunPolicy::*;
        assert!(normalize_max_catch_up(CatchUpBounded, 0).is_err());
        assert!(normalize_max_catch_up(CatchUpBounded, i32::MAX as u64 + 1).is_err());
        assert_eq!(normalize_max_catch_up(CatchUpBounded, 5).unwrap(), 5);
        assert_eq!(normalize_max_catch_up(SkipLateTicks, 0).unwrap(), 1);
    }
}
