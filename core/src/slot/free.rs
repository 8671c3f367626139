//! Which slots are free: per-shard FIFO queues where ended slots rest before reuse, the
//! count of slots ever handed out, and a small cache per exclusive thread number
//! (`crate::thread_index`) through which that thread takes and returns slots in batches —
//! one lock per `BATCH` registrations or ends instead of one per operation.
//!
//! Ground rules:
//! - A queue is touched under its lock; its length is mirrored in an atomic so a taker can
//!   skip queues where too few slots rest.
//! - `caches[n]` is touched only by the thread holding exclusive number `n`, and never
//!   across a call into other code: it is that thread's, without a lock.
//! - A cached slot that was freed still rests: it goes to the back of a queue, never
//!   straight to the next registration. A thread that stops using the runtime keeps at
//!   most `2 * BATCH` slots in its cache.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use crossbeam_utils::CachePadded;

use crate::error::{Error, Result};
use crate::sync::Mutex;
use crate::thread_index::{exclusive_index, spread, EXCLUSIVE};

use super::MAX_TIMERS;

/// Free slots a shard keeps resting before it reuses the oldest: an ended generation's
/// result stays readable through its handle for at least this many later registrations
/// (at most 64 KiB of slots per shard).
const RESTING: usize = 1024;

/// Slots a thread takes or returns at once.
const BATCH: usize = 32;

struct Queue {
    slots: Mutex<VecDeque<u32>>,
    len: AtomicUsize,
}

/// One exclusive thread number's slots: taken and not yet used, freed and not yet queued.
struct Cache {
    ready: Vec<u32>,
    /// `ready` holds never-used slots (a refill is all fresh or all resting).
    ready_fresh: bool,
    freed: Vec<u32>,
}

struct CacheCell(UnsafeCell<Cache>);

// SAFETY: `caches[n]` is used only by the one live thread holding exclusive number `n`
// (see the module's ground rules); numbers change hands through a lock.
unsafe impl Sync for CacheCell {}

pub(super) struct FreeSlots {
    fresh: StdAtomicU32,
    queues: Box<[Queue]>,
    caches: Box<[CachePadded<CacheCell>]>,
}

impl FreeSlots {
    pub fn new(shards: usize) -> Self {
        Self {
            fresh: StdAtomicU32::new(0),
            queues: (0..shards.max(1))
                .map(|_| Queue {
                    slots: Mutex::new(VecDeque::new()),
                    len: AtomicUsize::new(0),
                })
                .collect(),
            caches: (0..EXCLUSIVE)
                .map(|_| {
                    CachePadded::new(CacheCell(UnsafeCell::new(Cache {
                        ready: Vec::with_capacity(BATCH),
                        ready_fresh: false,
                        freed: Vec::with_capacity(BATCH),
                    })))
                })
                .collect(),
        }
    }

    /// Slots ever handed out (cached fresh ones included).
    pub fn high_water(&self) -> u32 {
        self.fresh.load(Relaxed).min(MAX_TIMERS)
    }

    /// The calling thread's cache, when it holds an exclusive number.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn my_cache(&self) -> Option<&mut Cache> {
        // SAFETY: the number is this thread's alone (ground rules); no caller keeps the
        // reference across a call that could reach this function again.
        exclusive_index().map(|n| unsafe { &mut *self.caches[n].0.get() })
    }

    /// A slot for a new generation: the oldest resting free slot of `shard` once enough
    /// rest there, else of another shard (slots are freed by whichever thread ends their
    /// generation, which need not be a registering one), else a fresh one (`prepare`
    /// makes its memory exist), else any free slot. Also says whether the slot was never
    /// used (its memory may not even be mapped yet: the caller should write it before
    /// reading it, so that the first touch allocates the page directly).
    #[inline]
    pub fn take(&self, shard: usize, prepare: impl Fn(u32)) -> Result<(u32, bool)> {
        match self.my_cache() {
            Some(cache) => {
                if let Some(i) = cache.ready.pop() {
                    return Ok((i, cache.ready_fresh));
                }
                let ready = &mut cache.ready;
                cache.ready_fresh = self.refill(shard, BATCH, &prepare, |i| ready.push(i));
                // Lowest index (or oldest resting slot) first.
                ready.reverse();
                if let Some(i) = cache.ready.pop() {
                    return Ok((i, cache.ready_fresh));
                }
                // Nothing rests and nothing fresh is left: the freed slots go first.
                self.put(shard, &mut cache.freed);
            }
            None => {
                let mut one = None;
                let fresh = self.refill(shard, 1, &prepare, |i| one = Some(i));
                if let Some(i) = one {
                    return Ok((i, fresh));
                }
            }
        }
        for q in self.queues.iter() {
            let mut slots = q.slots.lock();
            if let Some(i) = slots.pop_front() {
                q.len.store(slots.len(), Relaxed);
                return Ok((i, false));
            }
        }
        Err(Error::CapacityExhausted(MAX_TIMERS))
    }

    /// Hands up to `want` slots to `out`, oldest or lowest first: resting ones, else fresh
    /// ones. True when they are fresh.
    fn refill(
        &self,
        shard: usize,
        want: usize,
        prepare: &impl Fn(u32),
        mut out: impl FnMut(u32),
    ) -> bool {
        let shards = self.queues.len();
        for k in 0..shards {
            let q = &self.queues[(shard + k) % shards];
            if q.len.load(Relaxed) > RESTING {
                let mut slots = q.slots.lock();
                let n = slots.len().saturating_sub(RESTING).min(want);
                if n > 0 {
                    slots.drain(..n).for_each(&mut out);
                    q.len.store(slots.len(), Relaxed);
                    return false;
                }
            }
        }
        if self.fresh.load(Relaxed) >= MAX_TIMERS {
            return false;
        }
        let first = self.fresh.fetch_add(want as u32, Relaxed);
        if first >= MAX_TIMERS {
            // Keep the counter from wrapping however often it is asked.
            self.fresh.store(MAX_TIMERS, Relaxed);
            return false;
        }
        let end = first.saturating_add(want as u32).min(MAX_TIMERS);
        for i in first..end {
            prepare(i);
            out(i);
        }
        true
    }

    /// The slot the calling thread's next `take` will return, when it is known.
    #[inline]
    pub fn next_ready(&self) -> Option<u32> {
        self.my_cache().and_then(|c| c.ready.last().copied())
    }

    /// Returns an ended slot for reuse (it rests behind the others first).
    #[inline]
    pub fn give(&self, shard: usize, index: u32) {
        match self.my_cache() {
            Some(cache) => {
                cache.freed.push(index);
                if cache.freed.len() >= BATCH {
                    self.put(shard, &mut cache.freed);
                }
            }
            None => {
                let q = &self.queues[spread(shard, self.queues.len())];
                let mut slots = q.slots.lock();
                slots.push_back(index);
                q.len.store(slots.len(), Relaxed);
            }
        }
    }

    fn put(&self, shard: usize, freed: &mut Vec<u32>) {
        if freed.is_empty() {
            return;
        }
        let q = &self.queues[spread(shard, self.queues.len())];
        let mut slots = q.slots.lock();
        slots.extend(freed.drain(..));
        q.len.store(slots.len(), Relaxed);
    }
}
