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
        readonly Timer _timer;

        internal Tick(Timer timer, ulong ownerId, ulong key, long delivery, long scheduled, long skipped)
        {
            _timer = timer;
            OwnerId = ownerId;
            Key = key;
            DeliveryIndex = delivery;
            ScheduledIndex = scheduled;
            SkippedTicks = skipped;
        }

        /// <summary>The timer this tick belongs to: the very object its registration returned.</summary>
        public Timer Timer { get { return _timer; } }
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
    public sealed partial class RuntimeStats
    {
        /// <summary>P/Invoke calls the managed delivery path made (exchange + complete calls).</summary>
        public long ManagedTransitions { get; internal set; }
    }

    /// <summary>Fixed-size statistics of one generation.</summary>
    public readonly partial struct TimerStats { }
}
