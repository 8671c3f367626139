//! The `#[repr(C)]` structs, enum values and callback types of the ABI. Enums cross as
//! `uint32_t` and are decoded with `from_u32`-style functions that reject unknown values.

use std::ffi::{c_char, c_void};

use spot_timer_core::{EndReason, GateMode, Outcome, OverrunPolicy};

use crate::boundary::{Failure, FfiResult};
use crate::status::*;

/// `spot_runtime_config::clock`: the real `CLOCK_BOOTTIME` clock.
pub const SPOT_CLOCK_REAL: u32 = 0;
/// `spot_runtime_config::clock`: a manual clock moved only by `spot_advance`.
pub const SPOT_CLOCK_MANUAL: u32 = 1;

/// `spot_runtime_config::delivery`: records wait for `spot_exchange`.
pub const SPOT_DELIVERY_EXCHANGE: u32 = 0;
/// `spot_runtime_config::delivery`: records go to the batch callback, once per wakeup.
pub const SPOT_DELIVERY_CALLBACK: u32 = 1;

/// Fixed rate; a late timer delivers only the newest due tick.
pub const SPOT_POLICY_SKIP_LATE_TICKS: u32 = 0;
/// Fixed rate; a late timer delivers at most `max_catch_up_ticks` of its backlog, in order.
pub const SPOT_POLICY_CATCH_UP_BOUNDED: u32 = 1;
/// Fixed delay: each tick is due one period after the previous handler completed.
pub const SPOT_POLICY_DELAY_NEXT_TICK: u32 = 2;

/// Owner gate: one callback at a time across all of the owner's timers (default).
pub const SPOT_GATE_SERIAL: u32 = 0;
/// Owner gate: the owner's timers run independently.
pub const SPOT_GATE_CONCURRENT: u32 = 1;

/// Completion outcome: the callback ran and returned normally.
pub const SPOT_OUTCOME_OK: u32 = 0;
/// Completion outcome: the callback ran and failed (still counts as delivered).
pub const SPOT_OUTCOME_FAILED: u32 = 1;
/// Completion outcome: the host could not get its gate; the tick is kept and retried.
pub const SPOT_OUTCOME_DEFERRED: u32 = 2;
/// Completion outcome: the record was stale (spot_record_begin failed); not started. Only
/// for that: a record completed so while its generation is still live is offered again at
/// once (nothing admitted is lost), so a handler that runs and does nothing reports OK.
pub const SPOT_OUTCOME_NOT_STARTED: u32 = 3;

/// `spot_record::kind`: one callback start.
pub const SPOT_RECORD_TICK: u32 = 0;
/// `spot_record::kind`: the result of `spot_timer_cancel_async`.
pub const SPOT_RECORD_CANCEL_DONE: u32 = 1;

/// End reason: cancelled by the host.
pub const SPOT_END_CANCELLED: u32 = 0;
/// End reason: replaced by a newer registration of the same (owner, key).
pub const SPOT_END_SUPERSEDED: u32 = 1;
/// End reason: a one-shot timer delivered its callback.
pub const SPOT_END_COMPLETED: u32 = 2;
/// End reason: the owner's lease ran out.
pub const SPOT_END_LEASE_EXPIRED: u32 = 3;
/// End reason: the owner authority was revoked or moved.
pub const SPOT_END_REVOKED: u32 = 4;
/// End reason: the runtime was freed.
pub const SPOT_END_RUNTIME_CLOSED: u32 = 5;

