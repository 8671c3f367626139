//! Clocks. Deadlines are nanoseconds on one monotonic time line per runtime.
//!
//! The real clock is Linux `CLOCK_BOOTTIME`: it keeps counting while the process is
//! stopped *and* while the machine is suspended, so an owner lease that ran out during a
//! pause is seen as expired the moment the process runs again (contract T6). The manual clock
//! only moves when a test advances it, which makes every contract test deterministic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Nanoseconds on a runtime's time line.
pub type Nanos = u64;

/// Converts a duration to nanoseconds, saturating at `u64::MAX` ("never").
pub fn duration_to_nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A source of monotonic time.
pub trait Clock: Send + Sync + 'static {
    /// The current time in nanoseconds.
    fn now(&self) -> Nanos;
}

/// `CLOCK_BOOTTIME`: monotonic, counts suspended and stopped time.
#[derive(Debug, Default, Clone, Copy)]
pub struct BootClock;

impl Clock for BootClock {
    fn now(&self) -> Nanos {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every
        // Linux kernel this crate supports (>= 2.6.39). It cannot fail with valid arguments.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
        debug_assert_eq!(rc, 0);
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// A clock that moves only when told to. Clone it to keep a handle for the test.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A manual clock starting at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward. Use [`crate::Runtime::advance`] instead when the runtime
    /// should fire what became due before the call returns.
    pub fn advance(&self, by: Duration) {
        let by = duration_to_nanos(by);
        self.now
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(by))
            })
            .ok();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        self.now.load(Ordering::Acquire)
    }
}

/// Which clock a runtime runs on.
#[derive(Debug, Clone, Default)]
pub enum ClockKind {
    /// The real boot-time clock (default).
    #[default]
    Real,
    /// A manual clock; the runtime fires timers only when it is advanced.
    Manual(ManualClock),
}

impl ClockKind {
    /// A fresh manual clock.
    pub fn manual() -> Self {
        ClockKind::Manual(ManualClock::new())
    }
}
