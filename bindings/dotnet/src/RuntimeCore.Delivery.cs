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
            ulong session = 0;
            try
            {
                // The session belongs to this thread (the library refuses it on any other):
                // made here, freed in the finally whatever ends the loop. It fails only when
                // the runtime was disposed before the thread started.
                ulong made;
                if (Native.spot_session_new(Raw, (UIntPtr)_cap, &made) != 0) return;
                session = made;
                var batch = new spot_batch();
                while (!Disposed)
                {
                    ScrubStack();
                    Interlocked.Exchange(ref _waiting, 1);
                    // Async completions queued while the last batch ran; from now on completers
                    // submit their own (the batch call takes no extra completions).
                    FlushPending();
                    batch.struct_size = (uint)sizeof(spot_batch);
                    int s = Native.spot_session_batch(session, -1, &batch);
                    Interlocked.Increment(ref Transitions);
                    Volatile.Write(ref _waiting, 0);
                    if (s == (int)SpotStatus.Closed || s == (int)SpotStatus.InvalidHandle) break;
                    if (s != 0)
                    {
                        if (Disposed) break;
                        Thread.Sleep(1);
                        continue;
                    }
                    // The records' live_word pointers are valid until the runtime is freed; the
                    // free (Dispose or the SafeHandle's finalizer) takes this lock. A dispose
                    // deferred by a handler ends the loop (Disposed) and runs in the finally.
                    lock (DeliveryLock)
                    {
                        if (Disposed) break;
                        ProcessSessionBatch(&batch);
                        FreeReleased();
                    }
                }
            }
            catch (Exception)
            {
                // the dispatcher never throws out of its thread
            }
            finally
            {
                Interlocked.Exchange(ref _waiting, 1);
                // Before a deferred dispose closes the runtime: the outcomes of the last batch
                // go back, its records not run complete as not started.
                if (session != 0) Native.spot_session_free(session);
                t_dispatching = null;
                RunDeferredDispose();
            }
        }

        /// <summary>Mono scans thread stacks conservatively: stale slots of the last batch (ticks
        /// holding Timer -> Runtime) would keep an abandoned Runtime alive while this thread
        /// blocks in spot_session_batch. Zero the stack area the batch used before blocking.</summary>
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
                if (Raw == 0 || Disposed) return;
                t_dispatching = this;
                Volatile.Write(ref _waiting, 0);
                ulong session = 0;
                try
                {
                    // A session per pump: it belongs to the calling thread, and Advance may be
                    // called from any thread.
                    ulong made;
                    int s = Native.spot_session_new(Raw, (UIntPtr)_cap, &made);
                    if (s != 0) throw PumpError(s);
                    session = made;
                    var batch = new spot_batch();
                    int last = 0;
                    while (true)
                    {
                        int flushed = SubmitPending();
                        batch.struct_size = (uint)sizeof(spot_batch);
                        s = Native.spot_session_batch(session, 0, &batch);
                        Interlocked.Increment(ref Transitions);
                        if (s != 0) throw PumpError(s);
                        int count = (int)(ulong)batch.count;
                        // Nothing arrived and nothing was sent (this call sends the outcomes of
                        // the previous batch, which may make more due): done.
                        if (count == 0 && last == 0 && flushed == 0) break;
                        ProcessSessionBatch(&batch);
                        FreeReleased();
                        last = count;
                        if (Disposed) break;
                    }
                }
                finally
                {
                    if (session != 0) Native.spot_session_free(session);
                    t_dispatching = null;
                    Interlocked.Exchange(ref _waiting, 1);
                    if (!Disposed) FlushPending();
                }
            }
            RunDeferredDispose();
        }

        Exception PumpError(int status)
        {
            string msg = Native.LastError();
            if (Disposed) return new ObjectDisposedException("SpotTimer.Runtime");
            return SpotTimerException.From(status, msg);
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

        /// <summary>Submits the queued async completions (spot_complete, batched) whoever else
        /// flushes; returns how many. Manual clock, on the pumping thread.</summary>
        int SubmitPending()
        {
            int total = 0;
            spot_completion* buf = stackalloc spot_completion[256];
            while (true)
            {
                int n = 0;
                spot_completion c;
                while (n < 256 && _pending.TryDequeue(out c)) buf[n++] = c;
                if (n == 0) return total;
                Native.spot_complete(Raw, buf, (UIntPtr)n);
                Interlocked.Increment(ref Transitions);
                total += n;
            }
        }

        /// <summary>Runs one batch of a session. Each record whose outcome cell is still pending
        /// (a blocking cancel on this thread completes the cancelled timer's later records and
        /// writes their cells) gets the position, then its outcome: the library completes the
        /// batch from the cells at the next call, no call per record.</summary>
        void ProcessSessionBatch(spot_batch* b)
        {
            RunBatch((spot_record*)b->records, (int)(ulong)b->count, (uint*)b->outcomes, (UIntPtr*)b->position);
        }

        /// <summary>Runs <paramref name="n"/> records through their outcome cells: what both
        /// delivery modes share (a session's batch, the batch callback's).</summary>
        void RunBatch(spot_record* recs, int n, uint* outcomes, UIntPtr* position)
        {
            var prevDispatching = t_dispatching;
            t_dispatching = this;
            _batchNowStamp = 0; // one clock read per batch, at its first start check
            try
            {
                for (int i = 0; i < n; i++)
                {
                    // Records left pending complete as not started with the session's next call.
                    if (Disposed) break;
                    if (outcomes[i] != C.BATCH_PENDING) continue;
                    *position = (UIntPtr)i;
                    uint outcome = RunRecord(recs + i);
                    if (outcome != C.BATCH_PENDING) outcomes[i] = outcome;
                }
            }
            finally
            {
                t_dispatching = prevDispatching;
            }
        }

        /// <summary>Runs one record. A cancel notice resolves its waiter; a tick is re-checked
        /// through live_word (one atomic compare-and-swap, no P/Invoke) and its handler run.
        /// Returns the tick's outcome (SPOT_OUTCOME_*), BATCH_KEPT for a tick handed to an async
        /// handler (completed through the pending queue when its Task ends), or BATCH_PENDING
        /// for a record that takes no completion.</summary>
        uint RunRecord(spot_record* r)
        {
            if (r->kind == C.RECORD_CANCEL_DONE)
            {
                CancelDone(r->tag, r->status, r->end_reason);
                return C.BATCH_PENDING;
            }
            if (r->kind != C.RECORD_TICK) return C.BATCH_PENDING;
            // A record in hand names a live handle (see Timer).
            var st = StateTable.Get(r->user_data);
            if (st == null || st.Core != this || (st.Sync != null && !TryStart(r)))
                return C.OUTCOME_NOT_STARTED;
            // A tick may come before the registering call has stored the generation's id.
            if (st.Id.generation == 0) st.Id = r->timer;
            var tick = new Tick(st, r->owner_id, r->key, (long)r->delivery_index,
                                (long)r->scheduled_index, (long)r->skipped_ticks);
            Action<Tick> sync = st.Sync;
            if (sync != null)
            {
                uint outcome = C.OUTCOME_OK;
                t_currentTimer = st;
                try { sync(tick); }
                catch (Exception e) { outcome = C.OUTCOME_FAILED; RaiseFailed(st, tick, e); }
                finally { t_currentTimer = null; }
                return outcome;
            }
            if (st.Async != null || st.AsyncToken != null)
            {
                StartAsync(st, tick, r->token, r->live_word, r->live_value, r->started_value, r->lease_word);
                return C.BATCH_KEPT;
            }
            return C.OUTCOME_NOT_STARTED;
        }

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

        static bool StartCheck(IntPtr liveWord, ulong liveValue, ulong startedValue, IntPtr leaseWord, ulong now)
        {
            if (liveWord == IntPtr.Zero || leaseWord == IntPtr.Zero) return false;
            if (now >= (ulong)Volatile.Read(ref *(long*)leaseWord)) return false;
            return (ulong)Interlocked.CompareExchange(ref *(long*)liveWord, (long)startedValue, (long)liveValue)
                == liveValue;
        }

        void RaiseFailed(Timer st, Tick tick, Exception e)
        {
            EventHandler<HandlerFailedEventArgs> h = _failed;
            if (h == null) return;
            try { h(this, new HandlerFailedEventArgs(tick.Timer, tick, e)); }
            catch (Exception) { }
        }
    }
}
