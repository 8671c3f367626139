// Delivery through a session's batch form (spot_session_batch), seen from the public surface:
// a blocking cancel from a handler on the delivering thread is helped by the library, an
// async handler's record is kept and completed later, and the counters add up.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class SessionTests
    {
        static readonly TimeSpan CancelTimeout = TimeSpan.FromSeconds(5);

        static void AssertIdentities(RuntimeStats st)
        {
            Assert.AreEqual(0, st.LiveTimers);
            Assert.AreEqual(st.Registered, st.Ended);
            Assert.AreEqual(st.TicksDue,
                st.CompletedOk + st.CompletedFailed + st.TicksSkipped + st.TicksDroppedAuthority + st.TicksDiscarded,
                "accounting identity");
            Assert.AreEqual(st.RecordsPublished,
                st.CompletedOk + st.CompletedFailed + st.CompletedDeferred + st.NotStarted + st.RecordsAbandoned,
                "record identity");
        }

        /// <summary>Two timers of two owners come due in one batch; whichever handler runs first
        /// cancels the other with a blocking cancel. On the manual clock the other's record is
        /// later in the same batch, handed to this thread and not started: without the library's
        /// help the cancel would wait for it until its timeout (SpotTimeoutException after 5 s).</summary>
        [Test, Timeout(60000)]
        public void BlockingCancel_FromASyncHandler_OfATimerLaterInTheBatch_ReturnsPromptly_AndItNeverRuns()
        {
            foreach (var clock in new[] { ClockKind.Manual, ClockKind.Real })
            {
                using (var rt = new Runtime(new RuntimeOptions { Clock = clock }))
                {
                    var timers = new Timer[2];
                    var runs = new int[2];
                    int first = -1;
                    CancelResult? result = null;
                    Exception error = null;
                    long cancelMs = -1;
                    var done = new ManualResetEventSlim();
                    for (int i = 0; i < 2; i++)
                    {
                        int me = i;
                        timers[i] = rt.AcquireOwner((ulong)(i + 1)).Every(1, T.Ms(20), t =>
                        {
                            Interlocked.Increment(ref runs[me]);
                            if (Interlocked.CompareExchange(ref first, me, -1) != -1) return;
                            var sw = Stopwatch.StartNew();
                            try { result = timers[1 - me].Cancel(CancelTimeout); }
                            catch (Exception e) { error = e; }
                            cancelMs = sw.ElapsedMilliseconds;
                            done.Set();
                        });
                    }
                    if (clock == ClockKind.Manual) rt.Advance(T.Ms(20));   // both due: one batch
                    Assert.IsTrue(done.Wait(T.Wait), clock + ": no handler ran");
                    Assert.IsNull(error, clock + ": " + error);
                    Assert.AreEqual(EndReason.Cancelled, result.Value.Reason, clock.ToString());
                    Assert.Less(cancelMs, 2000, clock + ": the cancel waited for a record of its own batch");
                    int victim = 1 - first;
                    // The survivor goes on; the victim never ran, not in that batch nor later.
                    // (one period at a time: an Advance over several would coalesce them)
                    if (clock == ClockKind.Manual) for (int k = 0; k < 5; k++) rt.Advance(T.Ms(20));
                    else Assert.IsTrue(SpinWait.SpinUntil(() => Volatile.Read(ref runs[first]) >= 4, 10000));
                    Assert.AreEqual(0, Volatile.Read(ref runs[victim]), clock + ": the cancelled timer's handler ran");
                    Assert.GreaterOrEqual(Volatile.Read(ref runs[first]), 4, clock.ToString());
                    Assert.AreEqual(EndReason.Cancelled, timers[first].Cancel(T.Wait).Reason);
                    var st = rt.GetStats();
                    if (clock == ClockKind.Manual)
                        Assert.AreEqual(1, st.NotStarted, "the victim's record completed as not started");
                    AssertIdentities(st);
                }
            }
        }

        /// <summary>An async handler's record is kept by the dispatcher (not completed with its
        /// batch) and completed when its Task ends: OK, or Failed when the Task faults; the next
        /// tick only comes after it (DelayNextTick) and nothing counts as not started.</summary>
        [Test, Timeout(30000)]
        public void AsyncHandler_RecordKept_CompletedWhenItsTaskEnds()
        {
            using (var rt = Runtime.CreateManual())
            {
                int failures = 0;
                rt.HandlerFailed += (s, e) => Interlocked.Increment(ref failures);
                var gate = new TaskCompletionSource<bool>();
                var started = new ManualResetEventSlim();
                int runs = 0;
                var t = rt.AcquireOwner(1).Every(1, T.Ms(10), async tick =>
                {
                    int n = Interlocked.Increment(ref runs);
                    if (n == 1) { started.Set(); await gate.Task; }
                    else if (n == 2) { await Task.Yield(); throw new InvalidOperationException("second tick fails"); }
                    else await Task.Yield();
                }, new TimerOptions { Policy = OverrunPolicy.DelayNextTick });
                int syncRuns = 0;
                var s2 = rt.AcquireOwner(2).Every(1, T.Ms(10), tick => { Interlocked.Increment(ref syncRuns); });

                rt.Advance(T.Ms(10));
                Assert.IsTrue(started.Wait(T.Wait));
                // The async tick is still running: its record is in the host's hands, the
                // synchronous one of the same batch completed with it.
                for (int k = 0; k < 3; k++) rt.Advance(T.Ms(10));
                Assert.AreEqual(1, Volatile.Read(ref runs), "a second tick while the first ran");
                Assert.AreEqual(4, Volatile.Read(ref syncRuns));
                var mid = rt.GetStats();
                Assert.AreEqual(4, mid.CompletedOk);
                Assert.AreEqual(0, mid.NotStarted);
                Assert.AreEqual(1, mid.RecordsReceived - mid.CompletedOk - mid.CompletedFailed - mid.NotStarted,
                    "one record kept by the host");

                gate.SetResult(true);
                Assert.IsTrue(rt.Settle(T.Wait));
                rt.Advance(T.Ms(10));
                Assert.IsTrue(rt.Settle(T.Wait));
                rt.Advance(T.Ms(10));
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.GreaterOrEqual(Volatile.Read(ref runs), 3);
                Assert.AreEqual(1, Volatile.Read(ref failures));
                var ts = t.GetStats();
                Assert.AreEqual(Volatile.Read(ref runs), ts.Delivered);
                Assert.AreEqual(1, ts.Failed);

                Assert.AreEqual(EndReason.Cancelled, t.Cancel(T.Wait).Reason);
                Assert.AreEqual(EndReason.Cancelled, s2.Cancel(T.Wait).Reason);
                var st = rt.GetStats();
                Assert.AreEqual(0, st.NotStarted);
                Assert.AreEqual(1, st.CompletedFailed);
                AssertIdentities(st);
            }
        }

        /// <summary>A synchronous handler blocking-cancels a timer whose async handler was started
        /// from the same batch (its record kept by the host, the Task still running): the cancel
        /// waits for the Task, whose completion a thread-pool thread submits while the
        /// dispatcher waits. Or, when the async record comes later in the batch, it is completed
        /// as not started and never runs. Either way: Cancelled, well within the timeout.</summary>
        [Test, Timeout(60000)]
        public void BlockingCancel_FromASyncHandler_OfAnAsyncTimerOfTheSameBatch()
        {
            foreach (var clock in new[] { ClockKind.Manual, ClockKind.Real })
            {
                using (var rt = new Runtime(new RuntimeOptions { Clock = clock }))
                {
                    int asyncRuns = 0;
                    var release = new TaskCompletionSource<bool>();
                    var a = rt.AcquireOwner(1).Every(1, T.Ms(20), async t =>
                    {
                        Interlocked.Increment(ref asyncRuns);
                        await release.Task;
                    });
                    CancelResult? result = null;
                    Exception error = null;
                    long cancelMs = -1;
                    var done = new ManualResetEventSlim();
                    rt.AcquireOwner(2).After(1, T.Ms(20), t =>
                    {
                        Task.Delay(100).ContinueWith(_ => release.TrySetResult(true));
                        var sw = Stopwatch.StartNew();
                        try { result = a.Cancel(CancelTimeout); }
                        catch (Exception e) { error = e; }
                        cancelMs = sw.ElapsedMilliseconds;
                        done.Set();
                    });
                    if (clock == ClockKind.Manual) rt.Advance(T.Ms(20));
                    Assert.IsTrue(done.Wait(T.Wait), clock + ": the handler did not run");
                    Assert.IsNull(error, clock + ": " + error);
                    Assert.AreEqual(EndReason.Cancelled, result.Value.Reason, clock.ToString());
                    Assert.Less(cancelMs, 2500, clock.ToString());
                    Assert.LessOrEqual(Volatile.Read(ref asyncRuns), 1, clock.ToString());
                    release.TrySetResult(true);
                    Assert.IsTrue(rt.Settle(T.Wait));
                    // The one-shot's own completion goes back with the dispatcher's next batch
                    // call, which may come a moment after its handler returned.
                    Assert.IsTrue(SpinWait.SpinUntil(() => rt.GetStats().LiveTimers == 0, 10000),
                        clock + ": a timer did not end");
                    AssertIdentities(rt.GetStats());
                }
            }
        }

        /// <summary>Many timers, sync and async, some cancelling others from their handlers,
        /// on the dispatcher thread: once all ended, every record published was completed
        /// exactly once and every due tick accounted for.</summary>
        [Test, Timeout(60000)]
        public void StatsIdentities_HoldWithSyncAsyncAndCancelsFromHandlers()
        {
            using (var rt = new Runtime(new RuntimeOptions { Clock = ClockKind.Real, BatchCapacity = 64 }))
            {
                const int N = 200;
                var timers = new Timer[N];
                long runs = 0;
                int failures = 0;
                Exception firstFailure = null;
                rt.HandlerFailed += (s, e) =>
                {
                    Interlocked.CompareExchange(ref firstFailure, e.Exception, null);
                    Interlocked.Increment(ref failures);
                };
                var owners = new Owner[4];
                for (int o = 0; o < owners.Length; o++) owners[o] = rt.AcquireOwner((ulong)(o + 1), null, GateMode.Concurrent);
                for (int i = 0; i < N; i++)
                {
                    int me = i;
                    var owner = owners[i % owners.Length];
                    if (i % 3 == 0)
                        timers[i] = owner.Every((ulong)i, T.Ms(2 + i % 5), async t =>
                        {
                            Interlocked.Increment(ref runs);
                            await Task.Yield();
                        });
                    else
                        timers[i] = owner.Every((ulong)i, T.Ms(2 + i % 5), t =>
                        {
                            long n = Interlocked.Increment(ref runs);
                            // every so often, a blocking cancel of another timer from here
                            if (me % 7 == 1 && n % 50 == 0)
                            {
                                var victim = timers[(me + 1 + (int)(n % (N - 1))) % N];
                                if (victim != null && victim != t.Timer) victim.Cancel(CancelTimeout);
                            }
                        });
                }
                Thread.Sleep(500);
                Assert.Greater(Interlocked.Read(ref runs), 1000);
                foreach (var t in timers) t.Cancel(T.Wait);
                Assert.IsTrue(rt.Settle(T.Wait));
                // A cancel returns once its generation's end is published; the thread that
                // ended it adds the end's counts right after (on a busy machine, a moment
                // later): the identities hold once those counts are in.
                var st = rt.GetStats();
                var until = DateTime.UtcNow + T.Wait;
                while (st.Ended != st.Registered && DateTime.UtcNow < until)
                {
                    Thread.Sleep(1);
                    st = rt.GetStats();
                }
                Assert.AreEqual(N, st.Registered);
                Assert.AreEqual(0, Volatile.Read(ref failures), "a handler failed: " + firstFailure);
                AssertIdentities(st);
            }
        }
    }
}
