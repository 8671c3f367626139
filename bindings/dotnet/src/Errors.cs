using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Base of every error reported by the native runtime. <see cref="Status"/> is the
    /// C ABI status code; <see cref="NativeMessage"/> the native thread-local last-error text.</summary>
    public class SpotTimerException : Exception
    {
        /// <summary>An error with a C ABI status and the native message (the exception's
        /// <see cref="Exception.Message"/> is the status name, then the message).</summary>
        public SpotTimerException(SpotStatus status, string nativeMessage)
            : base(Compose(status, nativeMessage))
        {
            Status = status;
            NativeMessage = nativeMessage ?? "";
        }

        /// <summary>With an <see cref="Exception.InnerException"/>: the BCL exception the error
        /// corresponds to (see the subclasses), for code that inspects inner exceptions.</summary>
        protected SpotTimerException(SpotStatus status, string nativeMessage, Exception innerException)
            : base(Compose(status, nativeMessage), innerException)
        {
            Status = status;
            NativeMessage = nativeMessage ?? "";
        }

        /// <summary>The C ABI status code (SPOT_E_*).</summary>
        public SpotStatus Status { get; private set; }
        /// <summary>The native library's message for the failure ("" if none).</summary>
        public string NativeMessage { get; private set; }

        internal static string Compose(SpotStatus status, string msg)
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

    /// <summary>SPOT_E_NULL_ARGUMENT / INVALID_ARGUMENT / UNKNOWN_ENUM / BAD_STRUCT_SIZE: the native
    /// library refused a value (e.g. a zero period, an undefined enum value). Not an
    /// <see cref="ArgumentException"/> (every error of the library derives from
    /// <see cref="SpotTimerException"/>); its <see cref="Exception.InnerException"/> is one, with
    /// the same message. What the binding can check before the call throws
    /// <see cref="ArgumentNullException"/> / <see cref="ArgumentOutOfRangeException"/> instead.</summary>
    public class SpotInvalidArgumentException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public SpotInvalidArgumentException(SpotStatus s, string m) : base(s, m, new ArgumentException(Compose(s, m))) { }
    }

    /// <summary>SPOT_E_CLOSED / SPOT_E_INVALID_HANDLE: the native runtime is closed or freed — the
    /// contract's "runtime closed" error: what registrations (Every/After) and owner calls
    /// (AcquireOwner, Renew, Revoke, Release, EnterGate/LeaveGate) throw after
    /// <see cref="Runtime.Dispose"/>. Cancelling after Dispose is not an error: it gives the
    /// generation's terminal result (RuntimeClosed for the timers the close ended).</summary>
    public class RuntimeClosedException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public RuntimeClosedException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_STALE_TIMER: the handle names no live or recorded generation.</summary>
    public class StaleTimerException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public StaleTimerException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_UNKNOWN_OWNER: the runtime knows no owner of that id (never acquired, or
    /// released and forgotten; calls through an <see cref="Owner"/> object report a released
    /// owner as <see cref="OwnerRevokedException"/>). Not a
    /// <see cref="System.Collections.Generic.KeyNotFoundException"/>; its
    /// <see cref="Exception.InnerException"/> is one.</summary>
    public class UnknownOwnerException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public UnknownOwnerException(SpotStatus s, string m)
            : base(s, m, new System.Collections.Generic.KeyNotFoundException(Compose(s, m))) { }
    }

    /// <summary>The owner's lease deadline passed; re-acquire the owner.</summary>
    public class LeaseExpiredException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public LeaseExpiredException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>The owner authority was revoked or replaced.</summary>
    public class OwnerRevokedException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public OwnerRevokedException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_INVALID_COMPLETION: a completion token matched no outstanding record (a
    /// binding bug; the binding completes every record it receives exactly once).</summary>
    public class InvalidCompletionException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public InvalidCompletionException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_TIMEOUT: a blocking wait ran out of time; the operation goes on (a cancel
    /// stays in effect). Not a <see cref="TimeoutException"/> (every error of the library derives
    /// from <see cref="SpotTimerException"/>); its <see cref="Exception.InnerException"/> is one,
    /// with the same message, so <c>e.GetBaseException() is TimeoutException</c> holds.</summary>
    public class SpotTimeoutException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public SpotTimeoutException(SpotStatus s, string m) : base(s, m, new TimeoutException(Compose(s, m))) { }
    }

    /// <summary>The blocking wait would wait for the calling thread itself (a blocking cancel from
    /// inside the timer's own handler). The cancel still takes effect and completes when the
    /// handler ends: use <see cref="Timer.CancelAsync"/> to observe it.</summary>
    public class WouldDeadlockException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public WouldDeadlockException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>The generation's cleanup (its release hook / OnRelease) failed. This is the
    /// terminal result: every caller of Cancel/CancelAsync sees the same message.</summary>
    public class CleanupFailedException : SpotTimerException
    {
        /// <summary>The cleanup failure with the message of what failed (the exception's
        /// <see cref="Exception.Message"/> when <see cref="TimerOptions.OnRelease"/> threw).</summary>
        public CleanupFailedException(string cleanupMessage) : base(SpotStatus.CleanupFailed, cleanupMessage)
        { CleanupMessage = cleanupMessage ?? ""; }
        /// <summary>The cleanup's failure message, the same for every caller.</summary>
        public string CleanupMessage { get; private set; }
    }

    /// <summary>SPOT_E_NOT_MANUAL_CLOCK: <see cref="Runtime.Advance"/> (or
    /// <see cref="Node.Advance"/>) on a real-clock runtime.</summary>
    public class NotManualClockException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public NotManualClockException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_CAPACITY_EXHAUSTED: the runtime's timer table is full.</summary>
    public class CapacityExhaustedException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public CapacityExhaustedException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_WRONG_DELIVERY_MODE: the call does not fit the runtime's
    /// <see cref="DeliveryMode"/> (a binding bug).</summary>
    public class WrongDeliveryModeException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public WrongDeliveryModeException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>A Rust panic was caught at the boundary (a bug in the native library).</summary>
    public class NativePanicException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public NativePanicException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>Arguments of <see cref="Runtime.HandlerFailed"/>: a handler threw (or its Task faulted).
    /// The tick was completed as failed; the dispatcher goes on.</summary>
    public sealed class HandlerFailedEventArgs : EventArgs
    {
        internal HandlerFailedEventArgs(Timer timer, Tick tick, Exception e)
        { Timer = timer; Tick = tick; Exception = e; }
        /// <summary>The timer whose handler failed (null if its runtime was collected meanwhile).</summary>
        public Timer Timer { get; private set; }
        /// <summary>The tick the handler was called for.</summary>
        public Tick Tick { get; private set; }
        /// <summary>What the handler threw (or its Task's exception; a
        /// <see cref="System.Threading.Tasks.TaskCanceledException"/> for a cancelled Task).</summary>
        public Exception Exception { get; private set; }
    }
}
