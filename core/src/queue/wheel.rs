//! A hierarchical timing wheel (as in the Linux kernel and tokio): 11 levels of 64
//! buckets; a level-`l` bucket spans 64^l ticks, so any 64-bit tick has a place and
//! insertion is O(1). A tick is a power of two of nanoseconds (a shift, not a division,
//! files an entry). An entry is filed by its tick, `ceil(due / tick)`: it is never handed
//! out before its due time, and at most one tick after it. Higher-level buckets are
//! cascaded into lower ones as time reaches them.
//!
//! Deletion is lazy: the wheel never looks inside entries, so a cancelled timer's entry
//! stays until it surfaces or `retain` drops it.

use super::arena::{Arena, Bucket, Segment, CHUNK_ENTRIES};
use super::Entry;
use crate::clock::Nanos;

const LEVELS: usize = 11;
const SLOT_BITS: usize = 6;
const SLOTS: usize = 1 << SLOT_BITS;

pub(crate) struct Wheel {
    /// log2 of the nanoseconds per tick.
    shift: u32,
    /// Every entry of a tick below this one has been handed out.
    elapsed: u64,
    buckets: Box<[[Bucket; SLOTS]; LEVELS]>,
    occupied: [u64; LEVELS],
    arena: Arena,
    len: usize,
}

#[inline]
fn level_for(elapsed: u64, when: u64) -> usize {
    let masked = (elapsed ^ when) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros() as usize;
    significant / SLOT_BITS
}

#[inline]
fn slot_for(level: usize, when: u64) -> usize {
    ((when >> (level * SLOT_BITS)) & (SLOTS as u64 - 1)) as usize
}

/// The tick an entry due at `due` belongs to: its due time rounded up to a tick, and never
/// one that has already been handed out.
#[inline]
fn when(shift: u32, elapsed: u64, due: Nanos) -> u64 {
    let mask = (1u64 << shift) - 1;
    ((due >> shift) + u64::from(due & mask != 0)).max(elapsed)
}

#[inline]
fn file(
    buckets: &mut [[Bucket; SLOTS]; LEVELS],
    occupied: &mut [u64; LEVELS],
    arena: &mut Arena,
    elapsed: u64,
    when: u64,
    e: Entry,
) {
    let level = level_for(elapsed, when);
    let slot = slot_for(level, when);
    buckets[level][slot].push(arena, e);
    occupied[level] |= 1 << slot;
}

