//! The object catalog's index of evictable Spots (L5): a dense table of places and a
//! cursor, so each idle scan examines at most [`SCAN_LIMIT`] places and continues where the
//! previous one stopped.
//!
//! Each place has an activity word — when its Spot last became quiescent, or `BUSY` —
//! that the Spot writes (under its own lock) and the scan reads. The words of consecutive
//! places lie next to each other, so a scan reads a few contiguous cache lines whatever
//! the number of Spots, and touches a Spot only when its word makes it a candidate. A
//! place keeps its index while its Spot lives (the Spot holds it, as that index alone: its
//! word is found without the catalog's lock, see `activity_words`); a freed place is
//! reused by the next Spot, so the table does not grow past the most Spots held at once.

use std::num::NonZeroU32;

use parking_lot::Mutex;

use crate::activity_words::{ActivityWords, CHUNK};

/// The most places one scan examines.
pub const SCAN_LIMIT: usize = 64;

/// The activity word of a Spot with work queued or handed over (or of a free place).
pub(crate) const BUSY: u64 = u64::MAX;

/// A Spot's place in the catalog: where it writes its activity word. Kept as its index
/// plus one, so a Spot's optional place takes four bytes.
pub(crate) struct Place(NonZeroU32);

impl Place {
    fn index(&self) -> u32 {
        self.0.get() - 1
    }
}

/// The places' entries, under the catalog's lock.
struct Slots<T> {
    /// Entries in chunks of `CHUNK` (the table grows a chunk at a time, never by
    /// doubling).
    entries: Vec<Box<[Option<T>]>>,
    /// Places handed out so far (free or taken).
    len: usize,
    free: Vec<u32>,
    cursor: usize,
}

impl<T> Slots<T> {
    fn entry(&mut self, index: u32) -> &mut Option<T> {
        let i = index as usize;
        &mut self.entries[i / CHUNK][i % CHUNK]
    }
}

/// The catalog holds each evictable Spot by value `T` in its place (the node keeps its
/// Spot there, so a scan reaches a candidate without a lookup).
pub(crate) struct Catalog<T> {
    words: ActivityWords,
    slots: Mutex<Slots<T>>,
}

/// What one scan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Places examined.
    pub examined: usize,
    /// The cursor came round to the first place: every place was examined since the
    /// previous scan that said so (a sweep ended).
    pub wrapped: bool,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Self {
            words: ActivityWords::default(),
            slots: Mutex::new(Slots {
                entries: Vec::new(),
                len: 0,
                free: Vec::new(),
                cursor: 0,
            }),
        }
    }
}

impl<T: Clone> Catalog<T> {
    /// Takes a free place, its word set to `now` (creation counts as activity); its entry
    /// is set by [`Catalog::fill`] once the Spot is published. None when every place an
    /// index can name is taken.
    pub fn reserve(&self, now: u64) -> Option<Place> {
        let mut slots = self.slots.lock();
        let index = match slots.free.pop() {
            Some(i) => i,
            None => {
                let i = slots.len;
                let number = u32::try_from(i + 1).ok()?;
                if i.is_multiple_of(CHUNK) {
                    self.words.grow_to(number - 1, BUSY);
                    slots.entries.push((0..CHUNK).map(|_| None).collect());
                }
                slots.len += 1;
                number - 1
            }
        };
        let place = Place(NonZeroU32::new(index + 1).expect("an index plus one"));
        self.set(&place, now);
        Some(place)
    }

    /// Puts the Spot in its place: scans see it from now on.
    pub fn fill(&self, place: &Place, value: T) {
        *self.slots.lock().entry(place.index()) = Some(value);
    }

    /// Frees a place (its Spot no longer writes to it).
    pub fn remove(&self, place: &Place) {
        self.set(place, BUSY);
        let mut slots = self.slots.lock();
        *slots.entry(place.index()) = None;
        slots.free.push(place.index());
    }

