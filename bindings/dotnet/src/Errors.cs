using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Base of every error reported by the native runtime. <see cref="Status"/> is the
    /// C ABI status code; <see cref="NativeMessage"/> the native thread-local last-error text.</summary>
    public class SpotTimerException : Exception
    {
        public SpotTimerException(SpotStatus status, string nativeMessage)
            : base(Compose(status, nativeMessage))
        {
            Status = status;
            NativeMessage = nativeMessage ?? "";
        }

        public SpotStatus Status { get; private set; }
        public string NativeMessage { get; private set; }

        static string Compose(SpotStatus status, string msg)
        {
            string name;
            try { name = Native.StatusName((int)status); }
            catch (Exception) { name = status.ToString(); }
            return string.IsNullOrEmpty(msg) ? name : name + ": " + msg;
        }

        internal static Exception From(int status, string nativeMessage)
        {
            var s = (SpotStatus)status;
            switch (s)
            {
                case SpotStatus.NullArgument:
                case SpotStatus.InvalidArgument:
                case SpotStatus.UnknownEnum:
                case SpotStatus.BadStructSize: return new SpotInvalidArgumentException(s, nativeMessage);
                case SpotStatus.InvalidHandle:
                case SpotStatus.Closed: return new RuntimeClosedException(s, nativeMessage);
                case SpotStatus.StaleTimer: return new StaleTimerException(s, nativeMessage);
                case SpotStatus.UnknownOwner: return new UnknownOwnerException(s, nativeMessage);
                case SpotStatus.LeaseExpired: return new LeaseExpiredException(s, nativeMessage);
                case SpotStatus.Revoked: return new OwnerRevokedException(s, nativeMessage);
                case SpotStatus.InvalidCompletion: return new InvalidCompletionException(s, nativeMessage);
                case SpotStatus.Timeout: return new SpotTimeoutException(s, nativeMessage);
                case SpotStatus.WouldDeadlock: return new WouldDeadlockException(s, nativeMessage);
                case SpotStatus.CleanupFailed: return new CleanupFailedException(nativeMessage);
                case SpotStatus.NotManualClock: return new NotManualClockException(s, nativeMessage);
                case SpotStatus.CapacityExhausted: return new CapacityExhaustedException(s, nativeMessage);
                case SpotStatus.WrongDeliveryMode: return new WrongDeliveryModeException(s, nativeMessage);
                case SpotStatus.Panic: return new NativePanicException(s, nativeMessage);
                // The Spot lifecycle (src/Lifecycle/LifecycleErrors.cs).
                case SpotStatus.NotFound: return new SpotNotFoundException(s, nativeMessage);
                case SpotStatus.StaleRoute: return new StaleRouteException(s, nativeMessage);
                case SpotStatus.Unavailable: return new SpotUnavailableException(s, nativeMessage);
                case SpotStatus.CreationFailed: return new CreationFailedException(s, nativeMessage);
                case SpotStatus.WrongKind: return new WrongKindException(s, nativeMessage);
                case SpotStatus.ApplicationLaneFull:
                case SpotStatus.LifecycleLaneFull:
                case SpotStatus.NodeInboundFull:
                case SpotStatus.ActiveCap: return new CapacityExceededException(s, nativeMessage);
                case SpotStatus.Store: return new LocationStoreException(s, nativeMessage);
                default: return new SpotTimerException(s, nativeMessage);
            }
        }
    }

    /// <summary>SPOT_E_NULL_ARGUMENT / INVALID_ARGUMENT / UNKNOWN_ENUM / BAD_STRUCT_SIZE: a value outside its domain (e.g. zero period).</summary>
    public class SpotInvalidArgumentException : SpotTimerException
    { public SpotInvalidArgumentException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>SPOT_E_CLOSED / SPOT_E_INVALID_HANDLE: the native runtime is closed or freed — the
    /// contract's "runtime closed" error: what registrations (Every/After) and owner calls
    /// (AcquireOwner, Renew, Revoke, Release, EnterGate/LeaveGate) throw after
    /// <see cref="Runtime.Dispose"/>. Cancelling after Dispose is not an error: it gives the
    /// generation's terminal result (RuntimeClosed for the timers the close ended).</summary>
    public class RuntimeClosedException : SpotTimerException
    { public RuntimeClosedException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>SPOT_E_STALE_TIMER: the handle names no live or recorded generation.</summary>
    public class StaleTimerException : SpotTimerException
    { public StaleTimerException(SpotStatus s, string m) : base(s, m) { } }

    public class UnknownOwnerException : SpotTimerException
    { public UnknownOwnerException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>The owner's lease deadline passed; re-acquire the owner.</summary>
    public class LeaseExpiredException : SpotTimerException
    { public LeaseExpiredException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>The owner authority was revoked or replaced.</summary>
    public class OwnerRevokedException : SpotTimerException
    { public OwnerRevokedException(SpotStatus s, string m) : base(s, m) { } }

    public class InvalidCompletionException : SpotTimerException
    { public InvalidCompletionException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>A blocking wait ran out of time; the operation goes on.</summary>
    public class SpotTimeoutException : SpotTimerException
    { public SpotTimeoutException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>The blocking wait would wait for the calling thread itself (a blocking cancel from
    /// inside the timer's own handler). The cancel still takes effect and completes when the
    /// handler ends: use <see cref="Timer.CancelAsync"/> to observe it.</summary>
    public class WouldDeadlockException : SpotTimerException
    { public WouldDeadlockException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>The generation's cleanup (its release hook / OnRelease) failed. This is the
    /// terminal result: every caller of Cancel/CancelAsync sees the same message.</summary>
    public class CleanupFailedException : SpotTimerException
    {
        public CleanupFailedException(string cleanupMessage) : base(SpotStatus.CleanupFailed, cleanupMessage)
        { CleanupMessage = cleanupMessage ?? ""; }
        public string CleanupMessage { get; private set; }
    }

    public class NotManualClockException : SpotTimerException
    { public NotManualClockException(SpotStatus s, string m) : base(s, m) { } }

    public class CapacityExhaustedException : SpotTimerException
    { public CapacityExhaustedException(SpotStatus s, string m) : base(s, m) { } }

    public class WrongDeliveryModeException : SpotTimerException
    { public WrongDeliveryModeException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>A Rust panic was caught at the boundary (a bug in the native library).</summary>
    public class NativePanicException : SpotTimerException
    { public NativePanicException(SpotStatus s, string m) : base(s, m) { } }

    /// <summary>Arguments of <see cref="Runtime.HandlerFailed"/>: a handler threw (or its Task faulted).
    /// The tick was completed as failed; the dispatcher goes on.</summary>
    public sealed class HandlerFailedEventArgs : EventArgs
    {
        internal HandlerFailedEventArgs(Timer timer, Tick tick, Exception e)
        { Timer = timer; Tick = tick; Exception = e; }
        public Timer Timer { get; private set; }
        public Tick Tick { get; private set; }
        public Exception Exception { get; private set; }
    }
}
