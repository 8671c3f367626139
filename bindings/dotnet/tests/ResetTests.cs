// Timer.Reset (spot_timer_reset): a timeout reset moves a timer to a new generation of the
// same key, handler, period and options; the old one's one result is Superseded; an idle
// timer moves in place, one whose handler runs gets a registration beside it; OnRelease runs
// once per chain of resets, whichever way each went. Public API only.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class ResetTests
    {
        [Test, Timeout(30000)]
        public void Reset_OneShot_MovesItsDueTime_OldEndsSuperseded_OnReleaseRunsOnce()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                int runs = 0, released = 0;
                Timer seen = null;
                var first = owner.After(7, T.Ms(100), t => { runs++; seen = t.Timer; },
                    new TimerOptions { OnRelease = () => released++ });
                var t1 = first.Reset(T.Ms(300));
                Assert.AreNotEqual(first, t1);
                Assert.AreEqual(first.Key, t1.Key);
                Assert.IsTrue(first.HasEnded);
                Assert.IsFalse(t1.HasEnded);
                Assert.AreEqual(EndReason.Superseded, first.Cancel(T.Wait).Reason);
                Assert.AreEqual(EndReason.Superseded, first.CancelAsync().Result.Reason);
                rt.Advance(T.Ms(299));
                Assert.AreEqual(0, runs, "the old due time passed: nothing ran");
                Assert.AreEqual(0, released, "nothing released by the reset");
                rt.Advance(T.Ms(1));
                Assert.AreEqual(1, runs);
                Assert.AreEqual(t1, seen, "the tick's Timer is the new generation");
                Assert.AreEqual(EndReason.Completed, t1.Cancel(T.Wait).Reason);
                Assert.AreEqual(1, released, "OnRelease ran once, at the chain's end");
                Assert.Throws<StaleTimerException>(() => t1.Reset(T.Ms(1)));
                Assert.Throws<StaleTimerException>(() => first.Reset(T.Ms(1)));
            }
        }

        [Test, Timeout(30000)]
        public void Reset_Periodic_KeepsThePeriod_FirstTickAtTheNewDueTime()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                var ticks = new List<long>();
                var t0 = owner.Every(3, T.Ms(10), t => ticks.Add(t.ScheduledIndex));
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, ticks.Count);
                var t1 = t0.Reset(T.Ms(25));
                rt.Advance(T.Ms(24));
                Assert.AreEqual(1, ticks.Count);
                rt.Advance(T.Ms(1));
                Assert.AreEqual(2, ticks.Count, "first tick of the new generation at its due time");
                rt.Advance(T.Ms(10));
                Assert.AreEqual(3, ticks.Count, "then every period");
                Assert.AreEqual(new long[] { 1, 1, 2 }, ticks.ToArray(), "a new generation counts from 1");
                Assert.AreEqual(EndReason.Cancelled, t1.Cancel(T.Wait).Reason);
            }
        }

        [Test, Timeout(60000)]
        public void Reset_ChainsPastTheInPlaceRun_OnReleaseRunsOnce()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                int released = 0;
                var t = owner.After(1, T.Ms(1000), _ => { }, new TimerOptions { OnRelease = () => released++ });
                var chain = new List<Timer> { t };
                for (int i = 0; i < 600; i++)
                {
                    t = t.Reset(T.Ms(1000 + i));
                    chain.Add(t);
                }
                rt.Advance(TimeSpan.Zero);
                Assert.AreEqual(0, released, "no generation of the chain released its cleanup");
                for (int i = 0; i < chain.Count - 1; i++)
                    Assert.AreEqual(EndReason.Superseded, chain[i].Cancel(T.Wait).Reason, "generation " + i);
                Assert.AreEqual(EndReason.Cancelled, t.Cancel(T.Wait).Reason);
                Assert.AreEqual(1, released);
                var s = rt.GetStats();
                Assert.AreEqual(601, s.Registered);
                Assert.AreEqual(601, s.Ended);
                Assert.AreEqual(0, s.LiveTimers);
            }
        }

        [Test, Timeout(30000)]
        public void Reset_FromItsOwnHandler_RegistersBesideTheRunningGeneration()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                int runs = 0, released = 0;
                Timer next = null;
                Timer first = null;
                first = owner.Every(2, T.Ms(10), t =>
                {
                    if (++runs == 1) next = t.Timer.Reset(T.Ms(50));
                }, new TimerOptions { OnRelease = () => released++ });
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, runs);
                Assert.IsNotNull(next);
                Assert.AreEqual(EndReason.Superseded, first.Cancel(T.Wait).Reason);
                Assert.AreEqual(0, released, "the cleanup moved to the new generation");
                rt.Advance(T.Ms(49));
                Assert.AreEqual(1, runs, "the old generation's later ticks never ran");
                rt.Advance(T.Ms(1));
                Assert.AreEqual(2, runs);
                Assert.AreEqual(EndReason.Cancelled, next.Cancel(T.Wait).Reason);
                Assert.AreEqual(1, released);
            }
        }

        [Test, Timeout(30000)]
        public void Reset_TokenHandler_OldTokenCancelled_NewTokenLive()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                var cancelledAtStart = new List<bool>();
                CancellationToken oldToken = default(CancellationToken);
                var t0 = owner.Every(4, T.Ms(10), (tick, ct) =>
                {
                    lock (cancelledAtStart) cancelledAtStart.Add(ct.IsCancellationRequested);
                    return Task.CompletedTask;
                });
                rt.Advance(T.Ms(10));
                Assert.IsTrue(rt.Settle(T.Wait));
                var t1 = t0.Reset(T.Ms(20));
                rt.Advance(T.Ms(20));
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(new[] { false, false }, cancelledAtStart.ToArray(),
                    "each generation's handler starts with a live token");
                Assert.AreEqual(EndReason.Superseded, t0.Cancel(T.Wait).Reason);
                Assert.AreEqual(EndReason.Cancelled, t1.Cancel(T.Wait).Reason);
                GC.KeepAlive(oldToken);
            }
        }

        [Test, Timeout(30000)]
        public void Reset_BadInput_SpecificErrors()
        {
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1);
            var t = owner.After(1, T.Ms(10), _ => { });
            Assert.Throws<ArgumentOutOfRangeException>(() => t.Reset(T.Ms(-1)));
            using (var stream = owner.Every(2, T.Ms(10)))
                Assert.Throws<InvalidOperationException>(() => stream.Timer.Reset(T.Ms(5)));
            t.Cancel(T.Wait);
            Assert.Throws<StaleTimerException>(() => t.Reset(T.Ms(1)));
            var live = owner.After(3, T.Ms(10), _ => { });
            owner.Revoke();
            Assert.Throws<StaleTimerException>(() => live.Reset(T.Ms(1)), "its authority's end ended it");
            var other = rt.AcquireOwner(2).After(1, T.Ms(10), _ => { });
            rt.Dispose();
            Assert.Throws<RuntimeClosedException>(() => other.Reset(T.Ms(1)));
            Assert.AreEqual(EndReason.RuntimeClosed, other.Cancel(T.Wait).Reason);
        }

        /// Resets racing delivery and cancels on a real clock: one-shots due within 0–2 ms and
        /// repeating timers of 0.1–0.3 ms whose handler spins a little (so a reset often finds
        /// its record with the host and registers beside it), reset from one thread while the
        /// dispatcher runs their ticks and another thread cancels them. Every chain's OnRelease
        /// runs exactly once; nothing but a stale handle is refused.
        [Test, Timeout(120000)]
        public void Reset_RacesDeliveryAndCancel_OnReleaseOncePerChain()
        {
            const int Chains = 3000;
            int released = 0, runs = 0, stale = 0;
            using (var rt = new Runtime())
            {
                var owner = rt.AcquireOwner(1, null, GateMode.Concurrent);
                var rnd = new Random(5);
                var current = new Timer[Chains];
                var canceller = new Thread(() =>
                {
                    var r = new Random(6);
                    for (int i = 0; i < Chains; i++)
                    {
                        Timer t;
                        while ((t = Volatile.Read(ref current[i])) == null) Thread.SpinWait(10);
                        Thread.SpinWait(r.Next(0, 4000));
                        t.Dispose();
                    }
                });
                canceller.Start();
                for (int i = 0; i < Chains; i++)
                {
                    var options = new TimerOptions { OnRelease = () => Interlocked.Increment(ref released) };
                    var t = i % 2 == 0
                        ? owner.After((ulong)i, TimeSpan.FromTicks(rnd.Next(0, 20000)), _ => Interlocked.Increment(ref runs), options)
                        : owner.Every((ulong)i, TimeSpan.FromTicks(rnd.Next(1000, 3000)),
                            _ => { Interlocked.Increment(ref runs); Thread.SpinWait(300); }, options);
                    Volatile.Write(ref current[i], t);
                    for (int k = 0; k < 4; k++)
                    {
                        try
                        {
                            t = t.Reset(TimeSpan.FromTicks(rnd.Next(0, 20000)));
                            Volatile.Write(ref current[i], t);
                        }
                        catch (StaleTimerException) { stale++; break; }
                    }
                }
                Assert.IsTrue(canceller.Join(TimeSpan.FromSeconds(60)), "the canceller made no progress");
                // The live ones (most ran long ago: their slots may be reused, their ids stale).
                for (int i = 0; i < Chains; i++)
                    if (!current[i].HasEnded) current[i].Cancel(T.Wait);
                Assert.IsTrue(rt.Settle(T.Wait));
                var s = rt.GetStats();
                Assert.AreEqual(0, s.LiveTimers);
                Assert.AreEqual(s.Registered, s.Ended);
            }
            Assert.AreEqual(Chains, Volatile.Read(ref released), "one OnRelease per chain (runs " + runs + ", stale " + stale + ")");
        }
    }
}
