// The Spot lifecycle through the .NET binding: the contract's verification items L01–L16
// (docs/lifecycle.md; the same meaning as lifecycle/tests/lifecycle.rs), then the binding's
// own behaviour (handler failures, stale records, Dispose, bad input).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Text;
using System.Threading;
using NUnit.Framework;
using SpotTimer;
using SpotTimer.Interop;

namespace SpotTimer.Tests
{
    /// <summary>Nodes on manual clocks sharing one Store, a counting factory and a closing
    /// callback that records (spot, kind, reason, located) — located: what
    /// <see cref="LocatedProbe"/> said about the Spot's location while the callback ran.</summary>
    sealed class World : IDisposable
    {
        public readonly Store Store = new Store();
        public long FactoryRunsCount;
        /// <summary>Factory runs per Spot id.</summary>
        public readonly Dictionary<ulong, long> RunsOf = new Dictionary<ulong, long>();
        public readonly List<Tuple<ulong, SpotKind, CloseReason, bool>> Closes = new List<Tuple<ulong, SpotKind, CloseReason, bool>>();
        public Func<ulong, bool> LocatedProbe;
        readonly List<Node> _nodes = new List<Node>();

        public long FactoryRuns { get { return Interlocked.Read(ref FactoryRunsCount); } }

        /// <summary>Node <paramref name="id"/> (Entry Spot 1000 + id) on a fresh manual clock.</summary>
        public NodeOptions Options(ulong id)
        {
            return new NodeOptions
            {
                NodeId = id,
                EntrySpot = 1000 + id,
                Clock = ClockKind.Manual,
                Store = Store,
                Factory = (spot, kind) =>
                {
                    Interlocked.Increment(ref FactoryRunsCount);
                    lock (RunsOf) RunsOf[spot] = (RunsOf.TryGetValue(spot, out var n) ? n : 0) + 1;
                },
                OnClose = (spot, kind, reason) =>
                {
                    var probe = LocatedProbe;
                    bool located = probe != null && probe(spot);
                    lock (Closes) Closes.Add(Tuple.Create(spot, kind, reason, located));
                },
            };
        }

        public Node Node(ulong id) { return NodeWith(Options(id)); }

        public Node NodeWith(NodeOptions o)
        {
            var n = new Node(o);
            lock (_nodes) _nodes.Add(n);
            return n;
        }

        public List<Tuple<ulong, SpotKind, CloseReason, bool>> ClosesNow()
        {
            lock (Closes) return Closes.ToList();
        }

        public void Dispose()
        {
            LocatedProbe = null;
            lock (_nodes) foreach (var n in _nodes) n.Dispose();
            Store.Dispose();
        }
    }

    [TestFixture]
    public class LifecycleTests
    {
        const ulong S = 7;

        static byte[] B(string s) { return Encoding.UTF8.GetBytes(s); }

        static string Describe(SpotWork w)
        {
            return w.Kind == WorkKind.Message
                ? "message " + w.SpotId + " " + Encoding.UTF8.GetString(w.Payload)
                : "tick " + w.SpotId + " key=" + w.Key;
        }

        /// <summary>Lets the node's clock deliver what is due, then dispatches until nothing is
        /// ready; every record's handler records it and returns (completed OK).</summary>
        static List<string> RunReady(Node node)
        {
            var ran = new List<string>();
            while (true)
            {
                node.Advance(TimeSpan.Zero);
                if (node.Dispatch(w => ran.Add(Describe(w)), TimeSpan.Zero) == 0) break;
            }
            return ran;
        }

        static int MessagesFor(List<string> ran, ulong spot)
        {
            return ran.Count(r => r.StartsWith("message " + spot + " "));
        }

        static void AssertQuietAccounting(Node node)
        {
            var s = node.GetStats();
            Assert.AreEqual(s.MessagesAdmitted, s.MessagesCompleted + s.MessagesDropped,
                "admitted == completed + dropped once quiet");
        }

        // ---- Kinds and creation -----------------------------------------------------------

