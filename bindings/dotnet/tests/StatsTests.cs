// Contract T7/T10 tick accounting through Runtime.GetStats() (ABI 1.1 counters TicksDue and
// TicksDiscarded): once every generation has ended, TicksDue == CompletedOk +
// CompletedFailed + TicksSkipped + TicksDroppedAuthority + TicksDiscarded.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;
using SpotTimer.Interop;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class StatsTests
    {
        static string Ticks(List<Tick> l)
        {
            var parts = new List<string>();
            foreach (var t in l) parts.Add(t.DeliveryIndex + "/" + t.ScheduledIndex + "/" + t.SkippedTicks);
            return string.Join(" ", parts);
        }

        /// <summary>One schema: the core's list of stats fields (what <c>Prometheus</c> writes) is
        /// <c>spot_stats</c>'s fields and RuntimeStats's counters. A field
        /// added in Rust only fails here.</summary>
        [Test, Timeout(30000)]
        public void EveryCoreStatsField_IsInSpotStats_AndInRuntimeStats()
        {
            var core = new List<string>();
            using (var rt = Runtime.CreateManual())
            {
                foreach (var line in rt.Prometheus("x").Split('\n'))
                {
                    if (!line.StartsWith("# TYPE x_") || line.StartsWith("# TYPE x_lateness_seconds ")) continue;
                    string[] parts = line.Split(' ');
                    string name = parts[2].Substring(2);
                    if (parts[3] == "counter" && name.EndsWith("_total")) name = name.Substring(0, name.Length - 6);
                    core.Add(name);
                }
            }
            Assert.Greater(core.Count, 20);
            var mirrored = new List<string>();
            foreach (var f in typeof(spot_stats).GetFields(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public))
                if (f.Name != "struct_size" && f.Name != "reserved") mirrored.Add(f.Name);
            // (spot_stats keeps the ABI's append order, the core its own: compared as sets.)
            core.Sort(StringComparer.Ordinal);
            mirrored.Sort(StringComparer.Ordinal);
            CollectionAssert.AreEqual(core, mirrored, "spot_stats fields vs the core's stats list");
            int managed = typeof(RuntimeStats).GetProperties(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public).Length;
            Assert.AreEqual(core.Count + 1, managed, "RuntimeStats: every core field, and ManagedTransitions");
        }

        static string Snake(string pascal)
        {
            return System.Text.RegularExpressions.Regex.Replace(pascal, "(?<=[a-z0-9])([A-Z])", "_$1").ToUpperInvariant();
        }

        /// <summary>Every value 0..255 the library names (from its Rust enum) is a member of
        /// <typeparamref name="T"/> under that name, and every member is named so.</summary>
        static void MirrorsTheLibrary<T>(Func<uint, string> name, string prefix, string unknown)
        {
            var problems = new List<string>();
            int named = 0;
            for (uint v = 0; v < 256; v++)
            {
                string n = name(v);
                if (n == unknown) continue;
                named++;
                if (!Enum.IsDefined(typeof(T), Convert.ChangeType(v, Enum.GetUnderlyingType(typeof(T)))))
                    problems.Add(v + " " + n + ": no " + typeof(T).Name + " member");
                else
                {
                    string mine = Enum.GetName(typeof(T), Convert.ChangeType(v, Enum.GetUnderlyingType(typeof(T))));
                    string spelled = mine == "Ok" && prefix == "SPOT_E_" ? "SPOT_OK" : prefix + Snake(mine);
                    if (spelled != n) problems.Add(v + " " + n + " vs " + typeof(T).Name + "." + mine);
                }
            }
            Assert.IsEmpty(problems, string.Join("; ", problems));
            Assert.AreEqual(Enum.GetValues(typeof(T)).Length, named, typeof(T).Name + " members vs the library's");
        }

        /// <summary>One schema: the status codes, end reasons and closing reasons the library
        /// names are exactly SpotStatus's, EndReason's and CloseReason's. A value added in Rust
        /// only fails here.</summary>
        [Test]
        public void StatusesEndReasonsAndCloseReasons_AreTheLibrarys()
        {
            MirrorsTheLibrary<SpotStatus>(v => Native.StatusName((int)v), "SPOT_E_", "SPOT_E_UNKNOWN_STATUS");
            MirrorsTheLibrary<EndReason>(v => System.Runtime.InteropServices.Marshal.PtrToStringAnsi(Native.spot_end_reason_name(v)),
                                         "SPOT_END_", "SPOT_END_UNKNOWN");
            MirrorsTheLibrary<CloseReason>(v => System.Runtime.InteropServices.Marshal.PtrToStringAnsi(Native.spot_close_reason_name(v)),
                                           "SPOT_CLOSE_", "SPOT_CLOSE_UNKNOWN");
        }

        /// <summary>One schema: the lifecycle's list of node counters (what
        /// <c>Node.Prometheus</c> writes) is <c>spot_node_stats</c>'s fields and NodeStats's
        /// properties. A field added in Rust only fails here.</summary>
        [Test, Timeout(30000)]
        public void EveryNodeStatsField_IsInSpotNodeStats_AndInNodeStats()
        {
            var core = new List<string>();
            using (var store = new Store())
            using (var node = new Node(new NodeOptions { NodeId = 1, EntrySpot = 1001, Clock = ClockKind.Manual, Store = store }))
            {
                string text = node.Prometheus("n");
                StringAssert.Contains("# TYPE n_active_spots gauge\nn_active_spots 1\n", text);
                foreach (var line in text.Split('\n'))
                {
                    if (!line.StartsWith("# TYPE n_")) continue;
                    string[] parts = line.Split(' ');
                    string name = parts[2].Substring(2);
                    if (parts[3] == "counter" && name.EndsWith("_total")) name = name.Substring(0, name.Length - 6);
                    core.Add(name);
                }
                Assert.AreEqual(1, node.GetStats().ActiveSpots);
                var e = Assert.Throws<SpotInvalidArgumentException>(() => node.Prometheus("9bad"));
                Assert.AreEqual(SpotStatus.InvalidArgument, e.Status);
            }
            Assert.Greater(core.Count, 15);
            var mirrored = new List<string>();
            foreach (var f in typeof(spot_node_stats).GetFields(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public))
                if (f.Name != "struct_size" && f.Name != "reserved") mirrored.Add(f.Name);
            var managed = new List<string>();
            foreach (var p in typeof(NodeStats).GetProperties(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public))
                managed.Add(Snake(p.Name).ToLowerInvariant());
            core.Sort(StringComparer.Ordinal);
            mirrored.Sort(StringComparer.Ordinal);
            managed.Sort(StringComparer.Ordinal);
            CollectionAssert.AreEqual(core, mirrored, "spot_node_stats fields vs the lifecycle's list");
            CollectionAssert.AreEqual(core, managed, "NodeStats properties vs the lifecycle's list");
        }

        [Test]
        public void AbiVersion_IsTheOneThisBindingMirrors()
        {
            Assert.AreEqual(0x0002000bu, C.ABI_VERSION);
            // The library may be a newer minor of the same major (minors only add).
            uint lib = Native.spot_abi_version();
            Assert.AreEqual(C.ABI_VERSION >> 16, lib >> 16, "major");
            Assert.GreaterOrEqual(lib & 0xffff, C.ABI_VERSION & 0xffff, "minor");
        }

        [Test, Timeout(30000)]
        public void Lateness_AndThePrometheusExposition_ComeFromTheRuntime()
        {
            using (var rt = Runtime.CreateManual())
            {
                Assert.IsNull(rt.LatenessQuantile(0.5), "nothing recorded yet");
                var ticks = new List<Tick>();
                var o = rt.AcquireOwner(1);
                var t = o.Every(1, T.Ms(10), x => ticks.Add(x));
                rt.Advance(T.Ms(25)); // tick 2 (due 20 ms) handed over at 25 ms
                Assert.AreEqual("1/2/1", Ticks(ticks));
                var p100 = rt.LatenessQuantile(1.0).Value;
                Assert.Greater(p100, T.Ms(5));
                Assert.LessOrEqual(p100, TimeSpan.FromTicks(T.Ms(5).Ticks * 5 / 4));
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.LatenessQuantile(1.5));
                string text = rt.Prometheus("app");
                StringAssert.Contains("# TYPE app_live_timers gauge\n", text);
                StringAssert.Contains("# TYPE app_records_published_total counter\n", text);
                StringAssert.Contains("# TYPE app_lateness_seconds histogram\n", text);
                StringAssert.Contains("app_lateness_seconds_bucket{le=\"+Inf\"} 1\n", text);
                StringAssert.Contains("app_lateness_seconds_count 1\n", text);
                foreach (var line in text.Split('\n'))
                {
                    if (line.Length == 0 || line[0] == '#') continue;
                    var value = line.Substring(line.LastIndexOf(' ') + 1);
                    double d;
                    Assert.IsTrue(double.TryParse(value, System.Globalization.NumberStyles.Float,
                        System.Globalization.CultureInfo.InvariantCulture, out d) || value == "+Inf", line);
                }
                Assert.Throws<SpotInvalidArgumentException>(() => rt.Prometheus("9bad"));
                t.Cancel(T.Wait);
            }
        }

        [Test, Timeout(30000)]
        public void TickAccountingIdentity_HoldsOnceEveryGenerationEnded()
        {
            using (var rt = Runtime.CreateManual())
            {
                int failures = 0;
                rt.HandlerFailed += (sender, args) => failures++;
                var o1 = rt.AcquireOwner(1, null, GateMode.Concurrent);
                var o2 = rt.AcquireOwner(2);   // serial gates, held by the test below
                var o3 = rt.AcquireOwner(3);
                var a = new List<Tick>(); var b = new List<Tick>(); var c = new List<Tick>();
                var e = new List<Tick>(); var p = new List<Tick>(); var q = new List<Tick>();
                var g = new List<Tick>(); var f = new List<Tick>();
                var cDone = new TaskCompletionSource<bool>();
                var cSecondStarted = new System.Threading.ManualResetEventSlim();

                var ta = o1.Every(1, T.Ms(10), t => a.Add(t));
                var tb = o1.Every(2, T.Ms(10), t =>
                {
                    b.Add(t);
                    if (t.DeliveryIndex == 1) throw new InvalidOperationException("b's first tick fails");
                }, new TimerOptions { Policy = OverrunPolicy.CatchUpBounded, MaxCatchUpTicks = 2 });
                var tc = o1.Every(3, T.Ms(10), t =>
                {
                    // async: runs on the thread pool. The second tick's handler is still running
                    // when C is cancelled; it fails.
                    c.Add(t);
                    if (t.DeliveryIndex != 2) return Task.FromResult(true);
                    cSecondStarted.Set();
                    return cDone.Task;
                }, new TimerOptions { Policy = OverrunPolicy.DelayNextTick });
                o1.After(5, T.Ms(5), t => e.Add(t));
                // P and Q come due in one batch: the first to run cancels the other, whose
                // record is already in the batch (it must not start: its ticks are discarded)
                Timer tp = null, tq = null;
                tp = o1.Every(7, T.Ms(10), t => { p.Add(t); if (q.Count == 0) tq.CancelAsync(); });
                tq = o1.Every(8, T.Ms(10), t => { q.Add(t); if (p.Count == 0) tp.CancelAsync(); });
                var tg = o2.Every(1, T.Ms(10), t => g.Add(t));
                var tf = o3.Every(1, T.Ms(10), t => f.Add(t));

                Assert.IsTrue(o2.EnterGate(T.Wait));
                Assert.IsTrue(o3.EnterGate(T.Wait));
                // t=35: A 3 (skips 2), B 2 (skips 1) then 3, C 1, E, P or Q 3 (skips 2) run;
                // G's and F's 3 due ticks wait for their owners' gates
                rt.Advance(T.Ms(35));
                Assert.AreEqual("1/3/2", Ticks(a));
                Assert.AreEqual("1/2/1 2/3/0", Ticks(b));
                Assert.AreEqual("1/1/0", Ticks(e));
                Assert.AreEqual(1, p.Count + q.Count, "a cancelled record of the running batch started");
                var survivor = p.Count == 1 ? tp : tq;
                var victim = p.Count == 1 ? tq : tp;
                Assert.AreEqual("1/3/2", Ticks(p.Count == 1 ? p : q));
                Assert.AreEqual(EndReason.Cancelled, victim.Cancel(T.Wait).Reason);
                Assert.AreEqual(EndReason.Cancelled, tg.Cancel(T.Wait).Reason);  // G: 3 discarded
                o3.Revoke();                                                      // F: 3 dropped
                Assert.AreEqual(EndReason.Revoked, tf.Cancel(T.Wait).Reason);
                o2.LeaveGate();
                o3.LeaveGate();
                // C's first (async) completion is applied at t=35: its next tick is due at 45
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual("1/1/0", Ticks(c));
                Assert.AreEqual(0, g.Count + f.Count);
                Assert.AreEqual(1, failures);
                var s0 = rt.GetStats();
                Assert.Greater(s0.GateWaits, 0);

                // t=45: A 4, B 4, survivor 4 run; C's tick 2 starts and stays running
                rt.Advance(T.Ms(10));
                Assert.IsTrue(cSecondStarted.Wait(T.Wait), "C's second tick did not start");
                Assert.AreEqual("1/1/0 2/2/0", Ticks(c));
                var cancelC = tc.CancelAsync();   // with C's record in the host's hands
                Assert.IsFalse(cancelC.IsCompleted);
                Assert.IsFalse(tc.HasEnded);
                cDone.SetException(new InvalidOperationException("c's second tick fails"));
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.IsTrue(cancelC.Wait(T.Wait));
                Assert.AreEqual(EndReason.Cancelled, cancelC.Result.Reason);
                Assert.AreEqual(2, failures);

                rt.Advance(T.Ms(10));             // t=55: A 5, B 5, survivor 5
                Assert.AreEqual("1/3/2 2/4/0 3/5/0", Ticks(a));
                var live = rt.GetStats();
                Assert.AreEqual(3, live.LiveTimers);
                foreach (var t in new[] { ta, tb, survivor })
                    Assert.AreEqual(EndReason.Cancelled, t.Cancel(T.Wait).Reason);

                var st = rt.GetStats();
                Assert.AreEqual(0, st.LiveTimers);
                Assert.AreEqual(8, st.Registered);
                Assert.AreEqual(st.Registered, st.Ended);
                Assert.AreEqual(st.TicksDue,
                    st.CompletedOk + st.CompletedFailed + st.TicksSkipped + st.TicksDroppedAuthority + st.TicksDiscarded,
                    "accounting identity");
                Assert.AreEqual(st.RecordsPublished,
                    st.CompletedOk + st.CompletedFailed + st.CompletedDeferred + st.NotStarted + st.RecordsAbandoned,
                    "record identity");
                Assert.LessOrEqual(st.RecordsTakenBack, st.NotStarted);
                Assert.Greater(st.TicksDue, 0);
                Assert.Greater(st.TicksDiscarded, 0);
                Assert.Greater(st.TicksSkipped, 0);
                Assert.Greater(st.TicksDroppedAuthority, 0);
                // A 5 + B 5 + C 2 + E 1 + P/Q 3 + 5 + G 3 + F 3
                Assert.AreEqual(27, st.TicksDue);
                Assert.AreEqual(11, st.CompletedOk);       // A 3, B 3, C 1, E 1, survivor 3
                Assert.AreEqual(2, st.CompletedFailed);    // B 1, C 1
                Assert.AreEqual(5, st.TicksSkipped);       // A 2, B 1, survivor 2
                Assert.AreEqual(3, st.TicksDroppedAuthority);
                Assert.AreEqual(6, st.TicksDiscarded);     // victim 3, G 3
                long skipped = 0, failed = 0;
                foreach (var t in new[] { ta, tb, tc, survivor })
                {
                    var ts = t.GetStats();
                    skipped += ts.SkippedTicks;
                    failed += ts.Failed;
                }
                Assert.AreEqual(st.TicksSkipped, skipped);
                Assert.AreEqual(st.CompletedFailed, failed);
            }
        }

        [Test]
        public void BlockingCancelOfAnIdleTimer_NeverWakesTheScheduler()
        {
            // Real clock: the scheduler sleeps until the earliest deadline, an hour away.
            using (var rt = new Runtime(new RuntimeOptions { Clock = ClockKind.Real }))
            {
                var owner = rt.AcquireOwner(1);
                var timers = new List<Timer>();
                for (ulong k = 0; k < 200; k++)
                    timers.Add(owner.After(k, TimeSpan.FromHours(1), t => { }));
                // the first registration woke the scheduler (an earlier deadline): let it settle
                var before = rt.GetStats();
                for (int i = 0; i < 100; i++)
                {
                    Thread.Sleep(20);
                    var settled = before;
                    before = rt.GetStats();
                    if (settled.Wakeups == before.Wakeups) break;
                }
                foreach (var t in timers)
                    Assert.AreEqual(EndReason.Cancelled, t.Cancel(TimeSpan.FromSeconds(10)).Reason);
                var after = rt.GetStats();
                Assert.AreEqual(200, after.Ended - before.Ended);
                // each cancel ended its timer on the calling thread
                Assert.AreEqual(before.Wakeups, after.Wakeups);
                Assert.AreEqual(before.SchedulerWakesByHosts, after.SchedulerWakesByHosts);
            }
        }
    }
}
