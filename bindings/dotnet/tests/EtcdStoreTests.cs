using System;
using System.Text;
using System.Threading;
using NUnit.Framework;

namespace SpotTimer.Tests
{
    /// <summary>The etcd Location Store from .NET (Store.Etcd). Without etcd: bad configurations
    /// and an unreachable endpoint are specific exceptions. With etcd (SPOT_ETCD_ENDPOINT, set by
    /// tests/cluster/with-etcd.sh in make test-cluster): two nodes on two etcd stores, as two
    /// processes would be, agree on who owns a Spot.</summary>
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
                // Node 2 finds Spot 42 owned by node 1: told so, never a second creation.
                Assert.Throws<StaleRouteException>(() => n2.SendOrCreate(42, msg));
                Assert.AreEqual(1, instanceFactoryRuns);
                ulong before = s1.Requests;
                Assert.Greater(before, 0UL);
                for (int i = 0; i < 100; i++) n1.Send(42, msg);
                Assert.AreEqual(before, s1.Requests, "a steady-state send asks etcd nothing");
                Assert.Throws<SpotInvalidArgumentException>(() => s1.ExpireNode(2));
            }
        }
    }
}
