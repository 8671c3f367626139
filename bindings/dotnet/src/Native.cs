// P/Invoke declarations of the spot-timer C ABI (include/spot_timer.h).
//
// Every struct here mirrors its C counterpart field by field, with the C field names, so
// that tests/LayoutTests.cs can compare Marshal.SizeOf / Marshal.OffsetOf with the native
// compiler's sizeof / offsetof, and every [DllImport] with the library's exports.
// Only blittable types are used: records are read straight from the exchange buffer.
using System;
using System.Runtime.InteropServices;

namespace SpotTimer.Interop
{
    /// <summary>Marks a managed mirror of a C struct of the header.</summary>
    [AttributeUsage(AttributeTargets.Struct)]
    public sealed class NativeStructAttribute : Attribute
    {
        /// <summary>Marks the struct as the mirror of <c>struct</c> <paramref name="cName"/>.</summary>
        public NativeStructAttribute(string cName) { CName = cName; }
        /// <summary>The C struct's name (tests/LayoutTests.cs compares the layouts).</summary>
        public string CName { get; private set; }
    }

    /// <summary>Status codes (spot_status).</summary>
    public enum SpotStatus
    {
        /// <summary>SPOT_OK: Success.</summary>
        Ok = 0,
        /// <summary>SPOT_E_NULL_ARGUMENT: A required pointer argument was NULL (or misaligned for its type).</summary>
        NullArgument = 1,
        /// <summary>SPOT_E_INVALID_ARGUMENT: A value is outside its domain (zero period, max_catch_up_ticks 0, capacity 0, non-zero reserved field, ...). The last-error message names the argument.</summary>
        InvalidArgument = 2,
        /// <summary>SPOT_E_UNKNOWN_ENUM: An enum value this ABI version does not know.</summary>
        UnknownEnum = 3,
        /// <summary>SPOT_E_BAD_STRUCT_SIZE: A <c>struct_size</c> field is smaller than the version-1 size, absurdly large, or covers non-zero fields this library version does not know.</summary>
        BadStructSize = 4,
        /// <summary>SPOT_E_INVALID_HANDLE: The runtime handle is 0, freed, double-freed or was never valid.</summary>
        InvalidHandle = 5,
        /// <summary>SPOT_E_STALE_TIMER: The timer handle does not name a live or recorded generation of this runtime.</summary>
        StaleTimer = 6,
        /// <summary>SPOT_E_UNKNOWN_OWNER: No owner with this id was acquired on this runtime.</summary>
        UnknownOwner = 7,
        /// <summary>SPOT_E_LEASE_EXPIRED: The owner's lease has expired; the authority is over.</summary>
        LeaseExpired = 8,
        /// <summary>SPOT_E_REVOKED: The owner authority (epoch) was revoked or replaced by a newer one.</summary>
        Revoked = 9,
        /// <summary>SPOT_E_INVALID_COMPLETION: A completion token matches no outstanding record; nothing of the call was applied.</summary>
        InvalidCompletion = 10,
        /// <summary>SPOT_E_TIMEOUT: A blocking wait ran out of time; the operation it waited for goes on.</summary>
        Timeout = 11,
        /// <summary>SPOT_E_WOULD_DEADLOCK: Waiting would wait for the calling thread itself (own callback, scheduler thread).</summary>
        WouldDeadlock = 12,
        /// <summary>SPOT_E_CLEANUP_FAILED: The generation's release hook failed: this is its terminal result, the same for every canceller.</summary>
        CleanupFailed = 13,
        /// <summary>SPOT_E_CLOSED: The runtime is closed.</summary>
        Closed = 14,
        /// <summary>SPOT_E_NOT_MANUAL_CLOCK: The call needs a runtime on the manual clock.</summary>
        NotManualClock = 15,
        /// <summary>SPOT_E_CAPACITY_EXHAUSTED: The runtime's timer table is full.</summary>
        CapacityExhausted = 16,
        /// <summary>SPOT_E_OS: An operating-system call failed.</summary>
        Os = 17,
        /// <summary>SPOT_E_PANIC: A Rust panic was caught at the boundary (a bug in the library; please report it).</summary>
        Panic = 18,
        /// <summary>SPOT_E_WRONG_DELIVERY_MODE: The call does not fit the runtime's delivery mode (exchange on a callback runtime, ...).</summary>
        WrongDeliveryMode = 19,
        // The Spot lifecycle (ABI 2.1).
        /// <summary>SPOT_E_NOT_FOUND: No Spot with this id exists (an ordinary send never creates one).</summary>
        NotFound = 20,
        /// <summary>SPOT_E_STALE_ROUTE: The message reached a node that does not own the Spot, or whose lease ran out, or the Spot is closing; it did not run and is not retried.</summary>
        StaleRoute = 21,
        /// <summary>SPOT_E_UNAVAILABLE: The Spot's authority exists but its owner cannot be used; no creation was started.</summary>
        Unavailable = 22,
        /// <summary>SPOT_E_CREATION_FAILED: The Spot's factory failed; its reservation was released.</summary>
        CreationFailed = 23,
        /// <summary>SPOT_E_WRONG_KIND: The id names a Spot of another kind (or the call is not allowed for its kind).</summary>
        WrongKind = 24,
        /// <summary>SPOT_E_APPLICATION_LANE_FULL: The Spot's application lane is full (count or bytes).</summary>
        ApplicationLaneFull = 25,
        /// <summary>SPOT_E_LIFECYCLE_LANE_FULL: The Spot's lifecycle lane is full (count or bytes).</summary>
        LifecycleLaneFull = 26,
        /// <summary>SPOT_E_NODE_INBOUND_FULL: The node's inbound byte budget is used up.</summary>
        NodeInboundFull = 27,
        /// <summary>SPOT_E_ACTIVE_CAP: The node is at its active-Spot cap (and no other node could take the Spot).</summary>
        ActiveCap = 28,
        /// <summary>SPOT_E_STORE: The Location Store could not be used.</summary>
        Store = 29,
    }

