//! The timer table: one dense, cache-line-sized slot per timer generation, and the side
//! table of the host's payloads.
//!
//! A slot holds everything the hot paths read — the word (who owns it, in which phase),
//! the owner, the key, the schedule and the tick counters — in one 64-byte line. What is
//! rarely touched (release hooks, waiters, failure counts, cleanup messages) lives in the
//! cold table (a map of its own, beside the slots), and the payload in a parallel array, so a registration
//! allocates nothing in steady state.
//!
//! Slots live in fixed chunks that never move: the address of a slot word stays valid for
//! the life of the runtime (hosts read it to check a record without a call). A slot is
//! reused for a new generation only after its last one ended; free slots rest in FIFO
//! queues so that an ended generation's result stays readable through its handle for as
//! long as possible.
//!
//! Beside the slots, one byte per slot says whether it is *taken* — handed out by
//! `allocate` and not yet returned by `release` — and how many *holds* it has: a host
//! handle that must keep reading its generation's result holds the slot, and a slot
//! whose generation ended goes back to the free slots only when the last hold is gone
//! (`release` and `unhold`: whichever comes second gives it back). A hold is taken only
//! where no end can release the slot meanwhile — by the registering thread before it
//! publishes the generation, by the thread that claimed the generation a reset replaces,
//! or by a holder for another — so a release that finds no hold can
//! clear the byte with a plain store. A deadline-queue entry can only be
//! current while its slot is taken, so compaction drops the entries of returned slots
//! without reading their slot lines (a cancelled timer's entry costs one byte of a dense
//! array, not a cache miss on a 64-byte line). Ground rules: only the thread that took a
//! slot marks it taken, before it publishes the generation; only the thread that returns
//! it clears the mark, after the generation ended and before the slot can be taken again.
//! Every path from the mark to an entry runs through the slot word or a lock, so whoever
//! reads an entry sees its slot's mark as it was when the entry was armed, or later.

mod free;
pub(crate) mod succession;
pub(crate) mod word;

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

use crate::chunked::{ChunkedArray, Zeroable};
use crate::error::Result;
use crate::sync::{AtomicU32, AtomicU64};

use free::FreeSlots;

/// Most timer slots a runtime can hold (16 Mi).
pub const MAX_TIMERS: u32 = 1 << 24;

/// A table with more slots than this is growing densely; below it, the few page faults
/// of its first slots are taken by the registrations themselves (and no helper runs).
const PRETOUCH_FROM: u32 = 1 << 14;
/// Slots whose memory is asked for at once, ahead of use (512 KiB of slot lines): a
/// window is asked for when registrations reach the one before it, so the memory made
/// ahead of use stays below two windows.
pub(crate) const PRETOUCH_WINDOW: u32 = 1 << 13;

/// `Slot::owner`: the owner's index in the owner table (low 24 bits) ...
pub(crate) const OWNER_INDEX_MASK: u32 = (1 << 24) - 1;
/// ... and flags of the generation: the cold table holds an entry for it,
pub(crate) const HAS_COLD: u32 = 1 << 24;
/// a thread is parked on the slot waiting for its end,
pub(crate) const HAS_WAITERS: u32 = 1 << 25;
/// its period is below the wakeup resolution: it is armed to the nanosecond,
pub(crate) const EXACT: u32 = 1 << 26;
/// the runtime's release function has work for its payload,
pub(crate) const HAS_RELEASE: u32 = 1 << 27;
/// its key was one of the owner's inline keys when it was registered: an idle end may
/// leave the key table alone (a kept end, see `runtime::end`).
pub(crate) const KEY_INLINE: u32 = 1 << 28;

/// The taken mark's bit (see the module documentation) ...
const TAKEN: u8 = 1;
/// ... and its unit of holds, in the bits above it.
const HOLD: u8 = 2;
/// The most holds a slot keeps count of ...
const MOST_HOLDS: u8 = u8::MAX / HOLD;
/// ... and the most it takes for clones of handles (the rest is for resets in place).
const MOST_CLONE_HOLDS: u8 = 64;
const _: () = assert!(MOST_CLONE_HOLDS < MOST_HOLDS - 1);

const FAILURE_BITS: u32 = 24;
/// The most failures the failure array counts for one generation.
pub(crate) const FAILURES_SATURATED: u64 = (1 << FAILURE_BITS) - 1;

