//! The timer table: generation-tagged slots with stable addresses.
//!
//! A slot is bound to one (owner, key) while it is registered; re-registration reuses the
//! slot with a new generation, which is what lets "at most one callback in flight per
//! timer" (T3) span generations. Each slot's `word` holds `generation << 1 | cancelled`;
//! a host re-checks T1 by comparing it with [`live_value`] right before starting a
//! handler, with no call into the runtime. Slots live in fixed chunks that never move, so
//! the address of a word stays valid for the life of the runtime.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use once_cell::sync::OnceCell;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::sync::{AtomicU32, AtomicU64};
use crate::timer::TimerCell;

const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 4096;
/// Most slots a runtime can hold (16 Mi timers).
pub const MAX_TIMERS: u32 = (CHUNK * MAX_CHUNKS) as u32;

/// Every generation of every runtime in the process is unique, so a handle from another
/// runtime can never match a slot here by accident.
static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub(crate) fn next_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Ordering::Relaxed)
}

/// The word value of a generation that may start callbacks.
pub fn live_value(generation: u64) -> u64 {
    generation << 1
}

/// Makes `generation` the slot's live one (a registration or re-registration). From the
/// moment this store is visible, every record of an older generation fails its start
/// check (`word_is_live`).
pub(crate) fn publish_generation(word: &AtomicU64, generation: u64) {
    word.store(live_value(generation), Ordering::Release);
}

/// The start check of T1: may a record of `generation` start now?
pub(crate) fn word_is_live(word: &AtomicU64, generation: u64) -> bool {
    word.load(Ordering::Acquire) == live_value(generation)
}

/// Set in `Slot::inflight` once the record has been handed to the host.
pub(crate) const RECEIVED: u32 = 1 << 31;