    /// <summary>Header #define values (SPOT_ + field name).</summary>
    public static class C
    {
        /// <summary><c>spot_runtime_config::clock</c>: the real <c>CLOCK_BOOTTIME</c> clock.</summary>
        public const uint CLOCK_REAL = 0;
        /// <summary><c>spot_runtime_config::clock</c>: a manual clock moved only by <c>spot_advance</c>.</summary>
        public const uint CLOCK_MANUAL = 1;
        /// <summary><c>spot_runtime_config::delivery</c>: records wait for <c>spot_exchange</c>.</summary>
        public const uint DELIVERY_EXCHANGE = 0;
        /// <summary><c>spot_runtime_config::delivery</c>: records go to the batch callback, once per wakeup.</summary>
        public const uint DELIVERY_CALLBACK = 1;
        /// <summary>Owner gate: one callback at a time across all of the owner's timers (default).</summary>
        public const uint GATE_SERIAL = 0;
        /// <summary>Owner gate: the owner's timers run independently.</summary>
        public const uint GATE_CONCURRENT = 1;
        /// <summary>Completion outcome: the callback ran and returned normally.</summary>
        public const uint OUTCOME_OK = 0;
        /// <summary>Completion outcome: the callback ran and failed (still counts as delivered).</summary>
        public const uint OUTCOME_FAILED = 1;
        /// <summary>Completion outcome: the host could not get its gate; the tick is kept and retried.</summary>
        public const uint OUTCOME_DEFERRED = 2;
        /// <summary>Completion outcome: the record was stale (spot_record_begin failed); not started. Only for that: a record completed so while its generation is still live is offered again at once.</summary>
        public const uint OUTCOME_NOT_STARTED = 3;
        /// <summary><c>spot_record::kind</c>: one callback start.</summary>
        public const uint RECORD_TICK = 0;
        /// <summary><c>spot_record::kind</c>: the result of <c>spot_timer_cancel_async</c>.</summary>
        public const uint RECORD_CANCEL_DONE = 1;
        /// <summary><c>spot_timer_spec::first_due_ns</c> meaning "one period after registration".</summary>
        public const ulong FIRST_DUE_DEFAULT = ulong.MaxValue;
        /// <summary><c>spot_batch::outcomes</c>: the cell of a record whose outcome the host has not written yet.</summary>
        public const uint BATCH_PENDING = uint.MaxValue;
        /// <summary><c>spot_batch::outcomes</c>: a record the host keeps and completes later itself with <c>spot_complete</c> (an asynchronous handler); the session never completes it.</summary>
        public const uint BATCH_KEPT = uint.MaxValue - 1;
        /// <summary>A run function's answer (<c>spot_session_run</c>, <c>spot_node_run</c>): the record goes on after the call returned; the host completes it later by its token. The value of BATCH_KEPT.</summary>
        public const uint RUN_KEEP = uint.MaxValue - 1;
        /// <summary>A run function's answer, ORed with an outcome: the record ended so, and the rest of the batch waits for the next run call.</summary>
        public const uint RUN_STOP = 0x100;
        // The Spot lifecycle (ABI 2.1).
        /// <summary><c>spot_node_record::kind</c>: a message sent to the Spot.</summary>
        public const uint WORK_MESSAGE = 0;
        /// <summary><c>spot_node_record::kind</c>: a tick of one of the Spot's timers.</summary>
        public const uint WORK_TICK = 1;
        /// <summary>A lane: application work (messages, ticks).</summary>
        public const uint LANE_APPLICATION = 0;
        /// <summary>A lane: lifecycle work (served first).</summary>
        public const uint LANE_LIFECYCLE = 1;
        /// <summary>Spot kinds (0 is invalid and refused, like every unknown value).</summary>
        public const uint KIND_INVALID = 0;
        /// <summary>The node's own Spot: one per node, never moves, never evicted.</summary>
        public const uint KIND_ENTRY = 1;
        /// <summary>Created only by <c>spot_node_create_user_spot</c>; never evicted.</summary>
        public const uint KIND_USER = 2;
        /// <summary>Created by <c>spot_node_send_or_create</c>; evicted when idle.</summary>
        public const uint KIND_INSTANCE = 3;
        /// <summary>Why a Spot closed (the closing callback's <c>reason</c>): idle past the timeout.</summary>
        public const uint CLOSE_IDLE_EVICTED = 0;
        /// <summary>Closed by <c>spot_node_close_spot</c>.</summary>
        public const uint CLOSE_CLOSED = 1;
        /// <summary>Its node shut down (<c>spot_node_free</c>).</summary>
        public const uint CLOSE_NODE_SHUTDOWN = 2;
        /// <summary>The node's authority over it ended first: another node may own it now; save nothing.</summary>
        public const uint CLOSE_AUTHORITY_LOST = 3;
        /// <summary>Its creation failed after the factory ran; save nothing.</summary>
        public const uint CLOSE_CREATION_FAILED = 4;
        /// <summary><c>spot_relocation_target::what</c>: a Spot (User or Instance).</summary>
        public const uint TARGET_SPOT = 0;
        /// <summary><c>spot_relocation_target::what</c>: an actor of the Entry Spot.</summary>
        public const uint TARGET_ENTRY_ACTOR = 1;
        /// <summary>The ABI version this binding is built against: (major &lt;&lt; 16) | minor.</summary>
        public const uint ABI_VERSION = 0x00020008; // 2.8: spot_end_reason_name, spot_close_reason_name, spot_node_prometheus; 2.7: spot_session_run, spot_node_run, spot_pass, SPOT_RUN_KEEP / SPOT_RUN_STOP; 2.6: spot_timer_rearm; 2.5: SPOT_CLOSE_AUTHORITY_LOST, SPOT_CLOSE_CREATION_FAILED, spot_node_stats.authority_lost / terms_renewed (2.4: spot_session_batch; 2.3: spot_node_config.listen, spot_node_address; 2.2: delivery sessions, the etcd store; 2.1: spot_runtime_close, the Spot lifecycle)
    }

    /// <summary>A timer generation: a value, copy it freely. Generations are unique in the process, so a handle of another runtime is rejected, never misused. An ended generation keeps its result until its slot is reused by a later registration (slots rest in a queue first); after that its handle gives SPOT_E_STALE_TIMER.
    /// <para>Mirror of <c>struct spot_timer</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_timer")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer
    {
        /// <summary>The generation's number: unique in the process, never 0 for a registered timer.</summary>
        public ulong generation;
        /// <summary>The runtime's slot that holds the generation.</summary>
        public uint slot;
        /// <summary>Always 0 (a handle with anything else here is rejected: SPOT_E_INVALID_ARGUMENT).</summary>
        public uint reserved;
    }

    /// <summary>How to build a runtime. Versioned: set <c>struct_size = sizeof(spot_runtime_config)</c> and zero everything you do not set.
    /// <para>Mirror of <c>struct spot_runtime_config</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_runtime_config")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_runtime_config
    {
        /// <summary><c>sizeof(struct spot_runtime_config)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>SPOT_CLOCK_*.</summary>
        public uint clock;
        /// <summary>SPOT_DELIVERY_*.</summary>
        public uint delivery;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>SPOT_DELIVERY_CALLBACK: required; SPOT_DELIVERY_EXCHANGE: must be NULL.</summary>
        public IntPtr callback;            // spot_batch_fn
        /// <summary>Passed to <c>callback</c> and <c>callback_finalizer</c>; the runtime never dereferences it.</summary>
        public IntPtr callback_env;
        /// <summary>May be NULL. SPOT_DELIVERY_EXCHANGE: must be NULL.</summary>
        public IntPtr callback_finalizer;  // spot_finalizer_fn
        /// <summary>Real clock: wakeup resolution in nanoseconds, rounded down to a power of two; 0 = the default (2^19 ns = 524.288 µs). The scheduler wakes on multiples of it, so every timer due within one step comes in one batch, at most one step late. Timers whose period is shorter are woken for to the nanosecond (they never skip ticks because of it). Ignored on the manual clock (exact). ABI 2.0; a 1.x-sized struct (without it) is accepted.</summary>
        public ulong resolution_ns;        // ABI 2.0
    }

    /// <summary>What to register. Versioned: set <c>struct_size = sizeof(spot_timer_spec)</c>.
    /// <para>Mirror of <c>struct spot_timer_spec</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_timer_spec")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer_spec
    {
        /// <summary><c>sizeof(struct spot_timer_spec)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>SPOT_POLICY_*.</summary>
        public uint policy;
        /// <summary>Period in nanoseconds; 0 = one-shot.</summary>
        public ulong period_ns;
        /// <summary>Delay from registration to the first nominal due time; SPOT_FIRST_DUE_DEFAULT (UINT64_MAX) = one period. Required for a one-shot timer.</summary>
        public ulong first_due_ns;
        /// <summary>1..=INT32_MAX with SPOT_POLICY_CATCH_UP_BOUNDED; ignored by the other policies.</summary>
        public ulong max_catch_up_ticks;
        /// <summary>Must be 0.</summary>
        public ulong reserved;
    }