/// `spot_timer_spec::first_due_ns` meaning "one period after registration".
pub const SPOT_FIRST_DUE_DEFAULT: u64 = u64::MAX;
/// `spot_abi_version()` of this header: (major << 16) | minor. 2.0: records carry the
/// start check as a compare-and-swap (`started_value`) and the owner's lease
/// (`lease_word`); `spot_runtime_config` gained `resolution_ns`; `spot_stats` gained
/// `records_taken_back`, `records_abandoned` and `scheduler_wakes_by_hosts`. 2.1 adds
/// `spot_runtime_close` and the Spot lifecycle; 2.2 delivery sessions and the etcd store;
/// 2.3 `spot_node_config::listen` and `spot_node_address` (nodes of several processes
/// reach each other over TCP); 2.4 `spot_session_batch` (a session's batch form); 2.5 the
/// closing reasons SPOT_CLOSE_AUTHORITY_LOST and SPOT_CLOSE_CREATION_FAILED and
/// `spot_node_stats::authority_lost` / `terms_renewed` (a node's term of authority); 2.6
/// `spot_timer_rearm` (a re-registration naming the generation it replaces); 2.7
/// `spot_session_run` and `spot_node_run` (the delivery driver calling a host function per
/// record), `struct spot_pass`, SPOT_RUN_KEEP and SPOT_RUN_STOP; 2.8
/// `spot_end_reason_name`, `spot_close_reason_name` and `spot_node_prometheus` (the
/// schema every binding is checked against); 2.9 `spot_timer_reset` (a timeout reset in
/// place, the user data swapped) and `spot_release_reason` (a release hook learns why its
/// generation ended); 2.10 `spot_timer_register_held` and `spot_timer_release_hold` (a
/// handle that keeps its generation's result as long as it holds it) and
/// `spot_timer_cancel_keeping` (an idle timer's cancel that calls no release function);
/// 2.11 `spot_runtime_close_handing_back` (a close that hands the user data of the
/// generations it ends back in batches, instead of a release call per generation).
#[allow(clippy::identity_op)] // spelled (major << 16) | minor, as hosts read it
pub const SPOT_ABI_VERSION: u32 = (2 << 16) | 11;

/// The outcome cell of a batch record whose outcome the host has not written yet.
pub const SPOT_BATCH_PENDING: u32 = u32::MAX;
/// The outcome cell of a batch record the host keeps and completes later itself (an
/// asynchronous handler), with `spot_complete`: the session never completes it.
pub const SPOT_BATCH_KEPT: u32 = u32::MAX - 1;

/// A batch a delivery session handed out (`spot_session_batch`). Versioned: set
/// `struct_size = sizeof(struct spot_batch)` before the call; the library writes the rest.
///
/// Ownership: the arrays and the position belong to the session and stay valid until the
/// session's next call (`spot_session_batch`, `spot_session_next`) or `spot_session_free`,
/// on the session's thread only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_batch {
    /// `sizeof(struct spot_batch)` as the host was built.
    pub struct_size: u32,
    /// 0.
    pub reserved: u32,
    /// `count` records, in the order received (NULL when `count` is 0). A TICK record is
    /// not start-checked: check it right before its handler runs (the call-free check on
    /// `live_word`/`lease_word`, or `spot_record_begin`).
    pub records: *const spot_record,
    /// `count` outcome cells, SPOT_BATCH_PENDING on arrival: write SPOT_OUTCOME_* into the
    /// cell of each TICK record you handled (SPOT_OUTCOME_NOT_STARTED when its start check
    /// failed), or SPOT_BATCH_KEPT for one you complete later yourself with
    /// `spot_complete` (an asynchronous handler). Skip a record whose cell is no longer SPOT_BATCH_PENDING when its turn
    /// comes: a blocking cancel on this thread completed it. A TICK left pending completes
    /// as not started.
    pub outcomes: *mut u32,
    /// Write the index of the record whose handler is about to run (SIZE_MAX on arrival).
    /// A blocking `spot_timer_cancel` on this thread completes, as not started, the pending
    /// TICK records of the cancelled timer after this index — never the one at it.
    pub position: *mut usize,
    /// The number of records (0: none arrived within the timeout).
    pub count: usize,
}

/// What `spot_session_run` / `spot_node_run` did. Versioned: set `struct_size =
/// sizeof(struct spot_pass)` before the call; the library writes the rest.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_pass {
    /// `sizeof(struct spot_pass)` as the host was built.
    pub struct_size: u32,
    /// 1 if the run function stopped the batch (SPOT_RUN_STOP): its rest waits for the
    /// next run call.
    pub stopped: u32,
    /// Records the run function ran (kept ones included).
    pub ran: usize,
    /// Of those, the records it kept (SPOT_RUN_KEEP).
    pub kept: usize,
    /// Records whose start check failed right before their turn (completed NOT_STARTED,
    /// never handed to the run function).
    pub not_started: usize,
    /// CANCEL_DONE records handed to the run function.
    pub notices: usize,
}

