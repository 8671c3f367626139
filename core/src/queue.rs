//! The deadline queue: a 4-ary min-heap of 16-byte entries with lazy deletion.
//!
//! Owned by the scheduler thread alone, so it needs no lock. Cancel and re-registration do
//! not search the heap: they bump the slot's arm sequence, which turns the old entry stale;
//! stale entries are dropped when they surface, and the heap is rebuilt without them when
//! they outnumber the live ones, so register/cancel churn cannot grow it without bound
//! (SPEC T8). A 4-ary heap halves the depth of a binary one and keeps a node's children in
//! one cache line (seeds/004).

use crate::clock::Nanos;

/// One armed deadline. `target` names a timer slot or, with [`OWNER_BIT`] set, an owner
/// lease; `seq` must match the target's current arm sequence for the entry to be live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub due: Nanos,
    pub target: u32,
    pub seq: u32,
}

/// Marks an entry whose target is an owner lease rather than a timer slot.
pub(crate) const OWNER_BIT: u32 = 1 << 31;

const ARITY: usize = 4;

#[derive(Debug, Default)]
pub(crate) struct DeadlineHeap {
    entries: Vec<Entry>,
}

impl DeadlineHeap {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn peek(&self) -> Option<&Entry> {
        self.entries.first()
    }

    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.sift_up(self.entries.len() - 1);
    }

    pub fn pop(&mut self) -> Option<Entry> {
        let last = self.entries.pop()?;
        if self.entries.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.entries[0], last);
        self.sift_down(0);
        Some(top)
    }

    /// Keeps only the entries `live` accepts and restores the heap order in O(n).
    pub fn retain(&mut self, mut live: impl FnMut(&Entry) -> bool) {
        self.entries.retain(|e| live(e));
        if self.entries.len() > 1 {
            let last_parent = (self.entries.len() - 2) / ARITY;
            for i in (0..=last_parent).rev() {
                self.sift_down(i);
            }
        }
        if self.entries.capacity() > 64 && self.entries.capacity() > 4 * self.entries.len() {
            self.entries.shrink_to(2 * self.entries.len());
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let item = self.entries[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.entries[parent].due <= item.due {
                break;
            }
            self.entries[i] = self.entries[parent];
            i = parent;
        }
        self.entries[i] = item;
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.entries.len();
        let item = self.entries[i];
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            for c in first + 1..end {
                if self.entries[c].due < self.entries[best].due {
                    best = c;
                }
            }
            if self.entries[best].due >= item.due {
                break;
            }
            self.entries[i] = self.entries[best];
            i = best;
        }
        self.entries[i] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pops_in_due_order(dues in proptest::collection::vec(0u64..1000, 0..300), keep in 0u64..4) {
            let mut h = DeadlineHeap::default();
            for (i, d) in dues.iter().enumerate() {
                h.push(Entry { due: *d, target: i as u32, seq: 0 });
            }
            h.retain(|e| keep == 0 || e.target as u64 % 4 != keep);
            let mut expected: Vec<u64> = dues.iter().enumerate()
                .filter(|(i, _)| keep == 0 || *i as u64 % 4 != keep)
                .map(|(_, d)| *d).collect();
            expected.sort_unstable();
            let mut got = Vec::new();
            while let Some(e) = h.pop() { got.push(e.due); }
            prop_assert_eq!(got, expected);
        }
    }
}
