using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using NUnit.Framework;

namespace SpotTimer.Tests
{
    /// <summary>The etcd Location Store from .NET (Store.Etcd). Without etcd: bad configurations
    /// and an unreachable endpoint are specific exceptions. With etcd (SPOT_ETCD_ENDPOINT, set by
    /// tests/cluster/with-etcd.sh in make test-cluster): two nodes on two etcd stores, as two
    /// processes would be, agree on who owns a Spot; a node started with Listen is reached over
    /// TCP (a message from the other store's node runs on it, a creation placed on it runs there
    /// with its first message).</summary>
    [TestFixture]
    public class EtcdStoreTests
    {
        [Test]
        public void Etcd_UnreachableEndpoint_IsALocationStoreExceptionNamingIt()
        {
            var e = Assert.Throws<LocationStoreException>(() =>
                Store.Etcd(new[] { "http://127.0.0.1:1" }, connectTimeout: TimeSpan.FromSeconds(1)));
            StringAssert.Contains("127.0.0.1:1", e.Message);
            StringAssert.Contains("cannot be reached", e.Message);
        }

        [Test]
        public void Etcd_BadConfigurations_AreRefused()
        {
            Assert.Throws<ArgumentNullException>(() => Store.Etcd(null));
            Assert.Throws<SpotInvalidArgumentException>(() => Store.Etcd(new string[0]));
            Assert.Throws<SpotInvalidArgumentException>(() => Store.Etcd(new[] { "not a url" }));
            Assert.Throws<SpotInvalidArgumentException>(() =>
                Store.Etcd(new[] { "http://127.0.0.1:1" }, leaseTtl: TimeSpan.FromMilliseconds(1500)));
            Assert.Throws<SpotInvalidArgumentException>(() =>
                Store.Etcd(new[] { "http://127.0.0.1:1" }, prefix: "no-slash"));
            Assert.Throws<ArgumentOutOfRangeException>(() =>
                Store.Etcd(new[] { "http://127.0.0.1:1" }, connectTimeout: TimeSpan.Zero));
        }

        [Test]
        public void EmbeddedStore_MakesNoEtcdRequests()
        {
            using (var store = new Store())
            {
                Assert.IsFalse(store.IsEtcd);
                Assert.AreEqual(0UL, store.Requests);
            }
        }

        [Test]
        public void Etcd_TwoNodes_AgreeOnTheOwner_AndSteadySendsAskNothing()
        {
            string endpoint = Environment.GetEnvironmentVariable("SPOT_ETCD_ENDPOINT");
            if (string.IsNullOrEmpty(endpoint))
                Assert.Ignore("no etcd (make test-cluster runs this under tests/cluster/with-etcd.sh)");
            string prefix = "/spot-dotnet-test-" + System.Diagnostics.Process.GetCurrentProcess().Id + "/";
            int instanceFactoryRuns = 0;
            Action<ulong, SpotKind> factory = (id, kind) =>
            {
                if (kind == SpotKind.Instance) Interlocked.Increment(ref instanceFactoryRuns);
            };
            using (var s1 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var s2 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var n1 = new Node(new NodeOptions { NodeId = 1, EntrySpot = 2000001, Store = s1, Factory = factory }))
            using (var n2 = new Node(new NodeOptions { NodeId = 2, EntrySpot = 2000002, Store = s2, Factory = factory }))
            {
                Assert.IsTrue(s1.IsEtcd);
                var msg = Encoding.UTF8.GetBytes("hello");
                Assert.GreaterOrEqual(n1.SendOrCreate(42, msg), 1UL);
                Assert.AreEqual(1, instanceFactoryRuns);
                // Node 2 finds Spot 42 owned by node 1, which lives and does not listen:
                // Unavailable, never a second creation.
                var e = Assert.Throws<SpotUnavailableException>(() => n2.SendOrCreate(42, msg));
                StringAssert.Contains("does not listen", e.Message);
                Assert.AreEqual(1, instanceFactoryRuns);
                ulong before = s1.Requests;
                Assert.Greater(before, 0UL);
                for (int i = 0; i < 100; i++) n1.Send(42, msg);
                Assert.AreEqual(before, s1.Requests, "a steady-state send asks etcd nothing");
                Assert.Throws<SpotInvalidArgumentException>(() => s1.ExpireNode(2));
            }
        }

        static string Endpoint()
        {
            string endpoint = Environment.GetEnvironmentVariable("SPOT_ETCD_ENDPOINT");
            if (string.IsNullOrEmpty(endpoint))
                Assert.Ignore("no etcd (make test-cluster runs this under tests/cluster/with-etcd.sh)");
            return endpoint;
        }

