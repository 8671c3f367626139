using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Owns one native runtime handle (a generation-tagged uint64). Releasing it closes
    /// the runtime (spot_runtime_close: every live timer ends with RuntimeClosed, release hooks
    /// run, the scheduler thread exits), reads the terminal results a Timer may still ask for,
    /// then calls spot_runtime_free.</summary>
    public sealed class RuntimeSafeHandle : SafeHandle
    {
        readonly ulong _id;
        readonly RuntimeCore _core;

        internal RuntimeSafeHandle(ulong id, RuntimeCore core) : base(IntPtr.Zero, true)
        {
            _id = id;
            _core = core;
            SetHandle(new IntPtr(1)); // "owned" marker; the real value is the 64-bit id (also on 32-bit hosts)
        }

        /// <summary>The native runtime handle value.</summary>
        public ulong Id { get { return _id; } }

        /// <summary>False while the handle owns a runtime.</summary>
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Closes and frees the native runtime (see the class summary); after a batch in
        /// progress when one is being delivered. Nothing at process shutdown (the OS reclaims it).</summary>
        protected override bool ReleaseHandle()
        {
            // At process shutdown the scheduler thread may no longer call into managed code
            // (release hooks); the OS reclaims everything anyway.
            if (Environment.HasShutdownStarted) return true;
            _core.BeginDispose();
            // Not while a batch is being delivered: its records point into the runtime.
            if (!Monitor.TryEnter(_core.DeliveryLock, 500))
            {
                // A batch is in progress for long (a handler may even be waiting for this
                // finalizer): the delivering thread frees the runtime right after the batch.
                ulong id = _id;
                var core = _core;
                _core.DeferDispose(() => { core.WaitLiveReaders(); core.CloseAndFree(id); });
                // The batch may have ended meanwhile, past the point where it runs deferred work.
                if (Monitor.TryEnter(_core.DeliveryLock))
                {
                    try { _core.RunDeferredDispose(); }
                    finally { Monitor.Exit(_core.DeliveryLock); }
                }
                return true;
            }
            try
            {
                _core.WaitLiveReaders();
                int s = _core.CloseAndFree(_id);
                return s == 0 || s == (int)SpotStatus.InvalidHandle;
            }
            finally { Monitor.Exit(_core.DeliveryLock); }
        }
    }

    /// <summary>A spot-timer runtime: one native scheduler thread and one deadline queue for all
    /// its timers, batches delivered to managed handlers with one P/Invoke transition per wakeup.
    /// Thread-safe. Dispose it to stop the scheduler (every timer ends with RuntimeClosed).
    /// After Dispose, <see cref="Timer.Cancel(TimeSpan)"/> and <see cref="Timer.CancelAsync"/> give each
    /// generation's terminal result (RuntimeClosed for those the close ended); registering and
    /// owner calls (<see cref="AcquireOwner"/>, Every/After, Renew, Revoke, Release, gates) throw
    /// <see cref="RuntimeClosedException"/>; the clock and statistics (<see cref="Advance"/>,
    /// <see cref="Settle"/>, <see cref="Now"/>, <see cref="GetStats"/>, Timer.GetStats) throw
    /// ObjectDisposedException.</summary>
    public sealed class Runtime : IDisposable, IAsyncDisposable
    {
        readonly RuntimeSafeHandle _handle;
        internal readonly RuntimeCore Core;
        Owner _defaultOwner;
        long _nextDefaultKey;
        readonly object _ownerLock = new object();

        /// <summary>A runtime on the real (CLOCK_BOOTTIME) clock with a dispatcher thread.</summary>
        public Runtime() : this(new RuntimeOptions()) { }

        /// <summary>A runtime with the given clock, delivery mode and batch capacity. Throws
        /// ArgumentNullException, ArgumentOutOfRangeException (BatchCapacity outside 1..2^20, an
        /// undefined clock or delivery value).</summary>
        public Runtime(RuntimeOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            if (options.BatchCapacity < 1 || options.BatchCapacity > 1 << 20)
                throw new ArgumentOutOfRangeException("options", "BatchCapacity must be in 1..1048576");
            if (options.Clock != ClockKind.Real && options.Clock != ClockKind.Manual)
                throw new ArgumentOutOfRangeException("options", "unknown clock kind");
            if (options.Delivery != DeliveryMode.Exchange && options.Delivery != DeliveryMode.Callback)
                throw new ArgumentOutOfRangeException("options", "unknown delivery mode");
            Core = new RuntimeCore(options);
            Core.RuntimeRef = new WeakReference<Runtime>(this);
            ulong id = Core.Create();
            _handle = new RuntimeSafeHandle(id, Core);
            LiveRuntimes.Add(Core);
        }

        /// <summary>A runtime on a manual clock: time moves only by <see cref="Advance"/>, which also
        /// delivers (on the calling thread) everything that became due — deterministic for tests.</summary>
        public static Runtime CreateManual()
        {
            return new Runtime(new RuntimeOptions { Clock = ClockKind.Manual });
        }

        /// <summary>The native runtime handle (closed once the runtime is disposed).</summary>
        public RuntimeSafeHandle Handle { get { return _handle; } }
        /// <summary>The runtime's clock.</summary>
        public ClockKind Clock { get { return Core.Options.Clock; } }
        /// <summary>How batches reach managed code.</summary>
        public DeliveryMode Delivery { get { return Core.Options.Delivery; } }
        /// <summary>True once <see cref="Dispose"/> (or the finalizer) began.</summary>
        public bool IsDisposed { get { return Core.Disposed; } }

        /// <summary>A handler threw (or its Task faulted): its tick was completed as failed. Raised
        /// on the thread that ran the handler; exceptions thrown by subscribers are swallowed.</summary>
        public event EventHandler<HandlerFailedEventArgs> HandlerFailed
        {
            add { Core.AddFailed(value); }
            remove { Core.RemoveFailed(value); }
        }

        /// <summary>The clock and statistics of a disposed runtime are gone: ObjectDisposedException.</summary>
        internal void ThrowIfDisposed()
        {
            if (Core.Disposed) throw new ObjectDisposedException("SpotTimer.Runtime");
        }

        /// <summary>Registrations and owner calls on a disposed runtime: the contract's "runtime
        /// closed" error (docs/contract.md, "Results").</summary>
        internal void ThrowIfClosed()
        {
            if (Core.Disposed) throw ClosedError();
        }

        static RuntimeClosedException ClosedError()
        {
            return new RuntimeClosedException(SpotStatus.Closed, "the runtime was disposed");
        }

        /// <summary>Runs a short native call with the handle ref-counted (no free during the call).
        /// On a disposed runtime: RuntimeClosedException when <paramref name="closedError"/>
        /// (registrations, owner calls), else ObjectDisposedException.</summary>
        internal int Call(Func<ulong, int> f, bool closedError = false)
        {
            if (closedError) ThrowIfClosed(); else ThrowIfDisposed();
            bool added = false;
            try
            {
                _handle.DangerousAddRef(ref added);
            }
            catch (ObjectDisposedException)
            {
                if (closedError) throw ClosedError();
                throw new ObjectDisposedException("SpotTimer.Runtime");
            }
            try { return f(_handle.Id); }
            finally { if (added) _handle.DangerousRelease(); }
        }

        /// <summary><see cref="Call"/> without a delegate (the registration path): the raw id with
        /// the handle ref-counted; pair with <see cref="ExitCall"/> when <paramref name="added"/>.
        /// RuntimeClosedException on a disposed runtime.</summary>
        internal ulong EnterCall(ref bool added)
        {
            ThrowIfClosed();
            try
            {
                _handle.DangerousAddRef(ref added);
            }
            catch (ObjectDisposedException)
            {
                throw ClosedError();
            }
            return _handle.Id;
        }

        internal void ExitCall() { _handle.DangerousRelease(); }

        /// <summary>Throws for a failed status. A runtime disposed during the call (the library
        /// reports an invalid or closed handle): RuntimeClosedException when
        /// <paramref name="closedError"/>, else ObjectDisposedException.</summary>
        internal void Check(int status, bool closedError = false)
        {
            if (status == 0) return;
            string msg = Native.LastError();
            if (Core.Disposed && (status == (int)SpotStatus.InvalidHandle || status == (int)SpotStatus.Closed))
            {
                if (closedError) throw new RuntimeClosedException(SpotStatus.Closed, "the runtime was disposed");
                throw new ObjectDisposedException("SpotTimer.Runtime", msg);
            }
            throw SpotTimerException.From(status, msg);
        }

        /// <summary>Starts an authority for owner <paramref name="ownerId"/> (a new epoch; an older
        /// authority of the same id is revoked). <paramref name="lease"/> null: no lease.
        /// RuntimeClosedException after Dispose.</summary>
        public Owner AcquireOwner(ulong ownerId, TimeSpan? lease = null, GateMode gate = GateMode.Serial)
        {
            ulong leaseNs = lease.HasValue ? Durations.PositiveNs(lease.Value, "lease") : 0;
            ulong epoch = 0;
            unsafe
            {
                Check(Call(rt => { ulong e; int s = Native.spot_owner_acquire(rt, ownerId, leaseNs, (uint)gate, &e); epoch = e; return s; }, true), true);
            }
            // The older authority's timers were revoked: their handler tokens and TickStreams.
            Core.SignalEnding(ownerId, e => e != epoch);
            return new Owner(this, ownerId, epoch);
        }

        Owner DefaultOwner()
        {
            lock (_ownerLock)
            {
                if (_defaultOwner == null)
                    _defaultOwner = AcquireOwner(ulong.MaxValue, null, GateMode.Concurrent);
                return _defaultOwner;
            }
        }

        /// <summary>A repeating timer on the runtime's default owner (no lease, concurrent gate).</summary>
        public Timer Every(TimeSpan period, Action<Tick> handler, TimerOptions options = null)
        {
            return DefaultOwner().Every((ulong)Interlocked.Increment(ref _nextDefaultKey), period, handler, options);
        }

        /// <summary>A repeating timer with an async handler on the runtime's default owner; see
        /// <see cref="Owner.Every(ulong, TimeSpan, Func{Tick, Task}, TimerOptions)"/>.</summary>
        public Timer Every(TimeSpan period, Func<Tick, Task> handler, TimerOptions options = null)
        {
            return DefaultOwner().Every((ulong)Interlocked.Increment(ref _nextDefaultKey), period, handler, options);
        }

        /// <summary>A repeating timer with an async handler that takes a cancellation token, on the
        /// runtime's default owner; see
        /// <see cref="Owner.Every(ulong, TimeSpan, Func{Tick, CancellationToken, Task}, TimerOptions)"/>.</summary>
        public Timer Every(TimeSpan period, Func<Tick, CancellationToken, Task> handler, TimerOptions options = null)
        {
            return DefaultOwner().Every((ulong)Interlocked.Increment(ref _nextDefaultKey), period, handler, options);
        }

        /// <summary>A repeating timer without a handler on the runtime's default owner, consumed
        /// with <see cref="TickStream.WaitForNextTickAsync"/>; see
        /// <see cref="Owner.Every(ulong, TimeSpan, TimerOptions)"/>.</summary>
        public TickStream Every(TimeSpan period, TimerOptions options = null)
        {
            return DefaultOwner().Every((ulong)Interlocked.Increment(ref _nextDefaultKey), period, options);
        }

        /// <summary>A one-shot timer on the runtime's default owner.</summary>
        public Timer After(TimeSpan delay, Action<Tick> handler, TimerOptions options = null)
        {
            return DefaultOwner().After((ulong)Interlocked.Increment(ref _nextDefaultKey), delay, handler, options);
        }

        /// <summary>A one-shot timer with an async handler on the runtime's default owner.</summary>
        public Timer After(TimeSpan delay, Func<Tick, Task> handler, TimerOptions options = null)
        {
            return DefaultOwner().After((ulong)Interlocked.Increment(ref _nextDefaultKey), delay, handler, options);
        }

        /// <summary>A one-shot timer with an async handler that takes a cancellation token, on the
        /// runtime's default owner; see
        /// <see cref="Owner.After(ulong, TimeSpan, Func{Tick, CancellationToken, Task}, TimerOptions)"/>.</summary>
        public Timer After(TimeSpan delay, Func<Tick, CancellationToken, Task> handler, TimerOptions options = null)
        {
            return DefaultOwner().After((ulong)Interlocked.Increment(ref _nextDefaultKey), delay, handler, options);
        }

        /// <summary>Manual clock only: advances the clock; returns after the scheduler fired all that
        /// became due and (unless called from inside a handler) after every synchronous handler of the
        /// resulting batches ran. Async handlers run on the thread pool: see <see cref="Settle"/>.</summary>
        public void Advance(TimeSpan by)
        {
            ulong ns = Durations.NonNegativeNs(by, "by");
            Check(Call(rt => Native.spot_advance(rt, ns)));
            Core.PumpIfInline();
        }

        /// <summary>Waits until no async handler is running (up to <paramref name="timeout"/>); on a manual
        /// clock then delivers whatever their completions made due. False on timeout.</summary>
        public bool Settle(TimeSpan timeout)
        {
            ThrowIfDisposed();
            bool idle = Core.WaitAsyncIdle(timeout);
            if (Clock == ClockKind.Manual) Advance(TimeSpan.Zero);
            return idle;
        }

        /// <summary>Current time of the runtime's clock.</summary>
        public TimeSpan Now
        {
            get
            {
                ulong now = 0;
                unsafe { Check(Call(rt => { ulong n; int s = Native.spot_now(rt, &n); now = n; return s; })); }
                return TimeSpan.FromTicks((long)(now / 100));
            }
        }

        /// <summary>A snapshot of the runtime's counters (spot_stats) and of the binding's
        /// transitions. ObjectDisposedException after Dispose.</summary>
        public RuntimeStats GetStats()
        {
            var st = new spot_stats();
            unsafe
            {
                st.struct_size = (uint)sizeof(spot_stats);
                Check(Call(rt => { spot_stats x = st; int s = Native.spot_stats(rt, &x); st = x; return s; }));
            }
            return new RuntimeStats(ref st) { ManagedTransitions = Interlocked.Read(ref Core.Transitions) };
        }

        /// <summary>Quantile <paramref name="q"/> (0..1) of how late records were handed over
        /// (hand-over time minus the nominal due time of the tick each stands for), as the upper
        /// bound of its histogram bucket; null when nothing was recorded yet.</summary>
        public TimeSpan? LatenessQuantile(double q)
        {
            if (!(q >= 0.0 && q <= 1.0)) throw new ArgumentOutOfRangeException("q", q, "a quantile is between 0 and 1");
            ulong ns = 0;
            unsafe { Check(Call(rt => { ulong v; int s = Native.spot_lateness_quantile(rt, q, &v); ns = v; return s; })); }
            if (ns == ulong.MaxValue) return null;
            return TimeSpan.FromTicks((long)(ns / 100));
        }

        /// <summary>The runtime's stats (each marked gauge or counter; counters end in _total) and
        /// lateness histogram (<c>prefix_lateness_seconds</c>) in the Prometheus text format 0.0.4:
        /// serve it on /metrics.</summary>
        public string Prometheus(string prefix = "spot_timer")
        {
            if (prefix == null) throw new ArgumentNullException("prefix");
            byte[] p = System.Text.Encoding.ASCII.GetBytes(prefix + "\0");
            string text = null;
            unsafe
            {
                fixed (byte* pp = p)
                {
                    byte* pq = pp;
                    Check(Call(rt => Native.ReadText((b, c, l) => Native.spot_prometheus(rt, pq, b, c, l), out text)));
                }
            }
            return text;
        }

        /// <summary>Closes the runtime: every timer ends with <see cref="EndReason.RuntimeClosed"/>
        /// (release hooks run), the scheduler and dispatcher threads stop, the native runtime is
        /// freed. Handler tokens are cancelled and TickStreams stop first. Waits for a batch in
        /// progress (its synchronous handlers); from inside a handler on the delivering thread the
        /// free happens right after the current batch. Async handlers still running are not waited
        /// for (see <see cref="DisposeAsync"/>). Idempotent; never throws.</summary>
        public void Dispose()
        {
            if (!Core.BeginDispose()) return;
            if (Core.IsDeliveringThread)
            {
                // From a handler on the delivering thread: free once the batch is done.
                var h = _handle;
                var core = Core;
                Core.DeferDispose(() => { h.Dispose(); core.EndDispose(); });
                return;
            }
            _handle.Dispose();
            Core.EndDispose();
            GC.KeepAlive(this);
        }

        /// <summary><see cref="Dispose"/> without blocking the caller, then waits for the async
        /// handlers of this runtime that are still running (their tokens were cancelled by the
        /// dispose, so token-aware handlers end promptly): the task completes once the runtime is
        /// freed and no handler of it runs any more. The blocking part (the close waits for a batch
        /// in progress and joins the dispatcher thread) runs on the thread pool. Called from inside
        /// one of this runtime's handlers (or from code that handler started), it disposes as
        /// <see cref="Dispose"/> does and completes without waiting for async handlers, which would
        /// include the caller itself. Never faults.
        ///
        /// <see cref="IAsyncDisposable"/> comes from Mono's mscorlib (Mono 6.8 has it; .NET
        /// Framework does not): see README.md, "NuGet package".</summary>
        public ValueTask DisposeAsync()
        {
            var cur = RuntimeCore.CurrentTimer;
            if ((cur != null && cur.Core == Core) || Core.IsDeliveringThread)
            {
                Dispose();
                return default(ValueTask);
            }
            var core = Core;
            return new ValueTask(Task.Run(() =>
            {
                try { Dispose(); } catch (Exception) { }
                return core.WhenAsyncIdle();
            }));
        }
    }

    static class Durations
    {
        public static ulong NonNegativeNs(TimeSpan t, string name)
        {
            if (t < TimeSpan.Zero) throw new ArgumentOutOfRangeException(name, t, name + " must not be negative");
            return (ulong)t.Ticks * 100UL;
        }

        public static ulong PositiveNs(TimeSpan t, string name)
        {
            if (t <= TimeSpan.Zero) throw new ArgumentOutOfRangeException(name, t, name + " must be greater than zero");
            return (ulong)t.Ticks * 100UL;
        }

        /// <summary>Timeout.InfiniteTimeSpan: -1 (forever); other negative values are rejected.</summary>
        public static long TimeoutNs(TimeSpan t, string name)
        {
            if (t == System.Threading.Timeout.InfiniteTimeSpan) return -1;
            if (t < TimeSpan.Zero) throw new ArgumentOutOfRangeException(name, t, name + " must not be negative (use Timeout.InfiniteTimeSpan to wait forever)");
            return t.Ticks > long.MaxValue / 100 ? long.MaxValue : t.Ticks * 100;
        }
    }

    /// <summary>One owner authority (owner id + epoch): lease, gate, timer registration.</summary>
    public sealed class Owner
    {
        readonly Runtime _rt;

        internal Owner(Runtime rt, ulong id, ulong epoch) { _rt = rt; Id = id; Epoch = epoch; }

        /// <summary>The runtime the owner belongs to.</summary>
        public Runtime Runtime { get { return _rt; } }
        /// <summary>The owner id given to <see cref="Runtime.AcquireOwner"/>.</summary>
        public ulong Id { get; private set; }
        /// <summary>This authority's epoch: each acquisition of the id starts a higher one.</summary>
        public ulong Epoch { get; private set; }

        /// <summary>Extends the lease to now + <paramref name="lease"/> (null: no deadline). Throws
        /// LeaseExpiredException once it expired, OwnerRevokedException after a revoke or release,
        /// RuntimeClosedException after the runtime's Dispose.</summary>
        public void Renew(TimeSpan? lease)
        {
            ulong ns = lease.HasValue ? Durations.PositiveNs(lease.Value, "lease") : 0;
            CheckAuthority(_rt.Call(rt => Native.spot_owner_renew(rt, Id, Epoch, ns), true));
        }

        /// <summary>Ends this authority: its timers end with Revoked and never run again.
        /// RuntimeClosedException after the runtime's Dispose.</summary>
        public void Revoke()
        {
            CheckAuthority(_rt.Call(rt => Native.spot_owner_revoke(rt, Id, Epoch), true));
            _rt.Core.SignalEnding(Id, e => e == Epoch);
        }

        /// <summary>Ends this authority like <see cref="Revoke"/> (its timers end with Revoked; a handler
        /// already running runs to its end first) and lets the runtime forget the owner once its timers
        /// have ended: <see cref="RuntimeStats.Owners"/> drops. For owners that go away for good (actors,
        /// sessions). Acquiring the id again later starts a new owner whose Epoch is above every epoch of
        /// this one. Throws OwnerRevokedException when this authority was already released, revoked or
        /// replaced, RuntimeClosedException after the runtime's Dispose.</summary>
        public void Release()
        {
            CheckAuthority(_rt.Call(rt => Native.spot_owner_release(rt, Id, Epoch), true));
            _rt.Core.SignalEnding(Id, e => e == Epoch);
        }

        /// <summary>Status check of a call naming this authority (Id, Epoch). Once an owner is released
        /// the C ABI no longer knows its id and reports SPOT_E_UNKNOWN_OWNER; an Owner object always
        /// names an acquired authority, so for it that means "released": OwnerRevokedException, as in
        /// the Rust core and the Python binding.</summary>
        internal void CheckAuthority(int status)
        {
            if (status == (int)SpotStatus.UnknownOwner && !_rt.IsDisposed)
            {
                string msg = Native.LastError();
                throw new OwnerRevokedException(SpotStatus.Revoked, string.Format(
                    "owner {0} epoch {1} was released{2}", Id, Epoch, msg.Length > 0 ? " (" + msg + ")" : ""));
            }
            _rt.Check(status, true);
        }

        /// <summary>Takes the owner's execution gate for host work (no timer handler of this owner starts
        /// while held). False on timeout.</summary>
        public bool EnterGate(TimeSpan timeout)
        {
            long ns = Durations.TimeoutNs(timeout, "timeout");
            _rt.ThrowIfClosed();
            int s = Native.spot_owner_gate_enter(_rt.Handle.Id, Id, ns);
            if (s == (int)SpotStatus.Timeout) return false;
            _rt.Check(s, true);
            return true;
        }

        /// <summary>Releases the owner's execution gate taken by <see cref="EnterGate"/>.</summary>
        public void LeaveGate()
        {
            _rt.Check(_rt.Call(rt => Native.spot_owner_gate_leave(rt, Id), true), true);
        }

        /// <summary>Registers (this owner, key) as a repeating timer; an existing registration of the
        /// key is superseded (its pending ticks never run). Throws SpotInvalidArgumentException for a
        /// zero period, OwnerRevokedException / LeaseExpiredException when this authority no longer
        /// holds, RuntimeClosedException after the runtime's Dispose.</summary>
        public Timer Every(ulong key, TimeSpan period, Action<Tick> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(period, "period"), false, handler, null, options);
        }

        /// <summary>Registers (this owner, key) as a repeating timer with an async handler: it starts
        /// on the thread pool and its tick completes when the returned Task ends (a faulted or
        /// cancelled Task completes it as failed and raises <see cref="Runtime.HandlerFailed"/>).
        /// At most one handler of the timer runs at a time, counting until the Task ends. Errors
        /// as <see cref="Every(ulong, TimeSpan, Action{Tick}, TimerOptions)"/>.</summary>
        public Timer Every(ulong key, TimeSpan period, Func<Tick, Task> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(period, "period"), false, null, handler, options);
        }

        /// <summary>Registers (this owner, key) as a repeating timer with an async handler that takes
        /// a <see cref="CancellationToken"/>: one token per timer generation, the same for each of
        /// its ticks, cancelled as soon as the generation is going to end — a cancel requested
        /// through this binding (<see cref="Timer.Cancel()"/>, <see cref="Timer.CancelAsync"/>,
        /// <see cref="Timer.Dispose"/>, <see cref="Timer.DisposeAsync"/>), the key registered again,
        /// the owner revoked, released or acquired again (<see cref="Revoke"/>,
        /// <see cref="Release"/>, <see cref="Runtime.AcquireOwner"/>), the runtime disposed — and at
        /// the latest when the generation ends (e.g. its owner's lease expired). The token is
        /// cancelled from the thread pool, so its callbacks and the handler's continuations never
        /// run inside the call that requested the cancel or on the runtime's threads; a blocking
        /// <see cref="Timer.Cancel()"/> waits for the handler, which the token lets end early. A
        /// handler that ends cancelled (an <see cref="OperationCanceledException"/>, or a cancelled
        /// Task) after its token was cancelled counts as completed, not failed, and raises no
        /// <see cref="Runtime.HandlerFailed"/>. Otherwise as
        /// <see cref="Every(ulong, TimeSpan, Func{Tick, Task}, TimerOptions)"/>.</summary>
        public Timer Every(ulong key, TimeSpan period, Func<Tick, CancellationToken, Task> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(period, "period"), false, null, null, options, handler);
        }

        /// <summary>Registers (this owner, key) as a repeating timer without a handler, consumed in a
        /// loop like .NET 6's <c>System.Threading.PeriodicTimer</c>:
        /// <c>while (await ticks.WaitForNextTickAsync(ct)) { ... }</c>. See <see cref="TickStream"/>.
        /// Errors as <see cref="Every(ulong, TimeSpan, Action{Tick}, TimerOptions)"/>.</summary>
        public TickStream Every(ulong key, TimeSpan period, TimerOptions options = null)
        {
            var ch = new TickChannel();
            var t = _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(period, "period"), false, ch.OnTick, null, options, null, ch);
            return new TickStream(t, ch);
        }

        /// <summary>Registers (this owner, key) as a one-shot timer due after <paramref name="delay"/>.
        /// Errors as <see cref="Every(ulong, TimeSpan, Action{Tick}, TimerOptions)"/>.</summary>
        public Timer After(ulong key, TimeSpan delay, Action<Tick> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(delay, "delay"), true, handler, null, options);
        }

        /// <summary>Registers (this owner, key) as a one-shot timer with an async handler. Errors as
        /// <see cref="Every(ulong, TimeSpan, Action{Tick}, TimerOptions)"/>.</summary>
        public Timer After(ulong key, TimeSpan delay, Func<Tick, Task> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(delay, "delay"), true, null, handler, options);
        }

        /// <summary>Registers (this owner, key) as a one-shot timer with an async handler that takes
        /// a <see cref="CancellationToken"/>, cancelled as for
        /// <see cref="Every(ulong, TimeSpan, Func{Tick, CancellationToken, Task}, TimerOptions)"/>.</summary>
        public Timer After(ulong key, TimeSpan delay, Func<Tick, CancellationToken, Task> handler, TimerOptions options = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            return _rt.Core.Register(_rt, this, key, Durations.NonNegativeNs(delay, "delay"), true, null, null, options, handler);
        }
    }

    /// <summary>One timer generation. Cancel it blocking (<see cref="Cancel(TimeSpan)"/>) or not
    /// (<see cref="CancelAsync"/>); every caller sees the same terminal result. A tick's
    /// <see cref="Tick.Timer"/> is the very object the registration returned. A Timer does not
    /// keep its <see cref="Runtime"/> alive: keep a reference to the Runtime (or Dispose it) for
    /// as long as its timers should run; an abandoned Runtime is finalized and its timers end
    /// <see cref="EndReason.RuntimeClosed"/>.</summary>
    public sealed partial class Timer : IDisposable, IAsyncDisposable, IEquatable<Timer>
    {
        internal spot_timer Id;
        int _disposed;

        internal Timer() { }

        /// <summary>The Runtime, while it is alive (null once it was collected).</summary>
        internal Runtime Rt
        {
            get { Runtime rt; return Core.RuntimeRef != null && Core.RuntimeRef.TryGetTarget(out rt) ? rt : null; }
        }

        /// <summary>The id of the timer's owner.</summary>
        public ulong OwnerId { get; internal set; }
        /// <summary>The timer's key within its owner.</summary>
        public ulong Key { get; internal set; }
        /// <summary>The generation's number: unique in the process.</summary>
        public ulong Generation { get { return Id.generation; } }
        /// <summary>True once the generation ended (its cleanup ran).</summary>
        public bool HasEnded { get { return Ended; } }

        internal bool IsCurrentHandler()
        {
            var cur = RuntimeCore.CurrentTimer;
            return cur != null && cur == this;
        }

        /// <summary>Cancels and waits up to <paramref name="timeout"/> (Timeout.InfiniteTimeSpan: forever)
        /// for the terminal result: no new handler of this generation starts from now on; a running
        /// one runs to its end. Throws SpotTimeoutException (the cancel goes on), CleanupFailedException
        /// (the terminal result), WouldDeadlockException when called from inside this timer's own
        /// handler (the cancel still completes when the handler returns; use CancelAsync). Once the
        /// generation has ended it gives its terminal result from this Timer's own state, without a
        /// call into the library: the result stays as long as the Timer lives — after any number
        /// of later registrations (its slot may be reused), and after the runtime's Dispose
        /// (RuntimeClosed for a generation the close ended).</summary>
        public CancelResult Cancel(TimeSpan timeout)
        {
            long ns = Durations.TimeoutNs(timeout, "timeout");
            SignalEnd();
            if (Finished) return RuntimeCore.FromState(this);
            if (Core.Disposed) return Core.CancelClosed(this, ns);
            return Core.CancelBlocking(this, ns);
        }

        /// <summary>The wait of <see cref="Cancel()"/>: <see cref="Timeout.InfiniteTimeSpan"/>.</summary>
        public static readonly TimeSpan DefaultCancelTimeout = Timeout.InfiniteTimeSpan;

        /// <summary><see cref="Cancel(TimeSpan)"/> with <see cref="DefaultCancelTimeout"/>: waits
        /// without a time limit for a running handler of this generation to end and its cleanup
        /// to run, as <see cref="Thread.Join()"/> or <see cref="Task.Wait()"/> do (and as the Python
        /// binding's <c>cancel()</c> does). It cannot wait for itself: from inside the timer's own
        /// handler it throws <see cref="WouldDeadlockException"/> at once; from another handler on
        /// the dispatcher thread it keeps submitting that thread's completions while it waits.
        /// A handler that never returns blocks it forever: pass a timeout, or use
        /// <see cref="CancelAsync"/> with a token.</summary>
        public CancelResult Cancel()
        {
            return Cancel(DefaultCancelTimeout);
        }

        /// <summary>Cancels without blocking; the task completes with the terminal result (faults with
        /// CleanupFailedException when cleanup failed). From inside the timer's own handler it completes
        /// after the handler ends. After the runtime's Dispose: the terminal result, as
        /// <see cref="Cancel(TimeSpan)"/>.
        ///
        /// The cancel itself takes effect before this method returns, whatever
        /// <paramref name="cancellationToken"/> says (also when it is already cancelled): from then
        /// on no new handler of the generation starts, and the handler token of the generation is
        /// cancelled. The token only bounds the wait for the terminal result: when it is cancelled
        /// first, the returned task is cancelled (<see cref="TaskCanceledException"/>), the timer
        /// stays cancelled, and the result can be read later by another Cancel or CancelAsync
        /// (every caller sees the same one).</summary>
        public Task<CancelResult> CancelAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            SignalEnd();
            var shared = Core.CancelAsync(this);
            if (!cancellationToken.CanBeCanceled || shared.IsCompleted) return shared;
            return WithCancellation(shared, cancellationToken);
        }

        static Task<CancelResult> WithCancellation(Task<CancelResult> shared, CancellationToken ct)
        {
            if (ct.IsCancellationRequested) return Task.FromCanceled<CancelResult>(ct);
            var tcs = new TaskCompletionSource<CancelResult>(TaskCreationOptions.RunContinuationsAsynchronously);
            var reg = ct.Register(() => tcs.TrySetCanceled(ct));
            shared.ContinueWith(t =>
            {
                reg.Dispose();
                if (t.IsFaulted) tcs.TrySetException(t.Exception.InnerExceptions);
                else if (t.IsCanceled) tcs.TrySetCanceled();
                else tcs.TrySetResult(t.Result);
            }, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
            return tcs.Task;
        }

        /// <summary>Moves this timer, as <see cref="System.Threading.Timer.Change(TimeSpan, TimeSpan)"/>
        /// moves one: a new generation of the same key, handler, period and options whose first
        /// tick is due <paramref name="dueTime"/> from now; this generation ends
        /// <see cref="EndReason.Superseded"/> (its Cancel and CancelAsync say so). An idle timer
        /// moves in place (spot_timer_reset: no registration, its <see cref="TimerOptions.OnRelease"/>
        /// runs once, when the last generation ends); one whose handler runs now, or whose end a
        /// cancel waits for, gets the new generation registered beside it, as Every/After would.
        /// A handler that takes a token gets a new token for the new generation; the old one's is
        /// cancelled. Returns the new generation's Timer. Throws ArgumentOutOfRangeException for a
        /// negative <paramref name="dueTime"/>, StaleTimerException once this generation ended,
        /// InvalidOperationException for the timer of a <see cref="TickStream"/>,
        /// OwnerRevokedException / LeaseExpiredException when its authority no longer holds,
        /// RuntimeClosedException after the runtime's Dispose.</summary>
        public Timer Reset(TimeSpan dueTime)
        {
            return Core.Reset(this, Durations.NonNegativeNs(dueTime, "dueTime"));
        }

        /// <summary>The generation's statistics (spot_timer_stats). ObjectDisposedException after
        /// this Timer's Dispose or the runtime's.</summary>
        public TimerStats GetStats()
        {
            if (Volatile.Read(ref _disposed) != 0) throw new ObjectDisposedException("SpotTimer.Timer");
            var runtime = Rt;
            if (runtime == null) throw new ObjectDisposedException("SpotTimer.Runtime");
            var st = new spot_timer_stats();
            var id = Id;
            unsafe
            {
                st.struct_size = (uint)sizeof(spot_timer_stats);
                runtime.Check(runtime.Call(rt => { spot_timer_stats x = st; int s = Native.spot_timer_stats(rt, id, &x); st = x; return s; }));
            }
            return new TimerStats(ref st);
        }

        /// <summary>Starts the cancel without waiting. After Dispose, GetStats throws
        /// ObjectDisposedException; Cancel/CancelAsync still report the terminal result.</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
            SignalEnd();
            if (Core.Disposed) return;
            try { Core.StartCancel(this); }
            catch (SpotTimerException) { }
            catch (ObjectDisposedException) { }
        }

        /// <summary>Cancels like <see cref="Dispose"/>, then completes once the generation has ended:
        /// a handler that was running (synchronous or async) returned and the cleanup ran — what
        /// <c>await using</c> needs to know that nothing of the timer runs any more. It does not
        /// fault: a cleanup failure (<see cref="CleanupFailedException"/>) is left to
        /// <see cref="CancelAsync"/>. From inside the timer's own handler it only starts the cancel
        /// and completes at once (waiting there would wait for the handler itself). Idempotent.</summary>
        public ValueTask DisposeAsync()
        {
            if (IsCurrentHandler())
            {
                Dispose();
                return default(ValueTask);
            }
            Interlocked.Exchange(ref _disposed, 1);
            Task<CancelResult> end;
            try { end = CancelAsync(); }
            catch (SpotTimerException) { return default(ValueTask); }
            catch (ObjectDisposedException) { return default(ValueTask); }
            if (end.IsCompleted)
            {
                var ignored = end.Exception; // observed
                return default(ValueTask);
            }
            return new ValueTask(end.ContinueWith(t => { var ignored = t.Exception; }, CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default));
        }

        /// <summary>Owner, key and generation, for logs.</summary>
        public override string ToString()
        {
            return string.Format("Timer(owner={0}, key={1}, generation={2})", OwnerId, Key, Id.generation);
        }

        /// <summary>Same generation of the same runtime.</summary>
        public bool Equals(Timer other)
        {
            return ReferenceEquals(this, other);
        }

        /// <summary>Same generation of the same runtime.</summary>
        public override bool Equals(object obj) { return Equals(obj as Timer); }

        /// <summary>Hash of the generation.</summary>
        public override int GetHashCode() { return Id.generation.GetHashCode(); }

        /// <summary>Same generation (or both null).</summary>
        public static bool operator ==(Timer a, Timer b)
        {
            return ReferenceEquals(a, null) ? ReferenceEquals(b, null) : a.Equals(b);
        }

        /// <summary>Not the same generation.</summary>
        public static bool operator !=(Timer a, Timer b) { return !(a == b); }
    }
}
