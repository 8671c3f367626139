//! Which slots are free: per-shard FIFO queues where ended slots rest before reuse, the
//! count of slots ever handed out, and a small cache per exclusive thread number
//! (`crate::thread_index`) through which that thread takes and returns slots in batches —
//! one lock per `BATCH` registrations or ends instead of one per operation.
//!
//! Never-used slots are handed to a cached thread in runs of consecutive indices that
//! double with its use, from `BATCH` up to `MAX_RUN` (2 MiB of slot lines). Two threads
//! registering at once then fill different pages: with batches interleaved in one page,
//! both threads met in the first-touch fault of every fresh page. A thread's
//! unused rest of a run is at most `BATCH` more than it already used, and at most `MAX_RUN`.
//!
//! Ground rules:
//! - A queue is touched under its lock; its length is mirrored in an atomic so a taker can
//!   skip queues where too few slots rest.
//! - `caches[n]` is touched only by the thread holding exclusive number `n`, and never
//!   across a call into other code: it is that thread's, without a lock.
//! - A cached slot that was freed still rests: it goes to the back of a queue, never
//!   straight to the next registration. A thread that stops using the runtime keeps at
//!   most `2 * BATCH` used slots in its cache, and the rest of its run of never-used
//!   ones, which the next thread given its number continues. (Near `MAX_TIMERS`, slots
//!   left in the runs of threads that stopped registering are not handed to others.)

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use crossbeam_utils::CachePadded;

use crate::error::{Error, Result};
use crate::sync::Mutex;
use crate::thread_index::{spread, EXCLUSIVE};

use super::MAX_TIMERS;

/// Free slots a shard keeps resting before it reuses the oldest: an ended generation's
/// result stays readable through its handle for at least this many later registrations
/// (at most 64 KiB of slots per shard).
const RESTING: usize = 1024;

/// Slots a thread takes or returns at once.
const BATCH: usize = 32;

/// The longest run of never-used slots reserved for one thread: 2 MiB of 64-byte slots.
const MAX_RUN: u32 = 1 << 15;

/// A slot [`FreeSlots::take`] handed out.
pub(super) struct Taken {
    pub index: u32,
    /// Never used before.
    pub fresh: bool,
    /// The slot the same thread's `take` returns `AHEAD` takes later, when that is known.
    pub ahead: Option<u32>,
}

/// How many takes ahead of its use a thread's slot is named (`Taken::ahead`): far enough
/// that a fetch of its line started now is done when the registration that writes it
/// comes (a registration is shorter than a miss to memory).
const AHEAD: usize = 6;

/// The slot `AHEAD` takes from now in a cache's `ready` (taken from its end).
#[inline]
fn ahead(ready: &[u32]) -> Option<u32> {
    ready.len().checked_sub(AHEAD).map(|k| ready[k])
}

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
    run: Run,
}

/// Never-used slots reserved for one thread: `next..end`; the next run reserved is
/// `length` long.
struct Run {
    next: u32,
    end: u32,
    length: u32,
}