        [Test, Timeout(30000)]
        public void Lifecycle_L01_TheEntrySpotIsNotRelocated_ItsActorsAre()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.AddEntryActor(501);
                node.AddEntryActor(502);
                node.CreateUserSpot(20);
                node.SendOrCreate(30, B("hi"));
                var targets = node.RelocationTargets();
                Assert.IsFalse(targets.Any(t => t.Id == node.EntrySpot), "the Entry Spot stays: " + string.Join(", ", targets));
                foreach (var t in new[] {
                    RelocationTarget.EntryActor(501), RelocationTarget.EntryActor(502),
                    RelocationTarget.Spot(20, SpotKind.User), RelocationTarget.Spot(30, SpotKind.Instance) })
                    CollectionAssert.Contains(targets, t, t + " missing from " + string.Join(", ", targets));
                Assert.AreEqual(4, targets.Count);
                // The kinds are distinct: an id of one kind is refused where another is asked for.
                Assert.AreEqual(SpotKind.Entry, node.GetSpotKind(node.EntrySpot));
                Assert.AreEqual(SpotKind.User, node.GetSpotKind(20));
                Assert.AreEqual(SpotKind.Instance, node.GetSpotKind(30));
                Assert.Throws<WrongKindException>(() => node.CloseSpot(30, SpotKind.User));
                Assert.Throws<WrongKindException>(() => node.CreateUserSpot(30));
                Assert.Throws<WrongKindException>(() => node.SendOrCreate(20, B("x")));
                // 0 and 4 are no kind.
                foreach (uint bad in new uint[] { 0, 4 })
                {
                    var e = Assert.Throws<SpotInvalidArgumentException>(() => node.CloseSpot(30, (SpotKind)bad));
                    Assert.AreEqual(SpotStatus.UnknownEnum, e.Status, bad.ToString());
                }
                Assert.AreEqual(SpotKind.Instance, node.GetSpotKind(30), "nothing closed");
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L02_AnOrdinaryMessageToAMissingIdCreatesNothing()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                long runsAtStart = w.FactoryRuns; // the Entry Spot's
                Assert.AreEqual(1, runsAtStart);
                Assert.Throws<SpotNotFoundException>(() => node.Send(S, B("x")));
                Assert.Throws<SpotNotFoundException>(() => node.SendLifecycle(S, B("x")));
                Assert.Throws<SpotNotFoundException>(() => node.GetSpotKind(S));
                Assert.Throws<SpotNotFoundException>(() => node.Every(S, 1, TimeSpan.FromSeconds(1), 0));
                Assert.Throws<SpotNotFoundException>(() => node.CloseSpot(S, SpotKind.Instance));
                Assert.Throws<SpotNotFoundException>(() => node.LaneUse(S, Lane.Application));
                Assert.AreEqual(runsAtStart, w.FactoryRuns, "no factory ran");
                Assert.AreEqual(1, node.GetStats().ActiveSpots, "only the Entry Spot");
                Assert.AreEqual(0, node.GetStats().MessagesAdmitted);
                // The explicit intent creates.
                ulong gen = node.SendOrCreate(S, B("hello"));
                Assert.Greater(gen, 0UL);
                Assert.AreEqual(runsAtStart + 1, w.FactoryRuns);
                Assert.AreEqual(SpotKind.Instance, node.GetSpotKind(S));
                CollectionAssert.AreEqual(new[] { "message 7 hello" }, RunReady(node));
                // And an ordinary message now reaches it.
                node.Send(S, B("again"));
                CollectionAssert.AreEqual(new[] { "message 7 again" }, RunReady(node));
                AssertQuietAccounting(node);
            }
        }

        // ---- Concurrent creation --------------------------------------------------------------

        [Test, Timeout(60000)]
        public void Lifecycle_L03_ConcurrentCreationRunsTheFactoryOnce()
        {
            using (var w = new World())
            {
                long runs = 0;
                Action<ulong, SpotKind> factory = (id, kind) =>
                {
                    if (id != S) return;
                    Interlocked.Increment(ref runs);
                    Thread.Sleep(30); // let the others pile up
                };
                var o1 = w.Options(1); o1.Factory = factory;
                var node = w.NodeWith(o1);
                // A second node racing too: the store's reservation decides across nodes.
                var o2 = w.Options(2); o2.Factory = factory;
                var other = w.NodeWith(o2);
                const int N = 16;
                var barrier = new Barrier(N);
                var gens = new ulong[N];
                var errors = new Exception[N];
                var threads = Enumerable.Range(0, N).Select(i => new Thread(() =>
                {
                    var n = i % 2 == 0 ? node : other;
                    barrier.SignalAndWait();
                    try { gens[i] = n.SendOrCreate(S, new[] { (byte)i }); }
                    catch (Exception e) { errors[i] = e; }
                })).ToList();
                threads.ForEach(t => t.Start());
                threads.ForEach(t => t.Join());
                Assert.IsTrue(errors.All(e => e == null), "every caller reaches the Spot: " +
                    string.Join("; ", errors.Where(e => e != null).Select(e => e.Message)));
                Assert.AreEqual(1, Interlocked.Read(ref runs), "the factory ran once");
                Assert.IsTrue(gens.All(g => g == gens[0]), "one Spot: " + string.Join(",", gens));
                // Exactly one node owns it, and every caller's message ran on that one Spot.
                var owners = new[] { node, other }.Where(n => { try { return n.GetSpotKind(S) == SpotKind.Instance; } catch (SpotNotFoundException) { return false; } }).ToList();
                Assert.AreEqual(1, owners.Count);
                var ran = RunReady(owners[0]);
                Assert.AreEqual(N, MessagesFor(ran, S), string.Join(" | ", ran));
                var payloads = ran.Select(r => r.Substring("message 7 ".Length)).ToList();
                Assert.AreEqual(N, payloads.Distinct().Count(), "each caller's own message, once");
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L04_AMessageRightAfterCreationIsProcessedAtOnce()
        {
            using (var w = new World())
            {
                var started = new ManualResetEventSlim();
                var oa = w.Options(1);
                oa.Factory = (id, kind) =>
                {
                    if (id != S) return;
                    started.Set(); // the reservation is in the store: S is Creating
                    Thread.Sleep(100);
                };
                var a = w.NodeWith(oa);
                var b = w.Node(2);
                Exception creatorError = null;
                var creator = new Thread(() =>
                {
                    try { a.SendOrCreate(S, B("first")); }
                    catch (Exception e) { creatorError = e; }
                });
                creator.Start();
                Assert.IsTrue(started.Wait(10000), "the creation started");
                // Node B sends while the Spot is Creating: it waits for that creation (Creating
                // is never cached as a route) and is admitted as soon as Ready is committed.
                var sw = Stopwatch.StartNew();
                b.Send(S, B("second"));
                var waited = sw.Elapsed;
                creator.Join();
                Assert.IsNull(creatorError);
                Assert.Less(waited, TimeSpan.FromSeconds(2), "no cache lifetime");
                CollectionAssert.AreEqual(new[] { "message 7 first", "message 7 second" }, RunReady(a));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L05_UnavailableStartsNoCreation()
        {
            using (var w = new World())
            {
                var a = w.Node(1);
                var b = w.Node(2);
                b.SendOrCreate(S, B("on b"));
                // (The runs of S's factory: node b, its term ended, creates its own Entry Spot again.)
                Func<long> runsOfS = () => { lock (w.RunsOf) return w.RunsOf[S]; };
                long runs = runsOfS();
                w.Store.MarkDown(b.NodeId);
                // The authority exists, its owner is down: the request ends, nothing is created.
                Assert.Throws<SpotUnavailableException>(() => a.SendOrCreate(S, B("x")));
                Assert.Throws<SpotUnavailableException>(() => a.Send(S, B("x")));
                Assert.AreEqual(runs, runsOfS(), "no creation started");
                // Once the owner's lease is over its authority is released: now the intent creates.
                w.Store.ExpireNode(b.NodeId);
                a.SendOrCreate(S, B("on a"));
                Assert.AreEqual(runs + 1, runsOfS());
                CollectionAssert.AreEqual(new[] { "message 7 on a" }, RunReady(a));
            }
        }

        // ---- Stale owners -------------------------------------------------------------------------

        [Test, Timeout(30000)]
        public void Lifecycle_L06_MessagesAreNotRejectedForANewObjectGeneration()
        {
            using (var w = new World())
            {
                var a = w.Node(1);
                var b = w.Node(2);
                ulong first = a.SendOrCreate(S, B("1"));
                b.Send(S, B("2")); // B caches a route to A
                Assert.AreEqual(2, MessagesFor(RunReady(a), S));
                a.CloseSpot(S, SpotKind.Instance);
                ulong second = a.SendOrCreate(S, B("3"));
                Assert.Greater(second, first, "re-created");
                // Right after the re-creation: ordinary messages, also over B's older route, run.
                a.Send(S, B("4"));
                b.Send(S, B("5"));
                var ran = RunReady(a);
                CollectionAssert.AreEqual(new[] { "message 7 3", "message 7 4", "message 7 5" }, ran);
                Assert.AreEqual(0, a.GetStats().StaleRoutes + b.GetStats().StaleRoutes);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L07_AStaleRouteEndsWithStaleRouteAndIsNotRetried()
        {
            using (var w = new World())
            {
                var a = w.Node(1);
                var b = w.Node(2);
                var c = w.Node(3);
                b.SendOrCreate(S, B("b"));
                a.Send(S, B("cache")); // A caches the route to B
                Assert.AreEqual(2, MessagesFor(RunReady(b), S));
                // S moves: closed on B, created again on C.
                b.CloseSpot(S, SpotKind.Instance);
                c.SendOrCreate(S, B("c"));
                long staleBefore = a.GetStats().StaleRoutes;
                Assert.Throws<StaleRouteException>(() => a.Send(S, B("stale")));
                Assert.AreEqual(staleBefore + 1, a.GetStats().StaleRoutes);
                // The handler ran zero times for it, anywhere: no automatic retry.
                CollectionAssert.IsEmpty(RunReady(b));
                CollectionAssert.AreEqual(new[] { "message 7 c" }, RunReady(c));
                // A new call by the application finds the current owner.
                a.Send(S, B("new call"));
                CollectionAssert.AreEqual(new[] { "message 7 new call" }, RunReady(c));
                CollectionAssert.IsEmpty(RunReady(a));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L07_AnOwnerWhoseLeaseRanOutRefusesWithStaleRoute()
        {
            using (var w = new World())
            {
                var o = w.Options(1);
                o.OwnerLease = TimeSpan.FromMilliseconds(50);
                var a = w.NodeWith(o);
                a.SendOrCreate(S, B("x"));
                Assert.AreEqual(1, MessagesFor(RunReady(a), S));
                a.Advance(TimeSpan.FromMilliseconds(100));
                // Refused as a stale route, or — once the node's lease keeper has given the Spot
                // up, which it does on its own thread at any moment after the advance — not found.
                var e = Assert.Catch<SpotTimerException>(() => a.Send(S, B("late")));
                Assert.IsTrue(e is StaleRouteException || e is SpotNotFoundException, e.ToString());
                CollectionAssert.IsEmpty(RunReady(a), "nothing ran");
                Assert.AreEqual(e is StaleRouteException ? 1 : 0, a.GetStats().StaleRoutes);
            }
        }

        // ---- Active cap and idle eviction -----------------------------------------------------

        [Test, Timeout(30000)]
        public void Lifecycle_L08_AtTheActiveCapANewActivationIsRejected_AndPlacedElsewhere()
        {
            using (var w = new World())
            {
                var o = w.Options(1);
                o.ActiveCap = 3; // the Entry Spot and two more
                var a = w.NodeWith(o);
                a.SendOrCreate(1, new byte[0]);
                a.CreateUserSpot(2);
                var e = Assert.Throws<CapacityExceededException>(() => a.SendOrCreate(3, new byte[0]));
                Assert.AreEqual(Queue.Activation, e.Queue);
                Assert.AreEqual(SpotStatus.ActiveCap, e.Status);
                Assert.AreEqual(1, a.GetStats().RejectedActivation);
                Assert.AreEqual(3, a.GetStats().ActiveSpots);
                // Nothing was reserved: the id is Missing, not Creating.
                Assert.Throws<SpotNotFoundException>(() => a.Send(3, B("x")));
                Assert.Throws<CapacityExceededException>(() => a.CreateUserSpot(4));
                // Placement: with another node below its cap, the new Spot is placed there.
                var b = w.Node(2);
                a.SendOrCreate(3, B("placed"));
                Assert.AreEqual(SpotKind.Instance, b.GetSpotKind(3));
                Assert.Throws<SpotNotFoundException>(() => a.GetSpotKind(3));
                CollectionAssert.AreEqual(new[] { "message 3 placed" }, RunReady(b));
                CollectionAssert.AreEqual(new[] { "message 1 " }, RunReady(a));
            }
        }

        static Node IdleNode(World w, int timeoutSeconds)
        {
            var o = w.Options(1);
            o.InstanceIdleTimeout = TimeSpan.FromSeconds(timeoutSeconds);
            return w.NodeWith(o);
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L09_OnlyInstanceSpotsAreEvicted()
        {
            using (var w = new World())
            {
                var node = IdleNode(w, 10);
                node.CreateUserSpot(20);
                node.SendOrCreate(30, B("x"));
                RunReady(node);
                node.Advance(TimeSpan.FromSeconds(20));
                Assert.AreEqual(1, node.EvictIdle());
                Assert.Throws<SpotNotFoundException>(() => node.GetSpotKind(30));
                Assert.AreEqual(SpotKind.User, node.GetSpotKind(20), "User Spots are never evicted");
                Assert.AreEqual(SpotKind.Entry, node.GetSpotKind(node.EntrySpot), "the Entry Spot stays");
                var s = node.GetStats();
                Assert.AreEqual(1, s.Evicted);
                Assert.AreEqual(2, s.ActiveSpots);
                Assert.AreEqual(0, node.EvictIdle());
                CollectionAssert.Contains(w.ClosesNow().Select(c => Tuple.Create(c.Item1, c.Item2, c.Item3)).ToList(),
                    Tuple.Create(30UL, SpotKind.Instance, CloseReason.IdleEvicted));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L10_ASpotWithWorkInProgressIsNotEvicted()
        {
            using (var w = new World())
            {
                var node = IdleNode(w, 10);
                node.SendOrCreate(S, B("running"));
                node.Advance(TimeSpan.Zero);
                int evictedWhileRunning = -1;
                var seen = new List<string>();
                int n = node.Dispatch(work =>
                {
                    seen.Add(Describe(work));
                    // The handler runs (its record began): queue more work, let time pass.
                    node.Send(S, B("queued"));
                    node.Advance(TimeSpan.FromSeconds(30));
                    evictedWhileRunning = node.EvictIdle();
                }, TimeSpan.Zero);
                Assert.AreEqual(1, n);
                CollectionAssert.AreEqual(new[] { "message 7 running" }, seen);
                Assert.AreEqual(0, evictedWhileRunning, "running and queued work");
                // The handler finished; the queued message runs; the Spot is idle only from then on.
                CollectionAssert.AreEqual(new[] { "message 7 queued" }, RunReady(node));
                Assert.AreEqual(0, node.EvictIdle(), "its last work finished just now");
                node.Advance(TimeSpan.FromSeconds(11));
                Assert.AreEqual(1, node.EvictIdle());
                AssertQuietAccounting(node);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L11_EvictionCallsTheClosingCallbackBeforeReleasingTheLocation()
        {
            using (var w = new World())
            {
                var node = IdleNode(w, 10);
                // Another node of the store looks the Spot up from inside the closing callback:
                // while its location is recorded the route leads to the closing Spot (StaleRoute);
                // once released the id is Missing (NotFound).
                var probe = w.Node(2);
                w.LocatedProbe = id =>
                {
                    if (id != S) return false;
                    try { probe.Send(id, new byte[0]); return true; }
                    catch (StaleRouteException) { return true; }
                    catch (SpotNotFoundException) { return false; }
                };
                node.SendOrCreate(S, B("x"));
                RunReady(node);
                node.Advance(TimeSpan.FromSeconds(10));
                Assert.AreEqual(1, node.EvictIdle());
                var closes = w.ClosesNow();
                CollectionAssert.AreEqual(new[] { Tuple.Create(S, SpotKind.Instance, CloseReason.IdleEvicted, true) }, closes,
                    "called once, while the location was still recorded");
                // Released afterwards: Missing again, only an explicit intent creates it again.
                Assert.Throws<SpotNotFoundException>(() => probe.Send(S, B("y")));
                Assert.Throws<SpotNotFoundException>(() => node.Send(S, B("y")));
                node.SendOrCreate(S, B("again"));
                CollectionAssert.AreEqual(new[] { "message 7 again" }, RunReady(node));
            }
        }

        [Test, Timeout(60000)]
        public void Lifecycle_EvictionExaminesAtMost64SpotsPerPass()
        {
            using (var w = new World())
            {
                var node = IdleNode(w, 1);
                for (ulong i = 0; i < 200; i++) node.SendOrCreate(10000 + i, new byte[0]);
                RunReady(node);
                node.Advance(TimeSpan.FromSeconds(2));
                int passes = 0;
                while (node.GetStats().Evicted < 200)
                {
                    long before = node.GetStats().EvictionExamined;
                    int n = node.EvictIdle();
                    Assert.LessOrEqual(n, 64);
                    Assert.LessOrEqual(node.GetStats().EvictionExamined - before, 64);
                    passes++;
                    Assert.Less(passes, 10, "the cursor covers every Spot");
                }
                Assert.AreEqual(4, passes, "200 Spots, 64 per pass");
                Assert.AreEqual(1, node.GetStats().ActiveSpots);
            }
        }

        // ---- Execution lanes ----------------------------------------------------------------------

        static Node LaneNode(World w, ulong items, ulong bytes)
        {
            var o = w.Options(1);
            o.ApplicationLaneItems = items;
            o.ApplicationLaneBytes = bytes;
            var node = w.NodeWith(o);
            node.CreateUserSpot(S);
            return node;
        }

        static void AssertAppFull(Node node, byte[] payload)
        {
            var e = Assert.Throws<CapacityExceededException>(() => node.Send(S, payload));
            Assert.AreEqual(Queue.ApplicationLane, e.Queue);
            Assert.AreEqual(SpotStatus.ApplicationLaneFull, e.Status);
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L12_ALaneIsLimitedByCountAndBytes_WhicheverComesFirst()
        {
            using (var w = new World())
            {
                var node = LaneNode(w, 4, 2000);
                // Count first: four 10-byte messages (4 x 266 = 1064 bytes).
                for (int i = 0; i < 4; i++) node.Send(S, new byte[10]);
                AssertAppFull(node, new byte[10]);
                Assert.AreEqual((4UL, 1064UL), node.LaneUse(S, Lane.Application));
                // Completing returns the reservation.
                Assert.AreEqual(4, MessagesFor(RunReady(node), S));
                Assert.AreEqual((0UL, 0UL), node.LaneUse(S, Lane.Application));
                // Bytes first: 1,000 + 256 fits once, not twice.
                node.Send(S, new byte[1000]);
                AssertAppFull(node, new byte[1000]);
                Assert.AreEqual(2, node.GetStats().RejectedApplicationLane);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L13_LargePayloadsHitTheByteLimitFirst()
        {
            using (var w = new World())
            {
                var node = LaneNode(w, 1024, 64 << 10);
                for (int i = 0; i < 3; i++) node.Send(S, new byte[16 << 10]);
                AssertAppFull(node, new byte[16 << 10]);
                var used = node.LaneUse(S, Lane.Application);
                Assert.AreEqual(3UL, used.Items, "far below the count limit");
                Assert.AreEqual(3UL * ((16 << 10) + 256), used.Bytes);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L14_EmptyPayloadsHitTheCountLimitFirst()
        {
            using (var w = new World())
            {
                var node = LaneNode(w, 8, 64 << 20);
                for (int i = 0; i < 8; i++) node.Send(S, new byte[0]);
                AssertAppFull(node, new byte[0]);
                Assert.AreEqual((8UL, 8UL * 256), node.LaneUse(S, Lane.Application));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_L15_TheFixedCostPerItemIsCounted()
        {
            using (var w = new World())
            {
                var node = LaneNode(w, 100, 1024);
                for (int i = 0; i < 4; i++) node.Send(S, new byte[0]);
                // Four empty messages have used the 1,024-byte budget.
                AssertAppFull(node, new byte[0]);
                Assert.AreEqual(1024UL, node.LaneUse(S, Lane.Application).Bytes);
            }
        }

        [Test, Timeout(60000)]
        public void Lifecycle_L16_EveryLaneHasBothLimits()
        {
            using (var w = new World())
            {
                // A lane below one item or one item's 256 bytes is refused; through the C ABI a zero
                // limit takes the default, so no lane can be configured unbounded.
                var bad = new[]
                {
                    new { AppItems = 10UL, AppBytes = 255UL, LifeItems = 0UL, LifeBytes = 0UL },
                    new { AppItems = 0UL, AppBytes = 0UL, LifeItems = 10UL, LifeBytes = 255UL },
                    new { AppItems = 0UL, AppBytes = 1UL, LifeItems = 0UL, LifeBytes = 0UL },
                };
                foreach (var b in bad)
                {
                    var o = w.Options(9);
                    o.ApplicationLaneItems = b.AppItems; o.ApplicationLaneBytes = b.AppBytes;
                    o.LifecycleLaneItems = b.LifeItems; o.LifecycleLaneBytes = b.LifeBytes;
                    var e = Assert.Throws<SpotInvalidArgumentException>(() => w.NodeWith(o), b.ToString());
                    Assert.AreEqual(SpotStatus.InvalidArgument, e.Status);
                    StringAssert.Contains("lane", e.NativeMessage);
                }
                // Zero items: the default count (1,024) bounds the lane.
                var oz = w.Options(8);
                oz.ApplicationLaneItems = 0; oz.ApplicationLaneBytes = 1 << 20;
                var dflt = w.NodeWith(oz);
                dflt.CreateUserSpot(80);
                for (int i = 0; i < 1024; i++) dflt.Send(80, new byte[0]);
                var full = Assert.Throws<CapacityExceededException>(() => dflt.Send(80, new byte[0]));
                Assert.AreEqual(Queue.ApplicationLane, full.Queue);
                Assert.AreEqual((1024UL, 1024UL * 256), dflt.LaneUse(80, Lane.Application));
                // The lifecycle lane enforces its own limits and says so.
                var ol = w.Options(1);
                ol.LifecycleLaneItems = 2; ol.LifecycleLaneBytes = 1 << 20;
                var node = w.NodeWith(ol);
                node.CreateUserSpot(S);
                node.SendLifecycle(S, B("a"));
                node.SendLifecycle(S, B("b"));
                var e2 = Assert.Throws<CapacityExceededException>(() => node.SendLifecycle(S, B("c")));
                Assert.AreEqual(Queue.LifecycleLane, e2.Queue);
                Assert.AreEqual(SpotStatus.LifecycleLaneFull, e2.Status);
                Assert.AreEqual(1, node.GetStats().RejectedLifecycleLane);
                Assert.AreEqual((2UL, 2UL * 257), node.LaneUse(S, Lane.Lifecycle));
                node.Send(S, B("app")); // the application lane is separate
                // Lifecycle work is served first.
                var lanes = new List<Lane>();
                var ran = new List<string>();
                while (true)
                {
                    node.Advance(TimeSpan.Zero);
                    if (node.Dispatch(x => { ran.Add(Describe(x)); lanes.Add(x.Lane); }, TimeSpan.Zero) == 0) break;
                }
                CollectionAssert.AreEqual(new[] { "message 7 a", "message 7 b", "message 7 app" }, ran);
                CollectionAssert.AreEqual(new[] { Lane.Lifecycle, Lane.Lifecycle, Lane.Application }, lanes);
                Assert.AreEqual((0UL, 0UL), node.LaneUse(S, Lane.Lifecycle));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_TheNodeInboundBudgetIsItsOwnQueue()
        {
            using (var w = new World())
            {
                var o = w.Options(1);
                o.NodeInboundBytes = 1000;
                var node = w.NodeWith(o);
                node.CreateUserSpot(1);
                node.CreateUserSpot(2);
                node.Send(1, new byte[600]);
                var e = Assert.Throws<CapacityExceededException>(() => node.Send(2, new byte[600]));
                Assert.AreEqual(Queue.NodeInbound, e.Queue);
                Assert.AreEqual(SpotStatus.NodeInboundFull, e.Status);
                Assert.AreEqual(1, node.GetStats().RejectedNodeInbound);
                RunReady(node);
                node.Send(2, new byte[600]);
            }
        }

        // ---- Work: messages and ticks together ----------------------------------------------------

        [Test, Timeout(30000)]
        public void Lifecycle_MessagesAndTicksShareOneDispatch_MessagesKeepTheirOrder()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(S);
                node.Every(S, 1, TimeSpan.FromMilliseconds(10), 77);
                for (int i = 0; i < 100; i++) node.Send(S, new[] { (byte)i });
                node.Advance(TimeSpan.FromMilliseconds(10));
                var works = new List<SpotWork>();
                while (true)
                {
                    node.Advance(TimeSpan.Zero);
                    if (node.Dispatch(works.Add, TimeSpan.Zero) == 0) break;
                }
                var msgs = works.Where(x => x.Kind == WorkKind.Message).Select(x => (int)x.Payload[0]).ToList();
                CollectionAssert.AreEqual(Enumerable.Range(0, 100).ToList(), msgs, "FIFO per Spot");
                var ticks = works.Where(x => x.Kind == WorkKind.Tick).ToList();
                Assert.AreEqual(1, ticks.Count);
                Assert.AreEqual(S, ticks[0].SpotId);
                Assert.AreEqual(1UL, ticks[0].Key);
                Assert.AreEqual(77UL, ticks[0].Value);
                Assert.AreEqual(Lane.Application, ticks[0].Lane);
                Assert.AreEqual(1, ticks[0].DeliveryIndex);
                Assert.AreEqual(0, ticks[0].Payload.Length);
                var s = node.GetStats();
                Assert.AreEqual(100, s.MessagesAdmitted);
                Assert.AreEqual(100, s.MessagesCompleted);
                // Keys of 2^63 and more are the library's; a zero period is refused.
                var ek = Assert.Throws<SpotInvalidArgumentException>(() => node.Every(S, 1UL << 63, TimeSpan.FromMilliseconds(10), 0));
                Assert.AreEqual(SpotStatus.InvalidArgument, ek.Status);
                var ep = Assert.Throws<SpotInvalidArgumentException>(() => node.Every(S, 2, TimeSpan.Zero, 0));
                Assert.AreEqual(SpotStatus.InvalidArgument, ep.Status);
                Assert.Throws<ArgumentOutOfRangeException>(() => node.Every(S, 2, TimeSpan.FromTicks(-1), 0));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_ClosingDropsQueuedMessagesAndCountsThem()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(S);
                for (int i = 0; i < 5; i++) node.Send(S, B("m"));
                node.CloseSpot(S, SpotKind.User);
                CollectionAssert.IsEmpty(RunReady(node));
                var s = node.GetStats();
                Assert.AreEqual(new long[] { 5, 0, 5 }, new[] { s.MessagesAdmitted, s.MessagesCompleted, s.MessagesDropped });
                Assert.AreEqual(1, s.Closed);
                var last = w.ClosesNow().Last();
                Assert.AreEqual(Tuple.Create(S, SpotKind.User, CloseReason.Closed), Tuple.Create(last.Item1, last.Item2, last.Item3));
                Assert.Throws<SpotNotFoundException>(() => node.Send(S, B("m")));
                Assert.Throws<SpotNotFoundException>(() => node.CloseSpot(S, SpotKind.User));
            }
        }

        // ---- The binding: factory, handlers, begin, Dispose -------------------------------------

        [Test, Timeout(30000)]
        public void Lifecycle_AFactoryExceptionFailsTheCreationWithItsMessage_AndReleasesTheReservation()
        {
            using (var w = new World())
            {
                int fail = 1;
                var o = w.Options(1);
                o.Factory = (id, kind) =>
                {
                    if (id == S && Volatile.Read(ref fail) == 1) throw new InvalidOperationException("no room");
                    if (id == 8) throw new InvalidOperationException(new string('é', 1000)); // longer than the 256-byte buffer
                    if (id == 9) throw new InvalidOperationException("");
                };
                var node = w.NodeWith(o);
                var e = Assert.Throws<CreationFailedException>(() => node.SendOrCreate(S, B("x")));
                Assert.AreEqual(SpotStatus.CreationFailed, e.Status);
                StringAssert.Contains("no room", e.NativeMessage);
                Assert.AreEqual(1, node.GetStats().CreationFailures);
                // The reservation is released: the id is Missing, not Creating.
                Assert.Throws<SpotNotFoundException>(() => node.Send(S, B("x")));
                Assert.Throws<CreationFailedException>(() => node.CreateUserSpot(S));
                // A message longer than the library's buffer is cut on a character boundary.
                var e8 = Assert.Throws<CreationFailedException>(() => node.SendOrCreate(8, B("x")));
                StringAssert.Contains("éé", e8.NativeMessage);
                Assert.IsFalse(e8.NativeMessage.Contains("\uFFFD"), e8.NativeMessage);
                var e9 = Assert.Throws<CreationFailedException>(() => node.SendOrCreate(9, B("x")));
                StringAssert.Contains("InvalidOperationException", e9.NativeMessage);
                Volatile.Write(ref fail, 0);
                node.SendOrCreate(S, B("y"));
                CollectionAssert.AreEqual(new[] { "message 7 y" }, RunReady(node));
                // The Entry Spot too is built by the factory: its failure fails the node's start.
                var oe = w.Options(2);
                oe.Factory = (id, kind) => { if (kind == SpotKind.Entry) throw new Exception("no entry today"); };
                var ee = Assert.Throws<CreationFailedException>(() => w.NodeWith(oe));
                StringAssert.Contains("no entry today", ee.NativeMessage);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_AHandlerThatThrowsCompletesFailed_RaisesHandlerFailed_AndTheBatchGoesOn()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(1);
                node.CreateUserSpot(2);
                node.Send(1, B("boom"));
                node.Send(2, B("fine"));
                var failures = new List<SpotWorkFailedEventArgs>();
                node.HandlerFailed += (sender, a) => { Assert.AreSame(node, sender); failures.Add(a); };
                node.HandlerFailed += (sender, a) => { throw new Exception("a subscriber's own failure is swallowed"); };
                var ran = new List<string>();
                node.Advance(TimeSpan.Zero);
                int n = node.Dispatch(x =>
                {
                    ran.Add(Describe(x));
                    if (Encoding.UTF8.GetString(x.Payload) == "boom") throw new ApplicationException("handler failed");
                }, TimeSpan.Zero);
                Assert.AreEqual(2, n);
                CollectionAssert.AreEquivalent(new[] { "message 1 boom", "message 2 fine" }, ran);
                Assert.AreEqual(1, failures.Count);
                Assert.AreEqual(1UL, failures[0].Work.SpotId);
                Assert.IsInstanceOf<ApplicationException>(failures[0].Exception);
                // FAILED counts as run; the reservation is back; the Spot runs its next message.
                Assert.AreEqual(2, node.GetStats().MessagesCompleted);
                Assert.AreEqual((0UL, 0UL), node.LaneUse(1, Lane.Application));
                node.Send(1, B("next"));
                CollectionAssert.AreEqual(new[] { "message 1 next" }, RunReady(node));
                AssertQuietAccounting(node);
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_ARecordWhoseSpotClosedMeanwhileIsNotStarted()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(1);
                node.CreateUserSpot(2);
                node.Send(1, B("a"));
                node.Send(2, B("b"));
                node.Advance(TimeSpan.Zero);
                var ran = new List<ulong>();
                // The first handler closes the other Spot, whose record is in the same batch: its
                // begin says stale, it is completed NOT_STARTED, its handler never runs.
                int n = node.Dispatch(x =>
                {
                    ran.Add(x.SpotId);
                    node.CloseSpot(x.SpotId == 1 ? 2UL : 1UL, SpotKind.User);
                }, TimeSpan.Zero);
                Assert.AreEqual(2, n, "both records came in one batch");
                Assert.AreEqual(1, ran.Count);
                var s = node.GetStats();
                Assert.AreEqual(2, s.MessagesAdmitted);
                Assert.AreEqual(1, s.MessagesCompleted);
                Assert.AreEqual(1, s.MessagesDropped);
                CollectionAssert.IsEmpty(RunReady(node));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_CallsAfterDispose_ThrowObjectDisposed()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(20);
                node.SendOrCreate(30, B("pending"));
                node.Dispose();
                node.Dispose(); // idempotent
                Assert.IsTrue(node.IsDisposed);
                Assert.IsTrue(node.Handle.IsClosed);
                // Every Spot closed with the node (NodeShutdown), the Entry Spot included.
                var shut = w.ClosesNow().Where(c => c.Item3 == CloseReason.NodeShutdown).Select(c => c.Item1).OrderBy(x => x).ToList();
                CollectionAssert.AreEqual(new ulong[] { 20, 30, 1001 }, shut);
                var calls = new Dictionary<string, TestDelegate>
                {
                    { "Send", () => node.Send(20, B("x")) },
                    { "SendLifecycle", () => node.SendLifecycle(20, B("x")) },
                    { "SendOrCreate", () => node.SendOrCreate(31, B("x")) },
                    { "CreateUserSpot", () => node.CreateUserSpot(21) },
                    { "GetSpotKind", () => node.GetSpotKind(20) },
                    { "CloseSpot", () => node.CloseSpot(20, SpotKind.User) },
                    { "Every", () => node.Every(20, 1, TimeSpan.FromSeconds(1), 0) },
                    { "EvictIdle", () => node.EvictIdle() },
                    { "Advance", () => node.Advance(TimeSpan.Zero) },
                    { "AddEntryActor", () => node.AddEntryActor(1) },
                    { "RelocationTargets", () => node.RelocationTargets() },
                    { "LaneUse", () => node.LaneUse(20, Lane.Application) },
                    { "GetStats", () => node.GetStats() },
                    { "Dispatch", () => node.Dispatch(x => { }, TimeSpan.Zero) },
                };
                foreach (var kv in calls) Assert.Throws<ObjectDisposedException>(kv.Value, kv.Key);
                // A disposed Store: its calls, and starting a node on it. Nodes already on it go on.
                var live = w.Node(2);
                w.Store.Dispose();
                Assert.Throws<ObjectDisposedException>(() => w.Store.MarkDown(1));
                Assert.Throws<ObjectDisposedException>(() => w.Store.ExpireNode(1));
                Assert.Throws<ObjectDisposedException>(() => new Node(w.Options(3)));
                live.SendOrCreate(S, B("still works"));
                CollectionAssert.AreEqual(new[] { "message 7 still works" }, RunReady(live));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_DisposeFromAHandler_FreesTheNodeWhenDispatchReturns()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(1);
                node.CreateUserSpot(2);
                node.Send(1, B("a"));
                node.Send(2, B("b"));
                node.Advance(TimeSpan.Zero);
                int handled = 0;
                int closesDuringHandler = -1;
                int n = node.Dispatch(x =>
                {
                    handled++;
                    node.Dispose();
                    // Not freed yet: this batch's records are still in hand.
                    closesDuringHandler = w.ClosesNow().Count;
                    Assert.Throws<ObjectDisposedException>(() => node.Send(1, B("x")));
                }, TimeSpan.Zero);
                Assert.AreEqual(2, n);
                Assert.AreEqual(1, handled, "the rest of the batch does not start");
                Assert.AreEqual(0, closesDuringHandler);
                Assert.IsTrue(node.Handle.IsClosed);
                Assert.AreEqual(3, w.ClosesNow().Count(c => c.Item3 == CloseReason.NodeShutdown), "freed when Dispatch returned");
                Assert.Throws<ObjectDisposedException>(() => node.Dispatch(x => { }, TimeSpan.Zero));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_DisposeFromAnotherThreadDuringABatch_FreesTheNodeAfterTheBatch()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(1);
                node.Send(1, B("a"));
                node.Advance(TimeSpan.Zero);
                var inHandler = new ManualResetEventSlim();
                var disposed = new ManualResetEventSlim();
                int closesAfterDispose = -1;
                var disposer = new Thread(() =>
                {
                    inHandler.Wait();
                    node.Dispose(); // returns at once: the batch in progress holds the node
                    closesAfterDispose = w.ClosesNow().Count;
                    disposed.Set();
                });
                disposer.Start();
                byte[] payload = null;
                int n = node.Dispatch(x =>
                {
                    inHandler.Set();
                    Assert.IsTrue(disposed.Wait(10000));
                    payload = x.Payload;
                }, TimeSpan.Zero);
                disposer.Join();
                Assert.AreEqual(1, n);
                Assert.AreEqual(0, closesAfterDispose, "not freed while the batch ran");
                CollectionAssert.AreEqual(B("a"), payload);
                Assert.IsTrue(node.Handle.IsClosed);
                Assert.AreEqual(2, w.ClosesNow().Count(c => c.Item3 == CloseReason.NodeShutdown), "freed when the batch ended");
            }
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static void Abandon(World w, ulong id)
        {
            var o = w.Options(id);
            var n = new Node(o);
            n.CreateUserSpot(id * 10);
        }

        [Test, Timeout(60000)]
        public void Lifecycle_AnAbandonedNodeIsFreedByTheFinalizer()
        {
            using (var w = new World())
            {
                // The node's callbacks (reached through a GCHandle) do not root the Node.
                for (ulong i = 0; i < 8; i++) Abandon(w, 50 + i);
                int shut = 0;
                for (int round = 0; round < 100 && shut < 6; round++)
                {
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    shut = w.ClosesNow().Count(c => c.Item2 == SpotKind.Entry && c.Item3 == CloseReason.NodeShutdown);
                    Thread.Sleep(10);
                }
                // Mono scans stacks conservatively: allow a few to survive a while longer.
                Assert.GreaterOrEqual(shut, 6, "abandoned nodes were freed (their Spots closed with NodeShutdown)");
            }
        }

        /// <summary>The C ABI directly (the binding itself never submits a bad completion):
        /// "SPOT_E_INVALID_COMPLETION (nothing of the call applied)". At 24771db the valid
        /// completions before the bad one were lost (see the report); fixed in ffi/src/node.rs.</summary>
        [Test, Timeout(30000)]
        public unsafe void Lifecycle_Ffi_ACompletionCallWithABadEntryAppliesNothing()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(S);
                node.Send(S, B("abc"));
                node.Advance(TimeSpan.Zero);
                ulong id = node.Handle.Id;
                var recs = new spot_node_record[4];
                UIntPtr got;
                fixed (spot_node_record* p = recs)
                    Assert.AreEqual(0, Native.spot_node_exchange(id, null, UIntPtr.Zero, p, (UIntPtr)4, 0, &got));
                Assert.AreEqual(1UL, (ulong)got);
                var done = new spot_node_completion[2];
                done[0].token = recs[0].token; done[0].outcome = C.OUTCOME_OK;
                done[1].token = 0xdead; done[1].outcome = C.OUTCOME_OK;
                int s;
                fixed (spot_node_completion* p = done) s = Native.spot_node_complete(id, p, (UIntPtr)2);
                Assert.AreEqual((int)SpotStatus.InvalidCompletion, s);
                // Documented: nothing of the call was applied, so the valid completion still stands.
                fixed (spot_node_completion* p = done) s = Native.spot_node_complete(id, p, (UIntPtr)1);
                Assert.AreEqual(0, s, Native.LastError());
                Assert.AreEqual((0UL, 0UL), node.LaneUse(S, Lane.Application));
                // The same token twice in one call, an unknown outcome: refused as a whole too.
                node.Send(S, B("next"));
                node.Advance(TimeSpan.Zero);
                fixed (spot_node_record* p = recs)
                    Assert.AreEqual(0, Native.spot_node_exchange(id, null, UIntPtr.Zero, p, (UIntPtr)4, 0, &got));
                Assert.AreEqual(1UL, (ulong)got);
                done[0].token = recs[0].token; done[1].token = recs[0].token;
                fixed (spot_node_completion* p = done) s = Native.spot_node_complete(id, p, (UIntPtr)2);
                Assert.AreEqual((int)SpotStatus.InvalidCompletion, s);
                done[1].outcome = 9;
                fixed (spot_node_completion* p = done) s = Native.spot_node_complete(id, p, (UIntPtr)2);
                Assert.AreEqual((int)SpotStatus.UnknownEnum, s);
                fixed (spot_node_completion* p = done) s = Native.spot_node_complete(id, p, (UIntPtr)1);
                Assert.AreEqual(0, s, Native.LastError());
                Assert.AreEqual((0UL, 0UL), node.LaneUse(S, Lane.Application));
                var st = node.GetStats();
                Assert.AreEqual(2, st.MessagesCompleted);
                AssertQuietAccounting(node);
            }
        }

        [Test, Timeout(60000)]
        public void Lifecycle_RealClock_DispatchWaitsForWork_AndDisposeWakesAWaitingDispatch()
        {
            using (var store = new Store())
            {
                var node = new Node(new NodeOptions { NodeId = 1, EntrySpot = 100, Store = store });
                try
                {
                    Assert.Throws<NotManualClockException>(() => node.Advance(TimeSpan.Zero));
                    node.CreateUserSpot(5);
                    node.Every(5, 3, TimeSpan.FromMilliseconds(20), 99);
                    SpotWork tick = null;
                    var sw = Stopwatch.StartNew();
                    while (tick == null && sw.Elapsed < TimeSpan.FromSeconds(10))
                        node.Dispatch(x => { if (x.Kind == WorkKind.Tick) tick = x; }, TimeSpan.FromSeconds(1));
                    Assert.IsNotNull(tick, "a tick within 10 s");
                    Assert.AreEqual(3UL, tick.Key);
                    Assert.AreEqual(99UL, tick.Value);
                    node.Send(5, B("real"));
                    string got = null;
                    sw.Restart();
                    while (got == null && sw.Elapsed < TimeSpan.FromSeconds(10))
                        node.Dispatch(x => { if (x.Kind == WorkKind.Message) got = Encoding.UTF8.GetString(x.Payload); }, TimeSpan.FromSeconds(1));
                    Assert.AreEqual("real", got, "no Advance needed on the real clock");
                    node.CloseSpot(5, SpotKind.User); // no more ticks: the waiter below waits for good
                    Exception waiterError = null;
                    var entered = new ManualResetEventSlim();
                    var waiter = new Thread(() =>
                    {
                        try
                        {
                            entered.Set();
                            while (true) node.Dispatch(x => { }, System.Threading.Timeout.InfiniteTimeSpan);
                        }
                        catch (Exception e) { waiterError = e; }
                    });
                    waiter.Start();
                    entered.Wait();
                    Thread.Sleep(200);
                    sw.Restart();
                    node.Dispose();
                    Assert.IsTrue(waiter.Join(TimeSpan.FromSeconds(10)), "the waiting Dispatch woke");
                    Assert.IsInstanceOf<ObjectDisposedException>(waiterError);
                    Assert.Less(sw.Elapsed, TimeSpan.FromSeconds(5));
                }
                finally { node.Dispose(); }
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_BadInput()
        {
            using (var w = new World())
            {
                var node = w.Node(1);
                node.CreateUserSpot(S);
                // Closing the Entry Spot: it closes only with its node.
                Assert.Throws<WrongKindException>(() => node.CloseSpot(node.EntrySpot, SpotKind.Entry));
                Assert.Throws<WrongKindException>(() => node.CloseSpot(node.EntrySpot, SpotKind.User));
                Assert.Throws<WrongKindException>(() => node.CloseSpot(node.EntrySpot, SpotKind.Instance));
                Assert.AreEqual(SpotKind.Entry, node.GetSpotKind(node.EntrySpot));
                Assert.Throws<WrongKindException>(() => node.CreateUserSpot(node.EntrySpot));
                Assert.Throws<WrongKindException>(() => node.SendOrCreate(node.EntrySpot, B("x")));
                // Kinds 0 and 4, an unknown lane, an unknown clock: UnknownEnum, nothing done.
                foreach (uint k in new uint[] { 0, 4, 77 })
                {
                    var e = Assert.Throws<SpotInvalidArgumentException>(() => node.CloseSpot(S, (SpotKind)k));
                    Assert.AreEqual(SpotStatus.UnknownEnum, e.Status);
                }
                Assert.AreEqual(SpotKind.User, node.GetSpotKind(S));
                Assert.AreEqual(SpotStatus.UnknownEnum,
                    Assert.Throws<SpotInvalidArgumentException>(() => node.Send(S, B("x"), (Lane)2)).Status);
                Assert.AreEqual(SpotStatus.UnknownEnum,
                    Assert.Throws<SpotInvalidArgumentException>(() => node.LaneUse(S, (Lane)9)).Status);
                var oc = w.Options(2); oc.Clock = (ClockKind)9;
                Assert.AreEqual(SpotStatus.UnknownEnum, Assert.Throws<SpotInvalidArgumentException>(() => w.NodeWith(oc)).Status);
                Assert.AreEqual(0, node.GetStats().MessagesAdmitted);
                // Null and negative arguments.
                Assert.Throws<ArgumentNullException>(() => new Node(null));
                Assert.Throws<ArgumentNullException>(() => node.Send(S, null));
                Assert.Throws<ArgumentNullException>(() => node.SendLifecycle(S, null));
                Assert.Throws<ArgumentNullException>(() => node.SendOrCreate(S, null));
                Assert.Throws<ArgumentNullException>(() => node.Dispatch(null, TimeSpan.Zero));
                Assert.Throws<ArgumentOutOfRangeException>(() => node.Dispatch(x => { }, TimeSpan.FromSeconds(-2)));
                Assert.Throws<ArgumentOutOfRangeException>(() => node.Advance(TimeSpan.FromTicks(-1)));
                foreach (var bad in new[] { TimeSpan.Zero, TimeSpan.FromTicks(-1) })
                {
                    var o1 = w.Options(3); o1.InstanceIdleTimeout = bad;
                    Assert.Throws<ArgumentOutOfRangeException>(() => w.NodeWith(o1));
                    var o2 = w.Options(3); o2.OwnerLease = bad;
                    Assert.Throws<ArgumentOutOfRangeException>(() => w.NodeWith(o2));
                }
                var ob = w.Options(3); ob.BatchCapacity = 0;
                Assert.Throws<ArgumentOutOfRangeException>(() => w.NodeWith(ob));
                // An Entry Spot id another node of the store owns; a node id already live in the store.
                var od = w.Options(4); od.EntrySpot = node.EntrySpot;
                Assert.Throws<SpotInvalidArgumentException>(() => w.NodeWith(od));
                var on = w.Options(1); on.EntrySpot = 1999;
                Assert.AreEqual(SpotStatus.Store, Assert.Throws<LocationStoreException>(() => w.NodeWith(on)).Status);
                // An empty message is a message.
                node.Send(S, new byte[0]);
                CollectionAssert.AreEqual(new[] { "message 7 " }, RunReady(node));
            }
        }

        [Test, Timeout(30000)]
        public void Lifecycle_DispatchWithASmallBatchCapacity_CompletesEveryRecord()
        {
            using (var w = new World())
            {
                var o = w.Options(1);
                o.BatchCapacity = 3;
                var node = w.NodeWith(o);
                for (ulong i = 0; i < 10; i++)
                {
                    node.CreateUserSpot(100 + i);
                    node.Send(100 + i, B("m" + i));
                }
                node.Advance(TimeSpan.Zero);
                int first = node.Dispatch(x => { }, TimeSpan.Zero);
                Assert.AreEqual(3, first);
                var ran = RunReady(node);
                Assert.AreEqual(7, ran.Count);
                Assert.AreEqual(10, node.GetStats().MessagesCompleted);
            }
        }

        // ---- Listening for other processes' nodes (NodeOptions.Listen, Node.Address; ABI 2.3)

        [Test, Timeout(30000)]
        public void Listen_TheAddressBound_IsReadable_AndNoneIsNull()
        {
            using (var w = new World())
            {
                var o = w.Options(1);
                o.Listen = "127.0.0.1:0";
                var node = w.NodeWith(o);
                string addr = node.Address;
                Assert.IsNotNull(addr);
                StringAssert.StartsWith("127.0.0.1:", addr);
                int port = int.Parse(addr.Substring("127.0.0.1:".Length));
                Assert.That(port, Is.InRange(1, 65535));
                Assert.IsNull(w.Node(2).Address, "not listening: null");
                var empty = w.Options(3);
                empty.Listen = "";
                Assert.IsNull(w.NodeWith(empty).Address, "\"\" is not listening");
                // The address is taken: a readable error naming it.
                var taken = w.Options(4);
                taken.Listen = addr;
                var e = Assert.Throws<SpotInvalidArgumentException>(() => w.NodeWith(taken));
                Assert.AreEqual(SpotStatus.InvalidArgument, e.Status);
                StringAssert.Contains("cannot listen on " + addr, e.Message);
                // Disposed: the getter says so.
                node.Dispose();
                Assert.Throws<ObjectDisposedException>(() => { var a = node.Address; });
            }
        }

        [Test, Timeout(30000)]
        public void Listen_AnAddressThatIsNotIpAndPort_IsRefusedSayingWhy()
        {
            using (var w = new World())
            {
                foreach (var bad in new[] { "localhost:0", "127.0.0.1", "127.0.0.1:70000", "not an address" })
                {
                    var o = w.Options(1);
                    o.Listen = bad;
                    var e = Assert.Throws<SpotInvalidArgumentException>(() => w.NodeWith(o), bad);
                    Assert.AreEqual(SpotStatus.InvalidArgument, e.Status);
                    StringAssert.Contains("`cfg->listen` \"" + bad + "\" is not an address IP:PORT", e.Message);
                }
                Assert.AreEqual(0, w.FactoryRuns, "no node was started");
                Assert.IsNull(w.Node(1).Address, "the id starts fine afterwards");
            }
        }
    }
}
