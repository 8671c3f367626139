//! The object catalog's index of evictable Spots (L5): a dense table of places and a
//! cursor, so each idle scan examines at most [`SCAN_LIMIT`] places and continues where the
//! previous one stopped.
//!
//! Each place has an activity word — when its Spot last became quiescent, or `BUSY` —
//! that the Spot writes (under its own lock) and the scan reads. The words of consecutive
//! places lie next to each other, so a scan reads a few contiguous cache lines whatever
//! the number of Spots, and touches a Spot only when its word makes it a candidate. A
//! place keeps its index while its Spot lives (the Spot holds it); a freed place is reused
//! by the next Spot, so the table does not grow past the most Spots held at once.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::Arc;

/// The most places one scan examines.
pub const SCAN_LIMIT: usize = 64;

/// The activity word of a Spot with work queued or handed over (or of a free place).
pub(crate) const BUSY: u64 = u64::MAX;

/// Places per chunk of words (chunks never move: Spots write to theirs without the
/// catalog's lock).
const CHUNK: usize = 1024;

struct Words([AtomicU64; CHUNK]);

/// A Spot's place in the catalog: where it writes its activity word.
pub(crate) struct Place {
    words: Arc<Words>,
    index: u32,
}

impl Place {
    /// Sets the activity word: a time (quiescent since) or [`BUSY`].
    pub(crate) fn set(&self, v: u64) {
        self.words.0[self.index as usize % CHUNK].store(v, Release);
    }

    /// The activity word.
    pub(crate) fn get(&self) -> u64 {
        self.words.0[self.index as usize % CHUNK].load(Acquire)
    }
}

/// The catalog holds each evictable Spot by value `T` in its place (the node keeps its
/// Spot there, so a scan reaches a candidate without a lookup).
pub(crate) struct Catalog<T> {
    entries: Vec<Option<T>>,
    chunks: Vec<Arc<Words>>,
    free: Vec<u32>,
    cursor: usize,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            chunks: Vec::new(),
            free: Vec::new(),
            cursor: 0,
        }
    }
}

impl<T: Clone> Catalog<T> {
    /// Takes a free place, its word set to `now` (creation counts as activity); its entry
    /// is set by [`Catalog::fill`] once the Spot is published.
    pub fn reserve(&mut self, now: u64) -> Place {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = self.entries.len();
                if i.is_multiple_of(CHUNK) {
                    self.chunks.push(Arc::new(Words(std::array::from_fn(|_| {
                        AtomicU64::new(BUSY)
                    }))));
                }
                self.entries.push(None);
                i as u32
            }
        };
        let place = Place {
            words: self.chunks[index as usize / CHUNK].clone(),
            index,
        };
        place.set(now);
        place
    }

    /// Puts the Spot in its place: scans see it from now on.
    pub fn fill(&mut self, place: &Place, value: T) {
        self.entries[place.index as usize] = Some(value);
    }

    /// Frees a place (its Spot no longer writes to it).
    pub fn remove(&mut self, place: Place) {
        place.set(BUSY);
        self.entries[place.index as usize] = None;
        self.free.push(place.index);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// Examines the next at most `SCAN_LIMIT` places from the cursor (wrapping once),
    /// advancing it, and puts in `out` the Spots whose activity word `keep` accepts (never
    /// one marked busy). Only the words are read for the others. Returns how many places
    /// were examined.
    pub fn next_batch(&mut self, out: &mut Vec<T>, keep: impl Fn(u64) -> bool) -> usize {
        out.clear();
        let n = self.entries.len();
        if n == 0 {
            return 0;
        }
        if self.cursor >= n {
            self.cursor = 0;
        }
        let examined = SCAN_LIMIT.min(n);
        for _ in 0..examined {
            let i = self.cursor;
            let word = self.chunks[i / CHUNK].0[i % CHUNK].load(Acquire);
            if word != BUSY && keep(word) {
                if let Some(v) = &self.entries[i] {
                    out.push(v.clone());
                }
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
        let places: Vec<Place> = (0..200)
            .map(|i| {
                let p = c.reserve(0);
                c.fill(&p, i);
                p
            })
            .collect();
        let mut out = Vec::new();
        assert_eq!(c.next_batch(&mut out, |_| true), SCAN_LIMIT);
        assert_eq!(out.len(), SCAN_LIMIT);
        assert_eq!(out[0], 0);
        c.next_batch(&mut out, |_| true);
        assert_eq!(out[0], 64);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4 {
            c.next_batch(&mut out, |_| true);
            seen.extend(out.iter().copied());
        }
        assert_eq!(
            seen.len(),
            200,
            "every Spot is examined within a few passes"
        );
        // Busy Spots and those `keep` refuses are only read.
        for (i, p) in places.iter().enumerate() {
            p.set(if i % 2 == 0 { BUSY } else { i as u64 });
        }
        c.next_batch(&mut out, |w| w % 4 == 1);
        assert!(out.iter().all(|v| v % 4 == 1));
        let mut places = places;
        let p = places.remove(5);
        c.remove(p);
        assert_eq!(c.len(), 199);
        // A freed place is reused: the table does not grow.
        let again = c.reserve(7);
        assert_eq!(again.get(), 7);
        c.fill(&again, 1000);
        assert_eq!(c.entries.len(), 200);
    }
}
