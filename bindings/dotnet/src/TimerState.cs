using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Told once that a generation is ending (see <see cref="Timer.SignalEnd"/>). May
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

    // The state of a Timer's generation: its handler, its cleanup and its result. A Timer is
    // one object per generation: what the caller holds, what a tick names and what the native
    // runtime carries (its user_data names the Timer's entry in the StateTable: an array index,
    // no lookup), given back by the release hook. The library runs that hook while a record of
    // the generation is with the host only when the runtime closes; the hook then leaves the
    // entry to RuntimeCore.FreeReleased, which runs once no batch is in progress, so a record in
    // hand always names a live entry. The table roots Timers, so a Timer refers to its runtime
    // only through the RuntimeCore, which holds the Runtime weakly: a live timer never keeps an
    // abandoned Runtime from its finalizer.
    public sealed partial class Timer
    {
        // The fields every generation has. Bytes are time here: at a million live timers Mono's
        // collector charges about 2 ns per byte of a Timer to each registration (48 bytes more
        // per Timer: arm +19%, reset +12%), so what few generations need lives in TimerExtras.
        internal RuntimeCore Core;
        internal Action<Tick> Sync;
        internal Func<Tick, Task> Async;
        internal ulong OwnerEpoch;
        internal volatile bool Ended;
        /// <summary>This generation's <see cref="StateTable"/> entry, which the native runtime carries as
        /// user data.</summary>
        internal IntPtr UserData;
        /// <summary>The registration's period (0: a one-shot): what a <see cref="Timer.Reset"/>
        /// that cannot move in place registers again.</summary>
        internal ulong PeriodNs;
        TimerExtras _extras;

        internal const int TerminalUnknown = -1;

        /// <summary>The generation's terminal result as far as the binding knows it: an
        /// <see cref="EndReason"/> value or <see cref="TerminalUnknown"/>. Set from every result
        /// the library reports (<see cref="Confirm"/>: cancels, cancel notices) and by the
        /// release hook, which asks the library why the generation ended
        /// (spot_release_reason). Once the hook ran, Cancel/CancelAsync answer from it without
        /// calling into the library: a Timer keeps its result as long as it lives, also after
        /// its slot was reused and after the runtime was freed.</summary>
        internal int Terminal = TerminalUnknown;

        /// <summary>The release hook ran to its end: <see cref="CleanupError"/> is final.</summary>
        internal volatile bool Finished;

        /// <summary>A terminal result the library reported for this generation.</summary>
        internal void Confirm(uint reason) { Volatile.Write(ref Terminal, (int)reason); }

        /// <summary>The rarely needed part, made on first use (by any thread: one wins).</summary>
        internal TimerExtras Extras
        {
            get
            {
                var x = _extras;
                if (x != null) return x;
                Interlocked.CompareExchange(ref _extras, new TimerExtras(), null);
                return _extras;
            }
        }

        /// <summary>Takes the generation's cleanup (null when it has none or it was taken): the
        /// one who takes it runs or moves it, once.</summary>
        internal Action TakeOnRelease()
        {
            var x = _extras;
            return x == null ? null : Interlocked.Exchange(ref x.OnRelease, null);
        }

        /// <summary>Lets go of the handlers: an ended generation keeps only its result.</summary>
        internal void DropHandlers() { Sync = null; Async = null; AsyncToken = null; }

        /// <summary>An async handler that takes the generation's <see cref="HandlerToken"/>.</summary>
        internal Func<Tick, CancellationToken, Task> AsyncToken
        {
            get { var x = _extras; return x == null ? null : x.AsyncToken; }
            set { if (value != null || _extras != null) Extras.AsyncToken = value; }
        }

        internal Action OnRelease
        {
            get { var x = _extras; return x == null ? null : x.OnRelease; }
            set { if (value != null || _extras != null) Extras.OnRelease = value; }
        }

        /// <summary>What learns that the generation is ending (the token of an
        /// <see cref="AsyncToken"/> handler, or a <see cref="TickStream"/>'s channel); null for
        /// the others. Never refers to the Timer or the Runtime.</summary>
        internal IEndSignal EndSignal
        {
            get { var x = _extras; return x == null ? null : x.EndSignal; }
            set { if (value != null || _extras != null) Extras.EndSignal = value; }
        }

        /// <summary>The token handed to <see cref="AsyncToken"/> (its <see cref="EndSignal"/>'s).</summary>
        internal CancellationToken HandlerToken
        {
            get { var t = EndSignal as TokenSignal; return t != null ? t.Token : default(CancellationToken); }
        }

        internal string CleanupError
        {
            get { var x = _extras; return x == null ? null : x.CleanupError; }
            set { if (value != null || _extras != null) Extras.CleanupError = value; }
        }

        /// <summary>The registration's options when they are not the defaults (null: the defaults).</summary>
        internal TimerOptions Options
        {
            get { var x = _extras; return x == null ? null : x.Options; }
            set { if ((value != null && !RuntimeCore.IsDefault(value)) || _extras != null) Extras.Options = value; }
        }

        /// <summary>The generation is ending: a cancel was requested through this binding, the key
        /// was registered again, the owner was revoked, released or re-acquired, the runtime is
        /// being disposed, or (at the latest) the release hook ran. Idempotent.</summary>
        internal void SignalEnd()
        {
            var x = _extras;
            var s = x == null ? null : x.EndSignal;
            if (s == null || Interlocked.Exchange(ref x.EndSignalled, 1) != 0) return;
            s.Signal();
        }
    }

    /// <summary>What few generations need: an async handler with a token, a cleanup, an end
    /// signal, options other than the defaults, a cleanup failure, a pending CancelAsync.</summary>
    internal sealed class TimerExtras
    {
        internal Func<Tick, CancellationToken, Task> AsyncToken;
        internal Action OnRelease;
        internal IEndSignal EndSignal;
        internal int EndSignalled;
        internal volatile string CleanupError;
        internal TimerOptions Options;
        /// <summary>The task every CancelAsync of the generation returns (under a lock on this).</summary>
        internal Task<CancelResult> CancelTask;
    }
}
