//! The object catalog's index of evictable Spots (L5): a dense list and a cursor, so each
//! idle scan examines at most [`SCAN_LIMIT`] Spots and continues where the previous one
//! stopped — the cost of a pass does not depend on how many Spots exist.

use std::collections::HashMap;

use crate::kind::SpotId;

/// The most Spots one scan examines.
pub const SCAN_LIMIT: usize = 64;

/// The catalog holds each evictable Spot by id and by value `T` (the node keeps its Spot
/// there, so a scan reaches a Spot without a lookup).
pub(crate) struct Catalog<T> {
    ids: Vec<(SpotId, T)>,
    position: HashMap<SpotId, usize>,
    cursor: usize,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Self {
            ids: Vec::new(),
            position: HashMap::new(),
            cursor: 0,
        }
    }
}

impl<T: Clone> Catalog<T> {
    pub fn insert(&mut self, id: SpotId, value: T) {
        if self.position.contains_key(&id) {
            return;
        }
        self.position.insert(id, self.ids.len());
        self.ids.push((id, value));
    }

    pub fn remove(&mut self, id: SpotId) {
        let Some(i) = self.position.remove(&id) else {
            return;
        };
        self.ids.swap_remove(i);
        if let Some((moved, _)) = self.ids.get(i) {
            self.position.insert(*moved, i);
        }
        if self.cursor > i {
            // The last element moved into `i`, which the cursor has passed: keep it from
            // being skipped this round by stepping back over the hole.
            self.cursor -= 1;
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Examines the next at most `SCAN_LIMIT` entries from the cursor (wrapping once),
    /// advancing it, and puts those `keep` accepts in `out`. Only kept entries are cloned,
    /// so the others are only read. Returns how many were examined.
    pub fn next_batch(&mut self, out: &mut Vec<T>, keep: impl Fn(&T) -> bool) -> usize {
        out.clear();
        let n = self.ids.len();
        if n == 0 {
            return 0;
        }
        if self.cursor >= n {
            self.cursor = 0;
        }
        let examined = SCAN_LIMIT.min(n);
        for _ in 0..examined {
            let v = &self.ids[self.cursor].1;
            if keep(v) {
                out.push(v.clone());
            }
            self.cursor += 1;
            if self.cursor == n {
                self.cursor = 0;
            }
        }
        examined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_examines_at_most_the_limit_and_resumes_at_the_cursor() {
        let mut c = Catalog::default();
        for i in 0..200 {
            c.insert(SpotId(i), i);
        }
        let mut out = Vec::new();
        c.next_batch(&mut out, |_| true);
        assert_eq!(out.len(), SCAN_LIMIT);
        assert_eq!(out[0], 0);
        c.next_batch(&mut out, |_| true);
        assert_eq!(out[0], 64);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4 {
            c.next_batch(&mut out, |_| true);
            seen.extend(out.iter().copied());
        }
        assert_eq!(seen.len(), 200, "every id is examined within a few passes");
        c.remove(SpotId(5));
        assert_eq!(c.len(), 199);
        assert_eq!(c.next_batch(&mut out, |v| v % 2 == 0), SCAN_LIMIT);
        assert_eq!(out.len(), SCAN_LIMIT / 2, "only the kept entries");
    }
}
