using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // Cancel: non-blocking, blocking (helping the delivering thread), async, and the notices.
    internal sealed unsafe partial class RuntimeCore
    {
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
