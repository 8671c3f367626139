//! The eviction catalog's activity words (see `catalog`): one `AtomicU64` per place, in
//! chunks that never move, found from a place's index without any lock — so a Spot
//! names its place by index alone and writes its word while the catalog's lock is held by
//! someone else.
//!
//! The chunks are listed in a fixed directory of segments, segment `k` holding the
//! pointers of chunks `2^k - 1 ..= 2^(k+1) - 2`: the directory is a few words whatever the
//! number of places, its segments are small (pointers only) and the words grow a chunk at
//! a time.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::OnceLock;

/// Words per chunk.
pub(crate) const CHUNK: usize = 1024;

/// Segments of the directory: enough for every `u32` index.
const SEGMENTS: usize = (u32::BITS as usize + 1) - CHUNK.trailing_zeros() as usize;

struct Chunk([AtomicU64; CHUNK]);

type Segment = Box<[OnceLock<Box<Chunk>>]>;

/// The activity words, by place index.
pub(crate) struct ActivityWords {
    segments: [OnceLock<Segment>; SEGMENTS],
}

impl Default for ActivityWords {
    fn default() -> Self {
        Self {
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

/// The segment of chunk `chunk` and the chunk's slot in it.
fn locate(chunk: usize) -> (usize, usize) {
    let k = (chunk + 1).ilog2() as usize;
    (k, chunk + 1 - (1 << k))
}

impl ActivityWords {
    /// Makes the words of indices `index / CHUNK * CHUNK ..` exist, each set to `initial`
    /// (a no-op when they do). The caller serializes growth (the catalog's lock); readers
    /// of existing words are never held up by it.
    pub(crate) fn grow_to(&self, index: u32, initial: u64) {
        let (k, slot) = locate(index as usize / CHUNK);
        let segment =
            self.segments[k].get_or_init(|| (0..1 << k).map(|_| OnceLock::new()).collect());
        segment[slot]
            .get_or_init(|| Box::new(Chunk(std::array::from_fn(|_| AtomicU64::new(initial)))));
    }

    /// The words of chunk `chunk` (indices `chunk * CHUNK ..`), which must exist.
    pub(crate) fn chunk(&self, chunk: usize) -> &[AtomicU64; CHUNK] {
        let (k, slot) = locate(chunk);
        let chunk = self.segments[k]
            .get()
            .and_then(|s| s[slot].get())
            .expect("a place's word exists from its reservation on");
        &chunk.0
    }

    fn word(&self, index: u32) -> &AtomicU64 {
        &self.chunk(index as usize / CHUNK)[index as usize % CHUNK]
    }

    pub(crate) fn set(&self, index: u32, v: u64) {
        self.word(index).store(v, Release);
    }

    pub(crate) fn get(&self, index: u32) -> u64 {
        self.word(index).load(Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_the_segments_in_order() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1), (1, 0));
        assert_eq!(locate(2), (1, 1));
        assert_eq!(locate(3), (2, 0));
        assert_eq!(locate(6), (2, 3));
        assert_eq!(locate(7), (3, 0));
        let last = u32::MAX as usize / CHUNK;
        assert_eq!(locate(last).0, SEGMENTS - 1);
    }

    #[test]
    fn words_keep_their_values_as_the_table_grows() {
        let w = ActivityWords::default();
        for i in (0..5 * CHUNK as u32).step_by(100) {
            w.grow_to(i, 7);
            w.set(i, u64::from(i));
        }
        for i in (0..5 * CHUNK as u32).step_by(100) {
            assert_eq!(w.get(i), u64::from(i));
        }
        assert_eq!(w.get(1), 7);
    }
}
