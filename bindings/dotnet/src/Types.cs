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

    public enum ClockKind { Real = 0, Manual = 1 }

    /// <summary>How batches reach managed code.</summary>
    public enum DeliveryMode
    {
        /// <summary>A managed dispatcher calls spot_exchange once per wakeup (real clock: a
        /// dedicated thread; manual clock: the thread calling Advance/Pump).</summary>
        Exchange = 0,
        /// <summary>The native scheduler thread calls a managed batch callback once per batch.</summary>
        Callback = 1,
    }

    /// <summary>Why a timer generation ended.</summary>
    public enum EndReason : uint
    {
        Cancelled = 0,
        Superseded = 1,
        Completed = 2,
        LeaseExpired = 3,
        Revoked = 4,
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
        public ulong OwnerId { get; }
        public ulong Key { get; }
        /// <summary>1 for the first callback of the generation, then +1 per callback.</summary>
        public long DeliveryIndex { get; }
        /// <summary>The nominal tick this callback represents (first nominal due = 1).</summary>
        public long ScheduledIndex { get; }
        /// <summary>Nominal ticks skipped since the previous callback.</summary>
        public long SkippedTicks { get; }

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
        public EndReason Reason { get; }
        public override string ToString() { return "CancelResult(" + Reason + ")"; }
    }

    /// <summary>Options of a registration.</summary>
    public sealed class TimerOptions
    {
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
        public ClockKind Clock { get; set; } = ClockKind.Real;
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
        public long SchedulerThreads, WakeupPrimitives, OsTimers, QueueLength, LiveTimers, Owners, Wakeups,
            Batches, RecordsPublished, HostCrossings, RecordsReceived, CompletedOk, CompletedFailed,
            CompletedDeferred, NotStarted, TicksSkipped, TicksDroppedAuthority, Registered, Ended,
            CleanupFailures, InvalidCompletions, StaleEntriesDropped, Compactions, GateWaits;
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
        public long Delivered { get; }
        public long Failed { get; }
        public long SkippedTicks { get; }
        public long LastScheduledIndex { get; }
    }
}
