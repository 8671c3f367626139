// A node keeps itself alive and answers truthfully, through the .NET binding only (the same
// meaning as lifecycle/tests/node_authority.rs): it renews its own owner lease and runs its
// own idle scans; a node whose term in the store ended admits nothing of it and gives its
// Spots up; an intent meeting a closing Spot waits for the close and creates again; refusals
// name what refused and are counted once; an oversized first message creates nothing; a node
// reported down is not sent to over an old route. Real clocks.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Text;
using System.Threading;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    /// <summary>A host thread: dispatches until stopped, recording every message it ran.</summary>
    sealed class Dispatcher : IDisposable
    {
        readonly Node _node;
        readonly Thread _thread;
        volatile bool _stop;
        readonly List<string> _ran = new List<string>();

        public Dispatcher(Node node)
        {
            _node = node;
            _thread = new Thread(Run) { IsBackground = true };
            _thread.Start();
        }

        void Run()
        {
            while (!_stop)
            {
                try
                {
                    _node.Dispatch(w =>
                    {
                        if (w.Kind == WorkKind.Message)
                            lock (_ran) _ran.Add(w.SpotId + ":" + Encoding.UTF8.GetString(w.Payload));
                    }, TimeSpan.FromMilliseconds(5));
                }
                catch (ObjectDisposedException) { return; }
                catch (RuntimeClosedException) { return; }
            }
        }

        public List<string> Ran { get { lock (_ran) return _ran.ToList(); } }

        public void Dispose()
        {
            _stop = true;
            Assert.IsTrue(_thread.Join(TimeSpan.FromSeconds(30)), "the dispatcher did not stop");
        }
    }

    [TestFixture]
    public class LifecycleAuthorityTests
    {
        static byte[] B(string s) { return Encoding.UTF8.GetBytes(s); }

        static bool Eventually(Func<bool> cond, double seconds = 10)
        {
            var sw = Stopwatch.StartNew();
            while (sw.Elapsed.TotalSeconds < seconds)
            {
                if (cond()) return true;
                Thread.Sleep(2);
            }
            return cond();
        }

        static NodeOptions Real(World w, ulong id)
        {
            var o = w.Options(id);
            o.Clock = ClockKind.Real;
            return o;
        }

        static List<CloseReason> ClosesOf(World w, ulong spot)
        {
            return w.ClosesNow().Where(c => c.Item1 == spot).Select(c => c.Item3).ToList();
        }

        [Test]
        public void A_node_renews_its_own_owner_lease()
        {
            using (var w = new World())
            {
                var o = Real(w, 1);
                o.OwnerLease = TimeSpan.FromMilliseconds(300);
                var a = w.NodeWith(o);
                using (var d = new Dispatcher(a))
                {
                    a.CreateUserSpot(2);
                    a.SendOrCreate(3, B("first"));
                    for (int i = 0; i < 4; i++)
                    {
                        Thread.Sleep(200);
                        a.Send(1001, B("e" + i));
                        a.Send(2, B("u" + i));
                        a.SendOrCreate(3, B("i" + i));
                    }
                    Assert.IsTrue(Eventually(() => d.Ran.Count == 1 + 3 * 4), string.Join(",", d.Ran));
                }
                var s = a.GetStats();
                Assert.AreEqual(0, s.AuthorityLost);
                Assert.AreEqual(3, s.FactoryRuns);
            }
        }

        [Test]
        public void A_node_runs_its_own_idle_scans()
        {
            using (var w = new World())
            {
                var o = Real(w, 1);
                o.InstanceIdleTimeout = TimeSpan.FromMilliseconds(200);
                var a = w.NodeWith(o);
                using (new Dispatcher(a))
                {
                    for (ulong i = 0; i < 50; i++) a.SendOrCreate(100 + i, B("x"));
                    a.CreateUserSpot(7);
                    Assert.IsTrue(Eventually(() => a.GetStats().Evicted == 50), "evicted " + a.GetStats().Evicted);
                }
                var s = a.GetStats();
                Assert.Greater(s.EvictionPasses, 0);
                Assert.AreEqual(2, s.ActiveSpots, "the Entry and the User Spot stay");
                Assert.IsTrue(w.ClosesNow().All(c => c.Item3 == CloseReason.IdleEvicted));
            }
        }

        [Test]
        public void An_expired_node_admits_nothing_and_its_spot_runs_on_one_node_only()
        {
            using (var w = new World())
            {
                var n5 = w.NodeWith(Real(w, 5));
                var n6 = w.NodeWith(Real(w, 6));
                var n7 = w.NodeWith(Real(w, 7));
                using (var d5 = new Dispatcher(n5))
                using (var d6 = new Dispatcher(n6))
                using (new Dispatcher(n7))
                {
                    const ulong Y = 42;
                    n6.SendOrCreate(Y, B("on 6"));
                    n7.Send(Y, B("via 7"));
                    Assert.IsTrue(Eventually(() => d6.Ran.Count == 2));
                    w.Store.ExpireNode(6);
                    n5.SendOrCreate(Y, B("on 5"));
                    foreach (var send in new Action[] { () => n7.Send(Y, B("old route")), () => n6.Send(Y, B("on 6 again")) })
                    {
                        try { send(); }
                        catch (StaleRouteException) { }
                        catch (SpotUnavailableException) { }
                    }
                    Assert.IsTrue(Eventually(() => n6.GetStats().TermsRenewed == 1));
                    Thread.Sleep(50);
                    Assert.AreEqual(2, d6.Ran.Count, string.Join(",", d6.Ran));
                    Assert.Contains(Y + ":on 5", d5.Ran);
                    CollectionAssert.AreEqual(new[] { CloseReason.AuthorityLost }, ClosesOf(w, Y));
                    n6.Send(Y, B("after"));
                    Assert.IsTrue(Eventually(() => d5.Ran.Contains(Y + ":after")));
                }
            }
        }

        [Test]
        public void An_intent_during_a_closing_callback_waits_and_creates_again()
        {
            using (var w = new World())
            using (var entered = new ManualResetEventSlim())
            {
                Node a = null;
                string inner = null;
                var o = Real(w, 1);
                o.InstanceIdleTimeout = TimeSpan.FromMilliseconds(50);
                o.OnClose = (spot, kind, reason) =>
                {
                    lock (w.Closes) w.Closes.Add(Tuple.Create(spot, kind, reason, true));
                    if (spot == 7 && !entered.IsSet)
                    {
                        // This thread's own intent for the closing Spot is refused at once.
                        try { a.SendOrCreate(7, B("inside")); inner = "ok"; }
                        catch (StaleRouteException e) { inner = e.NativeMessage; }
                        entered.Set();
                        Thread.Sleep(100);
                    }
                };
                a = w.NodeWith(o);
                using (var d = new Dispatcher(a))
                {
                    a.SendOrCreate(7, B("one"));
                    Assert.IsTrue(entered.Wait(TimeSpan.FromSeconds(10)));
                    var sw = Stopwatch.StartNew();
                    a.SendOrCreate(7, B("two"));
                    Assert.GreaterOrEqual(sw.ElapsedMilliseconds, 50, "waited for the close");
                    Assert.IsTrue(Eventually(() => d.Ran.Contains("7:two")));
                }
                Assert.AreEqual(3, w.FactoryRuns);
                StringAssert.Contains("closing", inner);
            }
        }

        [Test]
        public void Refusals_while_sends_race_evictions_say_closing()
        {
            using (var w = new World())
            {
                var o = Real(w, 1);
                o.InstanceIdleTimeout = TimeSpan.FromMilliseconds(1);
                var a = w.NodeWith(o);
                const ulong Ids = 256;
                var wrong = new List<string>();
                var until = Stopwatch.StartNew();
                using (new Dispatcher(a))
                {
                    for (ulong i = 0; i < Ids; i++) a.SendOrCreate(i, B("x"));
                    var threads = Enumerable.Range(0, 4).Select(t => new Thread(() =>
                    {
                        long k = 0;
                        while ((k < 1500 || a.GetStats().Evicted < 200) && until.Elapsed.TotalSeconds < 60)
                        {
                            k++;
                            ulong id = (ulong)((k * 7 + t * 61) % (long)Ids);
                            try
                            {
                                if (k % 3 == 0) a.SendOrCreate(id, B("i")); else a.Send(id, B("s"));
                            }
                            catch (SpotNotFoundException) { }
                            // A full lane is a true refusal too (the senders outrun the host).
                            catch (CapacityExceededException) { }
                            catch (StaleRouteException e)
                            {
                                if (!e.NativeMessage.Contains("closing")) lock (wrong) wrong.Add(e.NativeMessage);
                            }
                            catch (Exception e) { lock (wrong) wrong.Add(e.ToString()); }
                            if (k % 64 == 0) a.EvictIdle();
                            if (k % 5 == 0) Thread.Sleep(0);
                        }
                    })).ToList();
                    threads.ForEach(t => t.Start());
                    threads.ForEach(t => t.Join());
                    Assert.Less(until.Elapsed.TotalSeconds, 60, "no progress within 60 s");
                    Assert.IsEmpty(wrong, string.Join("\n", wrong.Take(5)));
                    Assert.IsTrue(Eventually(() =>
                    {
                        var s = a.GetStats();
                        return s.MessagesAdmitted == s.MessagesCompleted + s.MessagesDropped;
                    }));
                }
                Assert.GreaterOrEqual(a.GetStats().Evicted, 200);
            }
        }

        [Test]
        public void Every_activation_refusal_a_caller_sees_is_counted()
        {
            using (var w = new World())
            {
                var o = Real(w, 1);
                o.ActiveCap = 1;
                var a = w.NodeWith(o);
                long refused = 0;
                using (var barrier = new Barrier(8))
                {
                    var threads = Enumerable.Range(0, 8).Select(_ => new Thread(() =>
                    {
                        for (int round = 0; round < 100; round++)
                        {
                            if (round % 20 == 0) barrier.SignalAndWait(TimeSpan.FromSeconds(30));
                            try { a.SendOrCreate((ulong)(round % 3), new byte[0]); }
                            catch (CapacityExceededException e)
                            {
                                Assert.AreEqual(Queue.Activation, e.Queue);
                                Interlocked.Increment(ref refused);
                            }
                        }
                    })).ToList();
                    threads.ForEach(t => t.Start());
                    threads.ForEach(t => t.Join());
                }
                Assert.AreEqual(800, refused);
                Assert.AreEqual(refused, a.GetStats().RejectedActivation);
            }
        }

        [Test]
        public void An_oversized_first_message_creates_nothing()
        {
            using (var w = new World())
            {
                var a = w.NodeWith(Real(w, 1));
                long before = w.FactoryRuns;
                var e = Assert.Throws<CapacityExceededException>(() => a.SendOrCreate(9, new byte[(64 << 20) - 255]));
                Assert.AreEqual(Queue.ApplicationLane, e.Queue);
                Assert.AreEqual(before, w.FactoryRuns, "the factory did not run");
                Assert.Throws<SpotNotFoundException>(() => a.Send(9, B("nothing there")));
                Assert.AreEqual(1, a.GetStats().RejectedApplicationLane);
                a.SendOrCreate(9, new byte[(64 << 20) - 256]);
            }
        }

        [Test]
        public void A_node_reported_down_is_not_sent_to_over_an_old_route()
        {
            using (var w = new World())
            {
                var a = w.NodeWith(Real(w, 1));
                var b = w.NodeWith(Real(w, 2));
                using (var db = new Dispatcher(b))
                {
                    b.SendOrCreate(5, B("on b"));
                    a.Send(5, B("cached"));
                    Assert.IsTrue(Eventually(() => db.Ran.Count == 2));
                    w.Store.MarkDown(2);
                    long admitted = b.GetStats().MessagesAdmitted;
                    var e1 = Assert.Throws<SpotUnavailableException>(() => a.Send(5, B("plain")));
                    var e2 = Assert.Throws<SpotUnavailableException>(() => a.SendOrCreate(5, B("intent")));
                    StringAssert.Contains("did not run", e1.NativeMessage);
                    StringAssert.Contains("did not run", e2.NativeMessage);
                    Assert.AreEqual(admitted, b.GetStats().MessagesAdmitted);
                    Assert.AreEqual(3, w.FactoryRuns);
                }
            }
        }
    }
}
