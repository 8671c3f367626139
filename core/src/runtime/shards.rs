//! The deadline queue, sharded: each thread arms entries in its own shard under a short
//! lock, so registrations from many threads do not serialise on one queue (contract T7); the
//! scheduler polls every shard. Each shard publishes the earliest time it needs the
//! scheduler (`min_wake`) so the scheduler can sleep without taking the locks.
//!
//! Cancelled and re-armed timers leave stale entries behind (deletion is lazy). A shard
//! that holds more than twice the entries it held when last compacted or looked at (and
//! at least `COMPACT_SLACK`) is `over_threshold`; the runtime's compaction rule then
//! decides whether to compact it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use crate::clock::Nanos;
use crate::queue::{DeadlineQueue, Entry, Segment, SEGMENT_ENTRIES};
use crate::sync::Mutex;

pub(crate) struct Shard {
    queue: Mutex<DeadlineQueue>,
    min_wake: AtomicU64,
    len: AtomicUsize,
    /// Compact once `len` exceeds this: twice what the last compaction kept, at least
    /// `COMPACT_SLACK`.
    compact_at: AtomicUsize,
    /// `len` when [`Shards::provision`] last looked (only the thread provisioning uses it).
    provisioned_at: AtomicUsize,
}

/// Entries a shard may hold before its first compaction (and at least between two).
pub(crate) const COMPACT_SLACK: usize = 4096;

/// What arming one entry found.
pub(crate) struct ArmedOne {
    /// The shard's new earliest wake time, when the entry made it earlier.
    pub earlier: Option<Nanos>,
    /// The shard is over its compaction threshold.
    pub grown: bool,
}

pub(crate) struct Shards {
    list: Box<[CachePadded<Shard>]>,
}

