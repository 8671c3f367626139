// Exceptions of the Spot lifecycle (docs/lifecycle.md), one per status family of the C ABI
// (SPOT_E_NOT_FOUND .. SPOT_E_STORE, 20..29). SpotTimerException.From maps the statuses.
using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>SPOT_E_NOT_FOUND: no Spot with this id exists (L3: an ordinary send, a lookup,
    /// a close or a timer never creates one), or it is not active on this node.</summary>
    public class SpotNotFoundException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public SpotNotFoundException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_STALE_ROUTE (L4): the message reached a node that does not own the Spot
    /// now, whose owner lease ran out, or where the Spot is closing. It did not run and is not
    /// retried; the next call resolves the Spot again.</summary>
    public class StaleRouteException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public StaleRouteException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_UNAVAILABLE (L3): the Spot's authority exists but its owner cannot be used
    /// (its node is down and its lease not over); no creation was started.</summary>
    public class SpotUnavailableException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public SpotUnavailableException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_CREATION_FAILED (L3): the factory failed (<see cref="NodeOptions.Factory"/>
    /// threw: its message is in <see cref="SpotTimerException.NativeMessage"/>); the reservation
    /// was released, so a later intent may create the Spot.</summary>
    public class CreationFailedException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public CreationFailedException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_WRONG_KIND (L1): the id names a Spot of another kind, or the call is not
    /// allowed for its kind (closing the Entry Spot).</summary>
    public class WrongKindException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public WrongKindException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>SPOT_E_STORE: the Location Store could not be used.</summary>
    public class LocationStoreException : SpotTimerException
    {
        /// <summary>An error with the given status and native message.</summary>
        public LocationStoreException(SpotStatus s, string m) : base(s, m) { }
    }

    /// <summary>A bounded queue refused the work (L5, L6): <see cref="Queue"/> names it —
    /// a Spot's application or lifecycle lane (count or bytes, <c>payload + 256</c> per item),
    /// the node's inbound byte budget, or the active cap (activation).</summary>
    public class CapacityExceededException : SpotTimerException
    {
        /// <summary>An error with one of the four capacity statuses (25..28) and the native message.</summary>
        public CapacityExceededException(SpotStatus s, string m) : base(s, m) { Queue = QueueOf(s); }

        /// <summary>The queue that refused.</summary>
        public Queue Queue { get; private set; }

        static Queue QueueOf(SpotStatus s)
        {
            switch (s)
            {
                case SpotStatus.ApplicationLaneFull: return Queue.ApplicationLane;
                case SpotStatus.LifecycleLaneFull: return Queue.LifecycleLane;
                case SpotStatus.NodeInboundFull: return Queue.NodeInbound;
                case SpotStatus.ActiveCap: return Queue.Activation;
                default: throw new ArgumentOutOfRangeException("s", s, "not a capacity status");
            }
        }
    }

    /// <summary>Arguments of <see cref="Node.HandlerFailed"/>: a <see cref="Node.Dispatch"/>
    /// handler threw; its record was completed FAILED (it counts as run).</summary>
    public sealed class SpotWorkFailedEventArgs : EventArgs
    {
        internal SpotWorkFailedEventArgs(SpotWork work, Exception e) { Work = work; Exception = e; }
        /// <summary>The work whose handler threw.</summary>
        public SpotWork Work { get; private set; }
        /// <summary>What the handler threw.</summary>
        public Exception Exception { get; private set; }
    }
}
