//! The state every thread of a runtime shares, and the per-operation work context.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex as StdMutex, OnceLock};
use std::thread::Thread;

use crossbeam_utils::CachePadded;

use crate::clock::{BootClock, Clock, ManualClock, Nanos};
use crate::cold::ColdTable;
use crate::owner::OwnerTable;
use crate::queue::Entry;
use crate::runtime::ready::{Pending, ReadyQueue};
use crate::runtime::shards::Shards;
use crate::slot::word::{GEN_MASK, IN_PLACE_BITS};
use crate::slot::SlotTable;
use crate::stats::{Counters, Tally, C};
use crate::tick::CancelNotice;

/// `SchedulerLink::sleep_until` while the scheduler is awake.
pub(crate) const AWAKE: Nanos = 0;
/// `SchedulerLink::sleep_until` when only a host can wake the scheduler.
pub(crate) const NEVER: Nanos = u64::MAX;

thread_local! {
    /// The callback this thread started: (runtime id, slot, generation). Set by the start
    /// check, cleared when the thread completes it. Lets a blocking cancel from inside its
    /// own callback fail fast instead of waiting for itself.
    pub(crate) static CURRENT_CALLBACK: Cell<(u64, u32, u64)> = const { Cell::new((0, 0, 0)) };
    /// The runtime whose scheduler thread this is (0 on host threads).
    pub(crate) static SCHEDULER_OF: Cell<u64> = const { Cell::new(0) };
    /// This thread's next generations: [next, end).
    static GENERATIONS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Every generation of every runtime in the process is unique (to 40 bits), so a handle
/// of another runtime never matches a slot here by accident. Threads take them in blocks,
/// so registering threads do not share a counter's cache line.
/// Each is a multiple of `1 << IN_PLACE_BITS`: the numbers between belong to the
/// re-registrations that keep the slot (`word::in_place_successor`).
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1 << IN_PLACE_BITS);
const GENERATION_BLOCK: u64 = 1024 << IN_PLACE_BITS;

#[inline]
pub(crate) fn next_generation() -> u64 {
    GENERATIONS.with(|g| loop {
        let (next, end) = g.get();
        let (next, end) = if next < end {
            (next, end)
        } else {
            let start = NEXT_GENERATION.fetch_add(GENERATION_BLOCK, Ordering::Relaxed);
            (start, start + GENERATION_BLOCK)
        };
        g.set((next + (1 << IN_PLACE_BITS), end));
        let generation = next & GEN_MASK;
        if generation != 0 {
            return generation;
        }
    })
}

/// The scheduler thread, how to wake it, and the turns hosts wait for (`sync`).
pub(crate) struct SchedulerLink {
    pub thread: OnceLock<Thread>,
    /// When the sleeping scheduler wakes by itself (`NEVER`), `AWAKE` while it runs.
    pub sleep_until: CachePadded<AtomicU64>,
    /// Turns asked for by `sync`; the scheduler records the last one it served.
    pub turns_requested: AtomicU64,
    pub turns_done: StdMutex<u64>,
    pub turn_finished: Condvar,
    pub running: AtomicBool,
}

impl Default for SchedulerLink {
    fn default() -> Self {
        Self {
            thread: OnceLock::new(),
            sleep_until: CachePadded::new(AtomicU64::new(AWAKE)),
            turns_requested: AtomicU64::new(0),
            turns_done: StdMutex::new(0),
            turn_finished: Condvar::new(),
            running: AtomicBool::new(true),
        }
    }
}

impl SchedulerLink {
    pub fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// State shared by the host-facing API and the scheduler thread.
pub(crate) struct Shared<P> {
    pub id: u64,
    pub manual: Option<ManualClock>,
    /// The wakeup resolution of the real clock (the wheel's tick); 1 on a manual clock.
    pub resolution: Nanos,
    pub slots: SlotTable<P>,
    pub owners: OwnerTable,
    pub cold: ColdTable,
    pub shards: Shards,
    pub ready: ReadyQueue,
    pub counters: Counters,
    /// How late records are handed over (see `crate::lateness`).
    pub lateness: crate::lateness::LatenessHistogram,
    pub closed: CachePadded<AtomicBool>,
    /// The latest time the runtime read from the real clock (scheduler turns, hand-overs).
    pub observed: CachePadded<AtomicU64>,
    pub callback_sink: bool,
    pub scheduler: SchedulerLink,
    /// Hosts waiting in `enter_gate` wait here for any gate of the runtime to be freed.
    pub gate_freed: (StdMutex<()>, Condvar),
    /// See `RuntimeConfig::release`.
    pub release_payload: Option<crate::cold::PayloadRelease<P>>,
    /// See `RuntimeConfig::release_needed`.
    pub release_needed: Option<fn(&P) -> bool>,
    /// Makes slot memory ahead of the registrations (see `pretouch`).
    pub pretouch: super::pretouch::Pretouch,
    /// This runtime, for what starts a thread that holds it (the pretouch helper).
    pub me: std::sync::Weak<Shared<P>>,
}

impl<P> Shared<P> {
    #[inline]
    pub fn now(&self) -> Nanos {
        match &self.manual {
            Some(m) => m.now(),
            None => BootClock.now(),
        }
    }

