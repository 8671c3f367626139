//! Resource and delivery counters (contract T7, T10), readable at any time.
//!
//! Counters are striped: each thread adds to its own cache line, so host threads and the
//! scheduler never bounce a shared line per operation; a snapshot sums the stripes. A
//! thread holding an exclusive number (`crate::thread_index`) is the only writer of its
//! stripe and adds with a plain load and store; other threads share a few stripes and add
//! with read-modify-writes. Operations count into a local `Tally` and add it once.
//!
//! Ground rules that keep the two accounting identities exact once every generation has
//! ended, even while the scheduler is in the middle of a turn:
//! - a count that pairs with another thread's later count (a record published, then
//!   taken back or completed elsewhere) is added *before* the slot-word transition that
//!   lets the other thread act (`records_published`, see `Shared::try_deliver`);
//! - a tally is added in counter order, each add a release store;
//! - a snapshot reads the counters in the opposite order with acquire loads, so a
//!   snapshot that sees an effect (`ended`, `not_started`, a completion) also sees every
//!   count that happened before it.
//!
//! The counts of an end (`ended`, the ticks it accounts) are added by the thread that ended
//! the generation, once its operation is done — after it published the end. A host that
//! saw a generation end (a cancel returned) may read a snapshot a moment before they are
//! in; the identities hold once every ender is done.
//!
//! On x86 these orderings are plain loads and stores.

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crossbeam_utils::CachePadded;

use crate::thread_index::{thread_index, EXCLUSIVE};

/// Stripes for threads without an exclusive number.
const SHARED_STRIPES: usize = 4;
const STRIPES: usize = EXCLUSIVE + SHARED_STRIPES;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Counter names.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(usize)]
        pub(crate) enum C { $($name,)* }

        const COUNT: usize = [$(C::$name),*].len();

        /// A snapshot of a runtime's counters and gauges.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Stats {
            /// Gauge: scheduler threads of this runtime (1 while it runs).
            pub scheduler_threads: u64,
            /// Gauge: OS wakeup primitives the scheduler sleeps on (1), plus the host
            /// wakeup fd once it has been asked for.
            pub wakeup_primitives: u64,
            /// Gauge: OS timers created for timers (always 0: deadlines live in one queue).
            pub os_timers: u64,
            /// Gauge: entries in the deadline queue, stale ones included.
            pub queue_len: u64,
            /// Gauge: generations registered and not yet ended.
            pub live_timers: u64,
            /// Gauge: owners known to the runtime.
            pub owners: u64,
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Stats {
            /// Every field with its name and kind (gauge or counter), in declaration order:
            /// what an exporter (Prometheus, OpenTelemetry) needs to publish them.
            pub fn metrics(&self) -> Vec<crate::metric::Metric> {
                use crate::metric::{Metric, MetricKind::{Counter, Gauge}};
                vec![
                    Metric { name: "scheduler_threads", kind: Gauge, value: self.scheduler_threads },
                    Metric { name: "wakeup_primitives", kind: Gauge, value: self.wakeup_primitives },
                    Metric { name: "os_timers", kind: Gauge, value: self.os_timers },
                    Metric { name: "queue_len", kind: Gauge, value: self.queue_len },
                    Metric { name: "live_timers", kind: Gauge, value: self.live_timers },
                    Metric { name: "owners", kind: Gauge, value: self.owners },
                    $(Metric { name: stringify!($name), kind: Counter, value: self.$name },)*
                ]
            }
        }

        impl Counters {
            /// Reads every counter, the last-written first (see the module's rules).
            pub fn snapshot_into(&self, s: &mut Stats) {
                let mut totals = [0u64; COUNT];
                for i in (0..COUNT).rev() {
                    totals[i] = self.total_at(i);
                }
                $(s.$name = totals[C::$name as usize];)*
            }
        }
    };
}