/// One timer generation's hot state: one cache line.
#[repr(C, align(64))]
pub(crate) struct Slot {
    /// See [`word`].
    pub word: AtomicU64,
    /// Owner index and flags (see `OWNER_INDEX_MASK`).
    pub owner: AtomicU32,
    /// The overrun policy (`crate::policy::Schedule::mode`).
    pub mode: StdAtomicU32,
    pub key: std::sync::atomic::AtomicU64,
    /// Fixed rate: first nominal due time. Fixed delay and one-shots: next due time.
    pub base: std::sync::atomic::AtomicU64,
    /// 0 for a one-shot.
    pub period: std::sync::atomic::AtomicU64,
    /// Scheduled index of the last delivered tick.
    pub last: std::sync::atomic::AtomicU64,
    /// Callbacks delivered (the last delivery index).
    pub delivered: std::sync::atomic::AtomicU64,
    /// Scheduled index of the record in flight.
    pub inflight: std::sync::atomic::AtomicU64,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            word: AtomicU64::new(word::FREE),
            owner: AtomicU32::new(0),
            mode: StdAtomicU32::new(0),
            key: Default::default(),
            base: Default::default(),
            period: Default::default(),
            last: Default::default(),
            delivered: Default::default(),
            inflight: Default::default(),
        }
    }
}

// SAFETY: atomics and integers only (the loom build initialises slots with `Default`).
#[cfg(not(spot_loom))]
unsafe impl Zeroable for Slot {}

impl Slot {
    #[inline]
    pub fn owner_index(&self) -> u32 {
        self.owner.load(Relaxed) & OWNER_INDEX_MASK
    }

    #[inline]
    pub fn flags(&self) -> u32 {
        self.owner.load(Relaxed) & !OWNER_INDEX_MASK
    }
}

/// The payload of one slot. Written by the registering thread before the generation is
/// published, cloned by a host thread only after it won the record's hand-over, dropped by
/// the one thread that ends the generation: the slot word orders all three.
struct PayloadCell<P>(UnsafeCell<MaybeUninit<P>>);

// SAFETY: access is serialised by the slot word's phases (see above and `SlotTable`).
unsafe impl<P: Send> Sync for PayloadCell<P> {}
// SAFETY: `MaybeUninit` holds anything, zeroes included.
unsafe impl<P> Zeroable for PayloadCell<P> {}

pub(crate) struct SlotTable<P> {
    slots: ChunkedArray<Slot>,
    payloads: ChunkedArray<PayloadCell<P>>,
    /// Failed callbacks per generation: `generation << 24 | count`, written only on a
    /// failure (so its pages are touched only by timers that fail); a count that no
    /// longer fits stays at `FAILURES_SATURATED` and the rest lives in the cold table.
    failures: ChunkedArray<std::sync::atomic::AtomicU64>,
    /// `TAKEN` while a slot is taken, plus `HOLD` per hold (see the module
    /// documentation).
    taken: ChunkedArray<std::sync::atomic::AtomicU8>,
    free: FreeSlots,
    /// The highest `end` passed to an `allocate` caller's `ahead`.
    pretouch_asked: StdAtomicU32,
}

/// Writes the page of `cell` without changing it (see `SlotTable::pretouch`).
#[inline]
fn touch(cell: &std::sync::atomic::AtomicU64) {
    let _ = cell.compare_exchange(0, 0, Relaxed, Relaxed);
}

impl<P> SlotTable<P> {
    pub fn new(shards: usize) -> Self {
        Self {
            #[cfg(not(spot_loom))]
            slots: ChunkedArray::zeroed(MAX_TIMERS as usize),
            #[cfg(spot_loom)]
            slots: ChunkedArray::new(MAX_TIMERS as usize),
            payloads: ChunkedArray::zeroed(MAX_TIMERS as usize),
            failures: ChunkedArray::zeroed(MAX_TIMERS as usize),
            taken: ChunkedArray::zeroed(MAX_TIMERS as usize),
            free: FreeSlots::new(shards),
            pretouch_asked: StdAtomicU32::new(0),
        }
    }

