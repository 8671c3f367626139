// spot-timer from C#: 1,000 owners x 2 timers on one native scheduler thread, delivered in
// batches to one managed dispatcher thread; a sync and an async handler; a self-cancelling
// one-shot; then the counters that show one crossing per batch.
//
//   make demo-dotnet
using System;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer;

static class Program
{
    static int Main()
    {
        using (var rt = new Runtime())
        {
            long syncTicks = 0, asyncTicks = 0;
            rt.HandlerFailed += (sender, e) => Console.WriteLine("handler failed: " + e.Exception.Message);

            var start = rt.Now + TimeSpan.FromMilliseconds(200);   // common phase: one batch per wakeup
            for (ulong id = 1; id <= 1000; id++)
            {
                Owner owner = rt.AcquireOwner(id, lease: TimeSpan.FromSeconds(30));
                var delay = start - rt.Now;
                if (delay < TimeSpan.Zero) delay = TimeSpan.Zero;
                var phase = new TimerOptions { FirstDue = delay };
                owner.Every(1, TimeSpan.FromMilliseconds(50), t => Interlocked.Increment(ref syncTicks), phase);
                owner.Every(2, TimeSpan.FromMilliseconds(100), async t =>
                {
                    await Task.Yield();          // runs on the thread pool; completion reported when the Task ends
                    Interlocked.Increment(ref asyncTicks);
                }, new TimerOptions { FirstDue = delay, Policy = OverrunPolicy.DelayNextTick });
            }

            var done = new TaskCompletionSource<Tick>();
            rt.After(TimeSpan.FromMilliseconds(300), t =>
            {
                done.SetResult(t);
                t.Timer.CancelAsync();           // self-cancel: non-blocking form (blocking would throw WouldDeadlock)
            });

            Thread.Sleep(1000);
            // Judged by what ran, not by how fast: on a busy machine the first ticks may
            // take longer than the second above, so wait for them (a stall ends the wait).
            var stallAt = DateTime.UtcNow + TimeSpan.FromSeconds(120);
            while ((Interlocked.Read(ref syncTicks) == 0 || Interlocked.Read(ref asyncTicks) == 0
                    || !done.Task.IsCompleted) && DateTime.UtcNow < stallAt)
                Thread.Sleep(10);
            if (!done.Task.IsCompleted)
            {
                Console.WriteLine("FAIL: the one-shot did not fire within 120 s");
                return 1;
            }
            Console.WriteLine("one-shot fired: {0}", done.Task.Result);
            var s = rt.GetStats();
            Console.WriteLine("timers={0} scheduler threads={1} os timers={2}", s.LiveTimers, s.SchedulerThreads, s.OsTimers);
            Console.WriteLine("records={0} host crossings={1} ({2:F4} crossings/record)",
                s.RecordsReceived, s.HostCrossings, (double)s.HostCrossings / Math.Max(1, s.RecordsReceived));
            Console.WriteLine("sync ticks={0} async ticks={1}", Interlocked.Read(ref syncTicks), Interlocked.Read(ref asyncTicks));
            return syncTicks > 0 && asyncTicks > 0 ? 0 : 1;
        }
    }
}