/// A run function's answer: the record goes on after the call returned; the host completes
/// it later by its token (the same value as SPOT_BATCH_KEPT).
pub const SPOT_RUN_KEEP: u32 = u32::MAX - 1;
/// A run function's answer, ORed with an outcome: the record ended so, and the rest of
/// the batch waits for the next run call.
pub const SPOT_RUN_STOP: u32 = 0x100;

/// Runs one record of `spot_session_run` (a TICK whose start is already claimed, or a
/// CANCEL_DONE record) and says how it went: SPOT_OUTCOME_*, SPOT_RUN_KEEP, or an outcome
/// | SPOT_RUN_STOP. `record` is valid only during the call. Must not unwind.
pub type spot_run_fn =
    Option<unsafe extern "C" fn(env: *mut c_void, record: *const spot_record) -> u32>;

/// A timer generation: a value, copy it freely. Generations are unique in the process,
/// so a handle of another runtime is rejected, never misused. An ended generation keeps
/// its result until its slot is reused by a later registration (slots rest in a queue
/// first); after that its handle gives SPOT_E_STALE_TIMER.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct spot_timer {
    /// The generation's number: unique in the process, never 0 for a registered timer.
    pub generation: u64,
    /// The runtime's slot that holds the generation.
    pub slot: u32,
    /// Always 0 (a handle with anything else here is rejected: SPOT_E_INVALID_ARGUMENT).
    pub reserved: u32,
}

/// Receives one batch on the scheduler thread, once per scheduler wakeup.
///
/// `records` (n >= 1 entries) is valid only during the call. `completions` has room for
/// `n` entries; write synchronous completions there and set `*n_completions` (0 on
/// entry). Records not completed there must be completed later with `spot_complete`.
/// The callback must not unwind (no C++ exception, no longjmp) out of the call.
pub type spot_batch_fn = Option<
    unsafe extern "C" fn(
        env: *mut c_void,
        records: *const spot_record,
        n: usize,
        completions: *mut spot_completion,
        n_completions: *mut usize,
    ),
>;

/// Called exactly once with `callback_env` when the runtime is freed, after the last
/// batch callback returned.
pub type spot_finalizer_fn = Option<unsafe extern "C" fn(env: *mut c_void)>;

/// Releases a timer's user data once, when its generation ends, on the thread that ends
/// it: the canceller (spot_timer_cancel of a timer whose record the host does not hold),
/// the registering thread (superseding an idle timer), the revoking or releasing thread,
/// the thread whose completion ends it, the scheduler thread (lease expiry) or the thread
/// freeing the runtime. Return 0 on success; non-zero for failure, after
/// writing a NUL-terminated message into `msg` (capacity `msg_len`, 256). A failure
/// becomes the generation's terminal result (`SPOT_E_CLEANUP_FAILED` for every canceller).
///
/// Outside `spot_runtime_free` a generation never ends while the host holds one of its
/// records, so the hook never runs for user data a record in hand names. Freeing the
/// runtime ends every generation, including those whose records the host still holds (a
/// batch in progress on another thread, or records received and not yet completed): a
/// host that frees user data here must not read it through such a record afterwards
/// (defer the free until that batch is done).
pub type spot_release_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, msg: *mut c_char, msg_len: usize) -> i32>;

/// Receives, during `spot_runtime_close_handing_back`, the user data of `n` generations
/// the close ended (`n` ≥ 1, at most 1,024 per call), in place of their release functions:
/// each ended `SPOT_END_RUNTIME_CLOSED`, its release function will not run, and its user
/// data is the host's again. Called on the closing thread; the array is valid only during
/// the call. It must not unwind into the library.
pub type spot_handback_fn =
    Option<unsafe extern "C" fn(env: *mut c_void, user_data: *const *mut c_void, n: usize)>;