    /// <summary>One record of a batch (exchange or batch callback). Fixed layout of ABI version 2.x; it has no size field: new fields only come with a new major ABI version.
    /// <para>The start check without a call (TICK records): right before starting the handler, read the runtime's clock once per batch (<c>spot_now</c>; on the real clock that is <c>CLOCK_BOOTTIME</c>) and start the handler only if <c>now &lt; *lease_word</c> and an atomic compare-and-swap of <c>*live_word</c> from <c>live_value</c> to <c>started_value</c> succeeds; else complete it with SPOT_OUTCOME_NOT_STARTED. That is what <c>spot_record_begin</c> does.</para>
    /// <para>Mirror of <c>struct spot_record</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_record")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_record
    {
        /// <summary>SPOT_RECORD_*.</summary>
        public uint kind;
        /// <summary>CANCEL_DONE with status SPOT_OK: SPOT_END_*. Otherwise 0.</summary>
        public uint end_reason;
        /// <summary>CANCEL_DONE: SPOT_OK or SPOT_E_CLEANUP_FAILED. TICK: 0.</summary>
        public int status;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>TICK: the completion token to hand back. CANCEL_DONE: 0.</summary>
        public ulong token;
        /// <summary>The generation the record belongs to.</summary>
        public spot_timer timer;
        /// <summary>The timer's owner.</summary>
        public ulong owner_id;
        /// <summary>The timer's key within its owner.</summary>
        public ulong key;
        /// <summary>TICK: the user data given at registration. CANCEL_DONE: NULL.</summary>
        public IntPtr user_data;
        /// <summary>TICK: 1 for the generation's first callback, +1 per callback (T4). CANCEL_DONE: 0.</summary>
        public ulong delivery_index;
        /// <summary>TICK: the nominal tick this callback stands for: never decreases, never below <c>delivery_index</c> (T4). CANCEL_DONE: 0.</summary>
        public ulong scheduled_index;
        /// <summary>TICK: nominal ticks skipped since the previous callback (T4, T5). CANCEL_DONE: 0.</summary>
        public ulong skipped_ticks;
        /// <summary>TICK: the timer's state word (see above). Valid until the runtime is freed. CANCEL_DONE: NULL.</summary>
        public IntPtr live_word;           // uint64_t *
        /// <summary>TICK: the value of <c>*live_word</c> while this record may start.</summary>
        public ulong live_value;
        /// <summary>TICK: the value to store in <c>*live_word</c> to claim the start.</summary>
        public ulong started_value;
        /// <summary>TICK: the owner's lease deadline in nanoseconds on the runtime's clock (<c>UINT64_MAX</c>: no lease). Valid until the runtime is freed. CANCEL_DONE: NULL.</summary>
        public IntPtr lease_word;          // const uint64_t *
        /// <summary>CANCEL_DONE: the tag passed to <c>spot_timer_cancel_async</c>. TICK: 0.</summary>
        public ulong tag;
    }

    /// <summary>A host's report that a TICK record reached its terminal state.
    /// <para>Mirror of <c>struct spot_completion</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_completion")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_completion
    {
        /// <summary>The record's <c>token</c>.</summary>
        public ulong token;
        /// <summary>SPOT_OUTCOME_*.</summary>
        public uint outcome;
        /// <summary>Must be 0.</summary>
        public uint reserved;
    }

    /// <summary>A batch a delivery session handed out (<c>spot_session_batch</c>). Versioned: set <c>struct_size = sizeof(spot_batch)</c> before the call; the library writes the rest.
    /// <para>Ownership: the arrays and the position belong to the session and stay valid until the session's next call (<c>spot_session_batch</c>, <c>spot_session_next</c>) or <c>spot_session_free</c>, on the session's thread only.</para>
    /// <para>Mirror of <c>struct spot_batch</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_batch")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_batch
    {
        /// <summary><c>sizeof(struct spot_batch)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>0.</summary>
        public uint reserved;
        /// <summary><c>count</c> records, in the order received (NULL when <c>count</c> is 0). A TICK record is not start-checked: check it right before its handler runs (the call-free check, or <c>spot_record_begin</c>).</summary>
        public IntPtr records;             // const struct spot_record *
        /// <summary><c>count</c> outcome cells, SPOT_BATCH_PENDING on arrival: write SPOT_OUTCOME_* into the cell of each TICK record handled (SPOT_OUTCOME_NOT_STARTED when its start check failed), or SPOT_BATCH_KEPT for one completed later with <c>spot_complete</c>. Skip a record whose cell is no longer SPOT_BATCH_PENDING when its turn comes: a blocking cancel on this thread completed it. A TICK left pending completes as not started.</summary>
        public IntPtr outcomes;            // uint32_t *
        /// <summary>Write the index of the record whose handler is about to run (SIZE_MAX on arrival). A blocking <c>spot_timer_cancel</c> on this thread completes, as not started, the pending TICK records of the cancelled timer after this index, never the one at it.</summary>
        public IntPtr position;            // size_t *
        /// <summary>The number of records (0: none arrived within the timeout).</summary>
        public UIntPtr count;
    }

    /// <summary>What <c>spot_session_run</c> / <c>spot_node_run</c> did. Versioned: set <c>struct_size = sizeof(spot_pass)</c> before the call; the library writes the rest.
    /// <para>Mirror of <c>struct spot_pass</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_pass")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_pass
    {
        /// <summary><c>sizeof(struct spot_pass)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>1 if the run function stopped the batch (SPOT_RUN_STOP): its rest waits for the next run call.</summary>
        public uint stopped;
        /// <summary>Records the run function ran (kept ones included).</summary>
        public UIntPtr ran;
        /// <summary>Of those, the records it kept (SPOT_RUN_KEEP).</summary>
        public UIntPtr kept;
        /// <summary>Records whose start check failed right before their turn (completed NOT_STARTED, never handed to the run function).</summary>
        public UIntPtr not_started;
        /// <summary>CANCEL_DONE records handed to the run function.</summary>
        public UIntPtr notices;
    }

    /// <summary>A snapshot of a runtime's counters (each field a counter unless marked as a gauge). Set <c>struct_size = sizeof(spot_stats)</c> before the call; the library fills the whole fields that fit in <c>min(struct_size, its size)</c> bytes and stores that number in <c>struct_size</c>. Fields are only ever appended: 1.0 ended at <c>gate_waits</c> (200 bytes, the smallest size accepted), 1.1 appended <c>ticks_due</c> and <c>ticks_discarded</c> (216), 2.0 <c>records_taken_back</c>, <c>records_abandoned</c> and <c>scheduler_wakes_by_hosts</c> (240).
    /// <para>Tick accounting: once every generation has ended, <c>ticks_due == completed_ok + completed_failed + ticks_skipped + ticks_dropped_authority + ticks_discarded</c>. Record accounting: once every generation has ended, <c>records_published == completed_ok + completed_failed + completed_deferred + not_started + records_abandoned</c>.</para>
    /// <para>Mirror of <c>struct spot_stats</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_stats
    {
        /// <summary><c>sizeof(struct spot_stats)</c> as the host was built; the library stores the bytes it filled.</summary>
        public uint struct_size;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>Gauge: scheduler threads of this runtime (1 while it runs).</summary>
        public ulong scheduler_threads;
        /// <summary>Gauge: OS wakeup primitives (1, plus the wakeup fd once asked for).</summary>
        public ulong wakeup_primitives;
        /// <summary>Gauge: OS timers created for timers (always 0).</summary>
        public ulong os_timers;
        /// <summary>Gauge: entries in the deadline queue, stale ones included.</summary>
        public ulong queue_len;
        /// <summary>Gauge: generations registered and not yet ended.</summary>
        public ulong live_timers;
        /// <summary>Gauge: owners known to the runtime.</summary>
        public ulong owners;
        /// <summary>Times the scheduler thread woke up.</summary>
        public ulong wakeups;
        /// <summary>Batches published: groups of records made ready at once (a scheduler wakeup's, or those a host's completions made due at once).</summary>
        public ulong batches;
        /// <summary>Records published (ticks made ready for the host).</summary>
        public ulong records_published;
        /// <summary>Exchange calls that returned records, plus batch-callback invocations.</summary>
        public ulong host_crossings;
        /// <summary>Records the host received through those crossings.</summary>
        public ulong records_received;
        /// <summary>Completions reported OK.</summary>
        public ulong completed_ok;
        /// <summary>Completions reported FAILED.</summary>
        public ulong completed_failed;
        /// <summary>Completions reported DEFERRED (the tick is kept and retried).</summary>
        public ulong completed_deferred;
        /// <summary>Records that never started: completed NOT_STARTED, or taken back because their generation ended before a host received them.</summary>
        public ulong not_started;
        /// <summary>Nominal ticks skipped by the overrun policy (sum of <c>skipped_ticks</c>).</summary>
        public ulong ticks_skipped;
        /// <summary>Due ticks never delivered because the owner lease ran out or the authority was revoked.</summary>
        public ulong ticks_dropped_authority;
        /// <summary>Registrations accepted.</summary>
        public ulong registered;
        /// <summary>Generations ended, for any reason.</summary>
        public ulong ended;
        /// <summary>Release hooks (or the release function) that failed.</summary>
        public ulong cleanup_failures;
        /// <summary>Completions whose token matched no outstanding record.</summary>
        public ulong invalid_completions;
        /// <summary>Stale deadline-queue entries removed when they surfaced or by compaction.</summary>
        public ulong stale_entries_dropped;
        /// <summary>Times the deadline queue was compacted to shed stale entries.</summary>
        public ulong compactions;
        /// <summary>Times a due tick had to wait for its owner's gate.</summary>
        public ulong gate_waits;
        // ABI 1.1
        /// <summary>Nominal ticks that had come due, summed over generations when they end (ABI 1.1).</summary>
        public ulong ticks_due;
        /// <summary>Due ticks never delivered because the generation was cancelled, superseded or the runtime closed (ABI 1.1).</summary>
        public ulong ticks_discarded;
        // ABI 2.0
        /// <summary>Records taken back before a host received them (also in <c>not_started</c>) (ABI 2.0).</summary>
        public ulong records_taken_back;
        /// <summary>Records a host held when the runtime was freed (ABI 2.0).</summary>
        public ulong records_abandoned;
        /// <summary>Times a registering or completing thread woke the scheduler for an earlier deadline (ABI 2.0).</summary>
        public ulong scheduler_wakes_by_hosts;
    }