/// Takes the right to complete the record whose `inflight` value is `expected`. Exactly
/// one of the host, the exchange filter and the scheduler (for a record the host never
/// received) wins, so a record completes once.
pub(crate) fn claim(inflight: &AtomicU32, expected: u32) -> bool {
    inflight
        .compare_exchange(expected, 0, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Marks record `seq` as handed to the host; false if the scheduler took it back first.
pub(crate) fn hand_over(inflight: &AtomicU32, seq: u32) -> bool {
    inflight
        .compare_exchange(seq, seq | RECEIVED, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Moves `generation` from live to cancelled: from here on none of its callbacks starts.
/// False when it was not live (already cancelled, ended, or replaced by a newer
/// registration — which a stale cancel must never touch).
pub(crate) fn begin_cancel(word: &AtomicU64, generation: u64) -> bool {
    let live = live_value(generation);
    word.compare_exchange(live, live | 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// The liveness words, apart from the slots: every generation's cell shares this table,
/// so a cell — and every record holding it — can read its word for as long as it lives,
/// even after the runtime itself is gone.
pub(crate) struct WordTable {
    chunks: Box<[OnceCell<Box<[AtomicU64]>>]>,
}

impl WordTable {
    pub fn get(&self, index: u32) -> Option<&AtomicU64> {
        let chunk = self.chunks.get((index >> CHUNK_BITS) as usize)?.get()?;
        chunk.get(index as usize & (CHUNK - 1))
    }
}

pub(crate) struct Slot<P> {
    /// Sequence number (31 bits) of the record awaiting completion, 0 when none, with
    /// `RECEIVED` set once the host has it.
    pub inflight: AtomicU32,
    /// The current generation, for lookups by id (integer handles of the C ABI).
    pub cell: Mutex<Option<Arc<TimerCell<P>>>>,
}

impl<P> Default for Slot<P> {
    fn default() -> Self {
        Self {
            inflight: AtomicU32::new(0),
            cell: Mutex::new(None),
        }
    }
}

/// A chunk of slots, allocated on first use and never moved.
type Chunk<P> = OnceCell<Box<[Slot<P>]>>;

pub(crate) struct SlotTable<P> {
    chunks: Box<[Chunk<P>]>,
    words: Arc<WordTable>,
    next_fresh: std::sync::atomic::AtomicU32,
    /// Released slots, reused first-in first-out: the longer a slot rests, the longer
    /// its last generation's terminal result stays readable through a stale handle
    /// (cancel and stats of an ended generation). A ring rather than a channel: its
    /// capacity stays, so churn allocates nothing here.
    free: Mutex<VecDeque<u32>>,
}

impl<P> SlotTable<P> {
    pub fn new() -> Self {
        Self {
            chunks: (0..MAX_CHUNKS).map(|_| OnceCell::new()).collect(),
            words: Arc::new(WordTable {
                chunks: (0..MAX_CHUNKS).map(|_| OnceCell::new()).collect(),
            }),
            next_fresh: std::sync::atomic::AtomicU32::new(0),
            free: Mutex::new(VecDeque::new()),
        }
    }

    /// Takes a free slot: a released one if any, else a fresh one.
    pub fn allocate(&self) -> Result<u32> {
        if let Some(i) = self.free.lock().pop_front() {
            return Ok(i);
        }
        let i = self.next_fresh.fetch_add(1, Ordering::Relaxed);
        if i >= MAX_TIMERS {
            self.next_fresh.store(MAX_TIMERS, Ordering::Relaxed);
            return Err(Error::CapacityExhausted(MAX_TIMERS));
        }
        let chunk = (i >> CHUNK_BITS) as usize;
        // Words first: a slot is only reachable once its chunk exists, and then its word
        // must too. A word starts as generation 0, cancelled: nothing is live.
        self.words.chunks[chunk].get_or_init(|| (0..CHUNK).map(|_| AtomicU64::new(1)).collect());
        self.chunks[chunk].get_or_init(|| (0..CHUNK).map(|_| Slot::default()).collect());
        Ok(i)
    }

    pub fn words(&self) -> &Arc<WordTable> {
        &self.words
    }

    /// The liveness word of slot `index`, if the slot was ever allocated.
    pub fn get_word(&self, index: u32) -> Option<&AtomicU64> {
        self.words.get(index)
    }

    /// The liveness word of an allocated slot.
    pub fn word(&self, index: u32) -> &AtomicU64 {
        self.words.get(index).expect("allocated slots have words")
    }

    /// Returns ended slots to the free list (one lock for a whole turn's releases).
    pub fn release(&self, indices: &[u32]) {
        self.free.lock().extend(indices.iter().copied());
    }

    pub fn get(&self, index: u32) -> Option<&Slot<P>> {
        let chunk = self.chunks.get((index >> CHUNK_BITS) as usize)?.get()?;
        chunk.get(index as usize & (CHUNK - 1))
    }

    /// Slots ever handed out (the scheduler sizes its own per-slot state by this).
    pub fn high_water(&self) -> u32 {
        self.next_fresh.load(Ordering::Relaxed).min(MAX_TIMERS)
    }
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A record waiting in the ready queue is either handed over and completed by the
    /// host, or taken back by the scheduler (its generation ended) — never both, never
    /// neither.
    #[test]
    fn completion_claim_has_exactly_one_winner() {
        loom::model(|| {
            let inflight = Arc::new(AtomicU32::new(5));
            let host = {
                let f = inflight.clone();
                thread::spawn(move || hand_over(&f, 5) && claim(&f, 5 | RECEIVED))
            };
            let scheduler = {
                let f = inflight.clone();
                thread::spawn(move || claim(&f, 5))
            };
            let completed_by_host = host.join().unwrap();
            let taken_back = scheduler.join().unwrap();
            assert!(completed_by_host ^ taken_back);
            assert_eq!(inflight.load(Ordering::SeqCst), 0);
        });
    }

    /// A re-registration racing the delivery of the old generation's record: the exchange
    /// host's start check and hand-over, the host's re-check right before starting, and
    /// the scheduler taking the record back once it applies the re-registration (it runs
    /// after the registering call, through the command channel: one thread here).
    /// Exactly one side completes the record, and once the re-registration has returned
    /// no callback of the old generation starts.
    #[test]
    fn reregistration_racing_delivery_never_starts_the_old_generation() {
        loom::model(|| {
            let word = Arc::new(AtomicU64::new(live_value(1)));
            let inflight = Arc::new(AtomicU32::new(5));
            let returned = Arc::new(AtomicU32::new(0));
            let host = {
                let (w, f, r) = (word.clone(), inflight.clone(), returned.clone());
                thread::spawn(move || {
                    if word_is_live(&w, 1) && hand_over(&f, 5) {
                        // The host's begin re-check, then its completion.
                        let after_return = r.load(Ordering::Acquire) == 1;
                        let started = word_is_live(&w, 1);
                        assert!(!(after_return && started), "old generation started");
                        claim(&f, 5 | RECEIVED)
                    } else {
                        // Stale before it reached the host: completed as NotStarted.
                        claim(&f, 5)
                    }
                })
            };
            publish_generation(&word, 2);
            returned.store(1, Ordering::Release);
            let taken_back = claim(&inflight, 5);
            let completed_by_host = host.join().unwrap();
            assert!(completed_by_host ^ taken_back);
            assert_eq!(inflight.load(Ordering::SeqCst), 0);
            assert!(!word_is_live(&word, 1));
        });
    }

    // Not modelled: a cancel's compare-and-swap racing a re-registration's plain store of
    // the new word. loom 0.7 lets a store slip between the read and the write of a
    // concurrent RMW (tokio-rs/loom#254), which reports executions the memory model forbids.

    /// Concurrent cancels of one generation: exactly one moves it (and sends the command).
    #[test]
    fn concurrent_cancels_start_it_once() {
        loom::model(|| {
            let word = Arc::new(AtomicU64::new(live_value(3)));
            let a = {
                let w = word.clone();
                thread::spawn(move || begin_cancel(&w, 3))
            };
            let b = begin_cancel(&word, 3);
            let a = a.join().unwrap();
            assert!(a ^ b);
            assert_eq!(word.load(Ordering::SeqCst), live_value(3) | 1);
        });
    }
}