impl Run {
    const fn new() -> Self {
        Self {
            next: 0,
            end: 0,
            length: BATCH as u32,
        }
    }
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
                        run: Run::new(),
                    })))
                })
                .collect(),
        }
    }

    /// Slots ever handed out (cached fresh ones included).
    pub fn high_water(&self) -> u32 {
        self.fresh.load(Relaxed).min(MAX_TIMERS)
    }

    /// The cache of the calling thread, whose number is `thread`, when that number is
    /// exclusive.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn my_cache(&self, thread: usize) -> Option<&mut Cache> {
        // SAFETY: the number is this thread's alone (ground rules); no caller keeps the
        // reference across a call that could reach this function again.
        (thread < EXCLUSIVE).then(|| unsafe { &mut *self.caches[thread].0.get() })
    }

    /// A slot for a new generation: the oldest resting free slot of `shard` once enough
    /// rest there, else of another shard (slots are freed by whichever thread ends their
    /// generation, which need not be a registering one), else a fresh one (`prepare(first,
    /// end)` makes the memory of fresh slots `first..end` exist, once per batch), else any
    /// free slot. Also says whether the slot was never used (its memory may not even be
    /// mapped yet: the caller should write it before reading it, so that the first touch
    /// allocates the page directly), and which slot this thread takes a few takes later,
    /// when that is known.
    #[inline]
    pub fn take(&self, thread: usize, shard: usize, prepare: impl Fn(u32, u32)) -> Result<Taken> {
        if let Some(cache) = self.my_cache(thread) {
            if let Some(index) = cache.ready.pop() {
                return Ok(Taken {
                    index,
                    fresh: cache.ready_fresh,
                    ahead: ahead(&cache.ready),
                });
            }
        }
        self.take_slow(thread, shard, &prepare)
    }

    /// [`FreeSlots::take`] when the thread's cache holds nothing ready (or it has none).
    #[cold]
    fn take_slow(&self, thread: usize, shard: usize, prepare: &impl Fn(u32, u32)) -> Result<Taken> {
        let taken = |index, fresh| Taken {
            index,
            fresh,
            ahead: None,
        };
        match self.my_cache(thread) {
            Some(cache) => {
                let ready = &mut cache.ready;
                let run = Some(&mut cache.run);
                cache.ready_fresh = self.refill(shard, BATCH, run, prepare, |i| ready.push(i));
                // Lowest index (or oldest resting slot) first.
                ready.reverse();
                if let Some(i) = cache.ready.pop() {
                    return Ok(Taken {
                        ahead: ahead(&cache.ready),
                        ..taken(i, cache.ready_fresh)
                    });
                }
                // Nothing rests and nothing fresh is left: the freed slots go first.
                self.put(shard, &mut cache.freed);
            }
            None => {
                let mut one = None;
                let fresh = self.refill(shard, 1, None, prepare, |i| one = Some(i));
                if let Some(i) = one {
                    return Ok(taken(i, fresh));
                }
            }
        }
        for q in self.queues.iter() {
            let mut slots = q.slots.lock();
            if let Some(i) = slots.pop_front() {
                q.len.store(slots.len(), Relaxed);
                return Ok(taken(i, false));
            }
        }
        Err(Error::CapacityExhausted(MAX_TIMERS))
    }

    /// Hands up to `want` slots to `out`, oldest or lowest first: resting ones, else fresh
    /// ones (from the caller's `run` when it has one). True when they are fresh.
    fn refill(
        &self,
        shard: usize,
        want: usize,
        run: Option<&mut Run>,
        prepare: &impl Fn(u32, u32),
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
        let taken = match run {
            Some(run) => self.take_from_run(run, want as u32),
            None => self.reserve(want as u32),
        };
        let Some((first, end)) = taken else {
            return false;
        };
        debug_assert!(first < end && end - first <= BATCH as u32);
        prepare(first, end);
        (first..end).for_each(out);
        true
    }

    /// Up to `n` slots of `run`, `first..end`, reserving its next run (twice as long, up to
    /// `MAX_RUN`) when it is used up; None once every slot was handed out.
    fn take_from_run(&self, run: &mut Run, n: u32) -> Option<(u32, u32)> {
        if run.next == run.end {
            (run.next, run.end) = self.reserve(run.length)?;
            run.length = (run.length * 2).min(MAX_RUN);
        }
        let first = run.next;
        run.next = run.end.min(first + n);
        Some((first, run.next))
    }

    /// Up to `n` never-used slots, `first..end`; None once every slot was handed out.
    fn reserve(&self, n: u32) -> Option<(u32, u32)> {
        if self.fresh.load(Relaxed) >= MAX_TIMERS {
            return None;
        }
        let first = self.fresh.fetch_add(n, Relaxed);
        if first >= MAX_TIMERS {
            // Keep the counter from wrapping however often it is asked.
            self.fresh.store(MAX_TIMERS, Relaxed);
            return None;
        }
        Some((first, first.saturating_add(n).min(MAX_TIMERS)))
    }

    /// Returns an ended slot for reuse (it rests behind the others first).
    #[inline]
    pub fn give(&self, thread: usize, shard: usize, index: u32) {
        match self.my_cache(thread) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_index::thread_index;
    use std::sync::{Arc, Barrier};

    /// Index changes other than +1 in a sequence of slots.
    fn breaks(slots: &[u32]) -> usize {
        slots.windows(2).filter(|w| w[1] != w[0] + 1).count()
    }

    #[test]
    fn threads_taking_fresh_slots_at_once_get_runs_of_their_own() {
        let free = Arc::new(FreeSlots::new(2));
        let rounds = 10;
        let per_round = 64;
        let step = Arc::new(Barrier::new(2));
        let takers: Vec<_> = (0..2)
            .map(|t| {
                let (free, step) = (free.clone(), step.clone());
                std::thread::spawn(move || {
                    assert!(thread_index() < EXCLUSIVE, "a cached thread");
                    let mut taken = Vec::new();
                    // The two threads take turns: without runs of their own, their
                    // batches would alternate in the index space.
                    for _ in 0..rounds {
                        for turn in 0..2 {
                            if turn == t {
                                for _ in 0..per_round {
                                    let Taken {
                                        index: i, fresh, ..
                                    } = free.take(thread_index(), t, |_, _| {}).unwrap();
                                    assert!(fresh);
                                    taken.push(i);
                                }
                            }
                            step.wait();
                        }
                    }
                    taken
                })
            })
            .collect();
        let taken: Vec<Vec<u32>> = takers.into_iter().map(|h| h.join().unwrap()).collect();
        for slots in &taken {
            // Runs of 32, 64, 128, 256 and 512 cover 640 slots: at most four breaks (one
            // per new run), where batches of 32 taken in turns would give nine.
            assert!(breaks(slots) <= 4, "{} breaks", breaks(slots));
        }
        let mut all: Vec<u32> = taken.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(
            all.len(),
            2 * rounds * per_round,
            "no slot handed out twice"
        );
        assert!(free.high_water() as usize >= all.len());
    }

    #[test]
    #[cfg_attr(miri, ignore = "100,000 takes: minutes under Miri, and no unsafe code")]
    fn a_run_is_never_longer_than_max_run_and_used_slots_come_back_first() {
        let free = FreeSlots::new(1);
        let first: Vec<u32> = (0..3 * MAX_RUN)
            .map(|_| free.take(thread_index(), 0, |_, _| {}).unwrap().index)
            .collect();
        assert_eq!(
            breaks(&first),
            0,
            "one thread alone fills consecutive slots"
        );
        assert!(free.high_water() <= 4 * MAX_RUN, "{}", free.high_water());
        // Slots given back rest behind RESTING others, then are reused before new ones.
        for &i in &first[..2 * RESTING] {
            free.give(thread_index(), 0, i);
        }
        // (What the cache already holds of its run comes first.)
        let reused = (0..=BATCH)
            .map(|_| free.take(thread_index(), 0, |_, _| {}).unwrap())
            .find(|t| !t.fresh)
            .map(|t| t.index);
        assert_eq!(reused, Some(first[0]), "the oldest resting slot first");
    }
}
