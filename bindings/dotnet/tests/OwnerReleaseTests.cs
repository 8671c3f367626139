// Owner.Release (spot_owner_release): hosts whose owners come and go (actors, sessions)
// release them so the runtime forgets them once their timers have ended. Public API only;
// the manual clock wherever possible (Advance also waits for the scheduler), real-clock
// variants wait on events with generous timeouts.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class OwnerReleaseTests
    {
        [Test, Timeout(60000)]
        public void Release_500Owners_RuntimeForgetsThem_TimersEndRevoked()
        {
            using (var rt = Runtime.CreateManual())
            {
                const int N = 500;
                var owners = new List<Owner>();
                var timers = new List<Timer>();
                int runs = 0, released = 0;
                for (int i = 0; i < N; i++)
                {
                    var o = rt.AcquireOwner((ulong)(1000 + i));
                    owners.Add(o);
                    timers.Add(o.Every(1, T.Ms(10), t => runs++,
                        new TimerOptions { OnRelease = () => Interlocked.Increment(ref released) }));
                }
                rt.Advance(T.Ms(10));
                Assert.AreEqual(N, runs, "every owner's timer fired once before the release");
                var before = rt.GetStats();
                Assert.AreEqual(N, before.Owners);
                Assert.AreEqual(N, before.LiveTimers);

                foreach (var o in owners) o.Release();
                rt.Advance(TimeSpan.Zero);     // waits until the scheduler processed the releases

                var after = rt.GetStats();
                Assert.AreEqual(0, after.Owners, "released owners are still known to the runtime");
                Assert.AreEqual(0, after.LiveTimers);
                Assert.AreEqual(N, Volatile.Read(ref released), "release hooks run once per timer");
                foreach (var t in timers)
                {
                    Assert.IsTrue(t.HasEnded, t.ToString());
                    Assert.AreEqual(EndReason.Revoked, t.Cancel(T.Wait).Reason, t.ToString());
                    Assert.AreEqual(EndReason.Revoked, t.CancelAsync().Result.Reason, t.ToString());
                }
                rt.Advance(T.Ms(100));
                Assert.AreEqual(N, runs, "a released owner's timer fired again");
                Assert.AreEqual(0, rt.GetStats().Owners);
            }
        }

        [Test, Timeout(30000)]
        public void ReleasedAuthority_SecondReleaseAndRegisterThrowOwnerRevoked()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(7);
                int runs = 0;
                var timer = owner.Every(1, T.Ms(10), t => runs++);
                owner.Release();
                var again = Assert.Throws<OwnerRevokedException>(() => owner.Release());
                Assert.AreEqual(SpotTimer.Interop.SpotStatus.Revoked, again.Status);
                Assert.Throws<OwnerRevokedException>(() => owner.Every(2, T.Ms(10), t => runs++));
                Assert.Throws<OwnerRevokedException>(() => owner.After(3, T.Ms(10), t => runs++));
                Assert.Throws<OwnerRevokedException>(() => owner.Revoke());
                Assert.Throws<OwnerRevokedException>(() => owner.Renew(T.Ms(100)));
                rt.Advance(T.Ms(50));
                Assert.AreEqual(0, runs);
                Assert.AreEqual(EndReason.Revoked, timer.Cancel(T.Wait).Reason);
                Assert.AreEqual(0, rt.GetStats().Owners);
                // still revoked after the runtime forgot the owner (checked above)
                Assert.Throws<OwnerRevokedException>(() => owner.Release());
            }
        }

        [Test, Timeout(30000)]
        public void Release_OfARevokedOrSupersededAuthority_ThrowsOwnerRevoked()
        {
            using (var rt = Runtime.CreateManual())
            {
                var revoked = rt.AcquireOwner(1);
                revoked.Revoke();
                Assert.Throws<OwnerRevokedException>(() => revoked.Release());

                var old = rt.AcquireOwner(2);
                var current = rt.AcquireOwner(2);      // supersedes old
                Assert.Throws<OwnerRevokedException>(() => old.Release());
                int runs = 0;
                current.Every(1, T.Ms(10), t => runs++);
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, runs, "a failed release of an old epoch touched the current authority");
                current.Release();
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, runs);
                // owner 1 was only revoked: it stays known; owner 2 is forgotten
                Assert.AreEqual(1, rt.GetStats().Owners);
            }
        }

        [Test, Timeout(30000)]
        public void AcquireAfterRelease_LargerEpoch_ItsTimerFires_OldAuthorityStaysDead()
        {
            using (var rt = Runtime.CreateManual())
            {
                var first = rt.AcquireOwner(9);
                var old = rt.AcquireOwner(9);          // epoch above first's
                Assert.Greater(old.Epoch, first.Epoch);
                int oldRuns = 0;
                var oldTimer = old.Every(1, T.Ms(10), t => oldRuns++);
                old.Release();
                rt.Advance(TimeSpan.Zero);
                Assert.AreEqual(0, rt.GetStats().Owners);
                Assert.AreEqual(EndReason.Revoked, oldTimer.Cancel(T.Wait).Reason);

                var fresh = rt.AcquireOwner(9);
                Assert.Greater(fresh.Epoch, old.Epoch, "the new incarnation's epoch is not above the released one's");
                Assert.Greater(fresh.Epoch, first.Epoch);
                Assert.AreEqual(1, rt.GetStats().Owners);
                var ticks = new List<Tick>();
                var timer = fresh.Every(1, T.Ms(10), t => ticks.Add(t));
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, ticks.Count, "the re-acquired owner's timer did not fire");
                Assert.AreEqual(9UL, ticks[0].OwnerId);
                Assert.AreEqual(1UL, ticks[0].Key);
                Assert.AreEqual(1, ticks[0].DeliveryIndex);
                Assert.AreEqual(0, oldRuns);
                // authorities of the released incarnation never match the new one
                Assert.Throws<OwnerRevokedException>(() => old.Release());
                Assert.Throws<OwnerRevokedException>(() => first.Release());
                Assert.Throws<OwnerRevokedException>(() => old.Revoke());
                Assert.Throws<OwnerRevokedException>(() => old.Every(2, T.Ms(10), t => oldRuns++));
                rt.Advance(T.Ms(10));
                Assert.AreEqual(2, ticks.Count, "a stale authority's failed call hurt the new owner");
                Assert.IsFalse(timer.HasEnded);
                Assert.AreEqual(1, rt.GetStats().Owners);
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel(T.Wait).Reason);
            }
        }

        [Test, Timeout(30000)]
        public void ReleaseFromTheOwnersOwnHandler_HandlerCompletes_ThenOwnerIsForgotten_ManualClock()
        {
            using (var rt = Runtime.CreateManual())
            {
                var other = rt.AcquireOwner(2);        // not released: stays known
                other.Every(1, T.Ms(10), t => { });
                Owner owner = rt.AcquireOwner(1);
                int runs = 0;
                bool completed = false;
                long ownersInHandler = -1;
                bool endedInHandler = true;
                Timer timer = null;
                timer = owner.Every(1, T.Ms(10), t =>
                {
                    runs++;
                    owner.Release();
                    // the running callback holds the owner: not forgotten yet
                    ownersInHandler = rt.GetStats().Owners;
                    endedInHandler = timer.HasEnded;
                    completed = true;
                });
                rt.Advance(T.Ms(10));
                Assert.AreEqual(1, runs);
                Assert.IsTrue(completed, "the handler did not run to its end");
                Assert.AreEqual(2, ownersInHandler, "owner forgotten while its callback was still running");
                Assert.IsFalse(endedInHandler, "timer ended while its callback was still running");
                rt.Advance(TimeSpan.Zero);
                Assert.AreEqual(EndReason.Revoked, timer.Cancel(T.Wait).Reason);
                var s = rt.GetStats();
                Assert.AreEqual(1, s.Owners, "the released owner was not forgotten after its handler ended");
                Assert.AreEqual(1, s.LiveTimers);
                rt.Advance(T.Ms(50));
                Assert.AreEqual(1, runs);
                Assert.Throws<OwnerRevokedException>(() => owner.Release());
            }
        }

        [Test, Timeout(60000)]
        public void ReleaseFromTheOwnersOwnHandler_RealClock_Exchange()
        {
            ReleaseFromOwnHandlerRealClock(DeliveryMode.Exchange);
        }

        [Test, Timeout(60000)]
        public void ReleaseFromTheOwnersOwnHandler_RealClock_Callback()
        {
            ReleaseFromOwnHandlerRealClock(DeliveryMode.Callback);
        }

        static void ReleaseFromOwnHandlerRealClock(DeliveryMode mode)
        {
            using (var rt = new Runtime(new RuntimeOptions { Delivery = mode }))
            {
                Owner owner = rt.AcquireOwner(5);
                int runs = 0;
                long ownersInHandler = -1;
                Exception inHandler = null;
                var releasedInHandler = new ManualResetEventSlim();
                var handlerEnd = new ManualResetEventSlim();
                var timer = owner.Every(1, T.Ms(5), t =>
                {
                    if (Interlocked.Increment(ref runs) != 1) return;
                    try
                    {
                        owner.Release();
                        releasedInHandler.Set();
                        ownersInHandler = rt.GetStats().Owners;
                    }
                    catch (Exception e) { inHandler = e; }
                    finally { handlerEnd.Set(); }
                });
                Assert.IsTrue(handlerEnd.Wait(T.Wait), mode + ": handler did not run");
                Assert.IsNull(inHandler, mode + ": " + inHandler);
                Assert.IsTrue(releasedInHandler.IsSet);
                Assert.AreEqual(1, ownersInHandler, mode + ": owner forgotten while its callback was still running");
                var end = timer.CancelAsync();
                Assert.IsTrue(end.Wait(T.Wait), mode + ": timer did not end");
                Assert.AreEqual(EndReason.Revoked, end.Result.Reason, mode.ToString());
                // The owner is forgotten at the end of the scheduler turn that ended its timer.
                var deadline = DateTime.UtcNow + T.Wait;
                while (rt.GetStats().Owners != 0 && DateTime.UtcNow < deadline) Thread.Sleep(5);
                Assert.AreEqual(0, rt.GetStats().Owners, mode + ": released owner not forgotten");
                Assert.AreEqual(0, rt.GetStats().LiveTimers, mode.ToString());
                Thread.Sleep(50);                      // 10 periods: nothing of the owner runs any more
                Assert.AreEqual(1, Volatile.Read(ref runs), mode.ToString());
            }
        }
        /// <summary>Contract T6: an owner released while its records are in flight gives its
        /// index to the next owner; the dispatcher's look at the released authority (ended at its
        /// release) must not end the timers of the owner that took the index. Real clock and the
        /// dispatcher thread; a varying wait moves the window.</summary>
        [Test, Timeout(180000)]
        public void RecordOfAReleasedOwner_NeverExpiresTheNextOwnerOfItsIndex()
        {
            const int Rounds = 20000;
            int ran = 0, farRan = 0;
            using (var rt = new Runtime())
            {
                var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(120);
                var kept = new Queue<Tuple<int, Timer, Owner>>();
                var spin = new System.Diagnostics.Stopwatch();
                for (int r = 0; r < Rounds; r++)
                {
                    Assert.Less(DateTime.UtcNow, deadline, "no progress: round " + r);
                    var gone = rt.AcquireOwner((ulong)(2 * r + 1));
                    for (int k = 0; k <= r % 8; k++)
                        gone.After((ulong)k, TimeSpan.Zero, t => Interlocked.Increment(ref ran));
                    spin.Restart();
                    while (spin.Elapsed.TotalMilliseconds * 1000 < r % 41) { }
                    gone.Release();
                    // The next owner, no lease: whatever index it gets, nothing may end it.
                    var next = rt.AcquireOwner((ulong)(2 * r + 2));
                    kept.Enqueue(Tuple.Create(r, next.After(0, TimeSpan.FromHours(1),
                        t => Interlocked.Increment(ref farRan)), next));
                    if (kept.Count > 64)
                    {
                        var old = kept.Dequeue();
                        if (old.Item2.HasEnded)
                            Assert.Fail("round " + old.Item1 + ": ended " + old.Item2.Cancel(T.Wait).Reason);
                        old.Item3.Release();
                        Assert.AreEqual(EndReason.Revoked, old.Item2.Cancel(T.Wait).Reason, "round " + old.Item1);
                    }
                }
                foreach (var k in kept)
                    if (k.Item2.HasEnded)
                        Assert.Fail("round " + k.Item1 + ": ended " + k.Item2.Cancel(T.Wait).Reason);
                Assert.AreEqual(0, Volatile.Read(ref farRan));
                Console.WriteLine("records of released owners that ran: " + Volatile.Read(ref ran));
            }
        }
    }
}
