//! A burst: the messages of one Spot that one doorbell record of the timer runtime hands
//! the host. The record holds the Spot's serial gate until every message of the burst has
//! completed, so no tick or other work of the Spot runs meanwhile; inside the burst the
//! messages must start one after the other, in the order they were handed over.
//!
//! The host sees one record per message. A message starts (`begin`) only when every
//! earlier message of its burst has started or ended, and only when the previous one has
//! ended — its completion was built — or started on the same thread (which therefore ran
//! it to its end first). A start that would break this order, or run beside a message of
//! its Spot on another thread, is refused: that message ends not started (dropped). The
//! first start claims the runtime's record (its authority and lease check); the later
//! ones check the Spot's owner authority and lease again, so nothing of an authority that
//! ended starts.

use std::sync::Arc;

use parking_lot::Mutex;
use spot_timer_core::{Runtime, TickRecord};

use crate::timer_work::Work;

/// The most messages one doorbell hands over (a burst tracks its records in one `u64`).
pub(crate) const BURST_LIMIT: usize = 64;

/// What a handed-over record asks of its Spot right before it starts.
pub(crate) trait Standing: Send + Sync + std::fmt::Debug {
    /// A close of the Spot began: nothing of it starts any more.
    fn closing(&self) -> bool;
    /// The Spot's owner authority is still the current one and its lease runs.
    fn authority_holds(&self) -> bool;
}

/// The messages one doorbell record handed over, sharing that record.
#[derive(Debug)]
pub(crate) struct Burst {
    spot: Arc<dyn Standing>,
    core: TickRecord<Work>,
    progress: Mutex<Progress>,
}

#[derive(Debug, Default)]
struct Progress {
    /// Records that started, were refused or ended: none of them starts (again), and no
    /// record starts before an earlier one has passed.
    passed: u64,
    /// The record running now (started, its completion not built yet) and its thread.
    running: Option<(u32, usize)>,
    /// The runtime's record was claimed by the burst's first start.
    claimed: bool,
}

/// An address unique to the calling thread while it lives.
fn thread_tag() -> usize {
    thread_local!(static TAG: u8 = const { 0 });
    TAG.with(|t| t as *const u8 as usize)
}

impl Burst {
    pub(crate) fn new(spot: Arc<dyn Standing>, core: TickRecord<Work>) -> Self {
        Self {
            spot,
            core,
            progress: Mutex::default(),
        }
    }

    /// The runtime's record the burst shares.
    pub(crate) fn core(&self) -> &TickRecord<Work> {
        &self.core
    }

    /// Right before message `index` of the burst runs: true if it may start.
    pub(crate) fn begin(&self, rt: &Runtime<Work>, index: u32) -> bool {
        let bit = 1u64 << index;
        let mut p = self.progress.lock();
        if p.passed & bit != 0 {
            return false;
        }
        p.passed |= bit;
        let earlier = bit - 1;
        let me = thread_tag();
        let beside = matches!(p.running, Some((_, t)) if t != me);
        if p.passed & earlier != earlier || beside || self.spot.closing() {
            return false;
        }
        let ok = if p.claimed {
            self.spot.authority_holds()
        } else {
            p.claimed = rt.begin(&self.core);
            p.claimed
        };
        p.running = ok.then_some((index, me));
        ok
    }

    /// Message `index` ended (its completion was built), whether it started or not.
    pub(crate) fn ended(&self, index: u32) {
        let mut p = self.progress.lock();
        p.passed |= 1u64 << index;
        if matches!(p.running, Some((i, _)) if i == index) {
            p.running = None;
        }
    }
}