    /// The slot at `index`, if its chunk exists.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&Slot> {
        self.slots.get(index as usize)
    }

    /// The slot at an index this runtime handed out.
    #[inline]
    pub fn slot(&self, index: u32) -> &Slot {
        self.get(index)
            .expect("slot index handed out by this table")
    }

    /// Slots ever handed out.
    pub fn high_water(&self) -> u32 {
        self.free.high_water()
    }

    /// A slot for a new generation (see [`FreeSlots::take`]): resting slots are reused
    /// oldest first, so an ended generation's result stays readable for a while. True
    /// with a slot never used before (write it before reading it). `thread` is the calling
    /// thread's number, `shard` its shard.
    ///
    /// Once the table has grown past `PRETOUCH_FROM` slots, `ahead(end)` is called (once
    /// per `PRETOUCH_WINDOW` new slots, from inside this call) to ask that the slot lines
    /// below `end` be made to exist ahead of use: the caller hands that to whoever runs
    /// [`SlotTable::pretouch`], off the registering threads.
    #[inline]
    pub fn allocate(
        &self,
        thread: usize,
        shard: usize,
        ahead: impl Fn(u32),
    ) -> Result<(u32, bool)> {
        let taken = self.free.take(thread, shard, |first, end| {
            // A batch is shorter than a chunk: its first and last slots name every chunk
            // it reaches.
            for i in [first, end - 1] {
                #[cfg(not(spot_loom))]
                self.slots.ensure_zeroed(i as usize);
                #[cfg(spot_loom)]
                self.slots.ensure(i as usize);
                self.payloads.ensure_zeroed(i as usize);
                self.failures.ensure_zeroed(i as usize);
                self.taken.ensure_zeroed(i as usize);
            }
            if end > PRETOUCH_FROM {
                // The window after the one this batch reaches into, whole.
                let want = ((end / PRETOUCH_WINDOW + 2) * PRETOUCH_WINDOW).min(MAX_TIMERS);
                if self.pretouch_asked.load(Relaxed) < want
                    && self.pretouch_asked.fetch_max(want, Relaxed) < want
                {
                    ahead(want);
                }
            }
        })?;
        self.taken_mark(taken.index).store(TAKEN, Relaxed);
        // A later registration on this thread writes that slot's line: fetch it now, so
        // the miss overlaps the registrations before it instead of stalling that one.
        if let Some(later) = taken.ahead.and_then(|n| self.get(n)) {
            crate::prefetch::for_write(later);
        }
        Ok((taken.index, taken.fresh))
    }

    /// Returns an ended slot for reuse (`thread`, `shard`: the calling thread's), or
    /// leaves that to the last of its holds ([`SlotTable::unhold`]).
    #[inline]
    pub fn release(&self, thread: usize, shard: usize, index: u32) {
        let mark = self.taken_mark(index);
        // No hold: none can be taken now (see the module documentation).
        let free = if mark.load(Relaxed) == TAKEN {
            mark.store(0, Relaxed);
            true
        } else {
            // Releases the end to the last holder, who gives the slot back.
            mark.fetch_and(!TAKEN, AcqRel) == TAKEN
        };
        if free {
            self.free.give(thread, shard, index);
        }
    }

    /// Adds a hold to slot `index`. The caller has taken the slot for a generation no end
    /// can reach meanwhile (not yet published, or claimed by the caller), or holds it
    /// already. False when the slot keeps count of no more holds (the caller holds
    /// nothing more then).
    #[inline]
    pub fn hold(&self, index: u32) -> bool {
        // Holders of the slot's other generations may come and go meanwhile: an RMW.
        self.taken_mark(index)
            .fetch_update(Relaxed, Relaxed, |m| {
                debug_assert!(m != 0, "a hold on a slot nobody has");
                (m / HOLD < MOST_HOLDS).then_some(m + HOLD)
            })
            .is_ok()
    }

    /// May a reset that asks for a hold supersede slot `index`'s generation in place?
    /// Only while its holds stay well below the most it counts: between this look and
    /// the hold, only clones of handles add holds, and they stop at `MOST_CLONE_HOLDS`.
    #[inline]
    pub fn may_hold_in_place(&self, index: u32) -> bool {
        self.taken_mark(index).load(Relaxed) / HOLD < MOST_HOLDS - 1
    }

    /// [`SlotTable::hold`] for a clone of a handle that holds the slot: refused once the
    /// slot holds `MOST_CLONE_HOLDS`, so that a reset in place always finds room.
    pub fn hold_for_clone(&self, index: u32) -> bool {
        self.taken_mark(index)
            .fetch_update(Relaxed, Relaxed, |m| {
                (m / HOLD < MOST_CLONE_HOLDS).then_some(m + HOLD)
            })
            .is_ok()
    }

    /// Drops a hold of slot `index`: `Some(true)` when it was the last and the slot's
    /// generation has ended (the caller returns the slot, [`SlotTable::give_back`]); None
    /// when the slot has no hold to drop. A slot goes back once per end whatever a host
    /// gives back: only the end or the last hold after it returns it, and a slot without
    /// holds refuses.
    #[inline]
    pub fn unhold(&self, index: u32) -> Option<bool> {
        let before = self
            .taken
            .get(index as usize)?
            .fetch_update(AcqRel, Acquire, |m| (m >= HOLD).then(|| m - HOLD))
            .ok()?;
        Some(before == HOLD)
    }

    /// Returns a slot that [`SlotTable::unhold`] gave back.
    pub fn give_back(&self, thread: usize, shard: usize, index: u32) {
        self.free.give(thread, shard, index);
    }

    /// Is slot `index` taken (see the module documentation)? False means that no entry
    /// naming it is current.
    #[inline]
    pub fn is_taken(&self, index: u32) -> bool {
        self.taken
            .get(index as usize)
            .is_some_and(|m| m.load(Relaxed) & TAKEN != 0)
    }

    /// Holds slot `index` keeps (tests).
    #[cfg(test)]
    pub fn holds(&self, index: u32) -> u8 {
        self.taken_mark(index).load(Relaxed) / HOLD
    }

    #[inline]
    fn taken_mark(&self, index: u32) -> &std::sync::atomic::AtomicU8 {
        self.taken
            .get(index as usize)
            .expect("slot index handed out by this table")
    }

    /// Counts a failed callback of `generation` in slot `index` (only the thread applying
    /// the completion calls it). False once `FAILURES_SATURATED` were counted here: the
    /// caller counts the rest elsewhere.
    pub fn add_failure(&self, index: u32, generation: u64) -> bool {
        let cell = self.failures.get(index as usize).expect("allocated slot");
        let v = cell.load(Relaxed);
        let count = if v >> FAILURE_BITS == generation {
            v & FAILURES_SATURATED
        } else {
            0
        };
        if count == FAILURES_SATURATED {
            return false;
        }
        cell.store((generation << FAILURE_BITS) | (count + 1), Relaxed);
        true
    }

    /// Failures counted here for `generation` in slot `index`.
    pub fn failures(&self, index: u32, generation: u64) -> u64 {
        let v = self
            .failures
            .get(index as usize)
            .map_or(0, |c| c.load(Relaxed));
        if v >> FAILURE_BITS == generation {
            v & FAILURES_SATURATED
        } else {
            0
        }
    }

    #[inline]
    fn payload_cell(&self, index: u32) -> &PayloadCell<P> {
        self.payloads
            .get(index as usize)
            .expect("slot index handed out by this table")
    }

    /// Makes the memory of slots `first..end` exist — their slot lines, payload cells and
    /// taken marks — without changing any of them, so that the registrations that reach
    /// them find their pages there. Any thread may call it, while others use those slots.
    pub fn pretouch(&self, first: u32, end: u32) {
        let (first, end) = (first as usize, end.min(MAX_TIMERS) as usize);
        #[cfg(not(spot_loom))]
        let made = self.slots.populate(first, end);
        #[cfg(spot_loom)]
        let made = false;
        if !made {
            self.touch_slot_pages(first, end);
        }
        // Without the kernel's help these stay to the registrations (a page per 1,024
        // payloads of 4 bytes, or 4,096 marks): they are not atomics to touch as below.
        self.payloads.populate(first, end);
        self.taken.populate(first, end);
    }

    /// Maps the chunks of slot `index` (slot line, payload, mark) without touching a page.
    #[cfg(all(test, not(spot_loom)))]
    fn ensure_chunks(&self, index: u32) {
        self.slots.ensure_zeroed(index as usize);
        self.payloads.ensure_zeroed(index as usize);
        self.taken.ensure_zeroed(index as usize);
    }

    /// `pretouch`'s slot lines where the kernel cannot populate pages: each page is
    /// faulted by a compare-and-swap of one slot's key from 0 to 0, which changes nothing
    /// whatever a thread using that slot does meanwhile. (Not `fetch_or(0)`: the compiler
    /// may turn an idempotent read-modify-write into a load, and a load of an untouched
    /// page maps the shared zero page instead of making one.)
    fn touch_slot_pages(&self, first: usize, end: usize) {
        let per_page = (4096 / std::mem::size_of::<Slot>()).max(1);
        let mut i = first - first % per_page;
        while i < end {
            #[cfg(not(spot_loom))]
            touch(&self.slots.ensure_zeroed(i).key);
            #[cfg(spot_loom)]
            touch(&self.slots.ensure(i).key);
            i += per_page;
        }
    }

    /// Visits every slot ever handed out.
    pub fn for_each(&self, mut f: impl FnMut(u32, &Slot)) {
        let high = self.high_water() as usize;
        self.slots.for_each_below(high, |i, s| f(i as u32, s));
    }

    /// # Safety
    /// The caller registers a new generation in `index` and has not published it yet; the
    /// previous payload (if any) was dropped.
    #[inline]
    pub unsafe fn write_payload(&self, index: u32, payload: P) {
        (*self.payload_cell(index).0.get()).write(payload);
    }

    /// # Safety
    /// The generation in `index` has a live payload that no thread can drop meanwhile (the
    /// caller holds its record's hand-over, or its end).
    pub unsafe fn payload(&self, index: u32) -> &P {
        (*self.payload_cell(index).0.get()).assume_init_ref()
    }

    /// # Safety
    /// The caller holds the generation's end (ENDING) and the payload is live; afterwards
    /// it is not (the caller owns the value returned).
    pub unsafe fn take_payload(&self, index: u32) -> P {
        (*self.payload_cell(index).0.get()).assume_init_read()
    }

    /// # Safety
    /// The caller holds the generation's end (ENDING) and the payload is live; afterwards
    /// it is not.
    pub unsafe fn drop_payload(&self, index: u32) {
        (*self.payload_cell(index).0.get()).assume_init_drop();
    }
}

