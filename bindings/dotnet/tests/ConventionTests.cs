// .NET conventions of the binding (README, ".NET conventions"): CancelAsync with a
// CancellationToken, async handlers that take a token, Cancel() without arguments, TickStream
// (a PeriodicTimer-style loop), IAsyncDisposable, and the BCL exceptions next to the
// SpotTimerException hierarchy.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class ConventionTests
    {
        static readonly TimeSpan P = T.Ms(10);

        static void Eventually(Func<bool> cond, string what)
        {
            var sw = System.Diagnostics.Stopwatch.StartNew();
            while (!cond())
            {
                if (sw.Elapsed > T.Wait) Assert.Fail("not within " + T.Wait + ": " + what);
                Thread.Sleep(2);
            }
        }

        static bool IsCanceled(Task t)
        {
            try { t.Wait(T.Wait); }
            catch (AggregateException e) { Assert.IsInstanceOf<TaskCanceledException>(e.InnerException); }
            return t.IsCanceled;
        }

        // ------------------------------------------------------------------ CancelAsync(token)

        [Test, Timeout(30000)]
        public void CancelAsync_TokenCancelledFirst_TaskCancelled_ButTheTimerCancelStands()
        {
            using (var rt = Runtime.CreateManual())
            {
                var release = new TaskCompletionSource<bool>();
                int runs = 0;
                var started = new ManualResetEventSlim();
                var timer = rt.AcquireOwner(1).Every(1, P, async tick =>
                {
                    Interlocked.Increment(ref runs);
                    started.Set();
                    await release.Task;
                });
                rt.Advance(P);
                Assert.IsTrue(started.Wait(T.Wait));
                var cts = new CancellationTokenSource();
                var waiting = timer.CancelAsync(cts.Token);
                Assert.IsFalse(waiting.IsCompleted, "the handler still runs: no result yet");
                cts.Cancel();
                Assert.IsTrue(IsCanceled(waiting), "cancelling the token cancels the wait");
                Assert.IsFalse(timer.HasEnded, "the running handler is not interrupted");
                release.SetResult(true);
                Assert.IsTrue(rt.Settle(T.Wait)); // manual clock: the cancel notice comes with the next delivery
                Assert.AreEqual(EndReason.Cancelled, timer.CancelAsync().Result.Reason, "the cancel took effect");
                rt.Advance(T.Ms(100));
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(1, runs, "no tick after the cancel");
            }
        }

        [Test, Timeout(30000)]
        public void CancelAsync_AlreadyCancelledToken_TheTimerIsCancelledAnyway()
        {
            using (var rt = Runtime.CreateManual())
            {
                int runs = 0;
                var timer = rt.AcquireOwner(1).Every(1, P, tick => { runs++; });
                var cancelled = new CancellationToken(true);
                var t = timer.CancelAsync(cancelled);
                // The generation had no handler running: the result is there at once, and wins.
                Assert.IsTrue(t.IsCompleted);
                Assert.AreEqual(EndReason.Cancelled, t.Result.Reason);
                rt.Advance(T.Ms(50));
                Assert.AreEqual(0, runs);

                var release = new ManualResetEventSlim();
                var started = new ManualResetEventSlim();
                var busy = rt.AcquireOwner(2, gate: GateMode.Concurrent).Every(1, P, async tick =>
                {
                    started.Set();
                    await Task.Run(() => release.Wait());
                });
                rt.Advance(P);
                Assert.IsTrue(started.Wait(T.Wait));
                Assert.IsTrue(IsCanceled(busy.CancelAsync(cancelled)), "no result yet: the task is cancelled");
                release.Set();
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(EndReason.Cancelled, busy.CancelAsync().Result.Reason);
            }
        }

        [Test, Timeout(30000)]
        public void CancelAsync_TokenNeverCancelled_GivesTheTerminalResult()
        {
            using (var rt = Runtime.CreateManual())
            {
                var cts = new CancellationTokenSource();
                var timer = rt.AcquireOwner(1).Every(1, P, tick => { });
                Assert.AreEqual(EndReason.Cancelled, timer.CancelAsync(cts.Token).Result.Reason);
                var cleanup = rt.AcquireOwner(2).Every(1, P, tick => { },
                    new TimerOptions { OnRelease = () => { throw new InvalidOperationException("boom"); } });
                var agg = Assert.Throws<AggregateException>(() => cleanup.CancelAsync(cts.Token).Wait(T.Wait));
                Assert.IsInstanceOf<CleanupFailedException>(agg.InnerException);
            }
        }

        // ------------------------------------------------------------------ Cancel()

        [Test, Timeout(30000)]
        public void Cancel_WithoutArguments_WaitsWithoutLimitForTheRunningHandler()
        {
            Assert.AreEqual(Timeout.InfiniteTimeSpan, SpotTimer.Timer.DefaultCancelTimeout);
            using (var rt = new Runtime())
            {
                var started = new ManualResetEventSlim();
                int ended = 0;
                var timer = rt.AcquireOwner(1).Every(1, P, tick =>
                {
                    started.Set();
                    Thread.Sleep(300);
                    Volatile.Write(ref ended, 1);
                });
                Assert.IsTrue(started.Wait(T.Wait));
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel().Reason);
                Assert.AreEqual(1, Volatile.Read(ref ended), "Cancel() returned after the handler ended");
                Assert.IsTrue(timer.HasEnded);
            }
        }

        [Test, Timeout(30000)]
        public void Cancel_WithoutArguments_InsideOwnHandler_WouldDeadlock_AndTheCancelCompletes()
        {
            using (var rt = Runtime.CreateManual())
            {
                Exception seen = null;
                var timer = rt.AcquireOwner(1).Every(1, P, tick =>
                {
                    try { tick.Timer.Cancel(); } catch (Exception e) { seen = e; }
                });
                rt.Advance(P);
                Assert.IsInstanceOf<WouldDeadlockException>(seen);
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel().Reason);
            }
        }

        // ------------------------------------------------------------------ handler tokens

        [Test, Timeout(30000)]
        public void TokenHandler_CancelRequested_TokenCancelled_BlockingCancelReturns_NotAFailure()
        {
            using (var rt = Runtime.CreateManual())
            {
                int failed = 0;
                rt.HandlerFailed += (s, e) => Interlocked.Increment(ref failed);
                var started = new ManualResetEventSlim();
                var tokens = new List<CancellationToken>();
                var timer = rt.AcquireOwner(1).Every(1, P, async (tick, ct) =>
                {
                    lock (tokens) tokens.Add(ct);
                    if (tick.DeliveryIndex < 3) return;
                    started.Set();
                    await Task.Delay(Timeout.Infinite, ct);  // ends Canceled when ct is cancelled
                });
                for (int i = 0; i < 2; i++) { rt.Advance(P); Assert.IsTrue(rt.Settle(T.Wait)); }
                rt.Advance(P);
                Assert.IsTrue(started.Wait(T.Wait));
                lock (tokens)
                {
                    Assert.AreEqual(3, tokens.Count);
                    Assert.IsTrue(tokens.All(t => t == tokens[0]), "one token per generation");
                    Assert.IsTrue(tokens[0].CanBeCanceled);
                    Assert.IsFalse(tokens[0].IsCancellationRequested, "not cancelled while the timer runs");
                }
                var sw = System.Diagnostics.Stopwatch.StartNew();
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel(T.Wait).Reason);
                Assert.Less(sw.Elapsed, TimeSpan.FromSeconds(5), "the token let the handler end");
                Assert.IsTrue(tokens[0].IsCancellationRequested);
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(0, Volatile.Read(ref failed), "a handler cancelled by its token did not fail");
                var st = rt.GetStats();
                Assert.AreEqual(0, st.CompletedFailed);
                Assert.AreEqual(3, st.CompletedOk);
            }
        }

        [Test, Timeout(30000)]
        public void TokenHandler_ThrowsOperationCanceledSynchronously_AfterCancel_NotAFailure()
        {
            using (var rt = Runtime.CreateManual())
            {
                int failed = 0;
                rt.HandlerFailed += (s, e) => Interlocked.Increment(ref failed);
                var inHandler = new ManualResetEventSlim();
                var go = new ManualResetEventSlim();
                var timer = rt.After(P, (tick, ct) =>
                {
                    inHandler.Set();
                    go.Wait();
                    while (!ct.IsCancellationRequested) Thread.Sleep(1);
                    ct.ThrowIfCancellationRequested();
                    return Task.CompletedTask;
                });
                rt.Advance(P);
                Assert.IsTrue(inHandler.Wait(T.Wait));
                var end = timer.CancelAsync();
                go.Set();
                Assert.IsTrue(rt.Settle(T.Wait));
                Assert.AreEqual(EndReason.Cancelled, end.Result.Reason);
                Assert.AreEqual(0, Volatile.Read(ref failed));
            }
        }

        [Test, Timeout(30000)]
        public void TokenHandler_CancelledTaskWithoutItsTokenCancelled_IsAFailure()
        {
            using (var rt = Runtime.CreateManual())
            {
                var failures = new List<Exception>();
                rt.HandlerFailed += (s, e) => { lock (failures) failures.Add(e.Exception); };
                var other = new CancellationToken(true);
                rt.AcquireOwner(1).Every(1, P, (tick, ct) => Task.FromCanceled(other));
                rt.Advance(P);
                Assert.IsTrue(rt.Settle(T.Wait));
                lock (failures)
                {
                    Assert.AreEqual(1, failures.Count);
                    Assert.IsInstanceOf<TaskCanceledException>(failures[0]);
                }
                Assert.AreEqual(1, rt.GetStats().CompletedFailed);
            }
        }

        /// <summary>Captures the token of a timer's first tick (manual clock, handler ends at once).</summary>
        static CancellationToken FirstToken(Runtime rt, Owner owner, ulong key)
        {
            CancellationToken token = default(CancellationToken);
            owner.Every(key, P, (tick, ct) => { token = ct; return Task.CompletedTask; });
            rt.Advance(P);
            Assert.IsTrue(rt.Settle(T.Wait));
            Assert.IsTrue(token.CanBeCanceled);
            Assert.IsFalse(token.IsCancellationRequested);
            return token;
        }

        [Test, Timeout(30000)]
        public void TokenHandler_TokenCancelled_WhenSupersededRevokedReleasedReacquiredOrLeaseExpired()
        {
            using (var rt = Runtime.CreateManual())
            {
                var a = rt.AcquireOwner(1, gate: GateMode.Concurrent);
                var superseded = FirstToken(rt, a, 1);
                var survivor = FirstToken(rt, a, 2);
                a.Every(1, P, tick => { });                     // key 1 again
                Eventually(() => superseded.IsCancellationRequested, "superseded");
                Assert.IsFalse(survivor.IsCancellationRequested, "another key is not touched");
                a.Revoke();
                Eventually(() => survivor.IsCancellationRequested, "revoked");

                var b = rt.AcquireOwner(2, gate: GateMode.Concurrent);
                var released = FirstToken(rt, b, 1);
                b.Release();
                Eventually(() => released.IsCancellationRequested, "released");

                var c = rt.AcquireOwner(3, gate: GateMode.Concurrent);
                var older = FirstToken(rt, c, 1);
                var c2 = rt.AcquireOwner(3, gate: GateMode.Concurrent); // a new epoch revokes the older authority
                var newer = FirstToken(rt, c2, 1);
                Eventually(() => older.IsCancellationRequested, "re-acquired");
                Assert.IsFalse(newer.IsCancellationRequested);

                var d = rt.AcquireOwner(4, lease: T.Ms(50), gate: GateMode.Concurrent);
                var leased = FirstToken(rt, d, 1);
                rt.Advance(T.Ms(100));
                Eventually(() => leased.IsCancellationRequested, "lease expired");

                CancellationToken oneShot = default(CancellationToken);
                rt.After(P, (tick, ct) => { oneShot = ct; return Task.CompletedTask; });
                rt.Advance(P);
                Assert.IsTrue(rt.Settle(T.Wait));
                Eventually(() => oneShot.IsCancellationRequested, "the one-shot completed");
            }
        }

        [Test, Timeout(30000)]
        public void TokenHandler_RuntimeDisposed_TokenCancelled_HandlerSeesItAndEnds()
        {
            var rt = new Runtime();
            var running = new ManualResetEventSlim();
            var sawCancel = new ManualResetEventSlim();
            rt.Every(P, async (tick, ct) =>
            {
                running.Set();
                try { await Task.Delay(Timeout.Infinite, ct); }
                catch (OperationCanceledException) { sawCancel.Set(); throw; }
            });
            Assert.IsTrue(running.Wait(T.Wait));
            rt.Dispose();
            Assert.IsTrue(sawCancel.Wait(T.Wait), "the dispose cancelled the handler's token");
        }

        [Test]
        public void TokenHandler_NullHandler_ArgumentNullException()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                Assert.Throws<ArgumentNullException>(() => rt.Every(P, (Func<Tick, CancellationToken, Task>)null));
                Assert.Throws<ArgumentNullException>(() => rt.After(P, (Func<Tick, CancellationToken, Task>)null));
                Assert.Throws<ArgumentNullException>(() => owner.Every(1, P, (Func<Tick, CancellationToken, Task>)null));
                Assert.Throws<ArgumentNullException>(() => owner.After(1, P, (Func<Tick, CancellationToken, Task>)null));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.Every(1, T.Ms(-1), (t, ct) => Task.CompletedTask));
                Assert.Throws<ArgumentOutOfRangeException>(() => owner.Every(1, T.Ms(-1)));
            }
        }

        // ------------------------------------------------------------------ TickStream

        [Test, Timeout(30000)]
        public void TickStream_WaitCompletesTrueAtEachTick()
        {
            using (var rt = Runtime.CreateManual())
            using (TickStream s = rt.AcquireOwner(1).Every(1, P))
            {
                for (int i = 1; i <= 3; i++)
                {
                    var w = s.WaitForNextTickAsync();
                    Assert.IsFalse(w.IsCompleted, "no tick yet");
                    rt.Advance(P);
                    Assert.IsTrue(w.Wait(T.Wait));
                    Assert.IsTrue(w.Result);
                    Assert.AreEqual(i, s.LastTick.DeliveryIndex);
                    Assert.AreEqual(1UL, s.LastTick.Key);
                    Assert.AreEqual(s.Timer, s.LastTick.Timer);
                }
                Assert.AreEqual(3, s.Timer.GetStats().Delivered);
            }
        }

        [Test, Timeout(30000)]
        public void TickStream_TicksWhileNobodyWaits_AreCoalescedIntoOne()
        {
            using (var rt = Runtime.CreateManual())
            using (TickStream s = rt.AcquireOwner(1).Every(1, P))
            {
                for (int i = 0; i < 3; i++) rt.Advance(P);   // three ticks, nobody waiting
                var w = s.WaitForNextTickAsync();
                Assert.IsTrue(w.IsCompleted, "a tick arrived since the last wait: at once");
                Assert.IsTrue(w.Result);
                Assert.AreEqual(3, s.LastTick.DeliveryIndex, "the newest of the coalesced ticks");
                var next = s.WaitForNextTickAsync();
                Assert.IsFalse(next.IsCompleted, "the three ticks counted once");
                rt.Advance(P);
                Assert.IsTrue(next.Result);
                Assert.AreEqual(4, s.LastTick.DeliveryIndex);
            }
        }

        [Test, Timeout(30000)]
        public void TickStream_Dispose_WaitingAndLaterWaitsGetFalse_EvenWithATickPending()
        {
            using (var rt = Runtime.CreateManual())
            {
                var s = rt.AcquireOwner(1).Every(1, P);
                var w = s.WaitForNextTickAsync();
                s.Dispose();
                Assert.IsTrue(w.Wait(T.Wait));
                Assert.IsFalse(w.Result);
                Assert.IsFalse(s.WaitForNextTickAsync().Result);
                Assert.AreEqual(EndReason.Cancelled, s.Timer.CancelAsync().Result.Reason);
                s.Dispose();

                var pending = rt.AcquireOwner(2).Every(1, P);
                rt.Advance(P);
                pending.Dispose();
                Assert.IsFalse(pending.WaitForNextTickAsync().Result, "the pending tick is dropped (as PeriodicTimer)");
            }
        }

        [Test, Timeout(30000)]
        public void TickStream_EndsWhenItsTimerEnds_CancelSupersedeRevokeLeaseDispose()
        {
            var rt = Runtime.CreateManual();
            var owner = rt.AcquireOwner(1);

            var cancelled = owner.Every(1, P);
            var w1 = cancelled.WaitForNextTickAsync();
            Assert.AreEqual(EndReason.Cancelled, cancelled.Timer.Cancel().Reason);
            Assert.IsFalse(w1.Result, "Timer.Cancel");

            var superseded = owner.Every(2, P);
            var w2 = superseded.WaitForNextTickAsync();
            owner.Every(2, P, tick => { });
            Assert.IsFalse(w2.Result, "the key registered again");
            Assert.AreEqual(EndReason.Superseded, superseded.Timer.CancelAsync().Result.Reason);

            var other = rt.AcquireOwner(2);
            var revoked = other.Every(1, P);
            var w3 = revoked.WaitForNextTickAsync();
            other.Revoke();
            Assert.IsFalse(w3.Result, "the owner revoked");

            var leased = rt.AcquireOwner(3, lease: T.Ms(50)).Every(1, T.Ms(200));
            var w4 = leased.WaitForNextTickAsync();
            rt.Advance(T.Ms(100));
            Assert.IsFalse(w4.Result, "the lease expired");
            Assert.AreEqual(EndReason.LeaseExpired, leased.Timer.CancelAsync().Result.Reason);

            var live = owner.Every(3, P);
            var w5 = live.WaitForNextTickAsync();
            rt.Dispose();
            Assert.IsFalse(w5.Result, "the runtime disposed");
            Assert.IsFalse(live.WaitForNextTickAsync().Result);
            Assert.AreEqual(EndReason.RuntimeClosed, live.Timer.CancelAsync().Result.Reason);
        }

        [Test, Timeout(30000)]
        public void TickStream_TokenCancelsTheWaitOnly_TheTimerGoesOn()
        {
            using (var rt = Runtime.CreateManual())
            using (TickStream s = rt.AcquireOwner(1).Every(1, P))
            {
                var cts = new CancellationTokenSource();
                var w = s.WaitForNextTickAsync(cts.Token);
                cts.Cancel();
                Assert.IsTrue(IsCanceled(w));
                rt.Advance(P);
                var next = s.WaitForNextTickAsync(cts.Token);
                Assert.IsTrue(next.IsCompleted && next.Result, "a pending tick wins over a cancelled token");
                Assert.IsTrue(IsCanceled(s.WaitForNextTickAsync(cts.Token)), "nothing pending: cancelled at once");
                var again = s.WaitForNextTickAsync(new CancellationTokenSource().Token);
                rt.Advance(P);
                Assert.IsTrue(again.Result);
                Assert.AreEqual(2, s.LastTick.DeliveryIndex);
            }
        }

        [Test, Timeout(30000)]
        public void TickStream_OneWaitAtATime_InvalidOperationException()
        {
            using (var rt = Runtime.CreateManual())
            using (TickStream s = rt.AcquireOwner(1).Every(1, P))
            {
                var w = s.WaitForNextTickAsync();
                Assert.Throws<InvalidOperationException>(() => s.WaitForNextTickAsync());
                rt.Advance(P);
                Assert.IsTrue(w.Result);
                var w2 = s.WaitForNextTickAsync(); // allowed again
                rt.Advance(P);
                Assert.IsTrue(w2.Result);
            }
        }

        [Test, Timeout(30000)]
        public void TickStream_RealClock_AwaitLoop_EndsWhenDisposedInside()
        {
            using (var rt = new Runtime())
            {
                TickStream s = rt.Every(P);
                int n = 0;
                Func<Task> loop = async () =>
                {
                    while (await s.WaitForNextTickAsync())
                        if (++n == 5) s.Dispose();
                };
                Assert.IsTrue(loop().Wait(T.Wait));
                Assert.AreEqual(5, n);
                Assert.IsTrue(s.Timer.CancelAsync().Wait(T.Wait));
                Assert.IsTrue(s.Timer.HasEnded);
            }
        }

        // ------------------------------------------------------------------ IAsyncDisposable

        [Test, Timeout(30000)]
        public void Runtime_DisposeAsync_WaitsForAsyncHandlersToEnd()
        {
            var rt = new Runtime();
            Assert.IsInstanceOf<IAsyncDisposable>(rt);
            var running = new ManualResetEventSlim();
            int finished = 0;
            rt.Every(P, async (tick, ct) =>
            {
                running.Set();
                try { await Task.Delay(Timeout.Infinite, ct); }
                catch (OperationCanceledException) { }
                await Task.Delay(200);               // winds down after the token fired
                Volatile.Write(ref finished, 1);
            });
            Assert.IsTrue(running.Wait(T.Wait));
            Assert.IsTrue(((IAsyncDisposable)rt).DisposeAsync().AsTask().Wait(T.Wait));
            Assert.IsTrue(rt.IsDisposed);
            Assert.AreEqual(1, Volatile.Read(ref finished), "DisposeAsync completed after the async handler ended");
            Assert.IsTrue(rt.DisposeAsync().AsTask().Wait(T.Wait), "idempotent");
        }

        [Test, Timeout(30000)]
        public void Runtime_DisposeAsync_FromInsideAnAsyncHandler_DoesNotWaitForItself()
        {
            var rt = new Runtime();
            var done = new TaskCompletionSource<bool>();
            rt.After(P, async tick =>
            {
                await Task.Yield();
                await rt.DisposeAsync();
                done.SetResult(rt.IsDisposed);
            });
            Assert.IsTrue(done.Task.Wait(T.Wait));
            Assert.IsTrue(done.Task.Result);
        }

        [Test, Timeout(30000)]
        public void Timer_DisposeAsync_CompletesAfterTheRunningHandlerEnded()
        {
            using (var rt = new Runtime())
            {
                var started = new ManualResetEventSlim();
                int ended = 0;
                var timer = rt.AcquireOwner(1).Every(1, P, tick =>
                {
                    started.Set();
                    Thread.Sleep(300);
                    Volatile.Write(ref ended, 1);
                });
                Assert.IsInstanceOf<IAsyncDisposable>(timer);
                Assert.IsTrue(started.Wait(T.Wait));
                Assert.IsTrue(timer.DisposeAsync().AsTask().Wait(T.Wait));
                Assert.AreEqual(1, Volatile.Read(ref ended));
                Assert.IsTrue(timer.HasEnded);
                Assert.Throws<ObjectDisposedException>(() => timer.GetStats());
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel().Reason);
            }
        }

        [Test, Timeout(30000)]
        public void Timer_DisposeAsync_InsideOwnHandler_CompletesAtOnce_CleanupFailureLeftToCancelAsync()
        {
            using (var rt = Runtime.CreateManual())
            {
                Task inside = null;
                var timer = rt.AcquireOwner(1).Every(1, P, tick => { inside = tick.Timer.DisposeAsync().AsTask(); });
                rt.Advance(P);
                Assert.IsNotNull(inside);
                Assert.IsTrue(inside.IsCompleted, "it did not wait for its own handler");
                Assert.AreEqual(EndReason.Cancelled, timer.CancelAsync().Result.Reason);

                var failing = rt.AcquireOwner(2).Every(1, P, tick => { },
                    new TimerOptions { OnRelease = () => { throw new InvalidOperationException("cleanup"); } });
                var d = failing.DisposeAsync().AsTask();
                Assert.IsTrue(d.Wait(T.Wait));
                Assert.IsFalse(d.IsFaulted);
                var agg = Assert.Throws<AggregateException>(() => failing.CancelAsync().Wait(T.Wait));
                Assert.AreEqual("cleanup", ((CleanupFailedException)agg.InnerException).CleanupMessage);
            }
        }

        // ------------------------------------------------------------------ exceptions

        [Test, Timeout(30000)]
        public void SpotTimeoutException_IsASpotTimerException_WithATimeoutExceptionInside()
        {
            using (var rt = new Runtime())
            {
                var started = new ManualResetEventSlim();
                var release = new ManualResetEventSlim();
                var timer = rt.AcquireOwner(1).Every(1, P, tick => { started.Set(); release.Wait(); });
                Assert.IsTrue(started.Wait(T.Wait));
                var e = Assert.Throws<SpotTimeoutException>(() => timer.Cancel(T.Ms(50)));
                Assert.IsInstanceOf<SpotTimerException>(e);
                Assert.AreEqual(SpotTimer.Interop.SpotStatus.Timeout, e.Status);
                Assert.IsInstanceOf<TimeoutException>(e.InnerException);
                Assert.IsInstanceOf<TimeoutException>(e.GetBaseException());
                Assert.AreEqual(e.Message, e.InnerException.Message);
                release.Set();
                Assert.AreEqual(EndReason.Cancelled, timer.Cancel().Reason, "the cancel went on");
            }
        }

        [Test]
        public void InvalidArgumentAndUnknownOwner_CarryArgumentAndKeyNotFoundExceptionsInside()
        {
            using (var rt = Runtime.CreateManual())
            {
                var owner = rt.AcquireOwner(1);
                var e = Assert.Throws<SpotInvalidArgumentException>(() => owner.Every(1, TimeSpan.Zero, tick => { }));
                Assert.IsInstanceOf<ArgumentException>(e.InnerException);
                Assert.IsInstanceOf<ArgumentException>(e.GetBaseException());
                var e2 = Assert.Throws<SpotInvalidArgumentException>(() => owner.Every(1, TimeSpan.Zero));
                Assert.IsInstanceOf<ArgumentException>(e2.InnerException);

                owner.Release();
                var u = Assert.Throws<UnknownOwnerException>(() => owner.EnterGate(TimeSpan.Zero));
                Assert.IsInstanceOf<KeyNotFoundException>(u.InnerException);
                // Managed-side checks before the native call throw the BCL types themselves.
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.AcquireOwner(2).Every(1, T.Ms(-1), tick => { }));
                Assert.Throws<ArgumentOutOfRangeException>(() => rt.AcquireOwner(3).Every(1, P, tick => { }).Cancel(T.Ms(-2)));
            }
        }

        [Test]
        public void ContractResultsTable_EveryDotNetExceptionClassExists_AndDerivesFromSpotTimerException()
        {
            string root = Environment.GetEnvironmentVariable("SPOT_REPO_ROOT");
            if (string.IsNullOrEmpty(root)) Assert.Fail("SPOT_REPO_ROOT is not set");
            var lines = File.ReadAllLines(Path.Combine(root, "docs", "contract.md"));
            int header = Array.FindIndex(lines, l => l.StartsWith("| result |") && l.Contains(".NET exception"));
            Assert.GreaterOrEqual(header, 0, "the Results table of docs/contract.md");
            var names = new List<string>();
            for (int i = header + 2; i < lines.Length && lines[i].StartsWith("|"); i++)
            {
                var cells = lines[i].Split('|');
                names.Add(Regex.Match(cells[cells.Length - 2], "`([A-Za-z]+)`").Groups[1].Value);
            }
            Assert.GreaterOrEqual(names.Count, 9);
            foreach (var name in names)
            {
                var type = typeof(SpotTimerException).Assembly.GetType("SpotTimer." + name);
                Assert.IsNotNull(type, name);
                Assert.IsTrue(typeof(SpotTimerException).IsAssignableFrom(type), name);
            }
        }
    }
}
