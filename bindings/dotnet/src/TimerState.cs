using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Told once that a generation is ending (see <see cref="TimerState.SignalEnd"/>). May
    /// be called on any thread, also the native scheduler thread and inside a batch: it must not
    /// run application code inline.</summary>
    internal interface IEndSignal
    {
        void Signal();
    }

    /// <summary>The token of a <c>Func&lt;Tick, CancellationToken, Task&gt;</c> handler: cancelled
    /// from the thread pool, so that the token's callbacks and the continuations of a handler
    /// waiting on it never run inside the call that requested the cancel, inside another
    /// handler, or on the native scheduler or dispatcher thread. The source is never disposed
    /// (it has no timer and no wait handle: nothing to release), so the token stays usable.</summary>
    internal sealed class TokenSignal : IEndSignal
    {
        readonly CancellationTokenSource _cts = new CancellationTokenSource();
        public CancellationToken Token { get { return _cts.Token; } }

        public void Signal()
        {
            ThreadPool.UnsafeQueueUserWorkItem(s =>
            {
                try { ((CancellationTokenSource)s).Cancel(); }
                catch (Exception) { } // a token callback threw: not the binding's to report
            }, _cts);
        }
    }

    /// <summary>Managed state of one registration: its handler and cleanup. A record's user_data
    /// names its entry in the <see cref="StateTable"/> (an array index, no lookup), given back by
    /// the release hook. The library runs that hook while a record of the generation is with the
    /// host only when the runtime closes; the hook then leaves the entry to
    /// <see cref="RuntimeCore.FreeReleased"/>, which runs once no batch is in progress, so a record
    /// in hand always names a live entry.</summary>
    internal sealed class TimerState // referenced by Tick (lazy Timer)
    {
        public RuntimeCore Core;
        public Action<Tick> Sync;
        public Func<Tick, Task> Async;
        /// <summary>An async handler that takes the generation's <see cref="HandlerToken"/>.</summary>
        public Func<Tick, CancellationToken, Task> AsyncToken;
        public Action OnRelease;
        /// <summary>What learns that the generation is ending (the token of an
        /// <see cref="AsyncToken"/> handler, or a <see cref="TickStream"/>'s channel); null for
        /// the others. Never refers to the Timer or the Runtime.</summary>
        public IEndSignal EndSignal;
        /// <summary>The token handed to <see cref="AsyncToken"/> (from <see cref="EndSignal"/>).</summary>
        public CancellationToken HandlerToken;
        public ulong OwnerEpoch;
        int _endSignalled;

        /// <summary>The generation is ending: a cancel was requested through this binding, the key
        /// was registered again, the owner was revoked, released or re-acquired, the runtime is
        /// being disposed, or (at the latest) the release hook ran. Idempotent.</summary>
        public void SignalEnd()
        {
            var s = EndSignal;
            if (s == null || Interlocked.Exchange(ref _endSignalled, 1) != 0) return;
            s.Signal();
        }
        public volatile string CleanupError;
        public volatile bool Ended;
        public spot_timer Handle;

        /// <summary>A Timer for a tick of generation <paramref name="id"/> (the record's): equal
        /// (==, Equals) to the one that registered this generation. The state keeps no reference
        /// to that Timer or to the Runtime (the handle that roots this state must not keep an
        /// abandoned Runtime alive): the Runtime comes from the core's one weak reference.</summary>
        public Timer GetTimer(spot_timer id)
        {
            Runtime rt;
            if (Core.RuntimeRef == null || !Core.RuntimeRef.TryGetTarget(out rt)) return null;
            var t = new Timer(rt, this, OwnerId, Key);
            t.Id = id;
            return t;
        }

        /// <summary>This state's <see cref="StateTable"/> entry, which the native runtime carries as
        /// user data.</summary>
        public IntPtr UserData;
        /// <summary>The registration's period (0: a one-shot) and options: what a
        /// <see cref="Timer.Reset"/> that cannot move in place registers again.</summary>
        public ulong PeriodNs;
        public TimerOptions Options;
        public ulong OwnerId, Key;
        public Task<CancelResult> CancelTask;

        public const int TerminalUnknown = -1;

        /// <summary>The generation's terminal result as far as the binding knows it: an
        /// <see cref="EndReason"/> value or <see cref="TerminalUnknown"/>. Set from every result
        /// the library reports (<see cref="Confirm"/>: cancels, cancel notices) and by the
        /// release hook, which asks the library why the generation ended
        /// (spot_release_reason). Once the hook ran, Cancel/CancelAsync answer from it without
        /// calling into the library: a Timer keeps its result as long as it lives, also after
        /// its slot was reused and after the runtime was freed.</summary>
        public int Terminal = TerminalUnknown;

        /// <summary>The release hook ran to its end: <see cref="CleanupError"/> is final.</summary>
        public volatile bool Finished;

        /// <summary>A terminal result the library reported for this generation.</summary>
        public void Confirm(uint reason) { Volatile.Write(ref Terminal, (int)reason); }
    }
}
