//! The dispatch budget: how many records one exchange takes so that its batch runs in
//! about a given time. A record left in the runtime keeps its place and is handed its
//! newest due tick when its turn comes (T5); one taken into a long batch only ages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The cost per record assumed before any batch was timed: cautious, so that a first
/// batch of slow handlers stays near the budget; a batch or two of measurements replace it.
const ASSUMED_RECORD_NS: u64 = 1_000;

/// A time budget per batch and the measured time per record (shared by the delivering
/// threads of one runtime; concurrent updates may overwrite each other: an estimate).
#[derive(Debug)]
pub struct Budget {
    budget_ns: u64,
    record_ns: AtomicU64,
}

impl Budget {
    /// A budget of `per_batch` per batch.
    pub fn new(per_batch: Duration) -> Self {
        Self {
            budget_ns: per_batch.as_nanos().min(u64::MAX as u128) as u64,
            record_ns: AtomicU64::new(0),
        }
    }

    /// How many records to take: at least one, at most `max`.
    pub fn limit(&self, max: usize) -> usize {
        let per = match self.record_ns.load(Ordering::Relaxed) {
            0 => ASSUMED_RECORD_NS,
            n => n,
        };
        usize::try_from(self.budget_ns / per)
            .unwrap_or(usize::MAX)
            .clamp(1, max.max(1))
    }

    /// Folds the wall time of a batch of `records` into the per-record estimate (a moving
    /// average, so one slow handler moves it but does not set it).
    pub fn observe(&self, records: usize, elapsed: Duration) {
        if records == 0 {
            return;
        }
        let sample = (elapsed.as_nanos() / records as u128).clamp(1, u64::MAX as u128) as u64;
        let old = self.record_ns.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            // old + (sample - old) / 4, without signed arithmetic
            (old - old / 4).saturating_add(sample / 4).max(1)
        };
        self.record_ns.store(new, Ordering::Relaxed);
    }

    /// The measured time per record (0: none measured yet).
    pub fn per_record(&self) -> Duration {
        Duration::from_nanos(self.record_ns.load(Ordering::Relaxed))
    }
}
