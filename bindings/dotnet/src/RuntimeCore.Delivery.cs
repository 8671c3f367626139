using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // Exchange delivery (the dispatcher thread, or inline under a manual clock) and the batch
    // itself: the start check without a call, the handlers, the completions.
    internal sealed unsafe partial class RuntimeCore
    {
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
                    else if (st.Async != null || st.AsyncToken != null)
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
    }
}
