// The managed state of a generation (its handler, its cleanup) goes when the generation ends,
// whichever way it ends: registered and cancelled, reset in place and cancelled, registered
// again beside a running handler, ended by a Dispose with timers live. Measured from the
// outside: the managed heap after a round of 100,000 such generations stays where it was after
// the first round (a kept state costs hundreds of bytes: a leak of one per generation would be
// tens of megabytes). Public API only.
using System;
using System.Threading;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class StateLifetimeTests
    {
        static void Round(Runtime rt, ulong ownerId)
        {
            var owner = rt.AcquireOwner(ownerId, null, GateMode.Concurrent);
            var payload = new byte[64]; // each handler holds this through its closure
            for (int i = 0; i < 50000; i++)
            {
                var t = owner.After((ulong)i, TimeSpan.FromMinutes(5), _ => { GC.KeepAlive(payload); });
                if (i % 2 == 0) t = t.Reset(TimeSpan.FromMinutes(6));
                Assert.AreEqual(EndReason.Cancelled, t.Cancel(T.Wait).Reason);
            }
            owner.Release();
        }

        static long Heap()
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            return GC.GetTotalMemory(true);
        }

        [Test, Timeout(120000)]
        public void EndedGenerations_LeaveNoManagedState()
        {
            using (var rt = new Runtime())
            {
                Round(rt, 1);
                long first = Heap();
                for (ulong r = 2; r <= 4; r++) Round(rt, r);
                long grown = Heap() - first;
                Assert.Less(grown, 8L << 20, "the managed heap grew by " + grown + " bytes over 150,000 ended generations");
            }
        }

        [Test, Timeout(120000)]
        public void RuntimesDisposedWithLiveTimers_LeaveNoManagedState()
        {
            Action round = () =>
            {
                var rt = new Runtime();
                var owner = rt.AcquireOwner(1, null, GateMode.Concurrent);
                for (int i = 0; i < 50000; i++) owner.After((ulong)i, TimeSpan.FromMinutes(5), _ => { });
                rt.Dispose();
            };
            round();
            long first = Heap();
            for (int r = 0; r < 3; r++) round();
            long grown = Heap() - first;
            Assert.Less(grown, 8L << 20, "the managed heap grew by " + grown + " bytes over 150,000 generations ended by Dispose");
        }
    }
}