    /// <summary>Fixed-size statistics of one generation. Versioned like <c>spot_stats</c>.
    /// <para>Mirror of <c>struct spot_timer_stats</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_timer_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer_stats
    {
        /// <summary><c>sizeof(struct spot_timer_stats)</c> as the host was built; the library stores the bytes it filled.</summary>
        public uint struct_size;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>Callbacks that ran (completed Ok or Failed).</summary>
        public ulong delivered;
        /// <summary>Callbacks that completed Failed.</summary>
        public ulong failed;
        /// <summary>Nominal ticks skipped by the overrun policy.</summary>
        public ulong skipped_ticks;
        /// <summary>The newest nominal tick a callback stood for (0 before the first).</summary>
        public ulong last_scheduled_index;
    }

    // ---- the Spot lifecycle (ABI 2.1) ----

    /// <summary>How to start a node. Versioned: set <c>struct_size = sizeof(struct spot_node_config)</c>; a zero limit takes its default.
    /// <para>Mirror of <c>struct spot_node_config</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_node_config")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_config
    {
        /// <summary><c>sizeof(struct spot_node_config)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>SPOT_CLOCK_*.</summary>
        public uint clock;
        /// <summary>This node's id in its store.</summary>
        public ulong node_id;
        /// <summary>The id of the node's Entry Spot (unique in the store).</summary>
        public ulong entry_spot;
        /// <summary>Application lane: items (default 1,024).</summary>
        public ulong application_lane_items;
        /// <summary>Application lane: bytes, <c>payload + 256</c> per item (default 64 MiB).</summary>
        public ulong application_lane_bytes;
        /// <summary>Lifecycle lane: items (default 128).</summary>
        public ulong lifecycle_lane_items;
        /// <summary>Lifecycle lane: bytes (default 4 MiB).</summary>
        public ulong lifecycle_lane_bytes;
        /// <summary>Payload bytes pending on the whole node (default 1 GiB).</summary>
        public ulong node_inbound_bytes;
        /// <summary>Active Spots on the node, the Entry Spot included (default 100,000).</summary>
        public ulong active_cap;
        /// <summary>Instance Spots idle this long are evicted by <c>spot_node_evict_idle</c>; 0: never.</summary>
        public ulong instance_idle_timeout_ns;
        /// <summary>The Spots' owner lease (0: none).</summary>
        public ulong owner_lease_ns;
        /// <summary>May be NULL (Spots need no object).</summary>
        public IntPtr factory;             // spot_factory_fn
        /// <summary>May be NULL.</summary>
        public IntPtr on_close;            // spot_closing_fn
        /// <summary>Handed to <c>factory</c> and <c>on_close</c>; never read by the library.</summary>
        public IntPtr env;
        /// <summary>ABI 2.3: serve the nodes of other processes over TCP on this address (UTF-8, NUL-terminated, read during <c>spot_node_start</c> only): NULL or "" for none; otherwise "IP:PORT", e.g. "127.0.0.1:0" (port 0: any free port).</summary>
        public IntPtr listen;
    }

    /// <summary>How to reach etcd (<c>spot_store_new_etcd</c>, ABI 2.2). Versioned: set <c>struct_size</c>; a zero duration takes its default.
    /// <para>Mirror of <c>struct spot_etcd_config</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_etcd_config")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_etcd_config
    {
        /// <summary><c>sizeof(struct spot_etcd_config)</c> as the host was built.</summary>
        public uint struct_size;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>Comma-separated etcd client URLs (UTF-8, NUL-terminated; required).</summary>
        public IntPtr endpoints;
        /// <summary>Key prefix ending with '/' (NULL: "/spot-timer/").</summary>
        public IntPtr prefix;
        /// <summary>The node's owner lease in etcd (0: 10 s; whole seconds, at least 2 s).</summary>
        public ulong lease_ttl_ns;
        /// <summary>How long connecting may take at start (0: 5 s).</summary>
        public ulong connect_timeout_ns;
        /// <summary>How long one etcd request may take (0: 5 s).</summary>
        public ulong request_timeout_ns;
    }

    /// <summary>A host's report that a record's handler ended (SPOT_OUTCOME_OK / FAILED) or never started (NOT_STARTED; DEFERRED keeps a tick, and ends a message as not started).
    /// <para>Mirror of <c>struct spot_node_completion</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_node_completion")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_completion
    {
        /// <summary>The record's <c>token</c>.</summary>
        public ulong token;
        /// <summary>SPOT_OUTCOME_*.</summary>
        public uint outcome;
        /// <summary>Must be 0.</summary>
        public uint reserved;
    }

    /// <summary>One unit of Spot work handed to the host by <c>spot_node_exchange</c>. Valid (its payload too) until it is completed.
    /// <para>Mirror of <c>struct spot_node_record</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_node_record")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_record
    {
        /// <summary>SPOT_WORK_MESSAGE or SPOT_WORK_TICK.</summary>
        public uint kind;
        /// <summary>SPOT_LANE_* the work came from.</summary>
        public uint lane;
        /// <summary>The Spot.</summary>
        public ulong spot_id;
        /// <summary>The token to complete it with (<c>spot_node_begin</c>, <c>spot_node_completion</c>).</summary>
        public ulong token;
        /// <summary>MESSAGE: the payload (NULL when empty). TICK: NULL.</summary>
        public IntPtr payload;             // const uint8_t *
        /// <summary>MESSAGE: the payload's length. TICK: 0.</summary>
        public UIntPtr payload_len;        // size_t
        /// <summary>TICK: the timer's key. MESSAGE: 0.</summary>
        public ulong key;
        /// <summary>TICK: the value given at registration. MESSAGE: 0.</summary>
        public ulong value;
        /// <summary>TICK: tick information (T4). MESSAGE: 0.</summary>
        public ulong delivery_index;
        /// <summary>TICK: the nominal tick this callback stands for. MESSAGE: 0.</summary>
        public ulong scheduled_index;
        /// <summary>TICK: nominal ticks skipped since the previous callback. MESSAGE: 0.</summary>
        public ulong skipped_ticks;
    }

    /// <summary>One entry of a node's relocation target list.
    /// <para>Mirror of <c>struct spot_relocation_target</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_relocation_target")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_relocation_target
    {
        /// <summary>SPOT_TARGET_SPOT or SPOT_TARGET_ENTRY_ACTOR.</summary>
        public uint what;
        /// <summary>SPOT_TARGET_SPOT: its SPOT_KIND_*. Otherwise 0.</summary>
        public uint spot_kind;
        /// <summary>The Spot's or the actor's id.</summary>
        public ulong id;
    }

