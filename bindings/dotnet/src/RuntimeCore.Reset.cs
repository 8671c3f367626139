using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // Timer.Reset: a timeout reset in place (spot_timer_reset), or a registration of the key
    // when the generation cannot move.
    internal sealed unsafe partial class RuntimeCore
    {
        /// <summary>Moves generation <paramref name="t"/> to a new one due <paramref name="delayNs"/>
        /// from now. The new generation has a state and a table entry of its own from the start, so
        /// a record or an end names exactly one state, whichever thread sees it first. In place, the
        /// old generation ends Superseded and its entry comes back without its release hook (its
        /// OnRelease went to the new generation). Where it cannot move (its handler runs, or a
        /// cancel waits for it), the key is registered again with the same handler, period and
        /// options, which supersedes it; its OnRelease then moves to the new generation if it can
        /// still be taken (an end that took it first ran it).</summary>
        internal Timer Reset(Timer t, ulong delayNs)
        {
            var old = t;
            if (old.EndSignal is TickChannel)
                throw new InvalidOperationException(
                    "a TickStream's timer is not reset: dispose the stream and start another");
            Runtime rt = t.Rt;
            if (rt == null) throw new RuntimeClosedException(SpotStatus.Closed, "the runtime was disposed");
            rt.ThrowIfClosed();
            // Read first: the release hook clears them once the generation ended.
            Action<Tick> sync = old.Sync;
            Func<Tick, Task> async = old.Async;
            Func<Tick, CancellationToken, Task> asyncToken = old.AsyncToken;
            var next = new Timer
            {
                Core = this, Sync = sync, Async = async, AsyncToken = asyncToken, OnRelease = old.OnRelease,
                OwnerId = old.OwnerId, OwnerEpoch = old.OwnerEpoch, Key = old.Key,
                PeriodNs = old.PeriodNs, Options = old.Options,
            };
            if (old.EndSignal is TokenSignal)
            {
                // One token per generation: the old one's is cancelled as it ends.
                next.EndSignal = new TokenSignal();
            }
            next.UserData = StateTable.Add(next);
            spot_timer id = default(spot_timer);
            uint moved = 0;
            int s;
            bool added = false;
            try
            {
                ulong raw = rt.EnterCall(ref added);
                s = Native.spot_timer_reset(raw, t.Id, delayNs, next.UserData, s_releasePtr, &id, &moved);
            }
            catch
            {
                StateTable.Remove(next.UserData); // not carried: its release hook never runs
                throw;
            }
            finally
            {
                if (added) rt.ExitCall();
            }
            if (s != 0 || moved == 0)
            {
                StateTable.Remove(next.UserData);
                if (s != 0) new Owner(rt, old.OwnerId, old.OwnerEpoch).CheckAuthority(s);
                return RegisterAgain(rt, old, delayNs, sync, async, asyncToken);
            }
            next.Id = id;
            // The old generation ended in place: Superseded, and its entry came back without
            // its release hook, which no record can reach any more (it was idle).
            StateTable.Remove(old.UserData);
            old.Confirm((uint)EndReason.Superseded);
            old.DropHandlers();
            old.OnRelease = null;
            old.Ended = true;
            old.Finished = true;
            NoteRegistered(next); // takes the old one's place among the signalled
            old.SignalEnd();
            if (Disposed && next.EndSignal != null) next.SignalEnd();
            return next;
        }

        /// <summary>The key registered again beside generation <paramref name="old"/>, which could
        /// not move in place: the registration supersedes it the ordinary way.</summary>
        Timer RegisterAgain(Runtime rt, Timer old, ulong delayNs, Action<Tick> sync,
                            Func<Tick, Task> async, Func<Tick, CancellationToken, Task> asyncToken)
        {
            var options = old.Options ?? s_defaultOptions;
            var again = new TimerOptions
            {
                Policy = options.Policy,
                MaxCatchUpTicks = options.MaxCatchUpTicks,
                OnRelease = old.TakeOnRelease(),
            };
            bool oneShot = old.PeriodNs == 0;
            if (!oneShot) again.FirstDue = TimeSpan.FromTicks((long)(delayNs / 100));
            try
            {
                return Register(rt, new Owner(rt, old.OwnerId, old.OwnerEpoch), old.Key,
                                oneShot ? delayNs : old.PeriodNs, oneShot, sync, async, again, asyncToken);
            }
            catch
            {
                // Not registered: the cleanup goes back to the old generation, or runs now if
                // that one has ended meanwhile (its release hook found none).
                Action cleanup = again.OnRelease;
                if (cleanup != null && Interlocked.CompareExchange(ref old.Extras.OnRelease, cleanup, null) == null
                    && old.Finished && Interlocked.Exchange(ref old.Extras.OnRelease, null) == cleanup)
                {
                    try { cleanup(); } catch (Exception) { }
                }
                throw;
            }
        }
    }
}