    /// Sets a place's activity word: a time (quiescent since) or [`BUSY`].
    pub fn set(&self, place: &Place, v: u64) {
        self.words.set(place.index(), v);
    }

    /// A place's activity word.
    pub fn get(&self, place: &Place) -> u64 {
        self.words.get(place.index())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        let slots = self.slots.lock();
        slots
            .entries
            .iter()
            .flat_map(|c| c.iter())
            .filter(|e| e.is_some())
            .count()
    }

    /// Spots in the catalog now.
    pub fn occupied(&self) -> usize {
        let slots = self.slots.lock();
        slots.len - slots.free.len()
    }

    /// Examines the next at most `SCAN_LIMIT` places from the cursor (wrapping once),
    /// advancing it, and puts in `out` the Spots whose activity word `keep` accepts (never
    /// one marked busy). Only the words are read for the others.
    pub fn next_batch(&self, out: &mut Vec<T>, keep: impl Fn(u64) -> bool) -> Scan {
        out.clear();
        let mut slots = self.slots.lock();
        let n = slots.len;
        if n == 0 {
            return Scan {
                examined: 0,
                wrapped: true,
            };
        }
        let mut wrapped = false;
        if slots.cursor >= n {
            slots.cursor = 0;
        }
        let examined = SCAN_LIMIT.min(n);
        let mut words = self.words.chunk(slots.cursor / CHUNK);
        for _ in 0..examined {
            let i = slots.cursor;
            let word = words[i % CHUNK].load(std::sync::atomic::Ordering::Acquire);
            if word != BUSY && keep(word) {
                if let Some(v) = &slots.entries[i / CHUNK][i % CHUNK] {
                    out.push(v.clone());
                }
            }
            slots.cursor += 1;
            if slots.cursor == n {
                slots.cursor = 0;
                wrapped = true;
            }
            if slots.cursor.is_multiple_of(CHUNK) {
                words = self.words.chunk(slots.cursor / CHUNK);
            }
        }
        Scan { examined, wrapped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_examines_at_most_the_limit_and_resumes_at_the_cursor() {
        let c = Catalog::default();
        let places: Vec<Place> = (0..200)
            .map(|i| {
                let p = c.reserve(0).unwrap();
                c.fill(&p, i);
                p
            })
            .collect();
        let mut out = Vec::new();
        assert_eq!(
            c.next_batch(&mut out, |_| true),
            Scan {
                examined: SCAN_LIMIT,
                wrapped: false
            }
        );
        assert_eq!(out.len(), SCAN_LIMIT);
        assert_eq!(out[0], 0);
        c.next_batch(&mut out, |_| true);
        assert_eq!(out[0], 64);
        let mut seen = std::collections::HashSet::new();
        let mut sweeps = 0;
        for _ in 0..4 {
            sweeps += usize::from(c.next_batch(&mut out, |_| true).wrapped);
            seen.extend(out.iter().copied());
        }
        assert_eq!(
            sweeps, 1,
            "200 places: the cursor comes round once in 4 more scans"
        );
        assert_eq!(c.occupied(), 200);
        assert_eq!(
            seen.len(),
            200,
            "every Spot is examined within a few passes"
        );
        // Busy Spots and those `keep` refuses are only read.
        for (i, p) in places.iter().enumerate() {
            c.set(p, if i % 2 == 0 { BUSY } else { i as u64 });
        }
        c.next_batch(&mut out, |w| w % 4 == 1);
        assert!(out.iter().all(|v| v % 4 == 1));
        let mut places = places;
        let p = places.remove(5);
        c.remove(&p);
        assert_eq!(c.len(), 199);
        // A freed place is reused: the table does not grow.
        let again = c.reserve(7).unwrap();
        assert_eq!(c.get(&again), 7);
        c.fill(&again, 1000);
        assert_eq!(c.slots.lock().len, 200);
    }
}
