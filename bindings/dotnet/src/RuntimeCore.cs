using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>The delivery engine of one runtime. Holds only the raw native id (never the
    /// SafeHandle), so an abandoned <see cref="Runtime"/> can still be finalized.</summary>
    internal sealed unsafe partial class RuntimeCore
    {
        // ---- process-wide: the static (never collected) native callbacks ----
        static long s_nextTag;
        static readonly spot_release_fn s_release = ReleaseThunk;
        static readonly spot_batch_fn s_batch = BatchThunk;
        static readonly spot_finalizer_fn s_finalizer = FinalizerThunk;
        static readonly spot_handback_fn s_handBack = HandBackThunk;
        static readonly IntPtr s_releasePtr = Marshal.GetFunctionPointerForDelegate(s_release);
        static readonly IntPtr s_batchPtr = Marshal.GetFunctionPointerForDelegate(s_batch);
        static readonly IntPtr s_finalizerPtr = Marshal.GetFunctionPointerForDelegate(s_finalizer);
        static readonly IntPtr s_handBackPtr = Marshal.GetFunctionPointerForDelegate(s_handBack);

        // What a registration without options reads (never written: no allocation per call).
        static readonly TimerOptions s_defaultOptions = new TimerOptions();

        /// <summary>Whether <paramref name="o"/> is the shared instance a registration without
        /// options reads.</summary>
        internal static bool IsDefault(TimerOptions o) { return ReferenceEquals(o, s_defaultOptions); }

        [ThreadStatic] static Timer t_currentTimer;
        [ThreadStatic] static RuntimeCore t_dispatching;
        static readonly AsyncLocal<Timer> s_asyncCurrent = new AsyncLocal<Timer>();

        internal static Timer CurrentTimer
        {
            get { return t_currentTimer ?? s_asyncCurrent.Value; }
        }

        internal readonly RuntimeOptions Options;
        internal ulong Raw;
        internal long Transitions;
        readonly bool _inline;      // manual clock + exchange: delivery runs in Advance on the caller's thread
        readonly bool _callback;
        int _disposeState;          // 0 open, 1 disposing/disposed
        internal bool Disposed { get { return Volatile.Read(ref _disposeState) != 0; } }

        // records per batch (exchange mode: the capacity of the delivering thread's session)
        readonly int _cap;

        readonly ConcurrentQueue<spot_completion> _pending = new ConcurrentQueue<spot_completion>();
        int _waiting = 1;           // 1 while nobody will exchange soon: completers flush themselves
        int _flushing;
        long _asyncInFlight;
        readonly object _idleLock = new object();
        internal readonly object DeliveryLock = new object();
        Action _deferredDispose;
        /// <summary>The Runtime, weakly: what a tick's Timer refers to (one per runtime, not per timer).</summary>
        internal WeakReference<Runtime> RuntimeRef;
        readonly ConcurrentDictionary<ulong, KeyValuePair> _cancelWaiters = new ConcurrentDictionary<ulong, KeyValuePair>();
        // Handles of states released while the runtime closes (a batch may still name them).
        readonly ConcurrentQueue<IntPtr> _releasedWhileClosing = new ConcurrentQueue<IntPtr>();
        Thread _dispatcher;
        readonly object _startLock = new object();
        GCHandle _selfHandle;
        EventHandler<HandlerFailedEventArgs> _failed;

        internal struct KeyValuePair
        {
            public TaskCompletionSource<CancelResult> Tcs;
            public Timer State;
        }

        internal RuntimeCore(RuntimeOptions options)
        {
            Options = new RuntimeOptions { Clock = options.Clock, Delivery = options.Delivery, BatchCapacity = options.BatchCapacity };
            _callback = options.Delivery == DeliveryMode.Callback;
            _inline = !_callback && options.Clock == ClockKind.Manual;
            _cap = options.BatchCapacity;
        }

        internal ulong Create()
        {
            var cfg = new spot_runtime_config();
            cfg.struct_size = (uint)sizeof(spot_runtime_config);
            cfg.clock = Options.Clock == ClockKind.Manual ? C.CLOCK_MANUAL : C.CLOCK_REAL;
            cfg.delivery = _callback ? C.DELIVERY_CALLBACK : C.DELIVERY_EXCHANGE;
            if (_callback)
            {
                _selfHandle = GCHandle.Alloc(this, GCHandleType.Normal);
                cfg.callback = s_batchPtr;
                cfg.callback_env = GCHandle.ToIntPtr(_selfHandle);
                cfg.callback_finalizer = s_finalizerPtr;
            }
            ulong id;
            int s = Native.spot_runtime_new(&cfg, &id);
            if (s != 0)
            {
                string msg = Native.LastError();
                if (_callback && _selfHandle.IsAllocated) _selfHandle.Free();
                throw SpotTimerException.From(s, msg);
            }
            Raw = id;
            return id;
        }

        internal void AddFailed(EventHandler<HandlerFailedEventArgs> h) { lock (_idleLock) _failed += h; }
        internal void RemoveFailed(EventHandler<HandlerFailedEventArgs> h) { lock (_idleLock) _failed -= h; }

        internal bool BeginDispose()
        {
            if (Interlocked.Exchange(ref _disposeState, 1) != 0) return false;
            LiveRuntimes.Remove(this);
            SignalEnding(null);
            return true;
        }

        // ------------------------------------------------------------------ ending signals

        // The live generations that carry an end signal (a handler token or a TickStream), by
        // (owner, key): what a re-registration, an owner's revoke, release or re-acquisition and
        // the dispose signal before the library's release hook would (the hook runs only after
        // a running handler ended, too late for a token the handler waits on). Empty, and never
        // locked on the registration path, as long as no such generation was registered.
        readonly Dictionary<OwnerKey, Timer> _signalled = new Dictionary<OwnerKey, Timer>();
        volatile int _signalledCount;

        internal struct OwnerKey : IEquatable<OwnerKey>
        {
            public ulong Owner, Key;
            public bool Equals(OwnerKey o) { return Owner == o.Owner && Key == o.Key; }
            public override bool Equals(object o) { return o is OwnerKey && Equals((OwnerKey)o); }
            public override int GetHashCode() { return (Owner * 0x9E3779B97F4A7C15UL ^ Key).GetHashCode(); }
        }

        /// <summary>After a successful registration of (owner, key): the generation it superseded
        /// is ending; the new one is remembered when it carries a signal.</summary>
        void NoteRegistered(Timer st)
        {
            if (st.EndSignal == null && _signalledCount == 0) return;
            Timer old = null;
            var k = new OwnerKey { Owner = st.OwnerId, Key = st.Key };
            lock (_signalled)
            {
                if (_signalled.TryGetValue(k, out old) && old == st) old = null;
                if (st.EndSignal != null && !st.Ended) _signalled[k] = st;
                else if (old != null) _signalled.Remove(k);
                _signalledCount = _signalled.Count;
            }
            if (old != null) old.SignalEnd();
        }

        /// <summary>The release hook: the generation ended.</summary>
        void NoteReleased(Timer st)
        {
            if (st.EndSignal == null) return;
            var k = new OwnerKey { Owner = st.OwnerId, Key = st.Key };
            lock (_signalled)
            {
                Timer cur;
                if (_signalled.TryGetValue(k, out cur) && cur == st) _signalled.Remove(k);
                _signalledCount = _signalled.Count;
            }
            st.SignalEnd();
        }

        /// <summary>Signals the generations of owner <paramref name="ownerId"/> whose epoch
        /// <paramref name="match"/> accepts (null <paramref name="ownerId"/>: every generation, for
        /// the dispose).</summary>
        internal void SignalEnding(ulong? ownerId, Func<ulong, bool> match = null)
        {
            if (_signalledCount == 0) return;
            var hit = new List<Timer>();
            lock (_signalled)
            {
                foreach (var st in _signalled.Values)
                    if (ownerId == null || (st.OwnerId == ownerId.Value && (match == null || match(st.OwnerEpoch))))
                        hit.Add(st);
                if (ownerId == null) _signalled.Clear();
                _signalledCount = _signalled.Count;
            }
            foreach (var st in hit) st.SignalEnd();
        }

        /// <summary>After the native runtime was freed: joins the dispatcher, resolves cancel waiters
        /// whose notice can no longer arrive (with the generation's terminal result).</summary>
        internal void EndDispose()
        {
            Thread d = _dispatcher;
            bool joined = true;
            if (d != null && d != Thread.CurrentThread) joined = d.Join(TimeSpan.FromSeconds(10));
            foreach (var kv in _cancelWaiters)
            {
                KeyValuePair w;
                if (_cancelWaiters.TryRemove(kv.Key, out w)) CompleteFromClosed(w.Tcs, w.State);
            }
            if (joined && t_dispatching != this) FreeReleased();
        }

        // ------------------------------------------------------------------ close and free

        /// <summary>The native end of a dispose (no batch in progress): close (every live
        /// generation ends with RuntimeClosed; the library hands their states back a thousand at
        /// a time, and each records that result and runs its OnRelease here), then free the
        /// handle.</summary>
        internal int CloseAndFree(ulong rt)
        {
            Native.spot_runtime_close_handing_back(rt, s_handBackPtr, IntPtr.Zero);
            return Native.spot_runtime_free(rt);
        }

        // ------------------------------------------------------------------ registration

        internal Timer Register(Runtime rt, Owner owner, ulong key, ulong ns, bool oneShot,
                                Action<Tick> sync, Func<Tick, Task> async, TimerOptions options,
                                Func<Tick, CancellationToken, Task> asyncToken = null, IEndSignal signal = null)
        {
            options = options ?? s_defaultOptions;
            ulong firstDue = C.FIRST_DUE_DEFAULT;
            if (options.FirstDue.HasValue) firstDue = Durations.NonNegativeNs(options.FirstDue.Value, "FirstDue");
            if (oneShot) firstDue = ns;
            ulong maxCatchUp = 1;
            if (options.Policy == OverrunPolicy.CatchUpBounded)
            {
                if (options.MaxCatchUpTicks < 1 || options.MaxCatchUpTicks > int.MaxValue)
                    throw new ArgumentOutOfRangeException("MaxCatchUpTicks", options.MaxCatchUpTicks,
                        "MaxCatchUpTicks must be in 1..int.MaxValue with CatchUpBounded");
                maxCatchUp = (ulong)options.MaxCatchUpTicks;
            }
            else if (options.MaxCatchUpTicks < 1)
            {
                throw new ArgumentOutOfRangeException("MaxCatchUpTicks", options.MaxCatchUpTicks, "MaxCatchUpTicks must be at least 1");
            }
            rt.ThrowIfClosed();

            if (asyncToken != null && signal == null) signal = new TokenSignal();
            var st = new Timer
            {
                Core = this, Sync = sync, Async = async, AsyncToken = asyncToken, OnRelease = options.OnRelease,
                OwnerId = owner.Id, OwnerEpoch = owner.Epoch, Key = key, EndSignal = signal,
                PeriodNs = oneShot ? 0 : ns, Options = options,
            };
            IntPtr userData = StateTable.Add(st);
            st.UserData = userData;
            var spec = new spot_timer_spec();
            spec.struct_size = (uint)sizeof(spot_timer_spec);
            spec.policy = (uint)options.Policy;
            spec.period_ns = oneShot ? 0 : ns;
            spec.first_due_ns = firstDue;
            spec.max_catch_up_ticks = maxCatchUp;
            spot_timer id = new spot_timer();
            int s;
            bool added = false;
            try
            {
                ulong raw = rt.EnterCall(ref added);
                s = Native.spot_timer_register(raw, owner.Id, owner.Epoch, key, &spec, userData, s_releasePtr, &id);
            }
            catch
            {
                StateTable.Remove(userData); // not registered: the release hook never runs for it
                throw;
            }
            finally
            {
                if (added) rt.ExitCall();
            }
            if (s != 0)
            {
                StateTable.Remove(userData);
                owner.CheckAuthority(s);
            }
            st.Id = id;
            NoteRegistered(st);
            // Disposed meanwhile: the dispose's signal may have run before the note.
            if (Disposed && st.EndSignal != null) st.SignalEnd();
            EnsureDispatcher();
            return st;
        }

        void EnsureDispatcher()
        {
            if (_callback || _inline || _dispatcher != null) return;
            lock (_startLock)
            {
                if (_dispatcher != null || Disposed) return;
                var t = new Thread(DispatchLoop);
                t.IsBackground = true;
                t.Name = "spot-timer-dispatcher";
                _dispatcher = t;
                t.Start();
            }
        }
    }
}