    /// <summary>A node's counters (each a counter unless marked as a gauge). Set <c>struct_size</c> first; the library fills the whole fields that fit and stores the bytes filled.
    /// <para>Mirror of <c>struct spot_node_stats</c> (include/spot_timer.h).</para></summary>
    [NativeStruct("spot_node_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_stats
    {
        /// <summary><c>sizeof(struct spot_node_stats)</c> as the host was built; the library stores the bytes it filled.</summary>
        public uint struct_size;
        /// <summary>Must be 0.</summary>
        public uint reserved;
        /// <summary>Gauge: Spots active on the node (the Entry Spot included).</summary>
        public ulong active_spots;
        /// <summary>Spots created on the node.</summary>
        public ulong created;
        /// <summary>Factory calls.</summary>
        public ulong factory_runs;
        /// <summary>Creations that failed.</summary>
        public ulong creation_failures;
        /// <summary>Instance Spots evicted idle.</summary>
        public ulong evicted;
        /// <summary>Spots closed by a call or the node's shutdown.</summary>
        public ulong closed;
        /// <summary>Messages admitted to a lane.</summary>
        public ulong messages_admitted;
        /// <summary>Messages whose handler ran.</summary>
        public ulong messages_completed;
        /// <summary>Admitted messages that never ran (their Spot closed first). Once quiet: <c>messages_admitted == messages_completed + messages_dropped</c>.</summary>
        public ulong messages_dropped;
        /// <summary>Admissions refused by a Spot's application lane.</summary>
        public ulong rejected_application_lane;
        /// <summary>Admissions refused by a Spot's lifecycle lane.</summary>
        public ulong rejected_lifecycle_lane;
        /// <summary>Admissions refused by the node's inbound byte budget.</summary>
        public ulong rejected_node_inbound;
        /// <summary>Activations refused by the active cap.</summary>
        public ulong rejected_activation;
        /// <summary>Messages that ended with SPOT_E_STALE_ROUTE.</summary>
        public ulong stale_routes;
        /// <summary>Ticks kept because the application lane was full.</summary>
        public ulong ticks_deferred;
        /// <summary>Idle-eviction passes.</summary>
        public ulong eviction_passes;
        /// <summary>Spots examined by those passes (at most 64 each).</summary>
        public ulong eviction_examined;
        /// <summary>Spots given up because the node's authority over them ended first.</summary>
        public ulong authority_lost;
        /// <summary>Terms of authority the node took after its first.</summary>
        public ulong terms_renewed;
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int spot_factory_fn(IntPtr env, ulong spot_id, uint kind, IntPtr msg, UIntPtr msg_len);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void spot_closing_fn(IntPtr env, ulong spot_id, uint kind, uint reason);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal unsafe delegate void spot_batch_fn(IntPtr env, spot_record* records, UIntPtr n,
                                                spot_completion* completions, UIntPtr* n_completions);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void spot_finalizer_fn(IntPtr env);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal unsafe delegate uint spot_run_fn(IntPtr env, spot_record* record);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal unsafe delegate uint spot_node_run_fn(IntPtr env, spot_node_record* record);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int spot_release_fn(IntPtr user_data, IntPtr msg, UIntPtr msg_len);

    /// <summary>The raw entry points. Thread-safety and ownership as stated in the header.</summary>
    public static unsafe class Native
    {
        /// <summary>The library name of every <c>[DllImport]</c>: <c>libspot_timer.so</c> on Linux
        /// (Mono's dllmap in SpotTimer.dll.config, or its default lib*.so probing).</summary>
        public const string Lib = "spot_timer";

        /// <summary>The name of a status code as a static NUL-terminated string ("SPOT_E_TIMEOUT"); "SPOT_E_UNKNOWN_STATUS" for a value this version does not know.
        /// <para>Infallible. The string is static: never free it. Thread-safe.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr spot_status_name(int status);

        /// <summary>The name of an end reason (<c>SPOT_END_*</c>) as a static NUL-terminated string ("SPOT_END_CANCELLED"); "SPOT_END_UNKNOWN" for a value this version does not know.
        /// <para>Infallible. The string is static: never free it. Thread-safe.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr spot_end_reason_name(uint reason);

        /// <summary>The name of a closing reason (<c>SPOT_CLOSE_*</c>) as a static NUL-terminated string ("SPOT_CLOSE_IDLE_EVICTED"); "SPOT_CLOSE_UNKNOWN" for a value this version does not know.
        /// <para>Infallible. The string is static: never free it. Thread-safe.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr spot_close_reason_name(uint reason);

        /// <summary>Copies the calling thread's last error message into <c>buf</c> (capacity <c>len</c> bytes, always NUL-terminated when <c>len &gt; 0</c>, truncated if needed) and returns the full length of the message in bytes, excluding the NUL; 0 when no call on this thread has failed.
        /// <para>Infallible. <c>buf</c> may be NULL when <c>len</c> is 0 (to ask for the length). The message is that of the most recent failed <c>spot_*</c> call on the calling thread; successful calls do not clear it. Thread-safe (the message is per thread).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern UIntPtr spot_last_error(byte* buf, UIntPtr len);

        /// <summary>The ABI version of the library: <c>(major &lt;&lt; 16) | minor</c>; this header is <c>SPOT_ABI_VERSION</c> (2.7). A host built against major M works with a library of the same major M and a minor &gt;= its own.
        /// <para>Infallible. Thread-safe.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern uint spot_abi_version();

        /// <summary>Creates a runtime with its scheduler thread and writes its handle to <c>*out_rt</c>.
        /// <para><c>cfg</c> is read during the call only. With <c>SPOT_DELIVERY_CALLBACK</c>, the runtime keeps <c>callback_env</c> and calls <c>callback</c> on its scheduler thread once per batch, and calls <c>callback_finalizer</c> (if not NULL) exactly once when the runtime is freed; when this function fails, neither is ever called and the caller still owns <c>callback_env</c>.</para>
        /// <para>Ownership: the caller owns the returned handle and must free it with <c>spot_runtime_free</c>. Thread-safe.</para>
        /// <para>Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT (reserved field set, callback missing or given with exchange delivery), SPOT_E_OS.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_new(spot_runtime_config* cfg, ulong* out_rt);

        /// <summary>ABI 2.1: ends every live timer (RuntimeClosed, release hooks run), wakes blocked
        /// calls with SPOT_E_CLOSED, stops the scheduler; the handle stays valid (cancels give the
        /// recorded terminal results) until spot_runtime_free.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_close(ulong rt);

        /// <summary>Frees a runtime: every live timer ends with SPOT_END_RUNTIME_CLOSED (release hooks run), threads blocked in this runtime's calls wake with SPOT_E_CLOSED, the scheduler thread exits and the batch-callback finalizer runs. The handle is invalid afterwards; freeing it again gives SPOT_E_INVALID_HANDLE. Records received earlier (their <c>live_word</c> and <c>lease_word</c> pointers) must not be used after this call.
        /// <para>Called from inside the batch callback (or a release hook) it does not wait for the scheduler thread: the runtime finishes closing, and the finalizer runs, on the scheduler thread right after the callback returns.</para>
        /// <para>Ownership: consumes the handle. Thread-safe: a call racing this one on the same handle either completes normally or returns SPOT_E_INVALID_HANDLE / SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_free(ulong rt);

        /// <summary>Starts a new authority of owner <c>owner_id</c> and writes its epoch to <c>*out_epoch</c>. Any older authority of the id is revoked: its timers end with SPOT_END_REVOKED.
        /// <para><c>lease_ns</c>: lease length on the runtime's clock (0 = no lease, never expires); renew it with <c>spot_owner_renew</c> before it runs out. <c>gate</c>: SPOT_GATE_*.</para>
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_acquire(ulong rt, ulong owner_id, ulong lease_ns, uint gate, ulong* out_epoch);

        /// <summary>Extends the lease of authority (<c>owner_id</c>, <c>epoch</c>) to now + <c>lease_ns</c> (0 = no deadline any more). Fails once the lease has expired: the authority is over.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED, SPOT_E_LEASE_EXPIRED, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_renew(ulong rt, ulong owner_id, ulong epoch, ulong lease_ns);

        /// <summary>Ends authority (<c>owner_id</c>, <c>epoch</c>): its timers end with SPOT_END_REVOKED and none of their pending ticks run.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED (already revoked or superseded), SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_revoke(ulong rt, ulong owner_id, ulong epoch);

        /// <summary>Ends authority (<c>owner_id</c>, <c>epoch</c>) like spot_owner_revoke and lets the runtime forget the owner: once its timers have ended (each with SPOT_END_REVOKED; a callback already started runs to its end first), the runtime frees everything it kept for the owner and <c>spot_stats().owners</c> drops. Use it when an owner goes away for good (an actor stops, a session closes); without it every owner id ever acquired stays known to the runtime. Acquiring <c>owner_id</c> again later starts a new owner whose epochs are above every epoch of the released one, so an (owner_id, epoch) kept from before never matches it.
        /// <para>After the call the id is unknown to this runtime until acquired again: a second release, or a renew, revoke or registration with the released authority, gives SPOT_E_UNKNOWN_OWNER.</para>
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER (never acquired, or released), SPOT_E_REVOKED (<c>epoch</c> is not the current authority: revoked or superseded), SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_release(ulong rt, ulong owner_id, ulong epoch);

        /// <summary>Takes owner <c>owner_id</c>'s execution gate for the host's own work, waiting up to <c>timeout_ns</c> (-1 = forever, 0 = try once). While the host holds it none of the owner's timer callbacks start; due ticks wait and run after <c>spot_owner_gate_leave</c>.
        /// <para>Thread-safe. From inside the batch callback it never waits (the gate may be held by a record of the running batch): SPOT_E_WOULD_DEADLOCK when the gate is not free. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_INVALID_ARGUMENT, SPOT_E_TIMEOUT, SPOT_E_WOULD_DEADLOCK, SPOT_E_CLOSED (the runtime was freed while waiting: a free wakes every waiter).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_gate_enter(ulong rt, ulong owner_id, long timeout_ns);

        /// <summary>Releases the gate taken with <c>spot_owner_gate_enter</c>; waiting ticks run.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_INVALID_ARGUMENT (the host does not hold the gate), SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_gate_leave(ulong rt, ulong owner_id);

        /// <summary>Registers timer <c>key</c> of authority (<c>owner_id</c>, <c>epoch</c>) and writes its handle to <c>*out_timer</c>. An existing registration of the same (owner, key) is superseded: its generation ends with SPOT_END_SUPERSEDED and none of its pending ticks run; if its callback is running, the new generation's first callback waits for it to end.
        /// <para><c>spec</c> is read during the call only. <c>user_data</c> is handed back in every record of the timer; the runtime never dereferences it. <c>release</c> (may be NULL) is called exactly once with <c>user_data</c> when the generation ends, on the thread that ends it (see <c>spot_release_fn</c>); it must not block for long. When this function fails, <c>release</c> is never called and the caller keeps ownership of <c>user_data</c>.</para>
        /// <para>Thread-safe; may be called from inside the batch callback. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED, SPOT_E_LEASE_EXPIRED, SPOT_E_CAPACITY_EXHAUSTED, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_register(ulong rt, ulong owner_id, ulong epoch, ulong key,
                                                     spot_timer_spec* spec, IntPtr user_data, IntPtr release,
                                                     spot_timer* out_timer);

        /// <summary><c>spot_timer_register</c>, naming <c>previous</c>: the handle of the key's current generation as the host knows it. The same outcome; when <c>previous</c> is that generation, idle, without a release function and with nobody waiting for it, the new generation takes its slot in place and <c>previous</c> keeps its one result, SPOT_END_SUPERSEDED. A stale <c>previous</c> is only a hint; a malformed one (<c>reserved</c> not 0) is SPOT_E_INVALID_ARGUMENT.
        /// <para>Thread-safe. Errors: those of <c>spot_timer_register</c>. (The managed binding does not call it yet: every managed registration has a release function.)</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_rearm(ulong rt, ulong owner_id, ulong epoch, spot_timer previous, ulong key,
                                                  spot_timer_spec* spec, IntPtr user_data, IntPtr release,
                                                  spot_timer* out_timer);

        /// <summary>Cancels timer generation <c>t</c> and waits up to <c>timeout_ns</c> (-1 = forever, 0 = don't wait) for its terminal result. From the moment of the call no new callback of <c>t</c> starts; a callback already started runs to its end and the release hook runs before the result is published.
        /// <para>A timer whose record no host holds ends within this call, on the calling thread (its release hook runs here): no wait, no round trip to the scheduler. A record published but not yet received by any <c>spot_exchange</c> is taken back (it ends as not started). Only a record a host has received is waited for.</para>
        /// <para>Returns SPOT_OK and writes the end reason (SPOT_END_*) to <c>*out_end_reason</c> (may be NULL), or SPOT_E_CLEANUP_FAILED (the release hook failed; every canceller sees it; the message is in spot_last_error). SPOT_E_TIMEOUT: not ended yet (the cancel goes on; call again to wait more). SPOT_E_WOULD_DEADLOCK: called from inside <c>t</c>'s own callback (after spot_record_begin) or from the batch callback while <c>t</c> has not ended yet: the cancel goes on and completes after the callback; use spot_timer_cancel_async to observe it. A generation that already ended gives its recorded result again, also a superseded one (SPOT_END_SUPERSEDED), until its slot is reused; after that, and for a handle that was never valid, SPOT_E_STALE_TIMER.</para>
        /// <para>Thread-safe; concurrent cancels of one generation all see the same result. Errors: also SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_ARGUMENT, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_cancel(ulong rt, spot_timer t, long timeout_ns, uint* out_end_reason);

        /// <summary>Cancels timer generation <c>t</c> without waiting. If the generation has ended — as it has on return for a timer whose record no host holds — writes 1 to <c>*out_done</c> and its end reason to <c>*out_end_reason</c> (may be NULL); otherwise writes 0 to <c>*out_done</c>, and a SPOT_RECORD_CANCEL_DONE record carrying <c>tag</c> and the terminal result arrives in a later batch. SPOT_E_CLEANUP_FAILED: the generation ended and its release hook failed (no record follows).
        /// <para>Thread-safe; may be called from inside any callback. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT, SPOT_E_STALE_TIMER, SPOT_E_CLEANUP_FAILED, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_cancel_async(ulong rt, spot_timer t, ulong tag, uint* out_done, uint* out_end_reason);

        /// <summary>Fills <c>*out</c> with the fixed-size statistics of generation <c>t</c> (also after it ended, until its slot is reused). Set <c>out-&gt;struct_size = sizeof(spot_timer_stats)</c> first.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_STALE_TIMER.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_stats(ulong rt, spot_timer t, spot_timer_stats* out_stats);

        /// <summary>Submits <c>n_completions</c> completions, then waits up to <c>timeout_ns</c> (-1 = forever, 0 = don't wait) for records and copies up to <c>capacity</c> of them into <c>out</c>, writing their number to <c>*out_count</c> (0 on timeout). One call = one crossing: everything ready is returned at once, up to <c>capacity</c>.
        /// <para>Completions are applied on the calling thread, each on its own: a tick a completion makes due at once (a backlog, a freed gate) is in this call's result. A completion that is malformed (SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT) or whose token matches no outstanding record (SPOT_E_INVALID_COMPLETION: never handed out, already completed — also the same token twice in one call) is skipped and counted; the others are applied, and the call then returns that first failure without receiving any record (call again to receive). Records whose generation ended while they waited are not returned.</para>
        /// <para><c>completions</c> may be NULL when <c>n_completions</c> is 0. <c>out</c> is written only on success (only its first <c>*out_count</c> entries). Records stay valid until the runtime is freed. Exchange-delivery runtimes only. Thread-safe (several threads may exchange at once; each record goes to exactly one of them). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (capacity 0), SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_COMPLETION, SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_exchange(ulong rt, spot_completion* completions, UIntPtr n_completions,
                                               spot_record* out_records, UIntPtr capacity, long timeout_ns,
                                               UIntPtr* out_count);

        // Delivery sessions (ABI 2.2; the batch form 2.4). The dispatcher (and Advance on a
        // manual clock) delivers through a session's batch form: one crossing per batch, and
        // the library helps a blocking cancel made on the session's thread.

        /// <summary>Starts a delivery session on <c>rt</c> for the calling thread (records handed out one at a time, start already checked; a blocking cancel on this thread never waits for a record the session holds). The session belongs to the calling thread. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT, SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_CLOSED.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_new(ulong rt, UIntPtr capacity, ulong* out_session);

        /// <summary>The next record of the session (1 in <c>*out_got</c>), or none within <c>timeout_ns</c> (0). A TICK record is started already: run it, then <c>spot_session_done</c>.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_next(ulong session, long timeout_ns, spot_record* out_record, uint* out_got);

        /// <summary>Completes the TICK the last <c>spot_session_next</c> handed out.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_done(ulong session, uint outcome);

        /// <summary>The batch form of a session: completes the batch handed out last from its outcome cells, exchanges the session's collected completions for up to its capacity of records, waiting up to <c>timeout_ns</c> (-1: until one arrives or the runtime closes; 0: don't wait), and describes them in <c>*out_batch</c> (records, one outcome cell per record, the position cell). A blocking cancel made on this thread never waits for a record of this batch that has not started.
        /// <para>Ownership: <c>*out_batch</c> points into the session (see <c>spot_batch</c>). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_INVALID_ARGUMENT, SPOT_E_CLOSED (the runtime closed and the session holds nothing more).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_batch(ulong session, long timeout_ns, spot_batch* out_batch);

        /// <summary>Runs one batch of the calling thread's session through <c>run</c> (the core's delivery driver): receives (sending the previous batch's outcomes), then calls <c>run(env, record)</c> per record right after its start was claimed; a kept TICK (SPOT_RUN_KEEP) is completed later with <c>spot_complete</c>; after SPOT_RUN_STOP the next call hands out the rest first. <c>out_pass</c> may be NULL.
        /// <para>Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_INVALID_ARGUMENT, SPOT_E_WOULD_DEADLOCK, SPOT_E_UNKNOWN_ENUM (an answer outside the contract), SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_run(ulong session, long timeout_ns, IntPtr run, IntPtr env, spot_pass* out_pass);

        /// <summary>Runs one batch of a node's Spot work through <c>run</c> (the core's delivery driver): receives up to <c>max</c> records, calls <c>run(env, record)</c> per record right after its start check, and sends the outcomes before returning; a kept record (SPOT_RUN_KEEP) is completed later with <c>spot_node_complete</c> and its token; after SPOT_RUN_STOP the next call hands out the rest first. <c>out_pass</c> may be NULL.
        /// <para>Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_INVALID_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_run(ulong node, long timeout_ns, UIntPtr max, IntPtr run, IntPtr env, spot_pass* out_pass);

        /// <summary>Frees a session of the calling thread: the records it holds unread complete as not started, the outcomes of its last batch and its collected completions are sent.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_session_free(ulong session);

        /// <summary>Submits completions without receiving records (a batch-callback host completing later, or an exchange host completing from worker threads). Checked like <c>spot_exchange</c>: each completion stands alone; the first failure is returned after the valid ones were applied. <c>completions</c> may be NULL when <c>n</c> is 0.
        /// <para>Thread-safe; may be called from inside the batch callback. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_COMPLETION, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_complete(ulong rt, spot_completion* completions, UIntPtr n);

        /// <summary>Right before starting a TICK record's handler: checks that its generation is current and not cancelled and its owner's lease running, and claims the start (a record starts at most once). SPOT_OK: start the handler (this thread is marked as running it until it completes the record, so a blocking self-cancel returns SPOT_E_WOULD_DEADLOCK instead of waiting for itself). SPOT_E_STALE_TIMER: do not start it (stale, its lease over, already started or completed); complete it with SPOT_OUTCOME_NOT_STARTED unless it was already completed. The same check without a call is described at <c>spot_record</c>.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (not a TICK record, a reserved field set), SPOT_E_STALE_TIMER.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_record_begin(ulong rt, spot_record* rec);

        /// <summary>Writes a file descriptor to <c>*out_fd</c> that is readable while records wait for <c>spot_exchange</c> (for poll/epoll/select event loops). The runtime owns it: do not close or read it; it stays valid until the runtime is freed. Exchange-delivery runtimes only.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_OS, SPOT_E_CLOSED.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_wakeup_fd(ulong rt, int* out_fd);

        /// <summary>Manual clock only: moves the clock forward by <c>ns</c> and returns once the scheduler fired everything that became due (the records are ready for <c>spot_exchange</c> or have been handed to the batch callback).
        /// <para>Thread-safe. From inside the batch callback: SPOT_E_WOULD_DEADLOCK. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_MANUAL_CLOCK, SPOT_E_CLOSED, SPOT_E_WOULD_DEADLOCK.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_advance(ulong rt, ulong ns);

        /// <summary>Writes the runtime's current time (nanoseconds on its clock) to <c>*out_ns</c>: on the real clock, <c>CLOCK_BOOTTIME</c>; read it once per batch for the call-free start check (see <c>spot_record</c>).
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_now(ulong rt, ulong* out_ns);

        /// <summary>Fills <c>*out</c> with a snapshot of the runtime's counters. Set <c>out-&gt;struct_size</c> to <c>sizeof(spot_stats)</c> first; see <c>spot_stats</c>.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_stats(ulong rt, spot_stats* out_stats);

        // Metrics: Runtime.LatenessQuantile and Runtime.Prometheus.
        /// <summary>Writes the quantile <c>q</c> (0..=1) of how late records were handed to the host (hand-over time minus the nominal due time of the tick each stands for) as the upper bound of its histogram bucket, in nanoseconds; <c>UINT64_MAX</c> when nothing was recorded yet.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (q not in 0..=1).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_lateness_quantile(ulong rt, double q, ulong* out_ns);

        /// <summary>Writes the Prometheus text exposition (format 0.0.4) of the runtime's stats (each marked gauge or counter; counters end in <c>_total</c>) and lateness histogram (<c>&lt;prefix&gt;_lateness_seconds</c>) to <c>buf</c>, NUL-terminated, every name prefixed with <c>prefix</c> (NULL: "spot_timer"). <c>*out_len</c> receives the text's full length without the NUL: when it is <c>&gt;= cap</c> the text was cut; call again with a larger buffer.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (prefix not a valid metric name, cap 0).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_prometheus(ulong rt, byte* prefix, byte* buf, UIntPtr cap, UIntPtr* out_len);

        /// <summary>Writes the Prometheus text exposition (format 0.0.4) of node <c>node</c>'s counters (the fields of <c>struct spot_node_stats</c>, each marked gauge or counter; counters end in <c>_total</c>) to <c>buf</c>, NUL-terminated, every name prefixed with <c>prefix</c> (NULL: "spot_node"). <c>*out_len</c> receives the text's full length without the NUL: when it is <c>&gt;= cap</c> the text was cut; call again with a larger buffer. Also after the node shut down, until <c>spot_node_free</c>.
        /// <para>Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (prefix not a valid metric name, cap 0).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_prometheus(ulong node, byte* prefix, byte* buf, UIntPtr cap, UIntPtr* out_len);

        // ---- the Spot lifecycle (ABI 2.1): stores and nodes, generation-tagged handles of
        // their own (0, freed and made-up handles give SPOT_E_INVALID_HANDLE) ----

        /// <summary>Creates an embedded Location Store (with its in-process cluster): nodes started on the same store are simulated nodes of one cluster.
        /// <para>Ownership: the caller frees it with <c>spot_store_free</c> after the nodes using it. Errors: SPOT_E_NULL_ARGUMENT.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_new(ulong* out_store);

        /// <summary>Connects to etcd and returns a Location Store shared by the nodes of several processes (ABI 2.2): the node's owner lease is an etcd lease; creations, lookups and releases are etcd transactions; routes to Ready Spots are cached and invalidated by a watch (a steady-state send makes no etcd request). While etcd cannot be reached, creating a missing Spot is SPOT_E_UNAVAILABLE.
        /// <para>Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_INVALID_ARGUMENT, SPOT_E_STORE (etcd cannot be reached within the connect timeout).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_new_etcd(spot_etcd_config* cfg, ulong* out_store);

        /// <summary>The number of etcd requests the store has made (0 for the embedded store). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_requests(ulong store, ulong* out_requests);

        /// <summary>Frees a store handle (nodes started on it keep their reference). Errors: SPOT_E_INVALID_HANDLE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_free(ulong store);

        /// <summary>Marks node <c>node_id</c> unusable while its lease runs: its Spots are Unavailable (nothing re-creates them). For tests of several simulated nodes. Errors: SPOT_E_INVALID_HANDLE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_mark_down(ulong store, ulong node_id);

        /// <summary>Ends node <c>node_id</c>'s lease: its authorities are released (its Spots' ids are Missing and may be created again). Errors: SPOT_E_INVALID_HANDLE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_expire_node(ulong store, ulong node_id);

        /// <summary>Starts a node on <c>store</c> (0: a private embedded store) and creates its Entry Spot.
        /// <para>Ownership: the caller frees the node with <c>spot_node_free</c>. <c>cfg</c> is read during the call; <c>cfg-&gt;env</c> is kept and handed to the callbacks until the node is freed. Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT, SPOT_E_INVALID_HANDLE (store), SPOT_E_STORE, SPOT_E_OS.</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_start(spot_node_config* cfg, ulong store, ulong* out_node);

        /// <summary>Writes the address the node serves other processes' nodes at ("127.0.0.1:40123") to <c>buf</c>, NUL-terminated; the empty string when the node does not listen (ABI 2.3). <c>*out_len</c> receives the text's full length without the NUL: when it is <c>&gt;= cap</c> the text was cut; call again with a larger buffer (64 bytes always suffice).
        /// <para>Ownership: <c>buf</c> belongs to the caller and is written during the call only. Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (cap 0).</para></summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_address(ulong node, byte* buf, UIntPtr cap, UIntPtr* out_len);

        /// <summary>Shuts a node down (every Spot closes with SPOT_CLOSE_NODE_SHUTDOWN, its timers end) and frees the handle. Records not yet completed become invalid. Errors: SPOT_E_INVALID_HANDLE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_free(ulong node);

        /// <summary>Sends a message to a Ready Spot (SPOT_LANE_APPLICATION or SPOT_LANE_LIFECYCLE); the payload is copied. A missing id gives SPOT_E_NOT_FOUND (nothing is created). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_NOT_FOUND, SPOT_E_STALE_ROUTE, SPOT_E_UNAVAILABLE, SPOT_E_*_LANE_FULL, SPOT_E_NODE_INBOUND_FULL, SPOT_E_CLOSED.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_send(ulong node, ulong spot_id, uint lane, byte* payload, UIntPtr payload_len);

        /// <summary>The instance intent: sends to Instance Spot <c>spot_id</c>, creating it first if it does not exist (the factory runs once however many callers race). Writes the Spot's object generation to <c>*out_generation</c> (may be NULL). Errors: as <c>spot_node_send</c>, and SPOT_E_CREATION_FAILED, SPOT_E_ACTIVE_CAP, SPOT_E_WRONG_KIND, SPOT_E_STORE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_send_or_create(ulong node, ulong spot_id, byte* payload, UIntPtr payload_len,
                                                          ulong* out_generation);