/// How to build a runtime. Versioned: set `struct_size = sizeof(spot_runtime_config)` and
/// zero everything you do not set.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_runtime_config {
    /// `sizeof(struct spot_runtime_config)` as the host was built.
    pub struct_size: u32,
    /// SPOT_CLOCK_*.
    pub clock: u32,
    /// SPOT_DELIVERY_*.
    pub delivery: u32,
    /// Must be 0.
    pub reserved: u32,
    /// SPOT_DELIVERY_CALLBACK: required; SPOT_DELIVERY_EXCHANGE: must be NULL.
    pub callback: spot_batch_fn,
    /// Passed to `callback` and `callback_finalizer`; the runtime never dereferences it.
    pub callback_env: *mut c_void,
    /// May be NULL. SPOT_DELIVERY_EXCHANGE: must be NULL.
    pub callback_finalizer: spot_finalizer_fn,
    /// Real clock: wakeup resolution in nanoseconds, rounded down to a power of two; 0 =
    /// the default (2^19 ns = 524.288 µs). The scheduler wakes on multiples of it, so
    /// every timer due within one step comes in one batch, at most one step late. Timers
    /// whose period is shorter are woken for to the nanosecond (they never skip ticks
    /// because of it). Ignored on the manual clock (exact). ABI 2.0; a 1.x-sized struct
    /// (without it) is accepted.
    pub resolution_ns: u64,
}

/// What to register. Versioned: set `struct_size = sizeof(spot_timer_spec)`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_timer_spec {
    /// `sizeof(struct spot_timer_spec)` as the host was built.
    pub struct_size: u32,
    /// SPOT_POLICY_*.
    pub policy: u32,
    /// Period in nanoseconds; 0 = one-shot.
    pub period_ns: u64,
    /// Delay from registration to the first nominal due time; SPOT_FIRST_DUE_DEFAULT
    /// (UINT64_MAX) = one period. Required for a one-shot timer.
    pub first_due_ns: u64,
    /// 1..=INT32_MAX with SPOT_POLICY_CATCH_UP_BOUNDED; ignored by the other policies.
    pub max_catch_up_ticks: u64,
    /// Must be 0.
    pub reserved: u64,
}

/// One record of a batch (exchange or batch callback). Fixed layout of ABI version 2.x;
/// it has no size field: new fields only come with a new major ABI version.
///
/// The start check without a call (TICK records): right before starting the handler, read
/// the runtime's clock once per batch (`spot_now`; on the real clock that is
/// `CLOCK_BOOTTIME`) and start the handler only if `now < *lease_word` and an atomic
/// compare-and-swap of `*live_word` from `live_value` to `started_value` succeeds; else
/// complete it with SPOT_OUTCOME_NOT_STARTED. That is what `spot_record_begin` does.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_record {
    /// SPOT_RECORD_*.
    pub kind: u32,
    /// CANCEL_DONE with status SPOT_OK: SPOT_END_*. Otherwise 0.
    pub end_reason: u32,
    /// CANCEL_DONE: SPOT_OK or SPOT_E_CLEANUP_FAILED. TICK: 0.
    pub status: i32,
    /// Must be 0.
    pub reserved: u32,
    /// TICK: the completion token to hand back. CANCEL_DONE: 0.
    pub token: u64,
    /// The generation the record belongs to.
    pub timer: spot_timer,
    /// The timer's owner.
    pub owner_id: u64,
    /// The timer's key within its owner.
    pub key: u64,
    /// TICK: the user data given at registration. CANCEL_DONE: NULL.
    pub user_data: *mut c_void,
    /// TICK: 1 for the generation's first callback, +1 per callback (T4). CANCEL_DONE: 0.
    pub delivery_index: u64,
    /// TICK: the nominal tick this callback stands for: never decreases, never below
    /// `delivery_index` (T4). CANCEL_DONE: 0.
    pub scheduled_index: u64,
    /// TICK: nominal ticks skipped since the previous callback (T4, T5). CANCEL_DONE: 0.
    pub skipped_ticks: u64,
    /// TICK: the timer's state word (see above). Valid until the runtime is freed.
    /// CANCEL_DONE: NULL.
    pub live_word: *mut u64,
    /// TICK: the value of `*live_word` while this record may start.
    pub live_value: u64,
    /// TICK: the value to store in `*live_word` to claim the start.
    pub started_value: u64,
    /// TICK: the owner's lease deadline in nanoseconds on the runtime's clock
    /// (`UINT64_MAX`: no lease). Valid until the runtime is freed. CANCEL_DONE: NULL.
    pub lease_word: *const u64,
    /// CANCEL_DONE: the tag passed to `spot_timer_cancel_async`. TICK: 0.
    pub tag: u64,
}

