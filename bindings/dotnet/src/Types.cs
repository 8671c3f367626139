using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>What a repeating timer does when its handler finished late (contract T5).</summary>
    public enum OverrunPolicy : uint
    {
        /// <summary>Fixed rate; a late timer skips the missed ticks and gets only the newest due one.</summary>
        SkipLateTicks = 0,
        /// <summary>Fixed rate; a late timer gets up to MaxCatchUpTicks of the newest missed ticks, in order.</summary>
        CatchUpBounded = 1,
        /// <summary>Fixed delay: each tick is due one period after the previous handler ended.</summary>
        DelayNextTick = 2,
    }

    /// <summary>An owner's execution gate (contract T9).</summary>
    public enum GateMode : uint
    {
        /// <summary>One handler at a time across all of the owner's timers (default).</summary>
        Serial = 0,
        /// <summary>The owner's timers run independently.</summary>
        Concurrent = 1,
    }

    /// <summary>The clock a runtime (or a node) runs on.</summary>
    public enum ClockKind
    {
        /// <summary>The real clock (CLOCK_BOOTTIME: it counts suspended time too).</summary>
        Real = 0,
        /// <summary>A manual clock moved only by <see cref="Runtime.Advance"/> (or
        /// <see cref="Node.Advance"/>): deterministic, for tests.</summary>
        Manual = 1,
    }

    /// <summary>How batches reach managed code.</summary>
    public enum DeliveryMode
    {
        /// <summary>A managed dispatcher calls spot_session_batch once per wakeup (real clock: a
        /// dedicated thread; manual clock: the thread calling Advance/Pump).</summary>
        Exchange = 0,
        /// <summary>The native scheduler thread calls a managed batch callback once per batch.</summary>
        Callback = 1,
    }

    /// <summary>Why a timer generation ended.</summary>
    public enum EndReason : uint
    {
        /// <summary>Cancelled (<see cref="Timer.Cancel(TimeSpan)"/>, <see cref="Timer.CancelAsync"/>,
        /// <see cref="Timer.Dispose"/>).</summary>
        Cancelled = 0,
        /// <summary>Its key was registered again: a new generation replaced it.</summary>
        Superseded = 1,
        /// <summary>A one-shot timer whose tick ran.</summary>
        Completed = 2,
        /// <summary>Its owner's lease ran out.</summary>
        LeaseExpired = 3,
        /// <summary>Its owner was revoked, released, or acquired again (a newer epoch).</summary>
        Revoked = 4,
        /// <summary>The runtime was disposed (closed) while the generation was live.</summary>
        RuntimeClosed = 5,
    }

    /// <summary>Tick info handed to a handler (contract T4).</summary>
    public readonly struct Tick
    {
        readonly TimerState _state;

        internal Tick(TimerState state, ulong ownerId, ulong key, long delivery, long scheduled, long skipped)
        {
            _state = state;
            OwnerId = ownerId;
            Key = key;
            DeliveryIndex = delivery;
            ScheduledIndex = scheduled;
            SkippedTicks = skipped;
        }

        /// <summary>The timer this tick belongs to (may be null for a tick that arrives before
        /// the registering call returned).</summary>
        public Timer Timer { get { return _state != null ? _state.GetTimer() : null; } }
        /// <summary>The id of the timer's owner (<see cref="Owner.Id"/>).</summary>
        public ulong OwnerId { get; }
        /// <summary>The timer's key within its owner.</summary>
        public ulong Key { get; }
        /// <summary>1 for the first callback of the generation, then +1 per callback.</summary>
        public long DeliveryIndex { get; }
        /// <summary>The nominal tick this callback represents (first nominal due = 1).</summary>
        public long ScheduledIndex { get; }
        /// <summary>Nominal ticks skipped since the previous callback.</summary>
        public long SkippedTicks { get; }

        /// <summary>The tick information, for logs.</summary>
        public override string ToString()
        {
            return string.Format("Tick(delivery={0}, scheduled={1}, skipped={2})", DeliveryIndex, ScheduledIndex, SkippedTicks);
        }
    }

    /// <summary>The terminal result of a timer generation (a cleanup failure is thrown as
    /// <see cref="CleanupFailedException"/> instead).</summary>
    public readonly struct CancelResult
    {
        internal CancelResult(EndReason reason) { Reason = reason; }
        /// <summary>Why the generation ended.</summary>
        public EndReason Reason { get; }
        /// <summary>The result, for logs.</summary>
        public override string ToString() { return "CancelResult(" + Reason + ")"; }
    }

    /// <summary>Options of a registration.</summary>
    public sealed class TimerOptions
    {
        /// <summary>The defaults: <see cref="OverrunPolicy.SkipLateTicks"/>, first tick one period
        /// after registration, no cleanup.</summary>
        public TimerOptions() { }

        /// <summary>What the timer does when its handler finished late (default
        /// <see cref="OverrunPolicy.SkipLateTicks"/>).</summary>
        public OverrunPolicy Policy { get; set; } = OverrunPolicy.SkipLateTicks;
        /// <summary>With CatchUpBounded: 1..int.MaxValue. Ignored (normalised to 1) otherwise.</summary>
        public long MaxCatchUpTicks { get; set; } = 1;
        /// <summary>Delay to the first nominal due time (default: one period).</summary>
        public TimeSpan? FirstDue { get; set; }
        /// <summary>Cleanup run once when the generation ends (on the native scheduler thread).
        /// If it throws, the generation's terminal result is a cleanup failure with its message.</summary>
        public Action OnRelease { get; set; }
    }

    /// <summary>Options of a runtime.</summary>
    public sealed class RuntimeOptions
    {
        /// <summary>The defaults: real clock, exchange delivery, 4,096 records per exchange.</summary>
        public RuntimeOptions() { }

        /// <summary>The runtime's clock (default <see cref="ClockKind.Real"/>).</summary>
        public ClockKind Clock { get; set; } = ClockKind.Real;
        /// <summary>How batches reach managed code (default <see cref="DeliveryMode.Exchange"/>).</summary>
        public DeliveryMode Delivery { get; set; } = DeliveryMode.Exchange;
        /// <summary>Records per exchange call (the record buffer is allocated once).</summary>
        public int BatchCapacity { get; set; } = 4096;
    }

    /// <summary>Runtime counters (spot_stats). Resource counters show what does not grow with
    /// the number of timers (contract T7, T10).</summary>
    public sealed class RuntimeStats
    {
        internal RuntimeStats(ref spot_stats s, long managedTransitions)
        {
            SchedulerThreads = (long)s.scheduler_threads; WakeupPrimitives = (long)s.wakeup_primitives;
            OsTimers = (long)s.os_timers; QueueLength = (long)s.queue_len; LiveTimers = (long)s.live_timers;
            Owners = (long)s.owners; Wakeups = (long)s.wakeups; Batches = (long)s.batches;
            RecordsPublished = (long)s.records_published; HostCrossings = (long)s.host_crossings;
            RecordsReceived = (long)s.records_received; CompletedOk = (long)s.completed_ok;
            CompletedFailed = (long)s.completed_failed; CompletedDeferred = (long)s.completed_deferred;
            NotStarted = (long)s.not_started; TicksSkipped = (long)s.ticks_skipped;
            TicksDroppedAuthority = (long)s.ticks_dropped_authority; Registered = (long)s.registered;
            Ended = (long)s.ended; CleanupFailures = (long)s.cleanup_failures;
            InvalidCompletions = (long)s.invalid_completions; StaleEntriesDropped = (long)s.stale_entries_dropped;
            Compactions = (long)s.compactions; GateWaits = (long)s.gate_waits;
            TicksDue = (long)s.ticks_due; TicksDiscarded = (long)s.ticks_discarded;
            RecordsTakenBack = (long)s.records_taken_back; RecordsAbandoned = (long)s.records_abandoned;
            SchedulerWakesByHosts = (long)s.scheduler_wakes_by_hosts;
            ManagedTransitions = managedTransitions;
        }
        /// <summary>Gauge: scheduler threads of this runtime (1 while it runs).</summary>
        public long SchedulerThreads;
        /// <summary>Gauge: OS wakeup primitives (1, plus the wakeup fd once asked for).</summary>
        public long WakeupPrimitives;
        /// <summary>Gauge: OS timers created for timers (always 0).</summary>
        public long OsTimers;
        /// <summary>Gauge: entries in the deadline queue, stale ones included.</summary>
        public long QueueLength;
        /// <summary>Gauge: generations registered and not yet ended.</summary>
        public long LiveTimers;
        /// <summary>Gauge: owners known to the runtime.</summary>
        public long Owners;
        /// <summary>Times the scheduler thread woke up.</summary>
        public long Wakeups;
        /// <summary>Batches published: groups of records made ready at once (a scheduler wakeup's, or those a host's completions made due at once).</summary>
        public long Batches;
        /// <summary>Records published (ticks made ready for the host).</summary>
        public long RecordsPublished;
        /// <summary>Exchange calls that returned records, plus batch-callback invocations.</summary>
        public long HostCrossings;
        /// <summary>Records the host received through those crossings.</summary>
        public long RecordsReceived;
        /// <summary>Completions reported OK.</summary>
        public long CompletedOk;
        /// <summary>Completions reported FAILED.</summary>
        public long CompletedFailed;
        /// <summary>Completions reported DEFERRED (the tick is kept and retried).</summary>
        public long CompletedDeferred;
        /// <summary>Records that never started: completed NOT_STARTED, or taken back because their generation ended before a host received them.</summary>
        public long NotStarted;
        /// <summary>Nominal ticks skipped by the overrun policy (sum of <c>skipped_ticks</c>).</summary>
        public long TicksSkipped;
        /// <summary>Due ticks never delivered because the owner lease ran out or the authority was revoked.</summary>
        public long TicksDroppedAuthority;
        /// <summary>Registrations accepted.</summary>
        public long Registered;
        /// <summary>Generations ended, for any reason.</summary>
        public long Ended;
        /// <summary>Release hooks (or the release function) that failed.</summary>
        public long CleanupFailures;
        /// <summary>Completions whose token matched no outstanding record.</summary>
        public long InvalidCompletions;
        /// <summary>Stale deadline-queue entries removed when they surfaced or by compaction.</summary>
        public long StaleEntriesDropped;
        /// <summary>Times the deadline queue was compacted to shed stale entries.</summary>
        public long Compactions;
        /// <summary>Times a due tick had to wait for its owner's gate.</summary>
        public long GateWaits;
        /// <summary>Nominal ticks that had come due, summed over generations when they end. Once
        /// every generation has ended: TicksDue == CompletedOk + CompletedFailed + TicksSkipped +
        /// TicksDroppedAuthority + TicksDiscarded.</summary>
        public long TicksDue;
        /// <summary>Due ticks never delivered because the generation was cancelled, superseded
        /// or the runtime closed.</summary>
        public long TicksDiscarded;
        /// <summary>Records taken back before a host received them (also in NotStarted). Once
        /// every generation has ended: RecordsPublished == CompletedOk + CompletedFailed +
        /// CompletedDeferred + NotStarted + RecordsAbandoned.</summary>
        public long RecordsTakenBack;
        /// <summary>Records the host held when the runtime was disposed.</summary>
        public long RecordsAbandoned;
        /// <summary>Times a registering or completing thread woke the scheduler for an earlier
        /// deadline.</summary>
        public long SchedulerWakesByHosts;
        /// <summary>P/Invoke calls the managed delivery path made (exchange + complete calls).</summary>
        public long ManagedTransitions;
    }

    /// <summary>Fixed-size statistics of one generation.</summary>
    public readonly struct TimerStats
    {
        internal TimerStats(ref spot_timer_stats s)
        {
            Delivered = (long)s.delivered; Failed = (long)s.failed;
            SkippedTicks = (long)s.skipped_ticks; LastScheduledIndex = (long)s.last_scheduled_index;
        }
        /// <summary>Callbacks that ran (completed Ok or Failed).</summary>
        public long Delivered { get; }
        /// <summary>Callbacks that completed Failed.</summary>
        public long Failed { get; }
        /// <summary>Nominal ticks skipped by the overrun policy.</summary>
        public long SkippedTicks { get; }
        /// <summary>The newest nominal tick a callback stood for (0 before the first).</summary>
        public long LastScheduledIndex { get; }
    }
}
