// The .NET workloads of bench/suite.py that Bench.exe (W2/W3) does not cover. One invocation
// is one measured run and prints one JSON object (the suite drives the repeats):
//
//   mono Extra.exe w1 <system> <n>            arm + cancel churn (random deadlines 60..120 s)
//   mono Extra.exe w4 <system> <n>            RSS bytes per live timer
//   mono Extra.exe w6 <system> <n> <threads>  registration from 1..k threads
//   mono Extra.exe w7 <system> <n>            the actor's shape: n live one-shots, 2 per
//                                             owner, timeout resets and cancels in random
//                                             order, then the teardown of n live timers
//
// Systems: spot (W1/W4/W6: owners of 100 timers, GateMode.Concurrent; W7: owners of 2 timers,
// the default serial gate; Owner.After + Timer.Cancel, which ends a timer that is not running
// on the calling thread) and stt (System.Threading.Timer: new Timer(cb, state, due, Infinite)
// + Dispose(); W7's one-call reset is Change(due, Infinite)).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Threading;
using SpotTimer;

static class Extra
{
    const int PerOwner = 100;
    static readonly List<object> Keep = new List<object>();

    static long RssBytes()
    {
        foreach (var l in File.ReadAllLines("/proc/self/status"))
            if (l.StartsWith("VmRSS:")) return long.Parse(l.Substring(6).Trim().Split(' ')[0]) * 1024;
        return 0;
    }

    static TimeSpan[] Deadlines(int n, int seed)
    {
        var r = new Random(seed);
        var d = new TimeSpan[n];
        for (int i = 0; i < n; i++) d[i] = TimeSpan.FromTicks((long)((60 + 60 * r.NextDouble()) * TimeSpan.TicksPerSecond));
        return d;
    }

    static Owner[] Owners(Runtime rt, int n, ulong baseId)
    {
        var o = new Owner[(n + PerOwner - 1) / PerOwner];
        for (int i = 0; i < o.Length; i++) o[i] = rt.AcquireOwner(baseId + (ulong)i, null, GateMode.Concurrent);
        return o;
    }

    static void Noop(Tick t) { }
    static void SttNoop(object o) { }

    static string F(double v)
    {
        return v.ToString("0.###", CultureInfo.InvariantCulture);
    }

    static double[] W1Once(string system, int n, int seed)
    {
        var dl = Deadlines(n, seed);
        if (system == "spot")
        {
            using (var rt = new Runtime())
            {
                var owners = Owners(rt, n, 1);
                var ts = new SpotTimer.Timer[n];
                var sw = Stopwatch.StartNew();
                for (int i = 0; i < n; i++) ts[i] = owners[i / PerOwner].After((ulong)i, dl[i], Noop);
                double arm = sw.Elapsed.TotalMilliseconds * 1e6 / n;
                sw.Restart();
                for (int i = 0; i < n; i++) ts[i].Cancel(TimeSpan.FromSeconds(60));
                double cancel = sw.Elapsed.TotalMilliseconds * 1e6 / n;
                return new[] { arm, cancel };
            }
        }
        if (system == "stt")
        {
            var ts = new System.Threading.Timer[n];
            var sw = Stopwatch.StartNew();
            for (int i = 0; i < n; i++) ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
            double arm = sw.Elapsed.TotalMilliseconds * 1e6 / n;
            sw.Restart();
            for (int i = 0; i < n; i++) ts[i].Dispose();
            double cancel = sw.Elapsed.TotalMilliseconds * 1e6 / n;
            return new[] { arm, cancel };
        }
        throw new ArgumentException("unknown system " + system);
    }

    const int Resets = 200000;

    static int[] Shuffled(int n, Random r)
    {
        var a = new int[n];
        for (int i = 0; i < n; i++) a[i] = i;
        for (int i = n - 1; i > 0; i--) { int j = r.Next(i + 1); int t = a[i]; a[i] = a[j]; a[j] = t; }
        return a;
    }

