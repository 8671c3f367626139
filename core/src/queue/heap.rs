//! A 4-ary min-heap of entries: the deadline queue for timers whose period is below the
//! wheel's tick (they must wake the scheduler to the nanosecond). Children of a node share
//! one cache line.

use super::Entry;

const ARITY: usize = 4;

#[derive(Debug, Default)]
pub(crate) struct Heap {
    entries: Vec<Entry>,
}

impl Heap {
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

    /// Keeps the entries `keep` accepts and restores the heap order in O(n).
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) {
        self.entries.retain(|e| keep(e));
        if self.entries.len() > 1 {
            for i in (0..=(self.entries.len() - 2) / ARITY).rev() {
                self.sift_down(i);
            }
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