    /// A recent reading of the clock, without reading it: what the runtime last observed.
    /// Ends use it for their tick accounting ("ticks due as the runtime saw them"), which
    /// spares a cancel the clock read; nothing that decides a delivery uses it. Exact on a
    /// manual clock.
    #[inline]
    pub fn observed_now(&self) -> Nanos {
        match &self.manual {
            Some(m) => m.now(),
            None => self.observed.load(Ordering::Relaxed),
        }
    }

    /// Records a reading of the real clock.
    #[inline]
    pub fn observe(&self, now: Nanos) {
        if now > self.observed.load(Ordering::Relaxed) {
            self.observed.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// The deadline-queue shard (and free-slot queue) of the calling thread.
    #[inline]
    pub fn my_shard(&self) -> usize {
        self.here().shard
    }

    /// The calling thread's number and shard, read once for an operation that needs both.
    #[inline]
    pub fn here(&self) -> Here {
        let thread = crate::thread_index::thread_index();
        Here {
            thread,
            shard: crate::thread_index::spread(thread, self.shards.len()),
        }
    }

    /// Wakes the scheduler if it sleeps past `wake_at`, a shard's new earliest wake time
    /// (just published with a sequentially consistent swap).
    pub fn wake_if_before(&self, wake_at: Nanos, tally: &mut Tally) {
        if self.wake_for(wake_at) {
            tally.add(C::scheduler_wakes_by_hosts, 1);
        }
    }

    /// [`Shared::wake_if_before`], counted by the caller: true when it woke the scheduler.
    #[inline]
    pub fn wake_for(&self, wake_at: Nanos) -> bool {
        if self.manual.is_some() {
            // Time moves only through `advance`, which wakes the scheduler itself.
            return false;
        }
        // Pairs with the scheduler's publication of `sleep_until` before it looks at the
        // shards again: one of the two sides sees the other.
        if wake_at < self.scheduler.sleep_until.load(Ordering::SeqCst) {
            self.scheduler.wake();
            return true;
        }
        false
    }

    /// Applies what an operation left in `work`: deliveries it unblocked, entries to arm,
    /// records to publish, counts to add.
    pub fn flush(&self, work: &mut Work) {
        while let Some(slot) = work.retry.pop() {
            self.try_deliver(slot, work);
        }
        if !work.arms.is_empty() {
            let shard = self.my_shard();
            if let Some(wake_at) = self.shards.arm(shard, &mut work.arms) {
                self.wake_if_before(wake_at, &mut work.tally);
            }
            self.compact_if_grown(shard);
        }
        if !work.pending.is_empty() || !work.notices.is_empty() {
            if !work.pending.is_empty() {
                work.tally.add(C::batches, 1);
            }
            self.ready.publish(&mut work.pending, &mut work.notices);
            if self.callback_sink && SCHEDULER_OF.with(|s| s.get()) != self.id {
                self.scheduler.wake();
            }
        }
        self.counters.add_tally(&mut work.tally);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// The calling thread as the runtime's per-thread structures know it.
#[derive(Clone, Copy)]
pub(crate) struct Here {
    /// Its number (`crate::thread_index`): its counter stripe and free-slot cache.
    pub thread: usize,
    /// Its deadline-queue shard and free-slot queue.
    pub shard: usize,
}

/// What one operation produces besides its result, applied at its end (`Shared::flush`)
/// outside every lock: records to publish, entries to arm, counts. Threads reuse theirs
/// (`with_work`), so the hot paths allocate nothing in steady state.
#[derive(Default)]
pub(crate) struct Work {
    pub now: Nanos,
    pub pending: Vec<Pending>,
    pub notices: Vec<CancelNotice>,
    pub arms: Vec<(Entry, bool)>,
    /// Slots to offer delivery once the locks are released (unblocked successors).
    pub retry: Vec<u32>,
    pub tally: Tally,
}

impl Work {
    /// Gives back what a burst grew the (empty) buffers to (see `trim`).
    pub fn trim(&mut self) {
        crate::trim::trim_vec(&mut self.pending);
        crate::trim::trim_vec(&mut self.notices);
        crate::trim::trim_vec(&mut self.arms);
        crate::trim::trim_vec(&mut self.retry);
    }

    /// Arms slot `target` for `due`, current while its word stays `w` (see [`word::tag`]).
    pub fn arm(&mut self, target: u32, due: Nanos, w: u64, exact: bool) {
        self.arms.push((
            Entry {
                due,
                target,
                tag: crate::slot::word::tag(w),
            },
            exact,
        ));
    }
}

thread_local! {
    static WORK: Cell<Option<Box<Work>>> = const { Cell::new(None) };
}

/// Runs `f` with this thread's work context (a fresh one when it is already in use, as
/// when a release hook calls back into a runtime).
pub(crate) fn with_work<R>(now: Nanos, f: impl FnOnce(&mut Work) -> R) -> R {
    // `try_with`: an operation may run while the thread is being torn down (a host's
    // thread-local destructor ending its timers); it then works with a fresh context.
    let mut work = WORK
        .try_with(|w| w.take())
        .ok()
        .flatten()
        .unwrap_or_default();
    work.now = now;
    let r = f(&mut work);
    debug_assert!(work.pending.is_empty() && work.arms.is_empty() && work.retry.is_empty());
    work.trim();
    let _ = WORK.try_with(|w| w.set(Some(work)));
    r
}