    static int[] Sample(int n, int k, Random r)
    {
        var a = Shuffled(n, r);
        Array.Resize(ref a, k);
        return a;
    }

    /// <summary>n live one-shots (deadlines 60..120 s), 2 per owner; min(200k, n/5) timeout
    /// resets of random timers, in one call (stt: Change) and as cancel + register; every timer
    /// cancelled in a random order; then n timers armed again and torn down (spot: the runtime's
    /// Dispose; stt: each timer's Dispose). Each phase times the operations alone: the indexes
    /// and deadlines are drawn before it.</summary>
    static Dictionary<string, double> W7Once(string system, int n)
    {
        var r = new Random(777);
        var dl = Deadlines(n, 4242);
        int resets = Math.Min(Resets, n / 5);
        var picks = Sample(n, resets, r);
        var picks2 = Sample(n, resets, r);
        var order = Shuffled(n, r);
        var res = new Dictionary<string, double>();
        var sw = new Stopwatch();
        Func<double> per = () => sw.Elapsed.TotalMilliseconds * 1e6;
        if (system == "spot")
        {
            var rt = new Runtime();
            var owners = new Owner[(n + 1) / 2];
            for (int i = 0; i < owners.Length; i++) owners[i] = rt.AcquireOwner(1 + (ulong)i);
            var ts = new SpotTimer.Timer[n];
            sw.Restart();
            for (int i = 0; i < n; i++) ts[i] = owners[i >> 1].After((ulong)(i & 1), dl[i], Noop);
            res["arm_ns"] = per() / n;
            sw.Restart();
            foreach (int i in picks) ts[i] = ts[i].Reset(dl[i]);
            res["reset_ns"] = per() / resets;
            sw.Restart();
            foreach (int i in picks2)
            {
                ts[i].Cancel(TimeSpan.FromSeconds(60));
                ts[i] = owners[i >> 1].After((ulong)(i & 1), dl[i], Noop);
            }
            res["reset_cancel_register_ns"] = per() / resets;
            sw.Restart();
            foreach (int i in order) ts[i].Cancel(TimeSpan.FromSeconds(60));
            res["cancel_ns"] = per() / n;
            for (int i = 0; i < n; i++) ts[i] = owners[i >> 1].After((ulong)(i & 1), dl[i], Noop);
            sw.Restart();
            rt.Dispose();
            res["teardown_ns"] = per() / n;
        }
        else if (system == "stt")
        {
            var ts = new System.Threading.Timer[n];
            sw.Restart();
            for (int i = 0; i < n; i++) ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
            res["arm_ns"] = per() / n;
            sw.Restart();
            foreach (int i in picks) ts[i].Change(dl[i], Timeout.InfiniteTimeSpan);
            res["reset_ns"] = per() / resets;
            sw.Restart();
            foreach (int i in picks2)
            {
                ts[i].Dispose();
                ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
            }
            res["reset_cancel_register_ns"] = per() / resets;
            sw.Restart();
            foreach (int i in order) ts[i].Dispose();
            res["cancel_ns"] = per() / n;
            for (int i = 0; i < n; i++) ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
            sw.Restart();
            for (int i = 0; i < n; i++) ts[i].Dispose();
            res["teardown_ns"] = per() / n;
        }
        else throw new ArgumentException("unknown system " + system);
        res["arm_cancel_ns"] = res["arm_ns"] + res["cancel_ns"];
        return res;
    }

