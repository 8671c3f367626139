using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // Cancel: non-blocking, blocking (on the delivering thread too), async, and the notices.
    internal sealed unsafe partial class RuntimeCore
    {
        // ------------------------------------------------------------------ cancel

        internal void StartCancel(Timer t)
        {
            if (t.Finished) return;
            CancelResult kept;
            if (TryCancelKeeping(t, out kept)) return;
            uint reason;
            if (NativeCancel(t, 0, &reason) == 0) t.Confirm(reason);
        }

        /// <summary>The cancel of a timer whose end runs nothing of the application's (no OnRelease,
        /// nothing signalled) and that is not running: it ends in the library with one
        /// compare-and-swap and its state is given back here, with no call from the library into
        /// managed code (spot_timer_cancel_keeping). False when that did not end it: the caller
        /// goes the ordinary way (its cancel is already requested if it was live).</summary>
        bool TryCancelKeeping(Timer t, out CancelResult result)
        {
            result = default(CancelResult);
            var st = t;
            if (st.OnRelease != null || st.EndSignal != null || Disposed) return false;
            uint done = 0, reason = 0, kept = 0;
            if (Native.spot_timer_cancel_keeping(Raw, t.Id, &done, &reason, &kept) != 0 || done == 0)
                return false;
            if (kept != 0)
            {
                // What the release hook does, for an end that had nothing of the host's to run:
                // no record of it is with the host (it was idle), so its entry goes now.
                StateTable.Remove(st.UserData);
                st.Ended = true;
                st.DropHandlers();
                st.Confirm(reason);
                st.Finished = true;
            }
            else
            {
                st.Confirm(reason);
            }
            result = new CancelResult((EndReason)reason);
            return true;
        }

        int NativeCancel(Timer t, long timeoutNs, uint* reason)
        {
            return Native.spot_timer_cancel(Raw, t.Id, timeoutNs, reason);
        }

        /// <summary>The result of a native cancel. A runtime disposed meanwhile (invalid or closed
        /// handle): the terminal result the close left, as <see cref="CancelClosed"/>.</summary>
        CancelResult Result(int status, uint reason, Timer t, long timeoutNs)
        {
            var st = t;
            if (status == 0)
            {
                st.Confirm(reason);
                return new CancelResult((EndReason)reason);
            }
            string msg = Native.LastError();
            if (status == (int)SpotStatus.CleanupFailed)
                throw new CleanupFailedException(st.CleanupError ?? msg);
            if (Disposed && (status == (int)SpotStatus.InvalidHandle || status == (int)SpotStatus.Closed))
                return CancelClosed(t, timeoutNs);
            throw SpotTimerException.From(status, msg);
        }

        internal CancelResult CancelBlocking(Timer t, long timeoutNs)
        {
            uint reason;
            if (t.IsCurrentHandler())
            {
                // Waiting here would wait for this very handler: start the cancel, then fail fast.
                int s0 = NativeCancel(t, 0, &reason);
                if (s0 != (int)SpotStatus.Timeout) return Result(s0, reason, t, 0);
                throw new WouldDeadlockException(SpotStatus.WouldDeadlock,
                    "Timer.Cancel called from inside the timer's own handler; the cancel takes effect and completes when the handler returns (use CancelAsync to observe it)");
            }
            if (t_dispatching == this && !_callback)
            {
                // From a handler on the delivering thread. The library helps a blocking cancel
                // on its session's thread (it sends the outcomes written so far and completes
                // the target's records later in the batch as not started), but an async
                // handler's completion queued here for the next batch call would never go:
                // completers submit their own while this thread waits.
                int prevWaiting = Interlocked.Exchange(ref _waiting, 1);
                int s1;
                try
                {
                    FlushPending();
                    s1 = NativeCancel(t, timeoutNs, &reason);
                }
                finally { Volatile.Write(ref _waiting, prevWaiting); }
                return Result(s1, reason, t, timeoutNs);
            }
            CancelResult kept;
            if (TryCancelKeeping(t, out kept)) return kept;
            int s = NativeCancel(t, timeoutNs, &reason);
            return Result(s, reason, t, timeoutNs);
        }

        // ------------------------------------------------------------------ after Dispose

        /// <summary>The terminal result of a generation whose release hook ran (<see cref="Timer.Finished"/>:
        /// it recorded why the generation ended): the same for every caller, as long as its Timer lives.</summary>
        internal static CancelResult FromState(Timer st)
        {
            string err = st.CleanupError;
            if (err != null) throw new CleanupFailedException(err);
            int r = Volatile.Read(ref st.Terminal);
            if (r >= 0) return new CancelResult((EndReason)r);
            throw new StaleTimerException(SpotStatus.StaleTimer,
                "the library reported no end reason for this generation");
        }

        /// <summary>A blocking cancel once the runtime is disposed: the generation's terminal result
        /// from its managed state, never calling into the native runtime. While the dispose is still
        /// under way (the close has not ended this generation yet) it waits up to
        /// <paramref name="timeoutNs"/>; on the thread whose batch the close waits for, it throws
        /// WouldDeadlockException instead.</summary>
        internal CancelResult CancelClosed(Timer t, long timeoutNs)
        {
            var st = t;
            if (!st.Finished)
            {
                if (t.IsCurrentHandler() || t_dispatching == this)
                    throw new WouldDeadlockException(SpotStatus.WouldDeadlock,
                        "the runtime is being disposed; its close completes after the batch this thread is running (use CancelAsync to observe it)");
                WaitTerminal(st, timeoutNs);
            }
            return FromState(st);
        }

        void WaitTerminal(Timer st, long timeoutNs)
        {
            var sw = System.Diagnostics.Stopwatch.StartNew();
            var spin = new SpinWait();
            while (!st.Finished)
            {
                if (timeoutNs >= 0 && sw.Elapsed.Ticks * 100 >= timeoutNs)
                    throw new SpotTimeoutException(SpotStatus.Timeout,
                        "the runtime is being disposed and has not ended this generation yet");
                if (spin.NextSpinWillYield) Thread.Sleep(1);
                else spin.SpinOnce();
            }
        }

        /// <summary>Completes <paramref name="tcs"/> with the terminal result the dispose leaves
        /// (at once when known, else from the thread pool once the close has ended the generation).</summary>
        void CompleteFromClosed(TaskCompletionSource<CancelResult> tcs, Timer st)
        {
            if (st == null) { tcs.TrySetResult(new CancelResult(EndReason.RuntimeClosed)); return; }
            Action complete = () =>
            {
                try { tcs.TrySetResult(FromState(st)); }
                catch (Exception e) { tcs.TrySetException(e); }
            };
            if (st.Finished) { complete(); return; }
            ThreadPool.QueueUserWorkItem(_ =>
            {
                try { WaitTerminal(st, -1); }
                catch (Exception e) { tcs.TrySetException(e); return; }
                complete();
            });
        }

        internal Task<CancelResult> CancelAsync(Timer t)
        {
            var st = t;
            var extras = st.Extras;
            lock (extras)
            {
                if (extras.CancelTask != null) return extras.CancelTask;
                var tcs = new TaskCompletionSource<CancelResult>(TaskCreationOptions.RunContinuationsAsynchronously);
                extras.CancelTask = tcs.Task;
                if (Disposed || st.Finished)
                {
                    // Ended (or never into the freed native runtime): the result its state keeps.
                    CompleteFromClosed(tcs, st);
                    return tcs.Task;
                }
                ulong tag = (ulong)Interlocked.Increment(ref s_nextTag);
                _cancelWaiters[tag] = new KeyValuePair { Tcs = tcs, State = st };
                uint done, reason;
                int s = Native.spot_timer_cancel_async(Raw, t.Id, tag, &done, &reason);
                if (s != 0 || done != 0)
                {
                    KeyValuePair ignored;
                    _cancelWaiters.TryRemove(tag, out ignored);
                    if (s == 0) { st.Confirm(reason); tcs.TrySetResult(new CancelResult((EndReason)reason)); }
                    else if (Disposed && (s == (int)SpotStatus.InvalidHandle || s == (int)SpotStatus.Closed))
                        CompleteFromClosed(tcs, st);
                    else
                    {
                        string msg = Native.LastError();
                        if (s == (int)SpotStatus.CleanupFailed) tcs.TrySetException(new CleanupFailedException(st.CleanupError ?? msg));
                        else tcs.TrySetException(SpotTimerException.From(s, msg));
                    }
                }
                else if (Disposed)
                {
                    // The dispose began meanwhile: its notice may never arrive.
                    KeyValuePair w;
                    if (_cancelWaiters.TryRemove(tag, out w)) CompleteFromClosed(w.Tcs, w.State);
                }
                return tcs.Task;
            }
        }

        void CancelDone(ulong tag, int status, uint reason)
        {
            KeyValuePair w;
            if (!_cancelWaiters.TryRemove(tag, out w)) return;
            if (status == 0)
            {
                if (w.State != null) w.State.Confirm(reason);
                w.Tcs.TrySetResult(new CancelResult((EndReason)reason));
            }
            else if (status == (int)SpotStatus.CleanupFailed)
                w.Tcs.TrySetException(new CleanupFailedException(w.State.CleanupError ?? "cleanup failed"));
            else w.Tcs.TrySetException(SpotTimerException.From(status, ""));
        }
    }
}
