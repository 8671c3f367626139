//! Compaction of the deadline queue: dropping the entries of cancelled and re-armed timers
//! (deletion is lazy, so they stay until they surface or are dropped here). The scheduler
//! compacts every shard when stale entries clearly outnumber the live timers; an arming
//! thread looks again once its own shard has doubled since its last compaction and
//! compacts that shard under the same rule, so register/cancel churn cannot grow the queue
//! while the scheduler sleeps towards a far deadline (T8).

use std::sync::atomic::Ordering::Acquire;

use crate::queue::OWNER_TARGET;
use crate::runtime::shards::COMPACT_SLACK;
use crate::runtime::shared::Shared;
use crate::slot::word;
use crate::stats::C;

impl<P> Shared<P> {
    /// Drops shard `i`'s entries that no longer name a current armed deadline: a timer
    /// slot not taken, or not IDLE in the armed generation; an owner lease entry of an
    /// older fence.
    /// Returns how many it dropped.
    pub(crate) fn retain_live(&self, i: usize) -> usize {
        let slots = &self.slots;
        let owners = &self.owners;
        self.shards.retain_shard(
            i,
            |e| {
                // The slot line is read only for an entry whose slot is taken: a cancelled
                // timer's slot has usually been returned, and its entry is dropped on its
                // mark alone.
                if e.target & OWNER_TARGET == 0 && slots.is_taken(e.target) {
                    if let Some(s) = slots.get(e.target) {
                        crate::prefetch::for_read(s);
                    }
                }
            },
            |e| {
                if e.target & OWNER_TARGET != 0 {
                    owners
                        .get(e.target & !OWNER_TARGET)
                        .is_some_and(|o| o.lease_fence.load(Acquire) == e.tag)
                } else if !slots.is_taken(e.target) {
                    false
                } else {
                    let w = slots.slot(e.target).word.load(Acquire);
                    word::tag(w) == e.tag && word::phase(w) == word::IDLE
                }
            },
        )
    }

    /// After arming in shard `i`: once the shard has doubled since its last compaction,
    /// compacts it if the queue as a whole holds clearly more entries than live timers
    /// (else only raises the shard's threshold: a queue that grows with live timers is not
    /// scanned for garbage it does not have).
    #[inline]
    pub(crate) fn compact_if_grown(&self, i: usize) {
        if self.shards.over_threshold(i) {
            self.compact_grown(i);
        }
    }

    /// [`Shared::compact_if_grown`] for a shard known to be over its threshold.
    #[cold]
    pub(crate) fn compact_grown(&self, i: usize) {
        if self.shards.total_len() <= 2 * self.live_estimate() + COMPACT_SLACK {
            self.shards.defer_compaction(i);
            return;
        }
        let dropped = self.retain_live(i);
        self.counters.add(C::stale_entries_dropped, dropped as u64);
        self.counters.add(C::compactions, 1);
    }

    /// Entries the queue needs at most: one per live timer and one per owner lease.
    pub(crate) fn live_estimate(&self) -> usize {
        self.counters
            .total(C::registered)
            .saturating_sub(self.counters.total(C::ended)) as usize
            + self.owners.known()
    }
}
