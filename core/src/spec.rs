//! What a host registers: a timer's spec and the names of a generation.

use std::time::Duration;

use crate::clock::{duration_to_nanos, Nanos};
use crate::error::{Error, Result};
use crate::policy::{normalize_max_catch_up, OverrunPolicy, Schedule};

/// The host's key of a timer, unique per owner.
pub type TimerKey = u64;

/// Names one generation of one timer — its slot in the runtime's table and the generation
/// — in one 8-byte word, so a host that keeps many timers by id stores 8 bytes per timer.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId(u64);

/// Bits of a `TimerId` that hold the slot (slots are below `MAX_TIMERS`, 2^24); the
/// generation (40 bits) takes the rest.
const SLOT_BITS: u32 = 24;
const _: () = assert!(crate::slot::MAX_TIMERS as u64 == 1 << SLOT_BITS);
const _: () = assert!(crate::slot::word::GEN_MASK == u64::MAX >> SLOT_BITS);

impl TimerId {
    /// The id of `generation` in `slot`, if both are in range (slot below 2^24,
    /// generation below 2^40): hosts that carry the two numbers apart (the C ABI) turn them
    /// back into an id with this. Out-of-range numbers never name a generation.
    pub fn from_parts(slot: u32, generation: u64) -> Option<Self> {
        (u64::from(slot) < 1 << SLOT_BITS && generation >> (64 - SLOT_BITS) == 0)
            .then_some(Self(generation << SLOT_BITS | u64::from(slot)))
    }

    /// An id the runtime hands out (both numbers in range by construction).
    #[inline]
    pub(crate) fn new(slot: u32, generation: u64) -> Self {
        debug_assert!(Self::from_parts(slot, generation).is_some());
        Self(generation << SLOT_BITS | u64::from(slot))
    }

    /// Index of the slot in the runtime's table.
    #[inline]
    pub fn slot(self) -> u32 {
        (self.0 & ((1 << SLOT_BITS) - 1)) as u32
    }

    /// The generation (unique across every runtime of the process).
    #[inline]
    pub fn generation(self) -> u64 {
        self.0 >> SLOT_BITS
    }
}

impl std::fmt::Debug for TimerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerId")
            .field("slot", &self.slot())
            .field("generation", &self.generation())
            .finish()
    }
}

/// What to register: a repeating timer (`every`) or a one-shot (`after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerSpec {
    /// `None` for a one-shot timer.
    pub period: Option<Duration>,
    /// Delay from registration to the first nominal due time. Default: one period.
    pub first_due: Option<Duration>,
    /// The overrun policy (repeating timers).
    pub policy: OverrunPolicy,
    /// With `CatchUpBounded`: most ticks of a backlog delivered (1..=i32::MAX).
    pub max_catch_up_ticks: u64,
}

impl TimerSpec {
    /// A repeating timer with period `period`, first due one period from now.
    pub fn every(period: Duration) -> Self {
        Self {
            period: Some(period),
            first_due: None,
            policy: OverrunPolicy::SkipLateTicks,
            max_catch_up_ticks: 1,
        }
    }

    /// A one-shot timer due `delay` from now.
    pub fn after(delay: Duration) -> Self {
        Self {
            period: None,
            first_due: Some(delay),
            policy: OverrunPolicy::SkipLateTicks,
            max_catch_up_ticks: 1,
        }
    }

    /// With overrun policy `policy`.
    pub fn policy(mut self, policy: OverrunPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// With at most `n` ticks of a backlog delivered (`CatchUpBounded`).
    pub fn max_catch_up_ticks(mut self, n: u64) -> Self {
        self.max_catch_up_ticks = n;
        self
    }

    /// With the first nominal due time `delay` from registration.
    pub fn first_due(mut self, delay: Duration) -> Self {
        self.first_due = Some(delay);
        self
    }

    /// The spec of a registration with `schedule`'s period and policy, its first tick due
    /// `delay` from the registration (a reset that cannot take its slot in place).
    pub(crate) fn of_schedule(schedule: &Schedule, delay: Nanos) -> TimerSpec {
        let delay = Duration::from_nanos(delay);
        if schedule.is_one_shot() {
            return TimerSpec::after(delay);
        }
        TimerSpec::every(Duration::from_nanos(schedule.period))
            .policy(schedule.policy())
            .max_catch_up_ticks(u64::from(schedule.max_catch_up()))
            .first_due(delay)
    }

    /// Checks the spec and returns the schedule of a registration at `now`.
    #[inline]
    pub(crate) fn schedule(&self, now: Nanos) -> Result<Schedule> {
        let period = match self.period {
            Some(p) if p.is_zero() => {
                return Err(Error::InvalidArgument(
                    "period must be greater than zero for a repeating timer (use a one-shot for a single tick)".into(),
                ))
            }
            Some(p) => duration_to_nanos(p),
            None => 0,
        };
        let delay = match (self.first_due, self.period) {
            (Some(d), _) => duration_to_nanos(d),
            (None, Some(_)) => period,
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "a one-shot timer needs a delay (first_due)".into(),
                ))
            }
        };
        let max_catch_up = normalize_max_catch_up(self.policy, self.max_catch_up_ticks)?;
        Ok(Schedule::new(self.policy, max_catch_up, period, delay, now))
    }
}

/// Fixed-size statistics of one generation (contract T8): counters, never histories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerStats {
    /// Callbacks delivered (completed Ok or Failed).
    pub delivered: u64,
    /// Of those, completed Failed.
    pub failed: u64,
    /// Nominal ticks skipped by the overrun policy.
    pub skipped_ticks: u64,
    /// Scheduled index of the last delivered tick.
    pub last_scheduled_index: u64,
}