counters! {
    /// Counter: times the scheduler woke up.
    wakeups,
    /// Counter: batches published: groups of records made ready at once (a scheduler
    /// wakeup's, or those a host's completions made due at once).
    batches,
    /// Counter: records published (ticks made ready for the host).
    records_published,
    /// Counter: host crossings: exchange calls that returned records, batch-callback calls.
    host_crossings,
    /// Counter: records the host received through those crossings.
    records_received,
    /// Counter: completions reported Ok.
    completed_ok,
    /// Counter: completions reported Failed.
    completed_failed,
    /// Counter: completions reported Deferred (tick kept and retried).
    completed_deferred,
    /// Counter: records that never started: completed NotStarted by the host, or taken
    /// back because their generation ended first. Once every generation has ended:
    /// `records_published == completed_ok + completed_failed + completed_deferred +
    /// not_started + records_abandoned`.
    not_started,
    /// Counter: records taken back before they started (also counted in `not_started`).
    records_taken_back,
    /// Counter: records whose callback was still running when the runtime closed.
    records_abandoned,
    /// Counter: nominal ticks skipped by the overrun policy (sum of `skipped_ticks`).
    ticks_skipped,
    /// Counter: nominal ticks that had come due, summed over generations when they end
    /// (due by the runtime's latest look at its clock). Once every generation has ended: `ticks_due == completed_ok + completed_failed +
    /// ticks_skipped + ticks_dropped_authority + ticks_discarded`.
    ticks_due,
    /// Counter: due ticks never delivered because the owner lease ran out or the authority
    /// was revoked.
    ticks_dropped_authority,
    /// Counter: due ticks never delivered because the generation was cancelled,
    /// superseded or the runtime closed.
    ticks_discarded,
    /// Counter: registrations accepted.
    registered,
    /// Counter: generations ended (any reason).
    ended,
    /// Counter: release hooks that failed.
    cleanup_failures,
    /// Counter: completions whose token matched no outstanding record.
    invalid_completions,
    /// Counter: stale queue entries removed when they surfaced or by compaction.
    stale_entries_dropped,
    /// Counter: times the queue was compacted to shed stale entries.
    compactions,
    /// Counter: times a due tick had to wait for its owner's gate.
    gate_waits,
    /// Counter: times a host thread woke the sleeping scheduler (an earlier deadline).
    scheduler_wakes_by_hosts,
}

pub(crate) struct Counters {
    stripes: Box<[CachePadded<[AtomicU64; COUNT]>]>,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }
}

impl Counters {
    #[inline]
    pub fn add(&self, c: C, n: u64) {
        self.add_for(thread_index(), c, n);
    }

    /// [`Counters::add`] by the thread whose number is `thread` (the calling one).
    #[inline]
    pub fn add_for(&self, thread: usize, c: C, n: u64) {
        if n != 0 {
            self.add_at(thread, c as usize, n);
        }
    }

    #[inline]
    fn add_at(&self, thread: usize, i: usize, n: u64) {
        if thread < EXCLUSIVE {
            // This thread is the stripe's only writer: no read-modify-write needed.
            let cell = &self.stripes[thread][i];
            cell.store(cell.load(Relaxed).wrapping_add(n), Release);
        } else {
            self.stripes[EXCLUSIVE + thread % SHARED_STRIPES][i].fetch_add(n, Release);
        }
    }

    /// Takes back one count added with [`Counters::add`] by an operation that then did
    /// not happen (counters wrap, so adding `u64::MAX` subtracts one).
    #[inline]
    pub fn retract_one(&self, c: C) {
        self.add_at(thread_index(), c as usize, u64::MAX);
    }

    pub fn total(&self, c: C) -> u64 {
        self.total_at(c as usize)
    }

    fn total_at(&self, i: usize) -> u64 {
        self.stripes
            .iter()
            .map(|s| s[i].load(Acquire))
            .fold(0u64, u64::wrapping_add)
    }

    pub fn add_tally(&self, t: &mut Tally) {
        if t.dirty == 0 {
            return;
        }
        let thread = thread_index();
        while t.dirty != 0 {
            let i = t.dirty.trailing_zeros() as usize;
            t.dirty &= t.dirty - 1;
            self.add_at(thread, i, t.counts[i]);
            t.counts[i] = 0;
        }
    }
}

/// Counts gathered by one thread during one batch of work, added at once (only the ones
/// that changed).
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    counts: [u64; COUNT],
    dirty: u32,
}

const _: () = assert!(COUNT <= 32, "Tally::dirty has a bit per counter");

impl Default for Tally {
    fn default() -> Self {
        Self {
            counts: [0; COUNT],
            dirty: 0,
        }
    }
}

impl Tally {
    #[inline]
    pub fn add(&mut self, c: C, n: u64) {
        if n != 0 {
            self.counts[c as usize] += n;
            self.dirty |= 1 << c as u32;
        }
    }
}