        /// <summary>Creates User Spot <c>spot_id</c> (or finds it if it exists). Writes its object generation to <c>*out_generation</c> (may be NULL). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_CREATION_FAILED, SPOT_E_ACTIVE_CAP, SPOT_E_WRONG_KIND, SPOT_E_UNAVAILABLE, SPOT_E_STORE, SPOT_E_CLOSED.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_create_user_spot(ulong node, ulong spot_id, ulong* out_generation);

        /// <summary>Writes the kind (SPOT_KIND_*) of Spot <c>spot_id</c> if it is active on this node. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_NOT_FOUND.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_spot_kind(ulong node, ulong spot_id, uint* out_kind);

        /// <summary>Closes Spot <c>spot_id</c> of <c>kind</c> on this node: its closing callback runs (SPOT_CLOSE_CLOSED), its timers end, its queued messages are dropped (counted), its location is released. The Entry Spot closes only with its node (SPOT_E_WRONG_KIND). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_ENUM, SPOT_E_NOT_FOUND, SPOT_E_WRONG_KIND.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_close_spot(ulong node, ulong spot_id, uint kind);

        /// <summary>Registers a repeating timer of Spot <c>spot_id</c> (key below 2^63, period &gt; 0): each tick is application work of the Spot, handed over as a SPOT_WORK_TICK record carrying <c>value</c>. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_FOUND, SPOT_E_INVALID_ARGUMENT.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_every(ulong node, ulong spot_id, ulong key, ulong period_ns, ulong value);

