// Contract verification items 1-11 (and 12) through the C# API, on the manual clock.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    static class T
    {
        public static TimeSpan Ms(double ms) { return TimeSpan.FromMilliseconds(ms); }
        public static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    }

    [TestFixture]
    public class ContractTests
    {
        [Test, Timeout(30000)]
        public void Contract_01_ReRegisteringAKey_PendingTicksOfOldGenerationNeverRun()
        {
            using (var rt = Runtime.CreateManual())
            {
                // (a) a tick that is pending (gate held by the host) when the key is re-registered
                var owner = rt.AcquireOwner(1);
                int oldRuns = 0, newRuns = 0;
                var old = owner.Every(5, T.Ms(10), t => oldRuns++);
                Assert.IsTrue(owner.EnterGate(T.Wait));
                rt.Advance(T.Ms(10));          // due, but the gate is held: pending
                Assert.AreEqual(0, oldRuns);
                var fresh = owner.Every(5, T.Ms(10), t => newRuns++);
                owner.LeaveGate();
                rt.Advance(T.Ms(0));
                Assert.AreEqual(0, oldRuns, "the old generation's pending tick ran");
                rt.Advance(T.Ms(10));
                Assert.AreEqual(0, oldRuns);
                Assert.AreEqual(1, newRuns);
                Assert.IsTrue(old.HasEnded);
                // cancelling the superseded generation gives its terminal result
                Assert.AreEqual(EndReason.Superseded, old.Cancel(T.Wait).Reason);
                Assert.AreNotEqual(old.Generation, fresh.Generation);

                // (b) a record already in the batch handed to C#: re-registered by an earlier
                // handler of the same batch, it must not start (live_word re-check).
                var o1 = rt.AcquireOwner(10);
                var o2 = rt.AcquireOwner(11);
                int ranA = 0, ranB = 0, replaced = 0;
                Owner[] owners = { o1, o2 };
                Action<int> body = null;
                Action<Tick> ha = t => body(0);
                Action<Tick> hb = t => body(1);
                body = who =>
                {
                    if (who == 0) ranA++; else ranB++;
                    if (Interlocked.Exchange(ref replaced, 1) == 0)
                        owners[1 - who].Every(7, T.Ms(1000), x => { });
                };
                o1.Every(7, T.Ms(50), ha);
                o2.Every(7, T.Ms(50), hb);
                rt.Advance(T.Ms(50));          // both due at once: one batch
                Assert.AreEqual(1, ranA + ranB, "a superseded record that was already in the batch started");
            }
        }

        [Test, Timeout(30000)]
        public void Contract_02_AfterCancel_NoNewStart_RunningCallbackRunsToItsEnd()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(2);
                var release = new TaskCompletionSource<bool>();
                int started = 0, finished = 0;
                var timer = owner.Every(1, T.Ms(10), async t =>
                {
                    Interlocked.Increment(ref started);
                    await release.Task;
                    Interlocked.Increment(ref finished);
                });
                rt.Advance(T.Ms(10));
                SpinWait.SpinUntil(() => Volatile.Read(ref started) == 1, 5000);
                var cancel = timer.CancelAsync();
                rt.Advance(T.Ms(100));
                Assert.AreEqual(1, Volatile.Read(ref started));
                Assert.IsFalse(cancel.IsCompleted, "cancel completed while the callback still ran");
                Assert.Throws<SpotTimeoutException>(() => timer.Cancel(T.Ms(20)));
                release.SetResult(true);
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.IsTrue(cancel.Wait(T.Wait));
                Assert.AreEqual(1, Volatile.Read(ref finished), "the running callback was interrupted");
                Assert.AreEqual(EndReason.Cancelled, cancel.Result.Reason);
                rt.Advance(T.Ms(100));
                Assert.AreEqual(1, Volatile.Read(ref started), "a tick started after cancel");
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel(T.Wait).Reason, "second cancel: same result");
            }
        }

        void ConcurrentCancels(bool failCleanup)
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(3);
                var release = new TaskCompletionSource<bool>();
                int started = 0;
                long handlerEnded = 0, cleanupEnded = 0;
                var opts = new TimerOptions
                {
                    OnRelease = () =>
                    {
                        Thread.Sleep(20);
                        Interlocked.Exchange(ref cleanupEnded, 1);
                        if (failCleanup) throw new InvalidOperationException("disk on fire");
                    }
                };
                var timer = owner.Every(1, T.Ms(10), async t =>
                {
                    Interlocked.Increment(ref started);
                    await release.Task;
                    Interlocked.Exchange(ref handlerEnded, 1);
                }, opts);
                rt.Advance(T.Ms(10));
                SpinWait.SpinUntil(() => Volatile.Read(ref started) == 1, 5000);

                var outcomes = new ConcurrentBag<string>();
                var threads = new List<Thread>();
                for (int i = 0; i < 4; i++)
                {
                    var th = new Thread(() =>
                    {
                        string r;
                        try { r = "ok:" + timer.Cancel(T.Wait).Reason; }
                        catch (CleanupFailedException e) { r = "cleanup:" + e.CleanupMessage; }
                        catch (Exception e) { r = "other:" + e.GetType().Name + ":" + e.Message; }
                        if (Interlocked.Read(ref handlerEnded) == 0 || Interlocked.Read(ref cleanupEnded) == 0) r = "early:" + r;
                        outcomes.Add(r);
                    });
                    th.Start();
                    threads.Add(th);
                }
                var a1 = timer.CancelAsync();
                Thread.Sleep(100);
                Assert.AreEqual(0, outcomes.Count, "a cancel returned before the running callback ended");
                Assert.IsFalse(a1.IsCompleted);
                release.SetResult(true);
                foreach (var th in threads) Assert.IsTrue(th.Join(T.Wait));
                rt.Settle(T.Wait);
                string asyncOutcome;
                try { asyncOutcome = "ok:" + a1.Result.Reason; }
                catch (AggregateException e)
                {
                    var c = e.InnerException as CleanupFailedException;
                    asyncOutcome = c != null ? "cleanup:" + c.CleanupMessage : "other:" + e.InnerException;
                }
                outcomes.Add(asyncOutcome);
                string expected = failCleanup ? "cleanup:disk on fire" : "ok:Cancelled";
                foreach (var o in outcomes) Assert.AreEqual(expected, o);
                Assert.AreEqual(5, outcomes.Count);
                // a late caller sees the recorded result too
                if (failCleanup)
                    Assert.AreEqual("disk on fire", Assert.Throws<CleanupFailedException>(() => timer.Cancel(T.Wait)).CleanupMessage);
                else
                    Assert.AreEqual(EndReason.Cancelled, timer.Cancel(T.Wait).Reason);
            }
        }

        [Test, Timeout(30000)]
        public void Contract_03_ConcurrentCancels_AllCompleteAfterCallbackAndCleanup_SameResult()
        {
            ConcurrentCancels(false);
        }

        [Test, Timeout(30000)]
        public void Contract_03_ConcurrentCancels_CleanupFailure_EveryCallerSeesTheSameFailure()
        {
            ConcurrentCancels(true);
        }

        [Test, Timeout(30000)]
        public void Contract_04_PeriodShorterThanHandler_NeverTwoCallbacksOfOneKeyAtOnce()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(4, null, GateMode.Concurrent);
                int inFlight = 0, maxInFlight = 0, starts = 0;
                TaskCompletionSource<bool> gate = new TaskCompletionSource<bool>();
                var timer = owner.Every(1, T.Ms(10), async t =>
                {
                    int now = Interlocked.Increment(ref inFlight);
                    Interlocked.Increment(ref starts);
                    if (now > Volatile.Read(ref maxInFlight)) Volatile.Write(ref maxInFlight, now);
                    await Volatile.Read(ref gate).Task;
                    Interlocked.Decrement(ref inFlight);
                });
                for (int round = 0; round < 5; round++)
                {
                    for (int i = 0; i < 10; i++) rt.Advance(T.Ms(10)); // 10 periods while the handler runs
                    // async handlers start on the thread pool: wait for the start, then make sure no second one follows
                    SpinWait.SpinUntil(() => Volatile.Read(ref starts) == round + 1, 5000);
                    Thread.Sleep(20);
                    Assert.AreEqual(round + 1, Volatile.Read(ref starts));
                    var g = gate;
                    Volatile.Write(ref gate, new TaskCompletionSource<bool>());
                    g.SetResult(true);
                    Assert.IsTrue(rt.Settle(T.Wait));
                }
                Assert.AreEqual(1, maxInFlight);
                gate.SetResult(true);
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel(T.Wait).Reason);
            }
        }

        static List<Tick> RunIrregular(OverrunPolicy policy, long maxCatchUp, int[] stepsMs)
        {
            var ticks = new List<Tick>();
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(5);
                owner.Every(1, T.Ms(10), t => ticks.Add(t), new TimerOptions { Policy = policy, MaxCatchUpTicks = maxCatchUp });
                foreach (int s in stepsMs) rt.Advance(T.Ms(s));
            }
            return ticks;
        }

        static readonly int[] Steps = { 10, 10, 35, 5, 10, 100, 3, 7, 10, 60, 10 };

        [Test, Timeout(30000)]
        public void Contract_05_DeliveryIndexIncreasesByExactlyOne()
        {
            foreach (var p in new[] { OverrunPolicy.SkipLateTicks, OverrunPolicy.CatchUpBounded, OverrunPolicy.DelayNextTick })
            {
                var ticks = RunIrregular(p, 3, Steps);
                Assert.Greater(ticks.Count, 5);
                for (int i = 0; i < ticks.Count; i++) Assert.AreEqual(i + 1, ticks[i].DeliveryIndex, p.ToString());
            }
        }

        [Test, Timeout(30000)]
        public void Contract_06_ScheduledIndexNeverDecreases_AndIsAtLeastDeliveryIndex()
        {
            foreach (var p in new[] { OverrunPolicy.SkipLateTicks, OverrunPolicy.CatchUpBounded, OverrunPolicy.DelayNextTick })
            {
                var ticks = RunIrregular(p, 3, Steps);
                for (int i = 0; i < ticks.Count; i++)
                {
                    Assert.GreaterOrEqual(ticks[i].ScheduledIndex, ticks[i].DeliveryIndex);
                    if (i > 0) Assert.Greater(ticks[i].ScheduledIndex, ticks[i - 1].ScheduledIndex);
                }
            }
        }

        [Test, Timeout(30000)]
        public void Contract_07_SkippedTicks_FirstIsScheduledMinusOne_ThenGapMinusOne()
        {
            foreach (var p in new[] { OverrunPolicy.SkipLateTicks, OverrunPolicy.CatchUpBounded, OverrunPolicy.DelayNextTick })
            {
                var ticks = RunIrregular(p, 3, new[] { 35, 10, 55, 10, 10, 200 });
                Assert.AreEqual(ticks[0].ScheduledIndex - 1, ticks[0].SkippedTicks);
                for (int i = 1; i < ticks.Count; i++)
                    Assert.AreEqual(ticks[i].ScheduledIndex - ticks[i - 1].ScheduledIndex - 1, ticks[i].SkippedTicks, p.ToString());
                if (p != OverrunPolicy.DelayNextTick) Assert.IsTrue(ticks.Any(t => t.SkippedTicks > 0));
            }
        }

        [Test, Timeout(30000)]
        public void Contract_08_SkipLateTicks_LateTimerGetsOnlyTheNewestTick()
        {
            var ticks = RunIrregular(OverrunPolicy.SkipLateTicks, 1, new[] { 10, 45 });
            Assert.AreEqual(2, ticks.Count);
            Assert.AreEqual(1, ticks[0].ScheduledIndex);
            Assert.AreEqual(5, ticks[1].ScheduledIndex, "newest due tick (t=50 -> tick 5)");
            Assert.AreEqual(3, ticks[1].SkippedTicks);

            // late because the handler itself ran long (async, released after 4.5 periods)
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(8);
                var got = new List<Tick>();
                var gate = new TaskCompletionSource<bool>();
                owner.Every(1, T.Ms(10), async t => { lock (got) got.Add(t); if (t.DeliveryIndex == 1) await gate.Task; });
                rt.Advance(T.Ms(10));
                rt.Advance(T.Ms(45));   // ticks 2..5 come due while tick 1 runs
                gate.SetResult(true);
                rt.Settle(T.Wait);
                rt.Settle(T.Wait);
                Assert.AreEqual(2, got.Count);
                Assert.AreEqual(5, got[1].ScheduledIndex);
                Assert.AreEqual(3, got[1].SkippedTicks);
            }
        }

        [Test, Timeout(30000)]
        public void Contract_09_CatchUpBounded_AtMostMaxCatchUpTicks_InOrder_RestSkipped()
        {
            var ticks = RunIrregular(OverrunPolicy.CatchUpBounded, 3, new[] { 10, 60 });
            // t=70: ticks 2..7 due, backlog 6 > 3: deliver 5, 6, 7 (2, 3, 4 skipped)
            Assert.AreEqual(new long[] { 1, 5, 6, 7 }, ticks.Select(t => t.ScheduledIndex).ToArray());
            Assert.AreEqual(new long[] { 0, 3, 0, 0 }, ticks.Select(t => t.SkippedTicks).ToArray());
            // CatchUpBounded(n) really delivers n when the backlog is smaller than n
            var small = RunIrregular(OverrunPolicy.CatchUpBounded, 5, new[] { 10, 30 });
            Assert.AreEqual(new long[] { 1, 2, 3, 4 }, small.Select(t => t.ScheduledIndex).ToArray());
        }

        [Test, Timeout(30000)]
        public void Contract_10_DelayNextTick_NextTickIsOnePeriodAfterTheHandlerEnds()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(9);
                var got = new List<Tick>();
                var gate = new TaskCompletionSource<bool>();
                owner.Every(1, T.Ms(10), async t => { lock (got) got.Add(t); if (t.DeliveryIndex == 1) await gate.Task; },
                            new TimerOptions { Policy = OverrunPolicy.DelayNextTick });
                rt.Advance(T.Ms(10));      // t=10: tick 1 starts (on the thread pool)
                SpinWait.SpinUntil(() => { lock (got) return got.Count == 1; }, 5000);
                rt.Advance(T.Ms(25));      // t=35: handler still running
                lock (got) Assert.AreEqual(1, got.Count);
                gate.SetResult(true);      // ends at t=35 -> next due at t=45
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(1, got.Count);
                rt.Advance(T.Ms(9));       // t=44
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(1, got.Count, "ticked before one period after the handler ended");
                rt.Advance(T.Ms(1));       // t=45
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(2, got.Count);
                Assert.AreEqual(2, got[1].ScheduledIndex);
                Assert.AreEqual(0, got[1].SkippedTicks);
                rt.Advance(T.Ms(10));      // t=55
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(3, got.Count);
            }
        }

        [Test, Timeout(30000)]
        public void Contract_11_AfterLeaseExpiry_NoTickStarts_NoBacklogBurstAfterPause()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(11, T.Ms(50));
                int runs = 0;
                var timer = owner.Every(1, T.Ms(10), t => runs++);
                for (int i = 0; i < 4; i++) rt.Advance(T.Ms(10)); // t=40
                Assert.AreEqual(4, runs);
                owner.Renew(T.Ms(50));                             // deadline t=90
                for (int i = 0; i < 4; i++) rt.Advance(T.Ms(10)); // t=80
                Assert.AreEqual(8, runs);
                rt.Advance(T.Ms(1000));                            // "paused" far past the lease, then resumed
                Assert.AreEqual(8, runs, "backlog ran after the lease expired");
                rt.Advance(T.Ms(100));
                Assert.AreEqual(8, runs);
                Assert.AreEqual(EndReason.LeaseExpired, timer.Cancel(T.Wait).Reason);
                Assert.Throws<LeaseExpiredException>(() => owner.Renew(T.Ms(50)));
                Assert.Throws<LeaseExpiredException>(() => owner.Every(2, T.Ms(10), t => { }));
                // a new authority works again
                var again = rt.AcquireOwner(11, T.Ms(500));
                again.Every(1, T.Ms(10), t => runs++);
                rt.Advance(T.Ms(10));
                Assert.AreEqual(9, runs);
                // revoked authority: its timers never run again
                again.Revoke();
                rt.Advance(T.Ms(50));
                Assert.AreEqual(9, runs);
            }
        }

        [Test, Timeout(30000)]
        public void Contract_12_SchedulerThreadsAndOsTimersDoNotGrowWithTimers()
        {
            using (var rt = Runtime.CreateManual())
            {
                var before = rt.GetStats();
                long n = 0;
                for (ulong o = 0; o < 1000; o++)
                {
                    var owner = rt.AcquireOwner(o + 100);
                    owner.Every(1, T.Ms(10), t => n++);
                    owner.Every(2, T.Ms(15), t => n++);
                }
                for (int i = 0; i < 6; i++) rt.Advance(T.Ms(5));
                var after = rt.GetStats();
                Assert.AreEqual(1, after.SchedulerThreads);
                Assert.AreEqual(before.WakeupPrimitives, after.WakeupPrimitives);
                Assert.AreEqual(0, after.OsTimers);
                Assert.AreEqual(2000, after.LiveTimers);
                Assert.AreEqual(5000, n);
                // batching: far fewer crossings than records
                Assert.Less(after.HostCrossings * 10, after.RecordsReceived);
            }
        }
    }
}