impl Shards {
    pub fn new(count: usize, shift: u32, now: Nanos) -> Self {
        Self {
            list: (0..count.max(1))
                .map(|_| {
                    CachePadded::new(Shard {
                        queue: Mutex::new(DeadlineQueue::new(shift, now)),
                        min_wake: AtomicU64::new(u64::MAX),
                        len: AtomicUsize::new(0),
                        compact_at: AtomicUsize::new(COMPACT_SLACK),
                        provisioned_at: AtomicUsize::new(0),
                    })
                })
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Arms `entries` (entry, exact) in shard `i`. Returns the shard's new earliest wake
    /// time when they made it earlier — only then may the scheduler need waking.
    pub fn arm(&self, i: usize, entries: &mut Vec<(Entry, bool)>) -> Option<Nanos> {
        let s = &self.list[i];
        let mut q = s.queue.lock();
        let mut earliest = u64::MAX;
        for (e, exact) in entries.drain(..) {
            earliest = earliest.min(q.insert(e, exact));
        }
        s.len.store(q.len(), Ordering::Relaxed);
        self.publish_earliest(s, earliest)
    }

    /// [`Shards::arm`] for one entry; also says whether the shard has grown enough to be
    /// looked at for compaction ([`Shards::over_threshold`]).
    #[inline]
    pub fn arm_one(&self, i: usize, e: Entry, exact: bool) -> ArmedOne {
        let s = &self.list[i];
        let mut q = s.queue.lock();
        let earliest = q.insert(e, exact);
        let len = q.len();
        s.len.store(len, Ordering::Relaxed);
        ArmedOne {
            earlier: self.publish_earliest(s, earliest),
            grown: len > s.compact_at.load(Ordering::Relaxed),
        }
    }

    /// Lowers shard `s`'s `min_wake` to `earliest` (its lock held) if that is earlier.
    #[inline]
    fn publish_earliest(&self, s: &Shard, earliest: Nanos) -> Option<Nanos> {
        if earliest < s.min_wake.load(Ordering::Relaxed) {
            // A swap, not a store: on x86 it is also the full barrier the wake-up protocol
            // needs before the caller reads the scheduler's `sleep_until`.
            s.min_wake.swap(earliest, Ordering::SeqCst);
            Some(earliest)
        } else {
            None
        }
    }

    /// Moves every entry of shard `i` due at `now` into `out` (without taking its lock when
    /// nothing there is due).
    pub fn poll(&self, i: usize, now: Nanos, out: &mut Vec<Entry>) {
        let s = &self.list[i];
        if s.min_wake.load(Ordering::SeqCst) > now {
            // Nothing due here: a shard only lowers `min_wake` when it arms, and an entry
            // armed after this look wakes the scheduler as if it came after the poll.
            return;
        }
        let mut q = s.queue.lock();
        q.poll(now, out);
        s.min_wake
            .store(q.next_wake().unwrap_or(u64::MAX), Ordering::SeqCst);
        s.len.store(q.len(), Ordering::Relaxed);
    }

    /// Makes wheel memory ahead of use in the shards that grew since the last call: each
    /// gets room for as many more entries as it grew by (at most `most`) without
    /// allocating. The segments are made — their pages written — on the calling thread,
    /// outside the shard's lock, which is held only to hand them over; a shard that did
    /// not grow gets nothing, so idle shards hold no spare memory.
    #[cfg_attr(any(miri, spot_loom), allow(dead_code))]
    pub fn provision(&self, most: usize) {
        for s in self.list.iter() {
            let (len, spare) = {
                let q = s.queue.lock();
                (q.len(), q.spare_entries())
            };
            let grew = len.saturating_sub(s.provisioned_at.swap(len, Ordering::Relaxed));
            let want = grew.min(most);
            if spare >= want {
                continue;
            }
            let made: Vec<Segment> = (0..(want - spare).div_ceil(SEGMENT_ENTRIES))
                .map(|_| Segment::made())
                .collect();
            let mut q = s.queue.lock();
            for segment in made {
                q.adopt(segment);
            }
        }
    }

    /// Wheel entries shard `i` can take without allocating.
    #[cfg(test)]
    pub fn spare_entries(&self, i: usize) -> usize {
        self.list[i].queue.lock().spare_entries()
    }

    /// The earliest time any shard needs the scheduler.
    pub fn next_wake(&self) -> Nanos {
        self.list
            .iter()
            .map(|s| s.min_wake.load(Ordering::SeqCst))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Entries held, stale ones included.
    pub fn total_len(&self) -> usize {
        self.list
            .iter()
            .map(|s| s.len.load(Ordering::Relaxed))
            .sum()
    }

    /// Does shard `i` hold enough entries to be compacted?
    #[inline]
    pub fn over_threshold(&self, i: usize) -> bool {
        let s = &self.list[i];
        s.len.load(Ordering::Relaxed) > s.compact_at.load(Ordering::Relaxed)
    }

    /// Shard `i` has grown without garbage to drop: look again once it doubles.
    pub fn defer_compaction(&self, i: usize) {
        let s = &self.list[i];
        let len = s.len.load(Ordering::Relaxed);
        s.compact_at
            .store((2 * len).max(COMPACT_SLACK), Ordering::Relaxed);
    }

    /// Drops the entries `keep` rejects from shard `i`; returns how many.
    pub fn retain_shard(
        &self,
        i: usize,
        prefetch: impl Fn(&Entry),
        keep: impl FnMut(&Entry) -> bool,
    ) -> usize {
        let s = &self.list[i];
        let mut q = s.queue.lock();
        let dropped = q.retain(prefetch, keep);
        let len = q.len();
        s.len.store(len, Ordering::Relaxed);
        s.compact_at
            .store((2 * len).max(COMPACT_SLACK), Ordering::Relaxed);
        s.min_wake
            .store(q.next_wake().unwrap_or(u64::MAX), Ordering::SeqCst);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(shards: &Shards, i: usize, count: u32) {
        for t in 0..count {
            let e = Entry {
                due: 1_000_000_000 + u64::from(t) * 1_000,
                target: t,
                tag: 0,
            };
            shards.arm_one(i, e, false);
        }
    }

    #[test]
    fn provision_gives_room_to_the_shards_that_grew_and_none_to_the_others() {
        let shards = Shards::new(2, 20, 0);
        arm(&shards, 0, 3_000);
        let before = shards.spare_entries(0);
        shards.provision(8_192);
        assert!(
            shards.spare_entries(0) >= 3_000,
            "room for as much again: {} (was {before})",
            shards.spare_entries(0)
        );
        assert_eq!(shards.spare_entries(1), 0, "an idle shard gets nothing");
        let spare = shards.spare_entries(0);
        shards.provision(8_192);
        assert_eq!(
            shards.spare_entries(0),
            spare,
            "no growth since: nothing more"
        );
        // Growth beyond the cap is provisioned up to the cap.
        arm(&shards, 1, 20_000);
        shards.provision(4_096);
        let s = shards.spare_entries(1);
        assert!((4_096..4_096 + SEGMENT_ENTRIES + 63).contains(&s), "{s}");
    }
}