/// A host's report that a TICK record reached its terminal state.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_completion {
    /// The record's `token`.
    pub token: u64,
    /// SPOT_OUTCOME_*.
    pub outcome: u32,
    /// Must be 0.
    pub reserved: u32,
}

/// A snapshot of a runtime's counters (each field a counter unless marked as a gauge). Set
/// `struct_size = sizeof(spot_stats)` before the call; the library fills the whole fields
/// that fit in `min(struct_size, its size)` bytes and stores that number in
/// `struct_size`. Fields are only ever appended: 1.0 ended at `gate_waits` (200 bytes, the
/// smallest size accepted), 1.1 appended `ticks_due` and `ticks_discarded` (216), 2.0
/// `records_taken_back`, `records_abandoned` and `scheduler_wakes_by_hosts` (240).
///
/// Tick accounting: once every generation has ended, `ticks_due == completed_ok +
/// completed_failed + ticks_skipped + ticks_dropped_authority + ticks_discarded`.
/// Record accounting: once every generation has ended, `records_published ==
/// completed_ok + completed_failed + completed_deferred + not_started +
/// records_abandoned`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_stats {
    /// `sizeof(struct spot_stats)` as the host was built; the library stores the bytes it
    /// filled.
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Gauge: scheduler threads of this runtime (1 while it runs).
    pub scheduler_threads: u64,
    /// Gauge: OS wakeup primitives (1, plus the wakeup fd once asked for).
    pub wakeup_primitives: u64,
    /// Gauge: OS timers created for timers (always 0).
    pub os_timers: u64,
    /// Gauge: entries in the deadline queue, stale ones included.
    pub queue_len: u64,
    /// Gauge: generations registered and not yet ended.
    pub live_timers: u64,
    /// Gauge: owners known to the runtime.
    pub owners: u64,
    /// Times the scheduler thread woke up.
    pub wakeups: u64,
    /// Batches published: groups of records made ready at once (a scheduler wakeup's, or
    /// those a host's completions made due at once).
    pub batches: u64,
    /// Records published (ticks made ready for the host).
    pub records_published: u64,
    /// Exchange calls that returned records, plus batch-callback invocations.
    pub host_crossings: u64,
    /// Records the host received through those crossings.
    pub records_received: u64,
    /// Completions reported OK.
    pub completed_ok: u64,
    /// Completions reported FAILED.
    pub completed_failed: u64,
    /// Completions reported DEFERRED (the tick is kept and retried).
    pub completed_deferred: u64,
    /// Records that never started: completed NOT_STARTED, or taken back because their
    /// generation ended before a host received them.
    pub not_started: u64,
    /// Nominal ticks skipped by the overrun policy (sum of `skipped_ticks`).
    pub ticks_skipped: u64,
    /// Due ticks never delivered because the owner lease ran out or the authority was
    /// revoked.
    pub ticks_dropped_authority: u64,
    /// Registrations accepted.
    pub registered: u64,
    /// Generations ended, for any reason.
    pub ended: u64,
    /// Release hooks (or the release function) that failed.
    pub cleanup_failures: u64,
    /// Completions whose token matched no outstanding record.
    pub invalid_completions: u64,
    /// Stale deadline-queue entries removed when they surfaced or by compaction.
    pub stale_entries_dropped: u64,
    /// Times the deadline queue was compacted to shed stale entries.
    pub compactions: u64,
    /// Times a due tick had to wait for its owner's gate.
    pub gate_waits: u64,
    /// Nominal ticks that had come due, summed over generations when they end (ABI 1.1).
    pub ticks_due: u64,
    /// Due ticks never delivered because the generation was cancelled, superseded or the
    /// runtime closed (ABI 1.1).
    pub ticks_discarded: u64,
    /// Records taken back before a host received them (also in `not_started`) (ABI 2.0).
    pub records_taken_back: u64,
    /// Records a host held when the runtime was freed (ABI 2.0).
    pub records_abandoned: u64,
    /// Times a registering or completing thread woke the scheduler for an earlier
    /// deadline (ABI 2.0).
    pub scheduler_wakes_by_hosts: u64,
}

/// The size of `spot_runtime_config` before ABI 2.0 (no `resolution_ns`).
pub(crate) const RUNTIME_CONFIG_V1_SIZE: usize = 16 + 3 * std::mem::size_of::<usize>();
/// The smallest `spot_stats` accepted (ABI 1.0).
pub(crate) const STATS_V1_SIZE: usize = 200;

