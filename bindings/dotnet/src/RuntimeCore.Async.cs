using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // Async handlers: started on the thread pool, completed when their Task ends.
    internal sealed unsafe partial class RuntimeCore
    {
        // ------------------------------------------------------------------ async handlers

        void StartAsync(Timer st, Tick tick, ulong token, IntPtr liveWord, ulong liveValue,
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

        void RunAsync(Timer st, Tick tick, ulong token, IntPtr liveWord, ulong liveValue,
                      ulong startedValue, IntPtr leaseWord)
        {
            if (!TryStartAsync(liveWord, liveValue, startedValue, leaseWord))
            {
                FinishAsync(token, C.OUTCOME_NOT_STARTED);
                return;
            }
            Task task = null;
            CancellationToken handlerToken = st.HandlerToken;
            s_asyncCurrent.Value = st;
            t_currentTimer = st;
            try
            {
                var f = st.Async;
                var ft = st.AsyncToken;
                task = f != null ? f(tick) : ft != null ? ft(tick, handlerToken) : null;
            }
            catch (OperationCanceledException) when (handlerToken.IsCancellationRequested)
            {
                // A token handler that gave up because its token was cancelled: not a failure.
                FinishAsync(token, C.OUTCOME_OK);
                return;
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
                else if (t.IsCanceled && handlerToken.IsCancellationRequested) FinishAsync(token, C.OUTCOME_OK);
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
                lock (_idleLock)
                {
                    Monitor.PulseAll(_idleLock);
                    if (_idleTcs != null && Interlocked.Read(ref _asyncInFlight) == 0)
                    {
                        _idleTcs.TrySetResult(true);
                        _idleTcs = null;
                    }
                }
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

        TaskCompletionSource<bool> _idleTcs;

        /// <summary>Completes once no async handler of this runtime is running (or queued to
        /// start): for <see cref="Runtime.DisposeAsync"/>, without blocking a thread.</summary>
        internal Task WhenAsyncIdle()
        {
            lock (_idleLock)
            {
                if (Interlocked.Read(ref _asyncInFlight) == 0) return Task.CompletedTask;
                if (_idleTcs == null)
                    _idleTcs = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                return _idleTcs.Task;
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
    }
}
