//! The node's own idle-eviction passes (L5): a one-shot timer of its runtime on the Entry
//! Spot's owner, consumed inside `exchange` (never handed to the host). Each record runs
//! one scan of at most 64 places; the next is armed at once while a sweep over the catalog
//! is under way, and a sweep interval later once the cursor came round. It is armed only
//! while the catalog holds Spots, so a node with nothing to evict never wakes for it.
//!
//! Evictions run on the host's exchanging thread, like every other completion of the
//! node's work: closing callbacks run where the host runs its handlers. The scan record
//! holds the Entry Spot's gate while it runs (Entry work waits for one scan at most).

use std::sync::atomic::Ordering::AcqRel;
use std::time::Duration;

use spot_timer_core::{Outcome, TickRecord, TimerSpec};

use super::Node;
use crate::timer_work::{Work, SCAN_KEY};

/// The shortest and the longest time between two sweeps.
const SWEEP_MIN: Duration = Duration::from_millis(10);
const SWEEP_MAX: Duration = Duration::from_secs(10);

impl Node {
    /// Time between the end of one sweep and the start of the next: a quarter of the idle
    /// timeout, so an idle Spot is evicted within about 1.25 timeouts.
    fn sweep_interval(&self) -> Option<Duration> {
        self.config
            .instance_idle_timeout
            .map(|t| (t / 4).clamp(SWEEP_MIN, SWEEP_MAX))
    }

    /// Arms the next scan after `delay` unless one is armed (or there is no idle timeout).
    pub(super) fn arm_scan(&self, delay: Duration) {
        if self.config.instance_idle_timeout.is_none() || self.scan_armed.swap(true, AcqRel) {
            return;
        }
        let armed = self.local(self.config.entry).is_some_and(|entry| {
            entry
                .owner
                .register_id(SCAN_KEY, TimerSpec::after(delay), Work::Scan, None)
                .is_ok()
        });
        if !armed {
            // No Entry Spot (between terms): the next term's first evictable Spot arms it.
            self.scan_armed
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// A scan record handed over: one pass, then the next scan armed while the catalog
    /// holds Spots.
    pub(super) fn run_scan(&self, core: TickRecord<Work>) {
        let started = self.rt.begin(&core);
        let outcome = if started {
            Outcome::Ok
        } else {
            Outcome::NotStarted
        };
        self.deferred.lock().push(core.complete(outcome));
        self.scan_armed
            .store(false, std::sync::atomic::Ordering::Release);
        if !started {
            return;
        }
        let (_, wrapped) = self.scan_pass();
        if self.catalog.occupied() > 0 {
            let delay = if wrapped {
                self.sweep_interval().unwrap_or(SWEEP_MAX)
            } else {
                Duration::ZERO
            };
            self.arm_scan(delay);
        }
    }
}