/// Fixed-size statistics of one generation. Versioned like `spot_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_timer_stats {
    /// `sizeof(struct spot_timer_stats)` as the host was built; the library stores the bytes
    /// it filled.
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Callbacks that ran (completed Ok or Failed).
    pub delivered: u64,
    /// Callbacks that completed Failed.
    pub failed: u64,
    /// Nominal ticks skipped by the overrun policy.
    pub skipped_ticks: u64,
    /// The newest nominal tick a callback stood for (0 before the first).
    pub last_scheduled_index: u64,
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<spot_timer>() == 16);
    assert!(size_of::<spot_runtime_config>() == 24 + 3 * size_of::<usize>());
    assert!(size_of::<spot_timer_spec>() == 40);
    assert!(size_of::<spot_completion>() == 16);
    assert!(size_of::<spot_stats>() == 8 + 29 * 8);
    assert!(size_of::<spot_timer_stats>() == 40);
    #[cfg(target_pointer_width = "64")]
    assert!(size_of::<spot_record>() == 128 && size_of::<spot_runtime_config>() == 48);
};

fn unknown(what: &str, v: u32) -> Failure {
    Failure::new(SPOT_E_UNKNOWN_ENUM, format!("unknown {what} value {v}"))
}

pub(crate) fn policy_from_u32(v: u32) -> FfiResult<OverrunPolicy> {
    OverrunPolicy::from_u32(v).ok_or_else(|| unknown("policy", v))
}

pub(crate) fn gate_from_u32(v: u32) -> FfiResult<GateMode> {
    GateMode::from_u32(v).ok_or_else(|| unknown("gate", v))
}

pub(crate) fn outcome_from_u32(v: u32) -> FfiResult<Outcome> {
    Outcome::from_u32(v).ok_or_else(|| unknown("outcome", v))
}

/// Clock kinds of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClockChoice {
    Real,
    Manual,
}

pub(crate) fn clock_from_u32(v: u32) -> FfiResult<ClockChoice> {
    match v {
        SPOT_CLOCK_REAL => Ok(ClockChoice::Real),
        SPOT_CLOCK_MANUAL => Ok(ClockChoice::Manual),
        _ => Err(unknown("clock", v)),
    }
}

/// Delivery modes of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeliveryChoice {
    Exchange,
    Callback,
}

pub(crate) fn delivery_from_u32(v: u32) -> FfiResult<DeliveryChoice> {
    match v {
        SPOT_DELIVERY_EXCHANGE => Ok(DeliveryChoice::Exchange),
        SPOT_DELIVERY_CALLBACK => Ok(DeliveryChoice::Callback),
        _ => Err(unknown("delivery", v)),
    }
}

pub(crate) fn end_reason_to_u32(r: EndReason) -> u32 {
    match r {
        EndReason::Cancelled => SPOT_END_CANCELLED,
        EndReason::Superseded => SPOT_END_SUPERSEDED,
        EndReason::Completed => SPOT_END_COMPLETED,
        EndReason::LeaseExpired => SPOT_END_LEASE_EXPIRED,
        EndReason::Revoked => SPOT_END_REVOKED,
        EndReason::RuntimeClosed => SPOT_END_RUNTIME_CLOSED,
    }
}

/// Timeouts cross as signed nanoseconds: -1 = forever, 0 = don't wait.
pub(crate) fn timeout_from_i64(ns: i64, name: &str) -> FfiResult<Option<std::time::Duration>> {
    match ns {
        -1 => Ok(None),
        n if n >= 0 => Ok(Some(std::time::Duration::from_nanos(n as u64))),
        n => Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            format!("`{name}` is {n}: use -1 (forever) or a value >= 0"),
        )),
    }
}

#[cfg(test)]
mod abi_version_tests {
    use super::SPOT_ABI_VERSION;

    /// The shared library's SONAME (ffi/build.rs) names the ABI major: a new major needs
    /// both changed together.
    #[test]
    fn soname_major_is_the_abi_major() {
        let soname_major: u32 = env!("SPOT_SONAME_MAJOR").parse().unwrap();
        assert_eq!(soname_major, SPOT_ABI_VERSION >> 16);
    }
}
