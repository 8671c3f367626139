//! Buffers the runtime keeps from one turn to the next give back what a burst grew them
//! to. A burst of 100,000 records leaves ~2 MB of capacity in each buffer it passed
//! through; kept for the life of the runtime, that capacity would count against every
//! timer and owner that stays. A buffer of more than `LARGE` elements that is less than a
//! quarter full shrinks to twice what it holds (at least `FLOOR`): a load whose turns stay
//! below `LARGE` never reallocates, and a larger burst pays a few reallocations, a small
//! part of its own cost.

use std::collections::VecDeque;

/// Elements a trimmed buffer keeps.
const FLOOR: usize = 1024;
/// Buffers up to this many elements are never trimmed.
const LARGE: usize = 16 * 1024;

/// True when a buffer of `len` elements in `capacity` should give memory back.
#[inline]
fn oversized(len: usize, capacity: usize) -> bool {
    capacity > LARGE && len < capacity / 4
}

fn target(len: usize) -> usize {
    (len * 2).max(FLOOR)
}

/// Trims a vector (see the module documentation).
#[inline]
pub(crate) fn trim_vec<T>(v: &mut Vec<T>) {
    if oversized(v.len(), v.capacity()) {
        v.shrink_to(target(v.len()));
    }
}

/// Trims a double-ended queue (see the module documentation).
#[inline]
pub(crate) fn trim_deque<T>(v: &mut VecDeque<T>) {
    if oversized(v.len(), v.capacity()) {
        v.shrink_to(target(v.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, and its 100,000-element buffers are slow under Miri"
    )]
    fn a_buffer_trims_only_when_large_and_mostly_empty() {
        let mut v: Vec<u32> = Vec::with_capacity(100_000);
        v.extend(0..60_000);
        trim_vec(&mut v);
        assert!(v.capacity() >= 100_000, "more than a quarter full: kept");
        v.truncate(10);
        trim_vec(&mut v);
        assert!(v.capacity() >= FLOOR && v.capacity() < 4 * FLOOR);
        let mut steady: Vec<u32> = Vec::with_capacity(LARGE);
        trim_vec(&mut steady);
        assert_eq!(steady.capacity(), LARGE, "not large: kept even when empty");
        let mut d: VecDeque<u32> = (0..50_000).collect();
        d.drain(..49_000);
        trim_deque(&mut d);
        assert!(d.capacity() < 4 * 1000 + FLOOR);
        assert_eq!(d.len(), 1000);
        assert_eq!(d.front(), Some(&49_000));
    }
}