        /// <summary>One idle-eviction pass: examines at most 64 Instance Spots and evicts the idle ones (closing callback with SPOT_CLOSE_IDLE_EVICTED first). Writes how many it evicted. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_evict_idle(ulong node, UIntPtr* out_evicted);

        /// <summary>Manual clock only: moves the node's clock forward by <c>ns</c> and lets due work become ready. With <c>ns</c> = 0 it only makes what is due ready. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_MANUAL_CLOCK, SPOT_E_CLOSED.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_advance(ulong node, ulong ns);

        /// <summary>Submits completions and waits up to <c>timeout_ns</c> (-1: forever, 0: not at all) for ready Spot work — messages and ticks in one batch, one crossing. Writes at most <c>cap</c> records to <c>out</c> and their number to <c>*out_n</c>. Every record must be completed once; its payload stays valid until then. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_COMPLETION (nothing of the call applied), SPOT_E_CLOSED.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_exchange(ulong node, spot_node_completion* done, UIntPtr n_done,
                                                    spot_node_record* out_records, UIntPtr cap, long timeout_ns,
                                                    UIntPtr* out_n);

        /// <summary>Right before running a record's handler: SPOT_OK if it may start; SPOT_E_STALE_ROUTE if its Spot's authority ended or its lease ran out (complete it NOT_STARTED). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_COMPLETION (unknown token), SPOT_E_STALE_ROUTE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_begin(ulong node, ulong token);

        /// <summary>Submits completions without receiving. Errors: as <c>spot_node_exchange</c>.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_complete(ulong node, spot_node_completion* done, UIntPtr n_done);

        /// <summary>Writes the items and bytes a Spot's lane holds. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM, SPOT_E_NOT_FOUND.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_lane_use(ulong node, ulong spot_id, uint lane, ulong* out_items, ulong* out_bytes);

        /// <summary>Adds an actor to the node's Entry Spot (listed for relocation). Errors: SPOT_E_INVALID_HANDLE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_add_entry_actor(ulong node, ulong actor_id);

        /// <summary>Writes the node's relocation targets (its User and Instance Spots and the actors of its Entry Spot, never the Entry Spot itself): at most <c>cap</c> to <c>out</c>, their number to <c>*out_n</c>, and the full count to <c>*out_total</c> (may be NULL). Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_relocation_targets(ulong node, spot_relocation_target* out_targets, UIntPtr cap,
                                                              UIntPtr* out_n, UIntPtr* out_total);

        /// <summary>Fills <c>*out</c> with the node's counters. Set <c>out-&gt;struct_size</c> first. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_stats(ulong node, spot_node_stats* out_stats);

        /// <summary>The calling thread's last error message ("" if none).</summary>
        public static string LastError()
        {
            byte* buf = stackalloc byte[1024];
            ulong full = (ulong)spot_last_error(buf, (UIntPtr)1024);
            if (full == 0) return "";
            int len = 0;
            while (len < 1023 && buf[len] != 0) len++;
            return System.Text.Encoding.UTF8.GetString(buf, len);
        }

        /// <summary>The name of a status code (<c>spot_status_name</c>), e.g. "SPOT_E_TIMEOUT";
        /// "SPOT_E_UNKNOWN_STATUS" for a code the library does not know.</summary>
        public static string StatusName(int status)
        {
            IntPtr p = spot_status_name(status);
            return p == IntPtr.Zero ? "SPOT_E_UNKNOWN_STATUS" : Marshal.PtrToStringAnsi(p);
        }

        /// <summary>A call that writes text the way <c>spot_prometheus</c> does: into
        /// <c>buf</c> of <c>cap</c> bytes, its full length to <c>*len</c>.</summary>
        internal unsafe delegate int TextCall(byte* buf, UIntPtr cap, UIntPtr* len);

        /// <summary>Runs <paramref name="call"/> with a buffer large enough for its text (again
        /// with the length it reported, when the first was too small); its status, and the text
        /// when it is 0.</summary>
        internal static unsafe int ReadText(TextCall call, out string text)
        {
            text = null;
            int cap = 16384;
            while (true)
            {
                byte[] buf = new byte[cap];
                UIntPtr n;
                int s;
                fixed (byte* bp = buf) s = call(bp, (UIntPtr)cap, &n);
                if (s != 0) return s;
                ulong len = (ulong)n;
                if (len < (ulong)cap)
                {
                    text = System.Text.Encoding.ASCII.GetString(buf, 0, (int)len);
                    return 0;
                }
                cap = checked((int)len + 1);
            }
        }
    }
}