#[cfg(all(test, not(any(miri, spot_loom))))]
mod tests {
    use super::*;

    /// How many of the 4 KiB pages of `bytes` bytes from `at` the kernel made for this
    /// process (`/proc/self/pagemap`: present and mapped here alone) — not those a read
    /// mapped to the shared zero page, nor those never touched.
    fn pages_made(at: *const u8, bytes: usize) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let mut map = std::fs::File::open("/proc/self/pagemap").unwrap();
        let (first, end) = (at as u64 / 4096, (at as u64 + bytes as u64).div_ceil(4096));
        (first..end)
            .filter(|page| {
                let mut entry = [0u8; 8];
                map.seek(SeekFrom::Start(page * 8)).unwrap();
                map.read_exact(&mut entry).unwrap();
                let e = u64::from_le_bytes(entry);
                e >> 63 == 1 && (e >> 56) & 1 == 1
            })
            .count()
    }

    #[test]
    fn a_held_slot_goes_back_with_whichever_comes_second_of_its_end_and_its_last_hold() {
        // The end first: the last hold gives it back.
        let table = SlotTable::<u32>::new(1);
        let (a, _) = table.allocate(0, 0, |_| {}).unwrap();
        assert!(table.hold(a) && table.hold_for_clone(a));
        assert_eq!(table.holds(a), 2);
        table.release(0, 0, a);
        assert!(
            !table.is_taken(a),
            "ended: no deadline entry of it is current"
        );
        assert_eq!(table.unhold(a), Some(false), "one hold left");
        assert_eq!(table.unhold(a), Some(true), "the last hold gives it back");
        assert_eq!(table.unhold(a), None, "no hold left to give back");
        table.give_back(0, 0, a);
        // The holds first: the end gives it back.
        let (b, _) = table.allocate(0, 0, |_| {}).unwrap();
        assert!(table.hold(b));
        assert_eq!(table.unhold(b), Some(false), "its generation has not ended");
        table.release(0, 0, b);
        assert_eq!(table.holds(b), 0);
        assert_eq!(
            table.unhold(b),
            None,
            "a free slot has no hold to give back"
        );
        // Both went back to the free slots, where the thread's cache hands them out again
        // (its most recent first) once the resting queue passes them on.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..5000 {
            let (i, _) = table.allocate(0, 0, |_| {}).unwrap();
            seen.insert(i);
            table.release(0, 0, i);
        }
        assert!(
            seen.contains(&a) && seen.contains(&b),
            "both slots served again"
        );
    }

    #[test]
    fn clones_leave_room_for_the_holds_of_resets_in_place() {
        let table = SlotTable::<u32>::new(1);
        let (a, _) = table.allocate(0, 0, |_| {}).unwrap();
        assert!(table.hold(a));
        let mut clones = 0;
        while table.hold_for_clone(a) {
            clones += 1;
        }
        assert_eq!(u32::from(table.holds(a)), u32::from(MOST_CLONE_HOLDS));
        assert_eq!(clones, MOST_CLONE_HOLDS - 1);
        assert!(table.may_hold_in_place(a));
        let mut resets = 0;
        while table.may_hold_in_place(a) {
            assert!(table.hold(a));
            resets += 1;
        }
        assert!(resets > 50, "{resets} holds for resets in place");
        assert!(table.holds(a) < MOST_HOLDS, "the count never wraps");
    }

    fn slot_pages_made(table: &SlotTable<u32>, first: u32, end: u32) -> usize {
        pages_made(
            table.slot(first) as *const Slot as *const u8,
            (end - first) as usize * 64,
        )
    }

    #[test]
    fn pretouch_makes_pages_exist_and_changes_no_slot() {
        let table = SlotTable::<u32>::new(1);
        let (index, fresh) = table.allocate(0, 0, |_| {}).unwrap();
        assert!(fresh);
        table.slot(index).key.store(0xfeed, Relaxed);
        // 8,192 slots two chunks on, which nothing touched yet: 128 pages of slot lines,
        // 8 of payload cells (4 bytes), 2 of taken marks.
        let (first, end) = (1 << 17, (1 << 17) + 8192);
        table.ensure_chunks(first);
        assert_eq!(slot_pages_made(&table, first, end), 0);
        table.pretouch(first, end);
        assert_eq!(slot_pages_made(&table, first, end), 128, "every slot page");
        let payloads = table.payload_cell(first) as *const _ as *const u8;
        assert_eq!(pages_made(payloads, 8192 * 4), 8, "every payload page");
        let marks = table.taken_mark(first) as *const _ as *const u8;
        assert_eq!(pages_made(marks, 8192), 2, "every page of marks");
        assert_eq!(
            slot_pages_made(&table, end, end + 64),
            0,
            "nothing past the range"
        );
        // The page of the slot in use.
        table.pretouch(index, index + 1);
        assert_eq!(table.slot(index).key.load(Relaxed), 0xfeed, "contents kept");
        assert_eq!(table.slot(first).key.load(Relaxed), 0);
        assert_eq!(table.slot(first).word.load(Relaxed), word::FREE);
    }

    #[test]
    fn touching_slot_pages_without_the_kernel_makes_them_too() {
        let table = SlotTable::<u32>::new(1);
        let (first, end) = (1 << 17, (1 << 17) + 256);
        table.ensure_chunks(first);
        table.touch_slot_pages(first as usize, end as usize);
        assert_eq!(slot_pages_made(&table, first, end), 4);
        assert_eq!(slot_pages_made(&table, end, end + 64), 0);
        assert_eq!(table.slot(first + 64).key.load(Relaxed), 0);
    }

    #[test]
    fn ahead_is_asked_once_per_window_once_the_table_is_growing() {
        let table = SlotTable::<u32>::new(1);
        let asked = std::cell::RefCell::new(Vec::new());
        for _ in 0..(PRETOUCH_FROM + 3 * PRETOUCH_WINDOW) {
            table
                .allocate(0, 0, |end| asked.borrow_mut().push(end))
                .unwrap();
        }
        let asked = asked.into_inner();
        // The first batch past PRETOUCH_FROM reaches into window `f` (of 8,192 slots): it
        // asks for the end of window f + 1; then one request per window.
        let (w, f) = (PRETOUCH_WINDOW, PRETOUCH_FROM / PRETOUCH_WINDOW);
        assert_eq!(
            asked,
            [(f + 2) * w, (f + 3) * w, (f + 4) * w, (f + 5) * w],
            "{asked:?}"
        );
    }
}
