//! Overrun policies and the backlog rule (contract T3, T4, T5): every scheduling decision of a
//! timer, as pure functions over nominal tick numbers and one [`Schedule`] value, so they
//! are property-tested apart from any clock or thread. Nothing else in the crate decides
//! which tick is delivered or when a timer is due.

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
#[inline]
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

/// `Schedule::mode` of `SkipLateTicks`; `CatchUpBounded(n)` is `n`; `DelayNextTick` is
/// `u32::MAX` (`n` never exceeds `i32::MAX`).
const MODE_SKIP: u32 = 0;
const MODE_DELAY: u32 = u32::MAX;

/// One generation's schedule: its period (0 for a one-shot), its base time and its policy
/// packed in `mode`. For fixed-rate timers `base` is the first nominal due time and never
/// changes; for `DelayNextTick` and one-shots it is the next due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Schedule {
    pub period: Nanos,
    pub base: Nanos,
    pub mode: u32,
}

/// What a timer should do at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Deliver this scheduled index now.
    Deliver(u64),
    /// Nothing is due before this time.
    At(Nanos),
    /// Nothing will ever be due (a one-shot that delivered).
    Never,
}

impl Schedule {
    /// The schedule of a timer registered at `now`.
    #[inline]
    pub fn new(
        policy: OverrunPolicy,
        max_catch_up: u32,
        period: Nanos,
        delay: Nanos,
        now: Nanos,
    ) -> Self {
        let mode = match policy {
            _ if period == 0 => MODE_SKIP,
            OverrunPolicy::SkipLateTicks => MODE_SKIP,
            OverrunPolicy::CatchUpBounded => max_catch_up,
            OverrunPolicy::DelayNextTick => MODE_DELAY,
        };
        Self {
            period,
            base: now.saturating_add(delay),
            mode,
        }
    }

    pub fn policy(&self) -> OverrunPolicy {
        match self.mode {
            MODE_SKIP => OverrunPolicy::SkipLateTicks,
            MODE_DELAY => OverrunPolicy::DelayNextTick,
            _ => OverrunPolicy::CatchUpBounded,
        }
    }

    pub(crate) fn max_catch_up(&self) -> u32 {
        if self.mode == MODE_DELAY {
            1
        } else {
            self.mode.max(1)
        }
    }

    pub fn is_one_shot(&self) -> bool {
        self.period == 0
    }

    fn fixed_rate(&self) -> bool {
        self.period != 0 && self.mode != MODE_DELAY
    }

    /// The first time the timer may be due.
    pub fn first_due(&self) -> Nanos {
        self.base
    }

    /// The nominal due time of scheduled tick `k` (1-based): fixed-rate ticks by the
    /// period from the first, a one-shot's or `DelayNextTick`'s next tick at `base`.
    pub fn due_time(&self, k: u64) -> Nanos {
        if self.fixed_rate() {
            due_of(self.base, self.period, k)
        } else {
            self.base
        }
    }

    /// Whether a tick is due at `now`, and which (T5's backlog rule), given the scheduled
    /// index `last` and the number `delivered` of the ticks delivered so far.
    pub fn next(&self, now: Nanos, last: u64, delivered: u64) -> Next {
        if self.is_one_shot() {
            return match (delivered, now >= self.base) {
                (0, true) => Next::Deliver(1),
                (0, false) => Next::At(self.base),
                _ => Next::Never,
            };
        }
        if !self.fixed_rate() {
            return if now >= self.base {
                Next::Deliver(delivered + 1)
            } else {
                Next::At(self.base)
            };
        }
        let newest = newest_due(self.base, self.period, now);
        if newest > last {
            Next::Deliver(next_scheduled(
                self.policy(),
                self.max_catch_up(),
                last,
                newest,
            ))
        } else {
            Next::At(due_of(self.base, self.period, last + 1))
        }
    }

    /// After a callback completed at `now`: `DelayNextTick`'s next tick is due one period
    /// later. Returns the schedule to keep.
    pub fn after_completion(self, now: Nanos) -> Self {
        if self.period != 0 && !self.fixed_rate() {
            Self {
                base: now.saturating_add(self.period),
                ..self
            }
        } else {
            self
        }
    }

    /// When a tick deferred at `now` is retried if the owner's gate is not released
    /// before: the next nominal due time (never for a one-shot).
    pub fn retry_after_deferral(&self, now: Nanos) -> Option<Nanos> {
        if self.is_one_shot() {
            None
        } else if self.fixed_rate() {
            Some(due_of(
                self.base,
                self.period,
                newest_due(self.base, self.period, now) + 1,
            ))
        } else {
            Some(now.saturating_add(self.period))
        }
    }

    /// T3: a pending record's tick info is computed when it is delivered. A record
    /// published at `scheduled` that reaches the host at `now` is handed over with the
    /// backlog rule applied again to the ticks due by then. Returns the scheduled index to
    /// hand over (never lower than `scheduled`).
    pub fn relabel(&self, scheduled: u64, last: u64, now: Nanos) -> u64 {
        if !self.fixed_rate() {
            return scheduled;
        }
        // The common case — received before the next nominal tick came due — costs a
        // multiply, not `newest_due`'s division.
        if now
            < self
                .base
                .saturating_add(self.period.saturating_mul(scheduled))
        {
            return scheduled;
        }
        let newest = newest_due(self.base, self.period, now);
        next_scheduled(self.policy(), self.max_catch_up(), last, newest).max(scheduled)
    }

    /// Nominal ticks that have come due by `now` (for the tick accounting identity), given
    /// the counters so far.
    pub fn ticks_due(&self, now: Nanos, last: u64, delivered: u64) -> u64 {
        let due = if self.is_one_shot() {
            u64::from(now >= self.base)
        } else if self.fixed_rate() {
            newest_due(self.base, self.period, now)
        } else {
            delivered + u64::from(now >= self.base)
        };
        due.max(last)
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

    #[test]
    fn schedule_decides_per_policy() {
        let skip = Schedule::new(OverrunPolicy::SkipLateTicks, 1, 10, 10, 0);
        assert_eq!(skip.next(9, 0, 0), Next::At(10));
        assert_eq!(skip.next(35, 0, 0), Next::Deliver(3));
        assert_eq!(skip.next(35, 3, 1), Next::At(40));
        let catch = Schedule::new(OverrunPolicy::CatchUpBounded, 2, 10, 10, 0);
        assert_eq!(catch.next(55, 0, 0), Next::Deliver(4));
        assert_eq!(catch.relabel(4, 0, 75), 6);
        let delay = Schedule::new(OverrunPolicy::DelayNextTick, 1, 10, 10, 0);
        assert_eq!(delay.next(50, 0, 0), Next::Deliver(1));
        assert_eq!(delay.after_completion(52).next(61, 1, 1), Next::At(62));
        let once = Schedule::new(OverrunPolicy::DelayNextTick, 1, 0, 25, 0);
        assert_eq!(once.policy(), OverrunPolicy::SkipLateTicks);
        assert_eq!(once.next(25, 0, 0), Next::Deliver(1));
        assert_eq!(once.next(99, 1, 1), Next::Never);
        assert_eq!(once.retry_after_deferral(30), None);
        assert_eq!(skip.retry_after_deferral(35), Some(40));
    }
}
