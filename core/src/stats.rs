//! Resource and delivery counters (SPEC T7, T10), readable at any time.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// One cache line per counter: the scheduler thread and host threads bump
        /// different counters on every operation, and sharing lines would bounce them
        /// between cores (measured: 5-10% of a register+cancel).
        #[derive(Debug, Default)]
        pub(crate) struct Counters { $(pub $name: CachePadded<AtomicU64>,)* }

        /// A snapshot of a runtime's counters.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Stats {
            /// Scheduler threads of this runtime (always 1 while it runs).
            pub scheduler_threads: u64,
            /// OS wakeup primitives the scheduler sleeps on (1), plus the host wakeup fd
            /// once it has been asked for.
            pub wakeup_primitives: u64,
            /// OS timers created for timers (always 0: deadlines live in one queue).
            pub os_timers: u64,
            /// Entries in the deadline queue, stale ones included.
            pub queue_len: u64,
            /// Generations registered and not yet ended.
            pub live_timers: u64,
            /// Owners known to the runtime.
            pub owners: u64,
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Counters {
            pub fn snapshot_into(&self, s: &mut Stats) {
                $(s.$name = self.$name.load(Relaxed);)*
            }
        }
    };
}

counters! {
    /// Times the scheduler woke up.
    wakeups,
    /// Batches handed over (scheduler wakeups that produced at least one record).
    batches,
    /// Records handed over in those batches.
    records_published,
    /// Host crossings: exchange calls that returned records, batch-callback invocations.
    host_crossings,
    /// Records the host received through those crossings.
    records_received,
    /// Completions reported Ok.
    completed_ok,
    /// Completions reported Failed.
    completed_failed,
    /// Completions reported Deferred (tick kept and retried).
    completed_deferred,
    /// Records not started because they were stale when handed over or started.
    not_started,
    /// Nominal ticks skipped by the overrun policy (sum of `skipped_ticks`).
    ticks_skipped,
    /// Nominal ticks that had come due, summed over generations when they end. Once every
    /// generation has ended: `ticks_due == completed_ok + completed_failed + ticks_skipped
    /// + ticks_dropped_authority + ticks_discarded`.
    ticks_due,
    /// Due ticks never delivered because the owner lease ran out or the authority was
    /// revoked.
    ticks_dropped_authority,
    /// Due ticks never delivered because the generation was cancelled, superseded or the
    /// runtime closed.
    ticks_discarded,
    /// Registrations accepted.
    registered,
    /// Generations ended (any reason).
    ended,
    /// Release hooks that failed.
    cleanup_failures,
    /// Completions whose token matched no outstanding record.
    invalid_completions,
    /// Stale queue entries removed when they surfaced or by compaction.
    stale_entries_dropped,
    /// Times the queue was rebuilt to shed stale entries.
    compactions,
    /// Times a due tick had to wait for its owner's gate.
    gate_waits,
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}
