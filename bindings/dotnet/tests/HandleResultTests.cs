// A Timer keeps its generation's terminal result as long as it lives: after the generation
// ended, any number of later registrations (which reuse its slot in the library) and the
// runtime's Dispose leave Cancel and CancelAsync giving the original end reason. Public API
// only.
using System;
using System.Collections.Generic;
using System.Threading;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class HandleResultTests
    {
        [Test, Timeout(120000)]
        public void EndedTimers_KeepTheirResult_Through100000RegistrationsOnSeveralThreads_AndDispose()
        {
            var rt = new Runtime();
            var owner = rt.AcquireOwner(1, null, GateMode.Concurrent);
            var ended = new List<Tuple<Timer, EndReason>>();

            var cancelled = owner.After(1, TimeSpan.FromMinutes(5), _ => { });
            Assert.AreEqual(EndReason.Cancelled, cancelled.Cancel(T.Wait).Reason);
            ended.Add(Tuple.Create(cancelled, EndReason.Cancelled));

            var ran = new ManualResetEventSlim();
            var completed = owner.After(2, TimeSpan.Zero, _ => ran.Set());
            Assert.IsTrue(ran.Wait(T.Wait));
            SpinWait.SpinUntil(() => completed.HasEnded, T.Wait);
            ended.Add(Tuple.Create(completed, EndReason.Completed));

            var superseded = owner.After(3, TimeSpan.FromMinutes(5), _ => { });
            var successor = owner.After(3, TimeSpan.FromMinutes(5), _ => { });
            ended.Add(Tuple.Create(superseded, EndReason.Superseded));

            var reset = owner.After(4, TimeSpan.FromMinutes(5), _ => { });
            var moved = reset.Reset(TimeSpan.FromMinutes(6));
            ended.Add(Tuple.Create(reset, EndReason.Superseded));

            var other = rt.AcquireOwner(2);
            var revoked = other.After(1, TimeSpan.FromMinutes(5), _ => { });
            other.Revoke();
            SpinWait.SpinUntil(() => revoked.HasEnded, T.Wait);
            ended.Add(Tuple.Create(revoked, EndReason.Revoked));

            // 100,000 registrations and cancels: half here, half on another thread, on keys of
            // their own (the slots of the ended generations come round again).
            Action<ulong, int> churn = (baseKey, n) =>
            {
                var o = rt.AcquireOwner(baseKey, null, GateMode.Concurrent);
                for (int i = 0; i < n; i++) o.After((ulong)i, TimeSpan.FromMinutes(5), _ => { }).Cancel(T.Wait);
            };
            var worker = new Thread(() => churn(100, 50000));
            worker.Start();
            churn(200, 50000);
            Assert.IsTrue(worker.Join(TimeSpan.FromSeconds(90)), "the other thread's churn made no progress");

            foreach (var e in ended)
            {
                Assert.AreEqual(e.Item2, e.Item1.Cancel(T.Wait).Reason, e.Item1.ToString());
                Assert.AreEqual(e.Item2, e.Item1.CancelAsync().Result.Reason, e.Item1.ToString() + " async");
            }
            rt.Dispose();
            foreach (var e in ended)
                Assert.AreEqual(e.Item2, e.Item1.Cancel(T.Wait).Reason, e.Item1.ToString() + " after Dispose");
            Assert.AreEqual(EndReason.RuntimeClosed, successor.Cancel(T.Wait).Reason);
            Assert.AreEqual(EndReason.RuntimeClosed, moved.CancelAsync().Result.Reason);
        }
    }
}
