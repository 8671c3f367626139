// Binding behaviour: handle release, handler exceptions, self-cancel, delegate lifetime,
// bad input.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    static class Proc
    {
        static string Status(string key)
        {
            foreach (var line in File.ReadAllLines("/proc/self/status"))
                if (line.StartsWith(key + ":")) return line.Substring(key.Length + 1).Trim();
            return "";
        }
        public static long RssKb() { return long.Parse(Status("VmRSS").Split(' ')[0]); }
        public static int Threads() { return int.Parse(Status("Threads")); }
    }

    [TestFixture]
    public class HandleTests
    {
        [Test, Timeout(120000)]
        public void SafeHandle_100000CreateDisposeCycles_NoLeak()
        {
            // Warm up, then measure RSS and OS threads around 100,000 cycles (each cycle starts
            // and joins one native scheduler thread).
            for (int i = 0; i < 2000; i++) using (var r = Runtime.CreateManual()) { }
            GC.Collect(); GC.WaitForPendingFinalizers();
            long rss0 = Proc.RssKb();
            int threads0 = Proc.Threads();
            var sw = Stopwatch.StartNew();
            int cycles = 0;
            for (; cycles < 100000; cycles++)
            {
                var rt = Runtime.CreateManual();
                if ((cycles & 1023) == 0) rt.AcquireOwner(1).Every(1, TimeSpan.FromMilliseconds(1), t => { });
                rt.Dispose();
                Assert.IsTrue(rt.Handle.IsClosed);
                if (sw.Elapsed > TimeSpan.FromSeconds(80)) break; // 7-30 s normally (one native thread start+join per cycle)
            }
            GC.Collect(); GC.WaitForPendingFinalizers();
            long rss1 = Proc.RssKb();
            int threads1 = Proc.Threads();
            Console.WriteLine("SafeHandle cycles: {0} in {1:F1} s ({2:F1} us/cycle); RSS {3} -> {4} KiB; threads {5} -> {6}",
                cycles, sw.Elapsed.TotalSeconds, sw.Elapsed.TotalMilliseconds * 1000 / cycles, rss0, rss1, threads0, threads1);
            Assert.AreEqual(100000, cycles, "did not finish 100,000 cycles within 80 s");
            Assert.LessOrEqual(threads1, threads0 + 1, "native scheduler threads leaked");
            Assert.Less(rss1 - rss0, 16 * 1024, "RSS grew by more than 16 MiB over 100,000 cycles");
        }

        [Test, Timeout(60000)]
        public void SafeHandle_AbandonedRuntimesAreFreedByTheFinalizer()
        {
            GC.Collect(); GC.WaitForPendingFinalizers();
            int threads0 = Proc.Threads();
            Abandon(50);
            int peak = Proc.Threads();
            Assert.Greater(peak, threads0 + 40);
            for (int i = 0; i < 100 && Proc.Threads() > threads0 + 2; i++)
            {
                GC.Collect(); GC.WaitForPendingFinalizers();
                Thread.Sleep(20);
            }
            // Mono's GC scans stacks conservatively: allow a few to survive a while longer.
            Console.WriteLine("abandoned runtimes: threads {0} -> peak {1} -> {2}", threads0, peak, Proc.Threads());
            Assert.LessOrEqual(Proc.Threads(), threads0 + 8, "abandoned runtimes kept their threads");
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        /// <summary>A Timer does not keep its Runtime alive (the table that roots live timers must
        /// not root runtimes): a Runtime abandoned while one of its Timers is still referenced is
        /// finalized, and that Timer then answers RuntimeClosed, Reset throws
        /// RuntimeClosedException and GetStats ObjectDisposedException.</summary>
        [Test, Timeout(60000)]
        public void TimerOfAnAbandonedRuntime_EndsRuntimeClosedOnceTheRuntimeIsFinalized()
        {
            var timer = TimerOfAbandonedRuntime();
            var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(30);
            while (!timer.HasEnded && DateTime.UtcNow < deadline)
            {
                GC.Collect(); GC.WaitForPendingFinalizers();
                Thread.Sleep(10);
            }
            Assert.IsTrue(timer.HasEnded, "the abandoned runtime was not finalized");
            Assert.AreEqual(EndReason.RuntimeClosed, timer.Cancel(T.Wait).Reason);
            Assert.Throws<RuntimeClosedException>(() => timer.Reset(TimeSpan.FromSeconds(1)));
            Assert.Throws<ObjectDisposedException>(() => timer.GetStats());
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static Timer TimerOfAbandonedRuntime()
        {
            var rt = new Runtime();
            return rt.AcquireOwner(1).Every(1, TimeSpan.FromHours(1), t => { });
        }

        static void Abandon(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var rt = new Runtime(new RuntimeOptions { Clock = i % 2 == 0 ? ClockKind.Manual : ClockKind.Real,
                                                          Delivery = i % 3 == 0 ? DeliveryMode.Callback : DeliveryMode.Exchange });
                rt.AcquireOwner(1).Every(1, TimeSpan.FromMilliseconds(5), t => { });
            }
        }

        /// <summary>A registration without options allocates nothing more than one with a
        /// caller's options object (the binding reads a shared default).</summary>
        [Test, Timeout(60000)]
        public void RegistrationWithoutOptions_AllocatesNoOptionsObject()
        {
            using (var rt = new Runtime(new RuntimeOptions { Clock = ClockKind.Manual }))
            {
                var owner = rt.AcquireOwner(1);
                Action<Tick> h = t => { };
                var mine = new TimerOptions();
                const int N = 10000;
                Func<TimerOptions, double> perArm = options =>
                {
                    var timers = new Timer[N];
                    for (int i = 0; i < 100; i++) owner.After((ulong)i, TimeSpan.FromSeconds(60), h, options).Cancel(TimeSpan.FromSeconds(5));
                    long before = GC.GetAllocatedBytesForCurrentThread();
                    for (int i = 0; i < N; i++) timers[i] = owner.After((ulong)i, TimeSpan.FromSeconds(60), h, options);
                    long after = GC.GetAllocatedBytesForCurrentThread();
                    foreach (var t in timers) t.Cancel(TimeSpan.FromSeconds(5));
                    return (after - before) / (double)N;
                };
                double withMine = perArm(mine), without = perArm(null);
                Assert.Greater(withMine, 0, "the allocation counter works");
                Assert.Less(without - withMine, 16, "bytes per registration: " + without + " without options, " + withMine + " with the caller's");
            }
        }

        [Test]
        public void DoubleDispose_IsHarmless_UseAfterDispose_RuntimeClosedOrObjectDisposed()
        {
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1);
            var timer = owner.Every(1, TimeSpan.FromMilliseconds(10), t => { });
            var pending = timer.CancelAsync();
            rt.Dispose();
            rt.Dispose();
            Assert.IsTrue(rt.IsDisposed);
            // registrations and owner calls: the contract's "runtime closed"
            Assert.Throws<RuntimeClosedException>(() => rt.AcquireOwner(2));
            Assert.Throws<RuntimeClosedException>(() => rt.Every(TimeSpan.FromMilliseconds(1), t => { }));
            Assert.Throws<RuntimeClosedException>(() => owner.Every(2, TimeSpan.FromMilliseconds(1), t => { }));
            Assert.Throws<RuntimeClosedException>(() => owner.After(2, TimeSpan.FromMilliseconds(1), t => { }));
            Assert.Throws<RuntimeClosedException>(() => owner.Renew(TimeSpan.FromSeconds(1)));
            Assert.Throws<RuntimeClosedException>(() => owner.Revoke());
            Assert.Throws<RuntimeClosedException>(() => owner.Release());
            Assert.Throws<RuntimeClosedException>(() => owner.EnterGate(TimeSpan.Zero));
            Assert.Throws<RuntimeClosedException>(() => owner.LeaveGate());
            // the freed clock and counters
            Assert.Throws<ObjectDisposedException>(() => rt.Advance(TimeSpan.FromMilliseconds(1)));
            Assert.Throws<ObjectDisposedException>(() => rt.GetStats());
            Assert.Throws<ObjectDisposedException>(() => { var n = rt.Now; });
            Assert.Throws<ObjectDisposedException>(() => timer.GetStats());
            // cancels: the generation's terminal result
            Assert.IsTrue(pending.Wait(5000));
            Assert.AreEqual(EndReason.Cancelled, pending.Result.Reason);
            Assert.AreEqual(EndReason.Cancelled, timer.Cancel(TimeSpan.FromSeconds(1)).Reason);
        }

        [Test, Timeout(30000)]
        public void CancelAfterDispose_GivesEachGenerationsTerminalResult_WithoutTheNativeRuntime()
        {
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1);
            var live = owner.Every(1, TimeSpan.FromMilliseconds(10), t => { });
            var superseded = owner.Every(2, TimeSpan.FromMilliseconds(10), t => { });
            var successor = owner.Every(2, TimeSpan.FromMilliseconds(10), t => { });
            int shots = 0;
            var oneShot = owner.After(3, TimeSpan.FromMilliseconds(5), t => shots++);
            var failing = owner.Every(4, TimeSpan.FromMilliseconds(10), t => { },
                new TimerOptions { OnRelease = () => { throw new InvalidOperationException("boom at close"); } });
            var other = rt.AcquireOwner(2);
            var revoked = other.Every(1, TimeSpan.FromMilliseconds(10), t => { });
            other.Revoke();
            var leased = rt.AcquireOwner(3, TimeSpan.FromMilliseconds(10));
            var expired = leased.Every(1, TimeSpan.FromMilliseconds(100), t => { });
            rt.Advance(TimeSpan.FromMilliseconds(20));
            Assert.AreEqual(1, shots);
            // many generations the close ends do not crowd out those that ended before
            var many = rt.AcquireOwner(4, null, GateMode.Concurrent);
            var crowd = new List<Timer>();
            for (int i = 0; i < 3000; i++) crowd.Add(many.Every((ulong)i, TimeSpan.FromSeconds(1), t => { }));
            rt.Dispose();
            foreach (var c in crowd) Assert.AreEqual(EndReason.RuntimeClosed, c.Cancel(TimeSpan.Zero).Reason);

            // None of these was cancelled before the dispose: the binding read the recorded
            // results of those that had ended before it freed the native runtime.
            var expect = new[]
            {
                Tuple.Create(live, EndReason.RuntimeClosed), Tuple.Create(superseded, EndReason.Superseded),
                Tuple.Create(successor, EndReason.RuntimeClosed), Tuple.Create(oneShot, EndReason.Completed),
                Tuple.Create(revoked, EndReason.Revoked), Tuple.Create(expired, EndReason.LeaseExpired),
            };
            foreach (var e in expect)
            {
                Assert.IsTrue(e.Item1.HasEnded, e.Item1.ToString());
                Assert.AreEqual(e.Item2, e.Item1.Cancel(TimeSpan.FromSeconds(5)).Reason, e.Item1.ToString());
                Assert.AreEqual(e.Item2, e.Item1.Cancel(Timeout.InfiniteTimeSpan).Reason, e.Item1.ToString() + " again");
                Assert.AreEqual(e.Item2, e.Item1.CancelAsync().Result.Reason, e.Item1.ToString() + " async");
                e.Item1.Dispose();
            }
            // the close ended it and its release hook failed: every caller sees the failure
            for (int i = 0; i < 2; i++)
            {
                var ex = Assert.Throws<CleanupFailedException>(() => failing.Cancel(TimeSpan.FromSeconds(5)));
                StringAssert.Contains("boom at close", ex.CleanupMessage);
            }
            var agg = Assert.Throws<AggregateException>(() => failing.CancelAsync().Wait(5000));
            Assert.IsInstanceOf<CleanupFailedException>(agg.InnerException);
        }

        [Test, Timeout(60000)]
        public void CancelAfterDispose_ManyUnreadEndsBefore_EveryOneKeepsItsResult()
        {
            // Each release hook records why its generation ended: no end nobody read is lost,
            // however many there were before the dispose.
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1, null, GateMode.Concurrent);
            var shots = new List<Timer>();
            for (int i = 0; i < 1500; i++) shots.Add(owner.After((ulong)i, TimeSpan.FromMilliseconds(1), t => { }));
            rt.Advance(TimeSpan.FromMilliseconds(1));
            rt.Dispose();
            foreach (var t in shots)
            {
                Assert.AreEqual(EndReason.Completed, t.Cancel(TimeSpan.FromSeconds(5)).Reason, t.ToString());
                Assert.AreEqual(EndReason.Completed, t.CancelAsync().Result.Reason, t.ToString());
            }
        }

        [Test, Timeout(60000)]
        public void CancelAfterDispose_RealClockAndCallbackDelivery_GiveRuntimeClosed()
        {
            foreach (var delivery in new[] { DeliveryMode.Exchange, DeliveryMode.Callback })
            {
                var rt = new Runtime(new RuntimeOptions { Delivery = delivery });
                int released = 0;
                var timers = new List<Timer>();
                for (int i = 0; i < 20; i++)
                    timers.Add(rt.Every(TimeSpan.FromMilliseconds(1), t => { },
                        new TimerOptions { OnRelease = () => Interlocked.Increment(ref released) }));
                var early = rt.AcquireOwner(7).Every(1, TimeSpan.FromMilliseconds(1), t => { });
                Assert.AreEqual(EndReason.Cancelled, early.Cancel(TimeSpan.FromSeconds(10)).Reason);
                var pending = timers[0].CancelAsync(); // may complete before the dispose or with it
                Thread.Sleep(20);
                rt.Dispose();
                Assert.AreEqual(20, Volatile.Read(ref released), delivery.ToString());
                Assert.IsTrue(pending.Wait(10000), delivery.ToString());
                Assert.AreEqual(pending.Result.Reason, timers[0].Cancel(TimeSpan.FromSeconds(10)).Reason);
                for (int i = 1; i < timers.Count; i++)
                {
                    Assert.AreEqual(EndReason.RuntimeClosed, timers[i].Cancel(TimeSpan.FromSeconds(10)).Reason, delivery + " " + i);
                    Assert.AreEqual(EndReason.RuntimeClosed, timers[i].CancelAsync().Result.Reason, delivery + " " + i);
                }
                Assert.AreEqual(EndReason.Cancelled, early.Cancel(TimeSpan.FromSeconds(10)).Reason);
                Assert.Throws<RuntimeClosedException>(() => rt.Every(TimeSpan.FromMilliseconds(1), t => { }), delivery.ToString());
            }
        }

        [Test, Timeout(60000)]
        public void DisposeFromInsideAHandler_ThenCancel_WouldDeadlockInside_RuntimeClosedAfterwards()
        {
            foreach (var mode in new[] { "manual", "real", "callback" })
            {
                var rt = mode == "manual" ? Runtime.CreateManual()
                    : new Runtime(new RuntimeOptions { Delivery = mode == "callback" ? DeliveryMode.Callback : DeliveryMode.Exchange });
                string inside = null;
                Task<CancelResult> async = null;
                var done = new ManualResetEventSlim();
                Timer timer = null;
                var registered = new ManualResetEventSlim();
                timer = rt.AcquireOwner(1).Every(1, TimeSpan.FromMilliseconds(5), t =>
                {
                    if (!registered.IsSet || done.IsSet) return;
                    rt.Dispose();
                    // The close completes after this batch (or has already ended this generation
                    // where the library closes from inside the callback).
                    try { inside = timer.Cancel(TimeSpan.FromSeconds(5)).Reason.ToString(); }
                    catch (WouldDeadlockException) { inside = "WouldDeadlock"; }
                    catch (Exception e) { inside = e.GetType().Name; }
                    async = timer.CancelAsync();
                    done.Set();
                });
                registered.Set();
                if (mode == "manual") rt.Advance(TimeSpan.FromMilliseconds(5));
                Assert.IsTrue(done.Wait(10000), mode);
                Assert.IsTrue(inside == "WouldDeadlock" || inside == "RuntimeClosed", mode + ": " + inside);
                Assert.IsTrue(async.Wait(10000), mode);
                Assert.AreEqual(EndReason.RuntimeClosed, async.Result.Reason, mode);
                Assert.AreEqual(EndReason.RuntimeClosed, timer.Cancel(TimeSpan.FromSeconds(10)).Reason, mode);
            }
        }

        [Test, Timeout(30000)]
        public void Dispose_FromInsideAHandler_FreesAfterTheBatch_NoDeadlock()
        {
            foreach (var mode in new[] { "manual", "real", "callback" })
            {
                var rt = mode == "manual" ? Runtime.CreateManual()
                    : new Runtime(new RuntimeOptions { Delivery = mode == "callback" ? DeliveryMode.Callback : DeliveryMode.Exchange });
                int released = 0, runs = 0, allRegistered = 0;
                var disposed = new ManualResetEventSlim();
                for (int i = 0; i < 5; i++)
                    rt.Every(TimeSpan.FromMilliseconds(5), t =>
                    {
                        // On the real clock a tick can come before the loop has registered all
                        // five (a loaded machine): dispose only once they all are.
                        if (Volatile.Read(ref allRegistered) == 1 && Interlocked.Increment(ref runs) == 1)
                        { rt.Dispose(); disposed.Set(); }
                    }, new TimerOptions { FirstDue = TimeSpan.FromMilliseconds(5), OnRelease = () => Interlocked.Increment(ref released) });
                Volatile.Write(ref allRegistered, 1);
                if (mode == "manual") rt.Advance(TimeSpan.FromMilliseconds(5));
                Assert.IsTrue(disposed.Wait(10000), mode);
                Assert.IsTrue(SpinWait.SpinUntil(() => Volatile.Read(ref released) == 5, 10000), mode + ": release hooks ran " + released);
                Assert.IsTrue(rt.IsDisposed);
                Assert.IsTrue(SpinWait.SpinUntil(() => rt.Handle.IsClosed, 10000), mode);
                Assert.Throws<ObjectDisposedException>(() => rt.GetStats());
            }
        }

        [Test]
        public void DisposedTimer_GetStatsThrows_CancelReportsTheRecordedResult()
        {
            using (var rt = Runtime.CreateManual())
            {
                var timer = rt.AcquireOwner(1).Every(1, TimeSpan.FromMilliseconds(10), t => { });
                timer.Dispose();
                timer.Dispose();
                Assert.Throws<ObjectDisposedException>(() => timer.GetStats());
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel(TimeSpan.FromSeconds(5)).Reason);
                Assert.AreEqual(EndReason.Cancelled, timer.CancelAsync().Result.Reason);
            }
        }

        [Test]
        public void RuntimeDisposedWhileTimersLive_EndsThemWithRuntimeClosed_AndRunsCleanup()
        {
            int released = 0;
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1);
            for (int i = 0; i < 10; i++)
                owner.Every((ulong)i, TimeSpan.FromMilliseconds(10), t => { }, new TimerOptions { OnRelease = () => Interlocked.Increment(ref released) });
            rt.Dispose();
            Assert.AreEqual(10, released);
        }

        /// <summary>A dispose takes its timers back from the library in batches of a thousand:
        /// across several batches, each generation ends once with its own result — RuntimeClosed,
        /// or CleanupFailed with its OnRelease's message — its OnRelease runs once,
        /// and generations that ended earlier keep their result.</summary>
        [Test, Timeout(60000)]
        public void RuntimeDisposedWith3500LiveTimers_EachEndsOnceWithItsOwnResult()
        {
            const int N = 3500;
            var releases = new int[N];
            var rt = new Runtime();
            var owner = rt.AcquireOwner(1);
            var timers = new Timer[N];
            for (int i = 0; i < N; i++)
            {
                int k = i;
                var options = new TimerOptions();
                if (i % 3 == 0) options.OnRelease = () => Interlocked.Increment(ref releases[k]);
                if (i == 1234) options.OnRelease = () => { Interlocked.Increment(ref releases[k]); throw new InvalidOperationException("cleanup 1234 failed"); };
                if (i % 7 == 0)
                    timers[i] = owner.After((ulong)i, TimeSpan.FromMinutes(5), (t, ct) => Task.CompletedTask, options);
                else
                    timers[i] = owner.After((ulong)i, TimeSpan.FromMinutes(5), t => { }, options);
            }
            Assert.AreEqual(EndReason.Cancelled, timers[5].Cancel(T.Wait).Reason);
            var superseded = timers[6];
            timers[6] = owner.After(6, TimeSpan.FromMinutes(5), t => { });
            Assert.AreEqual(EndReason.Superseded, superseded.Cancel(T.Wait).Reason);
            long live = StateTableLive();
            rt.Dispose();
            for (int i = 0; i < N; i++)
            {
                Assert.IsTrue(timers[i].HasEnded, "timer " + i);
                if (i == 1234)
                {
                    var e = Assert.Throws<CleanupFailedException>(() => timers[i].Cancel(T.Wait));
                    StringAssert.Contains("cleanup 1234 failed", e.Message);
                }
                else
                {
                    Assert.AreEqual(i == 5 ? EndReason.Cancelled : EndReason.RuntimeClosed, timers[i].Cancel(T.Wait).Reason, "timer " + i);
                }
                Assert.AreEqual(i % 3 == 0 || i == 1234 ? 1 : 0, releases[i], "OnRelease of timer " + i);
            }
            Assert.AreEqual(EndReason.Superseded, superseded.Cancel(T.Wait).Reason);
            // At least ours (N live, one cancelled): a finalized runtime of another test gives its back too.
            Assert.LessOrEqual(StateTableLive(), live - (N - 1), "the states of the disposed runtime's timers are given back");
        }

        static long StateTableLive()
        {
            var table = typeof(Runtime).Assembly.GetType("SpotTimer.StateTable");
            return (int)table.GetProperty("Live", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static).GetValue(null);
        }

        [Test]
        public void OneShot_DeliversOnce_WithIndicesOne_ThenCompleted()
        {
            using (var rt = Runtime.CreateManual())
            {
                var got = new List<Tick>();
                var timer = rt.After(TimeSpan.FromMilliseconds(30), t => got.Add(t));
                rt.Advance(TimeSpan.FromMilliseconds(29));
                Assert.AreEqual(0, got.Count);
                rt.Advance(TimeSpan.FromMilliseconds(100));
                Assert.AreEqual(1, got.Count);
                Assert.AreEqual(1, got[0].DeliveryIndex);
                Assert.AreEqual(1, got[0].ScheduledIndex);
                Assert.AreEqual(0, got[0].SkippedTicks);
                Assert.IsTrue(ReferenceEquals(timer, got[0].Timer), "the tick's Timer is the registering one");
                Assert.AreEqual(timer.GetHashCode(), got[0].Timer.GetHashCode());
                Assert.IsFalse(timer == rt.After(TimeSpan.FromMilliseconds(30), t => { }));
                Assert.AreEqual(EndReason.Completed, timer.Cancel(TimeSpan.FromSeconds(5)).Reason);
            }
        }
    }

    [TestFixture]
    public class HandlerTests
    {
        [Test, Timeout(30000)]
        public void ThrowingSyncHandler_CompletesFailed_RaisesEvent_DispatcherKeepsGoing()
        {
            using (var rt = Runtime.CreateManual())
            {
                var failures = new ConcurrentQueue<HandlerFailedEventArgs>();
                rt.HandlerFailed += (s, e) => failures.Enqueue(e);
                int good = 0;
                var bad = rt.Every(TimeSpan.FromMilliseconds(10), (Action<Tick>)(t => { throw new InvalidOperationException("bad " + t.DeliveryIndex); }));
                rt.Every(TimeSpan.FromMilliseconds(10), t => good++);
                for (int i = 0; i < 3; i++) rt.Advance(TimeSpan.FromMilliseconds(10));
                Assert.AreEqual(3, good);
                Assert.AreEqual(3, failures.Count);
                var first = failures.First();
                Assert.IsInstanceOf<InvalidOperationException>(first.Exception);
                Assert.AreEqual("bad 1", first.Exception.Message);
                Assert.AreEqual(bad, first.Timer);
                var st = bad.GetStats();
                Assert.AreEqual(3, st.Delivered);
                Assert.AreEqual(3, st.Failed);
                Assert.AreEqual(3, rt.GetStats().CompletedFailed);
            }
        }

        [Test, Timeout(30000)]
        public void ThrowingAsyncHandler_AndFaultedTask_CompleteFailed()
        {
            using (var rt = Runtime.CreateManual())
            {
                var failures = new ConcurrentQueue<Exception>();
                rt.HandlerFailed += (s, e) => failures.Enqueue(e.Exception);
                var a = rt.Every(TimeSpan.FromMilliseconds(10), (Func<Tick, Task>)(t => { throw new ArgumentException("sync part"); }));
                var b = rt.Every(TimeSpan.FromMilliseconds(10), async t => { await Task.Yield(); throw new FormatException("after await"); });
                rt.Advance(TimeSpan.FromMilliseconds(10));
                Assert.IsTrue(rt.Settle(TimeSpan.FromSeconds(10)));
                rt.Advance(TimeSpan.FromMilliseconds(10));
                Assert.IsTrue(rt.Settle(TimeSpan.FromSeconds(10)));
                Assert.AreEqual(4, failures.Count);
                Assert.AreEqual(2, failures.Count(e => e is ArgumentException));
                Assert.AreEqual(2, failures.Count(e => e is FormatException));
                Assert.AreEqual(2, a.GetStats().Failed);
                Assert.AreEqual(2, b.GetStats().Failed);
            }
        }

        [Test, Timeout(30000)]
        public void ThrowingEventSubscriber_DoesNotBreakDelivery()
        {
            using (var rt = Runtime.CreateManual())
            {
                rt.HandlerFailed += (s, e) => { throw new Exception("subscriber"); };
                int n = 0;
                // (a lambda that only throws also converts to Func<Tick, Task>: pick the sync overload)
                rt.Every(TimeSpan.FromMilliseconds(10), (Action<Tick>)(t => { n++; throw new Exception("handler"); }));
                rt.Advance(TimeSpan.FromMilliseconds(10));
                rt.Advance(TimeSpan.FromMilliseconds(10));
                Assert.AreEqual(2, n);
            }
        }

        [Test, Timeout(30000)]
        public void CancelFromInsideOwnSyncHandler_BlockingThrowsWouldDeadlock_AsyncCompletesAfterHandler()
        {
            using (var rt = Runtime.CreateManual())
            {
                Exception blocking = null;
                Task<CancelResult> nonBlocking = null;
                bool completedInside = true;
                int runs = 0;
                rt.Every(TimeSpan.FromMilliseconds(10), t =>
                {
                    runs++;
                    try { t.Timer.Cancel(TimeSpan.FromSeconds(5)); } catch (Exception e) { blocking = e; }
                    nonBlocking = t.Timer.CancelAsync();
                    completedInside = nonBlocking.IsCompleted;
                });
                rt.Advance(TimeSpan.FromMilliseconds(10));
                Assert.IsInstanceOf<WouldDeadlockException>(blocking);
                Assert.IsFalse(completedInside);
                Assert.IsTrue(nonBlocking.Wait(5000));
                Assert.AreEqual(EndReason.Cancelled, nonBlocking.Result.Reason);
                rt.Advance(TimeSpan.FromMilliseconds(50));
                Assert.AreEqual(1, runs);
            }
        }

        [Test, Timeout(30000)]
        public void CancelFromInsideOwnAsyncHandler_RealClock_NoDeadlock()
        {
            using (var rt = new Runtime())
            {
                var blocking = new TaskCompletionSource<Exception>();
                Task<CancelResult> nonBlocking = null;
                int runs = 0;
                rt.Every(TimeSpan.FromMilliseconds(5), async t =>
                {
                    if (Interlocked.Increment(ref runs) > 1) return;
                    await Task.Delay(1);
                    try { t.Timer.Cancel(TimeSpan.FromSeconds(5)); blocking.SetResult(null); }
                    catch (Exception e) { blocking.SetResult(e); }
                    nonBlocking = t.Timer.CancelAsync();
                });
                Assert.IsTrue(blocking.Task.Wait(10000));
                Assert.IsInstanceOf<WouldDeadlockException>(blocking.Task.Result);
                SpinWait.SpinUntil(() => nonBlocking != null, 5000);
                Assert.IsTrue(nonBlocking.Wait(10000));
                Assert.AreEqual(EndReason.Cancelled, nonBlocking.Result.Reason);
                Thread.Sleep(50);
                Assert.AreEqual(1, Volatile.Read(ref runs));
            }
        }

        [Test, Timeout(30000)]
        public void BlockingCancelOfAnotherTimer_FromAHandlerOnTheDispatcher_DoesNotDeadlock()
        {
            foreach (var clock in new[] { ClockKind.Manual, ClockKind.Real })
            {
                using (var rt = new Runtime(new RuntimeOptions { Clock = clock }))
                {
                    var release = new TaskCompletionSource<bool>();
                    int bStarted = 0;
                    var b = rt.AcquireOwner(2).Every(1, TimeSpan.FromMilliseconds(10), async t =>
                    {
                        Interlocked.Increment(ref bStarted);
                        await release.Task;
                    });
                    CancelResult? result = null;
                    Exception error = null;
                    var done = new ManualResetEventSlim();
                    rt.AcquireOwner(1).After(1, TimeSpan.FromMilliseconds(25), t =>
                    {
                        Task.Delay(50).ContinueWith(_ => release.SetResult(true));
                        try { result = b.Cancel(TimeSpan.FromSeconds(10)); }
                        catch (Exception e) { error = e; }
                        done.Set();
                    });
                    if (clock == ClockKind.Manual)
                    {
                        rt.Advance(TimeSpan.FromMilliseconds(10));
                        SpinWait.SpinUntil(() => Volatile.Read(ref bStarted) == 1, 5000);
                        rt.Advance(TimeSpan.FromMilliseconds(15));
                    }
                    Assert.IsTrue(done.Wait(15000), clock + ": handler blocked");
                    Assert.IsNull(error, clock + ": " + error);
                    Assert.AreEqual(EndReason.Cancelled, result.Value.Reason);
                }
            }
        }

        [Test, Timeout(60000)]
        public void DelegateLifetime_ForcedGCWhileCallbackModeRuntimeRuns()
        {
            var counts = new long[50];
            using (var rt = new Runtime(new RuntimeOptions { Delivery = DeliveryMode.Callback }))
            {
                for (int i = 0; i < counts.Length; i++)
                {
                    int k = i;
                    // fresh closures, referenced only through the binding
                    if (k % 2 == 0) rt.Every(TimeSpan.FromMilliseconds(2), t => Interlocked.Increment(ref counts[k]));
                    else rt.Every(TimeSpan.FromMilliseconds(2), async t => { await Task.Yield(); Interlocked.Increment(ref counts[k]); });
                }
                var sw = Stopwatch.StartNew();
                long before = 0;
                int collections = 0;
                while (sw.ElapsedMilliseconds < 1500)
                {
                    GC.Collect(2, GCCollectionMode.Forced, true);
                    GC.WaitForPendingFinalizers();
                    collections++;
                    if (collections == 5) before = counts.Sum();
                    var junk = new byte[1 << 16][];
                    for (int j = 0; j < junk.Length; j += 64) junk[j] = new byte[128];
                }
                long after = counts.Sum();
                Assert.Greater(after, before + 100, "deliveries stopped during forced GCs");
                Assert.IsTrue(counts.All(c => c > 10), "some timer stopped");
            }
            GC.Collect(); GC.WaitForPendingFinalizers();
        }

        [Test, Timeout(30000)]
        public void CallbackMode_ManualClock_DeliversDuringAdvance()
        {
            using (var rt = new Runtime(new RuntimeOptions { Clock = ClockKind.Manual, Delivery = DeliveryMode.Callback }))
            {
                var got = new List<Tick>();
                var t = rt.Every(TimeSpan.FromMilliseconds(10), x => got.Add(x));
                rt.Advance(TimeSpan.FromMilliseconds(10));
                rt.Advance(TimeSpan.FromMilliseconds(30));
                Assert.AreEqual(2, got.Count);
                Assert.AreEqual(4, got[1].ScheduledIndex);
                var s = rt.GetStats();
                Assert.AreEqual(2, s.HostCrossings);
                Assert.AreEqual(EndReason.Cancelled, t.Cancel(TimeSpan.FromSeconds(5)).Reason);
            }
        }

        [Test, Timeout(30000)]
        public void HandlerBlockingLongerThanItsPeriod_RealClock_NoOverlap_TicksSkipped()
        {
            using (var rt = new Runtime())
            {
                int inFlight = 0, maxInFlight = 0;
                var ticks = new ConcurrentQueue<Tick>();
                var timer = rt.Every(TimeSpan.FromMilliseconds(10), t =>
                {
                    int n = Interlocked.Increment(ref inFlight);
                    if (n > maxInFlight) maxInFlight = n;
                    ticks.Enqueue(t);
                    Thread.Sleep(35);
                    Interlocked.Decrement(ref inFlight);
                });
                Thread.Sleep(400);
                timer.Cancel(TimeSpan.FromSeconds(5));
                Assert.AreEqual(1, maxInFlight);
                var list = ticks.ToList();
                Assert.Greater(list.Count, 3);
                Assert.Less(list.Count, 20);
                Assert.IsTrue(list.Skip(1).All(t => t.SkippedTicks >= 2), "late ticks should be skipped (SkipLateTicks)");
                for (int i = 0; i < list.Count; i++) Assert.AreEqual(i + 1, list[i].DeliveryIndex);
            }
        }

        [Test, Timeout(30000)]
        public void RealClock_ExchangeDispatcher_DeliversInBatches()
        {
            using (var rt = new Runtime())
            {
                long n = 0;
                // same period and phase: every wakeup carries ~2000 records
                var t0 = rt.Now + TimeSpan.FromMilliseconds(100);
                for (int i = 0; i < 2000; i++)
                    rt.Every(TimeSpan.FromMilliseconds(20), t => Interlocked.Increment(ref n), new TimerOptions { FirstDue = t0 - rt.Now });
                Thread.Sleep(500);
                var s = rt.GetStats();
                Assert.Greater(Interlocked.Read(ref n), 20000);
                Assert.Less((double)s.HostCrossings / s.RecordsReceived, 0.05, "crossings per record");
                Assert.AreEqual(1, s.SchedulerThreads);
            }
        }
    }

    [TestFixture]
    public class BadInputTests
    {
        [Test]
        public void NullHandlers_ThrowArgumentNull()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                Assert.Throws<ArgumentNullException>(() => rt.Every(TimeSpan.FromMilliseconds(1), (Action<Tick>)null));
                Assert.Throws<ArgumentNullException>(() => rt.Every(TimeSpan.FromMilliseconds(1), (Func<Tick, Task>)null));
                Assert.Throws<ArgumentNullException>(() => owner.After(1, TimeSpan.FromMilliseconds(1), (Action<Tick>)null));
                Assert.Throws<ArgumentNullException>(() => owner.After(1, TimeSpan.FromMilliseconds(1), (Func<Tick, Task>)null));
                Assert.Throws<ArgumentNullException>(() => new Runtime(null));
            }
        }

        [Test]
        public void NegativeDurations_ThrowArgumentOutOfRange()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                var neg = TimeSpan.FromMilliseconds(-1);
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.Every(1, neg, t => { }));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.After(1, neg, t => { }));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.Every(1, TimeSpan.FromMilliseconds(1), t => { }, new TimerOptions { FirstDue = neg }));
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.AcquireOwner(2, neg));
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.AcquireOwner(2, TimeSpan.Zero));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.Renew(neg));
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.Advance(neg));
                var timer = owner.Every(1, TimeSpan.FromMilliseconds(1), t => { });
                Assert.Throws<ArgumentOutOfRangeException>(() => timer.Cancel(TimeSpan.FromSeconds(-2)));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.EnterGate(TimeSpan.FromSeconds(-2)));
            }
        }

        [Test]
        public void ZeroPeriod_IsRejectedByTheNativeLibrary()
        {
            using (var rt = Runtime.CreateManual())
            {
                var e = Assert.Throws<SpotInvalidArgumentException>(() => rt.Every(TimeSpan.Zero, t => { }));
                Assert.AreEqual(SpotTimer.Interop.SpotStatus.InvalidArgument, e.Status);
                StringAssert.Contains("period", e.NativeMessage);
            }
        }

        [Test]
        public void MaxCatchUpTicksOutOfRange_ThrowsArgumentOutOfRange()
        {
            using (var rt = Runtime.CreateManual())
            {
                foreach (long bad in new long[] { 0, -1, (long)int.MaxValue + 1, long.MaxValue })
                    Assert.Throws<ArgumentOutOfRangeException>(() => rt.Every(TimeSpan.FromMilliseconds(1), t => { },
                        new TimerOptions { Policy = OverrunPolicy.CatchUpBounded, MaxCatchUpTicks = bad }), bad.ToString());
                rt.Every(TimeSpan.FromMilliseconds(1), t => { }, new TimerOptions { Policy = OverrunPolicy.CatchUpBounded, MaxCatchUpTicks = int.MaxValue });
                rt.Every(TimeSpan.FromMilliseconds(1), t => { }, new TimerOptions { Policy = OverrunPolicy.CatchUpBounded, MaxCatchUpTicks = 1 });
            }
        }

        [Test]
        public void UnknownPolicyValue_IsRejectedNotTransmuted()
        {
            using (var rt = Runtime.CreateManual())
            {
                var e = Assert.Throws<SpotInvalidArgumentException>(() => rt.Every(TimeSpan.FromMilliseconds(1), t => { },
                    new TimerOptions { Policy = (OverrunPolicy)77 }));
                Assert.AreEqual(SpotTimer.Interop.SpotStatus.UnknownEnum, e.Status);
                Assert.Throws<ArgumentOutOfRangeException>(() => new Runtime(new RuntimeOptions { Clock = (ClockKind)9 }));
            }
        }

        [Test]
        public void AdvanceOnRealClock_ThrowsNotManualClock()
        {
            using (var rt = new Runtime())
            {
                Assert.Throws<NotManualClockException>(() => rt.Advance(TimeSpan.FromMilliseconds(1)));
            }
        }

        [Test]
        public void RevokedOwner_RegisterThrowsOwnerRevoked_GateLeaveWithoutEnterThrows()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                owner.Revoke();
                Assert.Throws<OwnerRevokedException>(() => owner.Every(1, TimeSpan.FromMilliseconds(1), t => { }));
                Assert.Throws<OwnerRevokedException>(() => owner.Revoke());
                var o2 = rt.AcquireOwner(2);
                Assert.Throws<SpotInvalidArgumentException>(() => o2.LeaveGate());
            }
        }

        [Test]
        public void StatusNamesAndAbiVersion()
        {
            Assert.AreEqual(0x0002000bu, SpotTimer.Interop.Native.spot_abi_version()); // 2.11: spot_runtime_close_handing_back (2.10: spot_timer_register_held)
            Assert.AreEqual("SPOT_E_TIMEOUT", SpotTimer.Interop.Native.StatusName(11));
            Assert.AreEqual("SPOT_E_UNKNOWN_STATUS", SpotTimer.Interop.Native.StatusName(999));
        }
    }
}