impl Wheel {
    /// A wheel of `1 << shift`-nanosecond ticks whose time starts at `now`.
    pub fn new(shift: u32, now: Nanos) -> Self {
        Self {
            shift,
            elapsed: now >> shift,
            buckets: Box::new([[Bucket::default(); SLOTS]; LEVELS]),
            occupied: [0; LEVELS],
            arena: Arena::default(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Entries the arena can take before it must allocate (at least; a bucket's partly
    /// filled tail chunk may take more).
    pub fn spare_entries(&self) -> usize {
        self.arena.spare_chunks() * CHUNK_ENTRIES
    }

    /// Takes a segment made ahead of use into the arena.
    pub fn adopt(&mut self, segment: Segment) {
        self.arena.adopt(segment);
    }

    #[inline]
    fn when(&self, due: Nanos) -> u64 {
        when(self.shift, self.elapsed, due)
    }

    /// The start of tick `ticks` in nanoseconds (`u64::MAX` past the clock's range).
    #[inline]
    fn ticks_to_nanos(&self, ticks: u64) -> Nanos {
        if ticks > u64::MAX >> self.shift {
            u64::MAX
        } else {
            ticks << self.shift
        }
    }

    /// Files `e`; returns when the scheduler must look again for it: the start of its tick.
    #[inline]
    pub fn insert(&mut self, e: Entry) -> Nanos {
        let when = self.when(e.due);
        file(
            &mut self.buckets,
            &mut self.occupied,
            &mut self.arena,
            self.elapsed,
            when,
            e,
        );
        self.len += 1;
        self.ticks_to_nanos(when)
    }

    /// The earliest occupied bucket: (level, slot, its first tick).
    fn next_expiration(&self) -> Option<(usize, usize, u64)> {
        for level in 0..LEVELS {
            let occupied = self.occupied[level];
            if occupied == 0 {
                continue;
            }
            let shift = level * SLOT_BITS;
            let now_slot = (self.elapsed >> shift) & (SLOTS as u64 - 1);
            let slot = ((occupied.rotate_right(now_slot as u32).trailing_zeros() as u64 + now_slot)
                & (SLOTS as u64 - 1)) as usize;
            let slot_range = 1u128 << shift;
            let level_range = slot_range << SLOT_BITS;
            let level_start = u128::from(self.elapsed) & !(level_range - 1);
            let mut deadline = level_start + slot as u128 * slot_range;
            if deadline < u128::from(self.elapsed) {
                deadline += level_range;
            }
            return Some((level, slot, deadline.min(u128::from(u64::MAX)) as u64));
        }
        None
    }

    /// The earliest time at which an entry may be due, if the wheel holds any.
    pub fn next_wake(&self) -> Option<Nanos> {
        self.next_expiration()
            .map(|(_, _, t)| self.ticks_to_nanos(t))
    }

    /// Hands out every entry whose tick has been reached at `now` (so `due <= now` for
    /// each), cascading higher buckets as their time comes.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Entry>) {
        let now_tick = now >> self.shift;
        while let Some((level, slot, deadline)) = self.next_expiration() {
            if deadline > now_tick {
                break;
            }
            self.elapsed = self.elapsed.max(deadline);
            self.occupied[level] &= !(1 << slot);
            let mut bucket = std::mem::take(&mut self.buckets[level][slot]);
            if level == 0 {
                let mut n = 0;
                bucket.drain(&mut self.arena, |_, entries| {
                    out.extend_from_slice(entries);
                    n += entries.len();
                });
                self.len -= n;
            } else {
                let (shift, elapsed) = (self.shift, self.elapsed);
                let Wheel {
                    buckets, occupied, ..
                } = self;
                bucket.drain(&mut self.arena, |arena, entries| {
                    for e in entries {
                        let when = when(shift, elapsed, e.due);
                        file(buckets, occupied, arena, elapsed, when, *e);
                    }
                });
            }
        }
        self.elapsed = self.elapsed.max(now_tick);
    }

    /// Keeps only the entries `keep` accepts; `prefetch` is called a few entries ahead of
    /// `keep` so that what `keep` reads is on its way into the cache. Returns how many
    /// entries were dropped.
    pub fn retain(
        &mut self,
        prefetch: impl Fn(&Entry),
        mut keep: impl FnMut(&Entry) -> bool,
    ) -> usize {
        let before = self.len;
        let Wheel {
            buckets,
            occupied,
            arena,
            len,
            ..
        } = self;
        for level in 0..LEVELS {
            for slot in 0..SLOTS {
                if buckets[level][slot].is_empty() {
                    continue;
                }
                let mut old = std::mem::take(&mut buckets[level][slot]);
                let mut new = Bucket::default();
                old.drain(arena, |arena, entries| {
                    for (i, e) in entries.iter().enumerate() {
                        if let Some(ahead) = entries.get(i + 8) {
                            prefetch(ahead);
                        }
                        if keep(e) {
                            new.push(arena, *e);
                        } else {
                            *len -= 1;
                        }
                    }
                });
                if new.is_empty() {
                    occupied[level] &= !(1 << slot);
                }
                buckets[level][slot] = new;
            }
        }
        before - self.len
    }

    #[cfg(test)]
    pub fn arena_chunks(&self) -> usize {
        self.arena.capacity_chunks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(due: Nanos, target: u32) -> Entry {
        Entry {
            due,
            target,
            tag: 0,
        }
    }

    proptest! {
        /// Against a brute-force model: every entry comes out at the first poll whose
        /// time reaches its tick — never before its due time, never later.
        #[test]
        fn entries_surface_exactly_when_their_tick_is_reached(
            shift in prop_oneof![Just(0u32), Just(3), Just(19)],
            start in 0u64..1_000_000_000_000,
            ops in proptest::collection::vec((0u64..3, 0u64..5_000_000_000), 1..300),
        ) {
            let tick = 1u64 << shift;
            let mut w = Wheel::new(shift, start);
            let mut now = start;
            let mut model: Vec<(u64, u32)> = Vec::new();
            let mut next_id = 0u32;
            for (op, arg) in ops {
                match op {
                    0 | 1 => {
                        let due = if op == 0 { now + arg % 1000 } else { now + arg };
                        w.insert(e(due, next_id));
                        model.push((due, next_id));
                        next_id += 1;
                    }
                    _ => {
                        now += arg % 3_000_000_000;
                        let mut out = Vec::new();
                        w.poll(now, &mut out);
                        let now_tick = now / tick;
                        let mut expected: Vec<u32> = model.iter()
                            .filter(|(d, _)| d.div_ceil(tick) <= now_tick)
                            .map(|(_, i)| *i).collect();
                        model.retain(|(d, _)| d.div_ceil(tick) > now_tick);
                        let mut got: Vec<u32> = out.iter().map(|x| x.target).collect();
                        for x in &out { prop_assert!(x.due <= now); }
                        got.sort_unstable();
                        expected.sort_unstable();
                        prop_assert_eq!(got, expected);
                        prop_assert_eq!(w.len(), model.len());
                        if let Some(t) = w.next_wake() {
                            let earliest = model.iter().map(|(d, _)| d.div_ceil(tick) * tick).min().unwrap();
                            prop_assert!(t <= earliest.max(now - now % tick));
                        } else {
                            prop_assert!(model.is_empty());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn retain_drops_and_reuses_chunks() {
        let mut w = Wheel::new(20, 0);
        for i in 0..100_000u32 {
            w.insert(e(60_000_000_000 + u64::from(i) * 600_000, i));
        }
        let chunks = w.arena_chunks();
        assert_eq!(w.retain(|_| {}, |x| x.target % 10 == 0), 90_000);
        assert_eq!(w.len(), 10_000);
        for i in 0..90_000u32 {
            w.insert(e(70_000_000_000 + u64::from(i), i));
        }
        assert_eq!(
            w.arena_chunks(),
            chunks,
            "chunks freed by retain are reused"
        );
        let mut out = Vec::new();
        w.poll(u64::MAX / 2, &mut out);
        assert_eq!(out.len(), 100_000);
        assert_eq!(w.len(), 0);
        assert_eq!(w.next_wake(), None);
    }

    #[test]
    fn far_deadlines_fit() {
        let mut w = Wheel::new(0, 5);
        w.insert(e(u64::MAX, 1));
        w.insert(e(6, 2));
        let mut out = Vec::new();
        w.poll(1_000, &mut out);
        assert_eq!(out.len(), 1);
        w.poll(u64::MAX, &mut out);
        assert_eq!(out.len(), 2);
    }
}