    static int Main(string[] args)
    {
        string w = args[0], system = args[1];
        int n = int.Parse(args[2]);
        if (w == "w1")
        {
            W1Once(system, Math.Min(n, 20000), 7); // warm-up (JIT)
            GC.Collect();
            var r = W1Once(system, n, 12345);
            Console.WriteLine("{{\"arm_ns\": {0}, \"cancel_ns\": {1}, \"arm_cancel_ns\": {2}, \"allocs_per_arm\": null, \"allocs_per_cancel\": null}}",
                F(r[0]), F(r[1]), F(r[0] + r[1]));
            return 0;
        }
        if (w == "w4")
        {
            var dl = Deadlines(n, 99);
            GC.Collect();
            long before = RssBytes();
            if (system == "spot")
            {
                var rt = new Runtime();
                var owners = Owners(rt, n, 1);
                var ts = new SpotTimer.Timer[n];
                for (int i = 0; i < n; i++) ts[i] = owners[i / PerOwner].After((ulong)i, dl[i], Noop);
                Keep.Add(rt); Keep.Add(owners); Keep.Add(ts);
            }
            else if (system == "stt")
            {
                var ts = new System.Threading.Timer[n];
                for (int i = 0; i < n; i++) ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
                Keep.Add(ts);
            }
            else throw new ArgumentException("unknown system " + system);
            GC.Collect();
            Thread.Sleep(300);
            long after = RssBytes();
            Console.WriteLine("{{\"rss_before\": {0}, \"rss_after\": {1}, \"bytes_per_timer\": {2}}}",
                before, after, F((after - before) / (double)n));
            return 0;
        }
        if (w == "w6")
        {
            int threads = int.Parse(args[3]);
            int per = n / threads;
            Runtime rt = system == "spot" ? new Runtime() : null;
            var owners = new Owner[threads][];
            var dls = new TimeSpan[threads][];
            for (int t = 0; t < threads; t++)
            {
                if (rt != null) owners[t] = Owners(rt, per, 1 + (ulong)t * 1000000);
                dls[t] = Deadlines(per, 1000 + t);
            }
            // warm-up (JIT) outside the measured window
            if (rt != null) { var o = rt.AcquireOwner(999999999, null, GateMode.Concurrent); for (int i = 0; i < 1000; i++) o.After((ulong)i, dls[0][0], Noop).Cancel(TimeSpan.FromSeconds(5)); }
            else for (int i = 0; i < 1000; i++) new System.Threading.Timer(SttNoop, null, dls[0][0], Timeout.InfiniteTimeSpan).Dispose();
            var barrier = new Barrier(threads + 1);
            var starts = new long[threads]; var ends = new long[threads];
            var keep = new object[threads];
            var ths = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                int k = t;
                ths[t] = new Thread(() =>
                {
                    var dl = dls[k];
                    barrier.SignalAndWait();
                    starts[k] = Stopwatch.GetTimestamp();
                    if (rt != null)
                    {
                        var os = owners[k]; var ts = new SpotTimer.Timer[per];
                        for (int i = 0; i < per; i++) ts[i] = os[i / PerOwner].After((ulong)i, dl[i], Noop);
                        keep[k] = ts;
                    }
                    else
                    {
                        var ts = new System.Threading.Timer[per];
                        for (int i = 0; i < per; i++) ts[i] = new System.Threading.Timer(SttNoop, null, dl[i], Timeout.InfiniteTimeSpan);
                        keep[k] = ts;
                    }
                    ends[k] = Stopwatch.GetTimestamp();
                });
                ths[t].Start();
            }
            barrier.SignalAndWait();
            foreach (var th in ths) th.Join();
            long s0 = long.MaxValue, e1 = 0;
            for (int t = 0; t < threads; t++) { s0 = Math.Min(s0, starts[t]); e1 = Math.Max(e1, ends[t]); }
            double ns = (e1 - s0) * 1e9 / Stopwatch.Frequency;
            int total = per * threads;
            Console.WriteLine("{{\"ns_per_register\": {0}, \"registrations_per_s\": {1}}}", F(ns / total), F(total / (ns / 1e9)));
            Keep.Add(keep);
            return 0;
        }
        if (w == "w7")
        {
            W7Once(system, Math.Min(n, 20000)); // warm-up (JIT)
            GC.Collect();
            var r = W7Once(system, n);
            var parts = new List<string>();
            foreach (var kv in r) parts.Add("\"" + kv.Key + "\": " + F(kv.Value));
            Console.WriteLine("{" + string.Join(", ", parts) + "}");
            return 0;
        }
        throw new ArgumentException("unknown workload " + w);
    }
}
