//! The deadline queue: when each armed timer (and owner lease) must be looked at again.
//! A data structure only — it never looks inside the entries it holds, and knows nothing
//! of slots, owners or the scheduler that polls it.
//!
//! Most entries go into a hierarchical timing wheel (`wheel`) whose tick is the runtime's
//! wakeup resolution (a power of two of nanoseconds): O(1) insertion, batches of
//! everything due within one tick. Timers
//! whose period is shorter than one tick go into a 4-ary heap (`heap`) so that their
//! wakeups are exact: the runtime's own granularity never makes them skip ticks.

mod arena;
mod heap;
mod wheel;

pub(crate) use arena::{Segment, SEGMENT_ENTRIES};

use crate::clock::Nanos;

/// One armed deadline: `target` names a timer slot or (with `OWNER_TARGET`) an owner's
/// lease; `tag` is what the target must still hold for the entry to be current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub due: Nanos,
    pub target: u32,
    pub tag: u32,
}

/// Marks an entry whose target is an owner lease rather than a timer slot.
pub(crate) const OWNER_TARGET: u32 = 1 << 31;

pub(crate) struct DeadlineQueue {
    wheel: wheel::Wheel,
    exact: heap::Heap,
}

impl DeadlineQueue {
    /// A queue whose wheel ticks are `1 << shift` nanoseconds, starting at `now`.
    pub fn new(shift: u32, now: Nanos) -> Self {
        Self {
            wheel: wheel::Wheel::new(shift, now),
            exact: heap::Heap::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.wheel.len() + self.exact.len()
    }

    /// Arms `e`. Returns the time the scheduler must wake for it.
    #[inline]
    pub fn insert(&mut self, e: Entry, exact: bool) -> Nanos {
        if exact {
            self.exact.push(e);
            e.due
        } else {
            self.wheel.insert(e)
        }
    }

    /// Wheel entries that fit without allocating (see [`Segment`]).
    pub fn spare_entries(&self) -> usize {
        self.wheel.spare_entries()
    }

    /// Takes a wheel segment made ahead of use.
    pub fn adopt(&mut self, segment: Segment) {
        self.wheel.adopt(segment);
    }

    /// The earliest time something may be due.
    pub fn next_wake(&self) -> Option<Nanos> {
        match (self.wheel.next_wake(), self.exact.peek()) {
            (Some(a), Some(b)) => Some(a.min(b.due)),
            (a, b) => a.or(b.map(|e| e.due)),
        }
    }

    /// Moves every entry due at `now` into `out`.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Entry>) {
        self.wheel.poll(now, out);
        while self.exact.peek().is_some_and(|e| e.due <= now) {
            out.extend(self.exact.pop());
        }
    }

    /// Drops the entries `keep` rejects; returns how many.
    pub fn retain(
        &mut self,
        prefetch: impl Fn(&Entry),
        mut keep: impl FnMut(&Entry) -> bool,
    ) -> usize {
        let before = self.exact.len();
        self.exact.retain(&mut keep);
        before - self.exact.len() + self.wheel.retain(prefetch, keep)
    }
}
