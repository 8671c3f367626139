using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Managed state of one registration: its handler and cleanup. A record's user_data is
    /// a <see cref="GCHandle"/> of it (no lookup per record), freed by the release hook. The
    /// library runs that hook while a record of the generation is with the host only when the
    /// runtime closes; the hook then leaves the handle to <see cref="RuntimeCore.FreeReleased"/>,
    /// which runs once no batch is in progress, so a record in hand always names a live handle.</summary>
    internal sealed class TimerState // referenced by Tick (lazy Timer)
    {
        public RuntimeCore Core;
        public Action<Tick> Sync;
        public Func<Tick, Task> Async;
        public Action OnRelease;
        public volatile string CleanupError;
        public volatile bool Ended;
        public spot_timer Handle;

        /// <summary>A Timer for a tick: equal (==, Equals) to the one that registered this
        /// generation. The state keeps no reference to that Timer or to the Runtime (the handle
        /// that roots this state must not keep an abandoned Runtime alive): the Runtime comes
        /// from the core's one weak reference.</summary>
        public Timer GetTimer()
        {
            Runtime rt;
            if (Core.RuntimeRef == null || !Core.RuntimeRef.TryGetTarget(out rt)) return null;
            var t = new Timer(rt, this, OwnerId, Key);
            t.Id = Handle;
            return t;
        }
        public ulong OwnerId, Key;
        public Task<CancelResult> CancelTask;
    }

    /// <summary>The delivery engine of one runtime. Holds only the raw native id (never the
    /// SafeHandle), so an abandoned <see cref="Runtime"/> can still be finalized.</summary>
    internal sealed unsafe class RuntimeCore
    {
        // ---- process-wide: the static (never collected) native callbacks ----
        static long s_nextTag;
        static readonly spot_release_fn s_release = ReleaseThunk;
        static readonly spot_batch_fn s_batch = BatchThunk;
        static readonly spot_finalizer_fn s_finalizer = FinalizerThunk;
        static readonly IntPtr s_releasePtr = Marshal.GetFunctionPointerForDelegate(s_release);
        static readonly IntPtr s_batchPtr = Marshal.GetFunctionPointerForDelegate(s_batch);
        static readonly IntPtr s_finalizerPtr = Marshal.GetFunctionPointerForDelegate(s_finalizer);

        [ThreadStatic] static TimerState t_currentTimer;
        [ThreadStatic] static RuntimeCore t_dispatching;
        static readonly AsyncLocal<TimerState> s_asyncCurrent = new AsyncLocal<TimerState>();

        internal static TimerState CurrentTimer
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

        // record + completion buffers, allocated once
        readonly int _cap;
        spot_record* _recs;
        spot_completion* _comps;
        readonly int _compCap;
        int _compCount;
        bool[] _handled;
        spot_record* _curBatch;
        int _curN, _curIndex;

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
            public TimerState State;
        }

        internal RuntimeCore(RuntimeOptions options)
        {
            Options = new RuntimeOptions { Clock = options.Clock, Delivery = options.Delivery, BatchCapacity = options.BatchCapacity };
            _callback = options.Delivery == DeliveryMode.Callback;
            _inline = !_callback && options.Clock == ClockKind.Manual;
            _cap = options.BatchCapacity;
            _compCap = _cap * 2;
            _handled = new bool[_cap];
        }

        ~RuntimeCore()
        {
            FreeBuffers();
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
            else
            {
                _recs = (spot_record*)Marshal.AllocHGlobal(sizeof(spot_record) * _cap);
                _comps = (spot_completion*)Marshal.AllocHGlobal(sizeof(spot_completion) * _compCap);
            }
            ulong id;
            int s = Native.spot_runtime_new(&cfg, &id);
            if (s != 0)
            {
                string msg = Native.LastError();
                if (_callback && _selfHandle.IsAllocated) _selfHandle.Free();
                FreeBuffers();
                GC.SuppressFinalize(this);
                throw SpotTimerException.From(s, msg);
            }
            Raw = id;
            return id;
        }

        void FreeBuffers()
        {
            if (_recs != null) { Marshal.FreeHGlobal((IntPtr)_recs); _recs = null; }
            if (_comps != null) { Marshal.FreeHGlobal((IntPtr)_comps); _comps = null; }
        }

        internal void AddFailed(EventHandler<HandlerFailedEventArgs> h) { lock (_idleLock) _failed += h; }
        internal void RemoveFailed(EventHandler<HandlerFailedEventArgs> h) { lock (_idleLock) _failed -= h; }

        internal bool BeginDispose()
        {
            return Interlocked.Exchange(ref _disposeState, 1) == 0;
        }

        /// <summary>After the native runtime was freed: joins the dispatcher, resolves cancel waiters
        /// whose notice can no longer arrive, frees buffers.</summary>
        internal void EndDispose()
        {
            Thread d = _dispatcher;
            bool joined = true;
            if (d != null && d != Thread.CurrentThread) joined = d.Join(TimeSpan.FromSeconds(10));
            foreach (var kv in _cancelWaiters)
            {
                KeyValuePair w;
                if (_cancelWaiters.TryRemove(kv.Key, out w)) ResolveFromState(w);
            }
            if (joined && t_dispatching != this) FreeReleased();
            if (joined && d != Thread.CurrentThread && !Monitor.IsEntered(DeliveryLock))
            {
                lock (DeliveryLock) FreeBuffers();
                GC.SuppressFinalize(this);
            }
        }

        static void ResolveFromState(KeyValuePair w)
        {
            if (w.State != null && w.State.CleanupError != null)
                w.Tcs.TrySetException(new CleanupFailedException(w.State.CleanupError));
            else
                w.Tcs.TrySetResult(new CancelResult(EndReason.RuntimeClosed));
        }

        // ------------------------------------------------------------------ registration

        internal Timer Register(Runtime rt, Owner owner, ulong key, ulong ns, bool oneShot,
                                Action<Tick> sync, Func<Tick, Task> async, TimerOptions options)
        {
            options = options ?? new TimerOptions();
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
            rt.ThrowIfDisposed();

            var st = new TimerState
            {
                Core = this, Sync = sync, Async = async, OnRelease = options.OnRelease,
                OwnerId = owner.Id, Key = key,
            };
            var timer = new Timer(rt, st, owner.Id, key);
            var self = GCHandle.Alloc(st, GCHandleType.Normal);
            IntPtr userData = GCHandle.ToIntPtr(self);
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
                self.Free(); // not registered: the release hook never runs for it
                throw;
            }
            finally
            {
                if (added) rt.ExitCall();
            }
            if (s != 0)
            {
                self.Free();
                owner.CheckAuthority(s);
            }
            timer.Id = id;
            st.Handle = id;
            EnsureDispatcher();
            return timer;
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

        // ------------------------------------------------------------------ release hook

        static int ReleaseThunk(IntPtr userData, IntPtr msg, UIntPtr msgLen)
        {
            try
            {
                if (userData == IntPtr.Zero) return 0;
                var self = GCHandle.FromIntPtr(userData);
                var st = self.Target as TimerState;
                // Once per generation. Outside a close no record of it is with the host any more;
                // during a close the batch in progress may still name it.
                if (st != null && st.Core.Disposed) st.Core._releasedWhileClosing.Enqueue(userData);
                else self.Free();
                if (st == null) return 0;
                st.Ended = true;
                Action onRelease = st.OnRelease;
                st.Sync = null; st.Async = null; st.OnRelease = null;
                if (onRelease == null) return 0;
                try
                {
                    onRelease();
                    return 0;
                }
                catch (Exception e)
                {
                    string m = string.IsNullOrEmpty(e.Message) ? e.GetType().Name : e.Message;
                    st.CleanupError = m;
                    WriteMessage(msg, msgLen, m);
                    return 1;
                }
            }
            catch (Exception)
            {
                return 1;
            }
        }

        static void WriteMessage(IntPtr msg, UIntPtr msgLen, string m)
        {
            ulong cap = (ulong)msgLen;
            if (msg == IntPtr.Zero || cap == 0) return;
            byte[] bytes = System.Text.Encoding.UTF8.GetBytes(m);
            int n = (int)Math.Min((ulong)bytes.Length, cap - 1);
            Marshal.Copy(bytes, 0, msg, n);
            Marshal.WriteByte(msg, n, 0);
        }

        // ------------------------------------------------------------------ callback delivery

        static void BatchThunk(IntPtr env, spot_record* records, UIntPtr n, spot_completion* completions, UIntPtr* nCompletions)
        {
            try
            {
                var core = (RuntimeCore)GCHandle.FromIntPtr(env).Target;
                int count = (int)(ulong)n;
                int nc = 0;
                core.ProcessBatch(records, count, completions, ref nc, count);
                if (t_dispatching == null) core.FreeReleased();
                // Room left: hand back async completions that are already waiting.
                spot_completion c;
                while (nc < count && core._pending.TryDequeue(out c)) completions[nc++] = c;
                *nCompletions = (UIntPtr)nc;
            }
            catch (Exception)
            {
                // Nothing may unwind into native code. Records left uncompleted stay in flight;
                // that only happens on a binding bug.
            }
        }

        static void FinalizerThunk(IntPtr env)
        {
            try
            {
                var h = GCHandle.FromIntPtr(env);
                var core = h.Target as RuntimeCore;
                if (core != null) core.FreeReleased(); // the runtime is gone: no batch can follow
                if (h.IsAllocated) h.Free();
            }
            catch (Exception) { }
        }

        /// <summary>Frees the handles of states released during a close; called where no batch is in
        /// progress on this runtime (the end of a top-level batch, the end of a dispose).</summary>
        internal void FreeReleased()
        {
            IntPtr p;
            while (_releasedWhileClosing.TryDequeue(out p)) GCHandle.FromIntPtr(p).Free();
        }

        // ------------------------------------------------------------------ exchange delivery

        void DispatchLoop()
        {
            t_dispatching = this;
            try
            {
                while (!Disposed)
                {
                    ScrubStack();
                    Interlocked.Exchange(ref _waiting, 1);
                    DrainPending();
                    int nc = _compCount;
                    _compCount = 0;
                    UIntPtr got;
                    int s = Native.spot_exchange(Raw, _comps, (UIntPtr)nc, _recs, (UIntPtr)_cap, -1, &got);
                    Interlocked.Increment(ref Transitions);
                    Volatile.Write(ref _waiting, 0);
                    if (s == (int)SpotStatus.Closed || s == (int)SpotStatus.InvalidHandle) break;
                    if (s != 0)
                    {
                        if (Disposed) break;
                        Thread.Sleep(1);
                        continue;
                    }
                    int count = (int)(ulong)got;
                    int ncOut = 0;
                    // The records' live_word pointers are valid until the runtime is freed; the
                    // free (Dispose or the SafeHandle's finalizer) takes this lock.
                    lock (DeliveryLock)
                    {
                        if (Disposed) break;
                        ProcessBatch(_recs, count, _comps, ref ncOut, _compCap);
                        FreeReleased();
                    }
                    _compCount = ncOut;
                    if (RunDeferredDispose()) break;
                }
            }
            catch (Exception)
            {
                // the dispatcher never throws out of its thread
            }
            finally
            {
                Interlocked.Exchange(ref _waiting, 1);
                t_dispatching = null;
                RunDeferredDispose();
            }
        }

        /// <summary>Mono scans thread stacks conservatively: stale slots of the last batch (ticks
        /// holding Timer -> Runtime) would keep an abandoned Runtime alive while this thread
        /// blocks in spot_exchange. Zero the stack area the batch used before blocking.</summary>
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static void ScrubStack()
        {
            byte* p = stackalloc byte[16384];
            for (int i = 0; i < 16384; i += 8) *(long*)(p + i) = 0;
        }

        /// <summary>Manual clock, exchange mode: deliver until nothing is due (called by Advance).</summary>
        internal void PumpIfInline()
        {
            if (!_inline || t_dispatching == this) return;
            lock (DeliveryLock)
            {
                if (_recs == null) return;
                t_dispatching = this;
                Volatile.Write(ref _waiting, 0);
                try
                {
                    while (true)
                    {
                        DrainPending();
                        int nc = _compCount;
                        _compCount = 0;
                        UIntPtr got;
                        int s = Native.spot_exchange(Raw, _comps, (UIntPtr)nc, _recs, (UIntPtr)_cap, 0, &got);
                        Interlocked.Increment(ref Transitions);
                        if (s != 0)
                        {
                            string msg = Native.LastError();
                            if (Disposed) throw new ObjectDisposedException("SpotTimer.Runtime");
                            throw SpotTimerException.From(s, msg);
                        }
                        int count = (int)(ulong)got;
                        if (count == 0 && nc == 0) break;
                        int ncOut = 0;
                        ProcessBatch(_recs, count, _comps, ref ncOut, _compCap);
                        FreeReleased();
                        _compCount = ncOut;
                        if (Disposed) break;
                        if (count == 0 && ncOut == 0 && _pending.IsEmpty) break;
                    }
                }
                finally
                {
                    t_dispatching = null;
                    Interlocked.Exchange(ref _waiting, 1);
                    if (!Disposed) FlushPending();
                }
            }
            RunDeferredDispose();
        }

        /// <summary>Dispose called from a handler on the delivering thread: the native free waits
        /// until the batch in progress is done (its records point into the runtime).</summary>
        internal bool IsDeliveringThread { get { return !_callback && t_dispatching == this; } }

        internal void DeferDispose(Action a) { _deferredDispose = a; }

        internal bool RunDeferredDispose()
        {
            Action a = Interlocked.Exchange(ref _deferredDispose, null);
            if (a == null) return false;
            var prev = t_dispatching;
            t_dispatching = null;
            try { a(); } catch (Exception) { }
            finally { t_dispatching = prev; }
            return true;
        }

        void DrainPending()
        {
            spot_completion c;
            while (_compCount < _compCap && _pending.TryDequeue(out c)) _comps[_compCount++] = c;
        }

        /// <summary>Runs one batch. Tick records: re-check the generation through live_word (one atomic
        /// load, no P/Invoke), then run the handler. Completions go to <paramref name="comps"/>.</summary>
        void ProcessBatch(spot_record* recs, int n, spot_completion* comps, ref int nc, int compCap)
        {
            var prevDispatching = t_dispatching;
            t_dispatching = this;
            _batchNowStamp = 0; // one clock read per batch, at its first start check
            if (_handled.Length < n) _handled = new bool[n];
            _curBatch = recs; _curN = n;
            try
            {
                for (int i = 0; i < n; i++)
                {
                    _curIndex = i;
                    if (Disposed && !_callback) break;
                    spot_record* r = recs + i;
                    if (r->kind == C.RECORD_CANCEL_DONE)
                    {
                        CancelDone(r->tag, r->status, r->end_reason);
                        continue;
                    }
                    if (r->kind != C.RECORD_TICK) continue;
                    if (_handled[i]) { _handled[i] = false; continue; }
                    if (nc >= compCap) { FlushBuffer(comps, ref nc); }
                    ulong token = r->token;
                    // A record in hand names a live handle (see TimerState).
                    var st = r->user_data == IntPtr.Zero ? null
                        : GCHandle.FromIntPtr(r->user_data).Target as TimerState;
                    if (st == null || st.Core != this || (st.Sync != null && !TryStart(r)))
                    {
                        comps[nc].token = token; comps[nc].outcome = C.OUTCOME_NOT_STARTED; comps[nc].reserved = 0; nc++;
                        continue;
                    }
                    var tick = new Tick(st, r->owner_id, r->key, (long)r->delivery_index,
                                        (long)r->scheduled_index, (long)r->skipped_ticks);
                    Action<Tick> sync = st.Sync;
                    if (sync != null)
                    {
                        uint outcome = C.OUTCOME_OK;
                        t_currentTimer = st;
                        _compCountRef = nc;
                        _compsRef = comps;
                        try { sync(tick); }
                        catch (Exception e) { outcome = C.OUTCOME_FAILED; RaiseFailed(st, tick, e); }
                        finally { t_currentTimer = null; }
                        nc = _compCountRef; // a helping cancel may have flushed the buffer
                        _compsRef = null;
                        comps[nc].token = token; comps[nc].outcome = outcome; comps[nc].reserved = 0; nc++;
                    }
                    else if (st.Async != null)
                    {
                        StartAsync(st, tick, token, r->live_word, r->live_value, r->started_value, r->lease_word);
                    }
                    else
                    {
                        comps[nc].token = token; comps[nc].outcome = C.OUTCOME_NOT_STARTED; comps[nc].reserved = 0; nc++;
                    }
                }
            }
            finally
            {
                _curBatch = null; _curN = 0;
                t_dispatching = prevDispatching;
            }
        }

        // The completion buffer of the batch in progress, for a helping cancel (see CancelBlocking).
        int _compCountRef;
        spot_completion* _compsRef;

        // The runtime's clock, read through the library once per batch (and again when the
        // batch has run for a while): the lease part of the start check without a P/Invoke
        // per record.
        ulong _batchNow;
        long _batchNowStamp;
        static readonly long s_clockRefresh = System.Diagnostics.Stopwatch.Frequency / 1000; // 1 ms

        ulong BatchNow()
        {
            long stamp = System.Diagnostics.Stopwatch.GetTimestamp();
            if (_batchNowStamp == 0 || stamp - _batchNowStamp > s_clockRefresh)
            {
                ulong now;
                if (Native.spot_now(Raw, &now) == 0) _batchNow = now;
                _batchNowStamp = stamp;
            }
            return _batchNow;
        }

        /// <summary>The start check without a call (T1/T2/T6): the owner's lease still runs and the
        /// record's word still holds its hand-over value, which an atomic compare-and-swap
        /// replaces with the started value to claim the start.</summary>
        bool TryStart(spot_record* r)
        {
            return StartCheck(r->live_word, r->live_value, r->started_value, r->lease_word, BatchNow());
        }

        /// <summary>Whether a record the host holds could still start (nobody ended it since the
        /// hand-over); no claim.</summary>
        static bool StillHanded(spot_record* r)
        {
            return r->live_word != IntPtr.Zero && (ulong)Volatile.Read(ref *(long*)r->live_word) == r->live_value;
        }

        static bool StartCheck(IntPtr liveWord, ulong liveValue, ulong startedValue, IntPtr leaseWord, ulong now)
        {
            if (liveWord == IntPtr.Zero || leaseWord == IntPtr.Zero) return false;
            if (now >= (ulong)Volatile.Read(ref *(long*)leaseWord)) return false;
            return (ulong)Interlocked.CompareExchange(ref *(long*)liveWord, (long)startedValue, (long)liveValue)
                == liveValue;
        }

        void FlushBuffer(spot_completion* comps, ref int nc)
        {
            if (nc == 0) return;
            Native.spot_complete(Raw, comps, (UIntPtr)nc);
            Interlocked.Increment(ref Transitions);
            nc = 0;
        }

        void RaiseFailed(TimerState st, Tick tick, Exception e)
        {
            EventHandler<HandlerFailedEventArgs> h = _failed;
            if (h == null) return;
            try { h(this, new HandlerFailedEventArgs(tick.Timer, tick, e)); }
            catch (Exception) { }
        }

        // ------------------------------------------------------------------ async handlers

        void StartAsync(TimerState st, Tick tick, ulong token, IntPtr liveWord, ulong liveValue,
                        ulong startedValue, IntPtr leaseWord)
        {
            Interlocked.Increment(ref _asyncInFlight);
            ThreadPool.UnsafeQueueUserWorkItem(
                _ => RunAsync(st, tick, token, liveWord, liveValue, startedValue, leaseWord), null);
        }

        int _liveReaders;

        /// <summary>The start check right before an async handler starts on the thread pool (it
        /// may have waited in the pool queue): one clock read, then the call-free check. The
        /// native free waits for readers.</summary>
        bool TryStartAsync(IntPtr liveWord, ulong liveValue, ulong startedValue, IntPtr leaseWord)
        {
            Interlocked.Increment(ref _liveReaders);
            try
            {
                if (Disposed) return false;
                ulong now;
                if (Native.spot_now(Raw, &now) != 0) return false;
                return StartCheck(liveWord, liveValue, startedValue, leaseWord, now);
            }
            finally { Interlocked.Decrement(ref _liveReaders); }
        }

        /// <summary>Called (after BeginDispose) right before spot_runtime_free.</summary>
        internal void WaitLiveReaders()
        {
            var spin = new SpinWait();
            while (Volatile.Read(ref _liveReaders) != 0) spin.SpinOnce();
        }

        void RunAsync(TimerState st, Tick tick, ulong token, IntPtr liveWord, ulong liveValue,
                      ulong startedValue, IntPtr leaseWord)
        {
            if (!TryStartAsync(liveWord, liveValue, startedValue, leaseWord))
            {
                FinishAsync(token, C.OUTCOME_NOT_STARTED);
                return;
            }
            Task task = null;
            s_asyncCurrent.Value = st;
            t_currentTimer = st;
            try
            {
                var f = st.Async;
                task = f != null ? f(tick) : null;
            }
            catch (Exception e)
            {
                RaiseFailed(st, tick, e);
                FinishAsync(token, C.OUTCOME_FAILED);
                return;
            }
            finally
            {
                t_currentTimer = null;
                s_asyncCurrent.Value = null;
            }
            if (task == null) { FinishAsync(token, C.OUTCOME_OK); return; }
            task.ContinueWith(t =>
            {
                if (t.Status == TaskStatus.RanToCompletion) FinishAsync(token, C.OUTCOME_OK);
                else
                {
                    Exception e = t.Exception != null ? (Exception)t.Exception.InnerException ?? t.Exception : new TaskCanceledException(t);
                    RaiseFailed(st, tick, e);
                    FinishAsync(token, C.OUTCOME_FAILED);
                }
            }, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        }

        void FinishAsync(ulong token, uint outcome)
        {
            var c = new spot_completion();
            c.token = token; c.outcome = outcome;
            _pending.Enqueue(c);
            Thread.MemoryBarrier();
            if (Volatile.Read(ref _waiting) == 1) FlushPending();
            if (Interlocked.Decrement(ref _asyncInFlight) == 0)
            {
                lock (_idleLock) Monitor.PulseAll(_idleLock);
            }
        }

        /// <summary>Submits queued async completions directly (spot_complete), batched, one flusher at a time.</summary>
        void FlushPending()
        {
            while (!_pending.IsEmpty)
            {
                if (Interlocked.CompareExchange(ref _flushing, 1, 0) != 0) return;
                try
                {
                    if (Disposed) { spot_completion dropped; while (_pending.TryDequeue(out dropped)) { } return; }
                    spot_completion* buf = stackalloc spot_completion[256];
                    int n = 0;
                    spot_completion c;
                    while (n < 256 && _pending.TryDequeue(out c)) buf[n++] = c;
                    if (n > 0)
                    {
                        Native.spot_complete(Raw, buf, (UIntPtr)n);
                        Interlocked.Increment(ref Transitions);
                    }
                }
                finally { Interlocked.Exchange(ref _flushing, 0); }
                if (Volatile.Read(ref _waiting) == 0 && t_dispatching != this) return;
            }
        }

        internal bool WaitAsyncIdle(TimeSpan timeout)
        {
            var deadline = DateTime.UtcNow + (timeout < TimeSpan.Zero ? TimeSpan.FromDays(365) : timeout);
            lock (_idleLock)
            {
                while (Interlocked.Read(ref _asyncInFlight) != 0)
                {
                    var left = deadline - DateTime.UtcNow;
                    if (left <= TimeSpan.Zero) return false;
                    Monitor.Wait(_idleLock, left < TimeSpan.FromMilliseconds(50) ? left : TimeSpan.FromMilliseconds(50));
                }
            }
            return true;
        }

        // ------------------------------------------------------------------ cancel

        internal void StartCancel(Timer t)
        {
            uint reason;
            Native.spot_timer_cancel(Raw, t.Id, 0, &reason);
        }

        CancelResult Result(int status, uint reason, TimerState st)
        {
            if (status == 0) return new CancelResult((EndReason)reason);
            string msg = Native.LastError();
            if (status == (int)SpotStatus.CleanupFailed)
                throw new CleanupFailedException(st.CleanupError ?? msg);
            if (Disposed && (status == (int)SpotStatus.InvalidHandle || status == (int)SpotStatus.Closed))
                throw new ObjectDisposedException("SpotTimer.Runtime", msg);
            throw SpotTimerException.From(status, msg);
        }

        internal CancelResult CancelBlocking(Timer t, long timeoutNs)
        {
            uint reason;
            if (t.IsCurrentHandler())
            {
                // Waiting here would wait for this very handler: start the cancel, then fail fast.
                int s0 = Native.spot_timer_cancel(Raw, t.Id, 0, &reason);
                if (s0 == 0 || s0 == (int)SpotStatus.CleanupFailed) return Result(s0, reason, t.State);
                if (s0 != (int)SpotStatus.Timeout) return Result(s0, reason, t.State);
                throw new WouldDeadlockException(SpotStatus.WouldDeadlock,
                    "Timer.Cancel called from inside the timer's own handler; the cancel takes effect and completes when the handler returns (use CancelAsync to observe it)");
            }
            if (t_dispatching == this && !_callback)
                return HelpingCancel(t, timeoutNs);
            int s = Native.spot_timer_cancel(Raw, t.Id, timeoutNs, &reason);
            return Result(s, reason, t.State);
        }

        /// <summary>A blocking cancel on the delivering thread (from a synchronous handler of another
        /// timer): the target may wait for completions only this thread would submit, so submit them
        /// while waiting, in short slices.</summary>
        CancelResult HelpingCancel(Timer t, long timeoutNs)
        {
            uint reason;
            var sw = System.Diagnostics.Stopwatch.StartNew();
            int s = Native.spot_timer_cancel(Raw, t.Id, 0, &reason);
            while (true)
            {
                if (s != (int)SpotStatus.Timeout) return Result(s, reason, t.State);
                // 1. completions of handlers this thread already ran in the current batch
                if (_compsRef != null && _compCountRef > 0)
                {
                    int n = _compCountRef;
                    FlushBuffer(_compsRef, ref n);
                    _compCountRef = n;
                }
                // 2. records later in the batch that went stale now: complete them as not started
                if (_curBatch != null)
                {
                    for (int j = _curIndex + 1; j < _curN; j++)
                    {
                        spot_record* r = _curBatch + j;
                        if (r->kind != C.RECORD_TICK || _handled[j] || StillHanded(r)) continue;
                        _handled[j] = true;
                        var c = new spot_completion { token = r->token, outcome = C.OUTCOME_NOT_STARTED };
                        Native.spot_complete(Raw, &c, (UIntPtr)1);
                        Interlocked.Increment(ref Transitions);
                    }
                }
                // 3. async handlers that ended meanwhile
                FlushPendingForce();
                long elapsed = sw.Elapsed.Ticks * 100;
                long slice = 2000000; // 2 ms
                if (timeoutNs >= 0)
                {
                    long left = timeoutNs - elapsed;
                    if (left <= 0) return Result((int)SpotStatus.Timeout, 0, t.State);
                    if (left < slice) slice = left;
                }
                s = Native.spot_timer_cancel(Raw, t.Id, slice, &reason);
            }
        }

        void FlushPendingForce()
        {
            spot_completion* buf = stackalloc spot_completion[256];
            while (true)
            {
                int n = 0;
                spot_completion c;
                while (n < 256 && _pending.TryDequeue(out c)) buf[n++] = c;
                if (n == 0) return;
                Native.spot_complete(Raw, buf, (UIntPtr)n);
                Interlocked.Increment(ref Transitions);
            }
        }

        internal Task<CancelResult> CancelAsync(Timer t)
        {
            var st = t.State;
            lock (st)
            {
                if (st.CancelTask != null) return st.CancelTask;
                var tcs = new TaskCompletionSource<CancelResult>(TaskCreationOptions.RunContinuationsAsynchronously);
                ulong tag = (ulong)Interlocked.Increment(ref s_nextTag);
                _cancelWaiters[tag] = new KeyValuePair { Tcs = tcs, State = st };
                uint done, reason;
                int s = Native.spot_timer_cancel_async(Raw, t.Id, tag, &done, &reason);
                if (s != 0 || done != 0)
                {
                    KeyValuePair ignored;
                    _cancelWaiters.TryRemove(tag, out ignored);
                    try { tcs.TrySetResult(Result(s, reason, st)); }
                    catch (Exception e) { tcs.TrySetException(e); }
                }
                else if (Disposed)
                {
                    KeyValuePair w;
                    if (_cancelWaiters.TryRemove(tag, out w)) ResolveFromState(w);
                }
                st.CancelTask = tcs.Task;
                return tcs.Task;
            }
        }

        void CancelDone(ulong tag, int status, uint reason)
        {
            KeyValuePair w;
            if (!_cancelWaiters.TryRemove(tag, out w)) return;
            if (status == 0) w.Tcs.TrySetResult(new CancelResult((EndReason)reason));
            else if (status == (int)SpotStatus.CleanupFailed)
                w.Tcs.TrySetException(new CleanupFailedException(w.State.CleanupError ?? "cleanup failed"));
            else w.Tcs.TrySetException(SpotTimerException.From(status, ""));
        }
    }
}