        static string Prefix(string what)
        {
            return "/spot-dotnet-" + what + "-" + System.Diagnostics.Process.GetCurrentProcess().Id + "-" + DateTime.UtcNow.Ticks + "/";
        }

        /// <summary>Dispatches until <paramref name="want"/> messages ran or <paramref name="timeout"/>
        /// passed, then once more briefly (to catch any beyond it): "spot payload" of each.</summary>
        static List<string> RunAll(Node node, int want, TimeSpan timeout)
        {
            var ran = new List<string>();
            Action<SpotWork> note = w => ran.Add(w.SpotId + " " + Encoding.UTF8.GetString(w.Payload));
            var until = DateTime.UtcNow + timeout;
            while (ran.Count < want && DateTime.UtcNow < until) node.Dispatch(note, TimeSpan.FromMilliseconds(50));
            while (node.Dispatch(note, TimeSpan.FromMilliseconds(200)) > 0) { }
            return ran;
        }

        static void AssertListens(Node node)
        {
            string addr = node.Address;
            Assert.IsNotNull(addr);
            StringAssert.StartsWith("127.0.0.1:", addr);
            Assert.That(int.Parse(addr.Substring("127.0.0.1:".Length)), Is.InRange(1, 65535));
        }

        [Test, Timeout(60000)]
        public void Etcd_AMessageFromAnotherProcess_ReachesTheOwnerOverTcp()
        {
            string endpoint = Endpoint(), prefix = Prefix("tcp-msg");
            var made = new ConcurrentDictionary<ulong, int>();
            Action<ulong, SpotKind> factory = (id, kind) => made.AddOrUpdate(id, 1, (k, v) => v + 1);
            using (var s1 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var s2 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var n1 = new Node(new NodeOptions { NodeId = 1, EntrySpot = 2000001, Store = s1, Factory = factory, Listen = "127.0.0.1:0" }))
            using (var n2 = new Node(new NodeOptions { NodeId = 2, EntrySpot = 2000002, Store = s2, Factory = factory }))
            {
                AssertListens(n1);
                Assert.IsNull(n2.Address);
                ulong gen = n1.SendOrCreate(77, Encoding.UTF8.GetBytes("created"));
                n2.Send(77, Encoding.UTF8.GetBytes("over tcp"));
                Assert.AreEqual(gen, n2.SendOrCreate(77, Encoding.UTF8.GetBytes("again")), "the same Spot, not a second one");
                Assert.AreEqual(1, made[77]);
                CollectionAssert.AreEqual(new[] { "77 created", "77 over tcp", "77 again" },
                                          RunAll(n1, 3, TimeSpan.FromSeconds(5)));
                CollectionAssert.IsEmpty(RunAll(n2, 0, TimeSpan.Zero), "nothing runs on the sender");
                Assert.Throws<SpotNotFoundException>(() => n2.GetSpotKind(77));
            }
        }

        [Test, Timeout(60000)]
        public void Etcd_ACreationPlacedOnTheListeningNode_RunsThereWithItsFirstMessage()
        {
            string endpoint = Endpoint(), prefix = Prefix("tcp-place");
            var made = new ConcurrentDictionary<ulong, int>();
            Action<ulong, SpotKind> factory = (id, kind) => made.AddOrUpdate(id, 1, (k, v) => v + 1);
            using (var s1 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var s2 = Store.Etcd(new[] { endpoint }, prefix, TimeSpan.FromSeconds(4)))
            using (var n1 = new Node(new NodeOptions { NodeId = 1, EntrySpot = 2000001, Store = s1, Factory = factory, Listen = "127.0.0.1:0" }))
            // Node 2 holds its Entry Spot only: placement picks node 1.
            using (var n2 = new Node(new NodeOptions { NodeId = 2, EntrySpot = 2000002, Store = s2, Factory = factory, Listen = "127.0.0.1:0", ActiveCap = 1 }))
            {
                AssertListens(n1);
                AssertListens(n2);
                Assert.AreNotEqual(n1.Address, n2.Address);
                Assert.GreaterOrEqual(n2.SendOrCreate(88, Encoding.UTF8.GetBytes("first")), 1UL);
                Assert.AreEqual(1, made[88]);
                Assert.AreEqual(SpotKind.Instance, n1.GetSpotKind(88));
                Assert.Throws<SpotNotFoundException>(() => n2.GetSpotKind(88));
                CollectionAssert.AreEqual(new[] { "88 first" }, RunAll(n1, 1, TimeSpan.FromSeconds(5)));
                CollectionAssert.IsEmpty(RunAll(n2, 0, TimeSpan.Zero));
            }
        }
    }
}
