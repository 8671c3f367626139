// make bench-dotnet: 20,000 periodic timers (period 100 ms, or --period-ms) delivered into C#
// handlers for a fixed time,
// spot-timer (one native scheduler thread, batches through spot_session_batch to one managed
// dispatcher thread) against 20,000 System.Threading.Timer doing the same work (count the
// tick, record its lateness). Each run of each side is a separate child process (clean RSS);
// the parent reports medians and spread over the runs and writes bench/results/dotnet.json.
//
// Figures: records per CPU-second (process user+system CPU, native threads included),
// transitions per record (managed<->native calls of the delivery path per record),
// lateness p50/p99 (now - nominal due time of the tick), RSS.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using SpotTimer;

static class Bench
{
    const int Timers = 20000;
    static TimeSpan Period = TimeSpan.FromMilliseconds(100);

    static long RssKb()
    {
        foreach (var l in File.ReadAllLines("/proc/self/status"))
            if (l.StartsWith("VmRSS:")) return long.Parse(l.Substring(6).Trim().Split(' ')[0]);
        return 0;
    }

    static int Main(string[] args)
    {
        double seconds = 5; int runs = 3; string outPath = null; string child = null;
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] == "--seconds") seconds = double.Parse(args[++i], CultureInfo.InvariantCulture);
            else if (args[i] == "--runs") runs = int.Parse(args[++i]);
            else if (args[i] == "--out") outPath = args[++i];
            else if (args[i] == "--child") child = args[++i];
            else if (args[i] == "--period-ms") Period = TimeSpan.FromMilliseconds(double.Parse(args[++i], CultureInfo.InvariantCulture));
        }
        if (child != null) return Child(child, seconds);
        return Parent(seconds, runs, outPath);
    }

    // ---------------------------------------------------------------- child: one measurement

    static long[] s_lateness;
    static long s_samples;
    static volatile bool s_measuring;
    static long s_records;
    static Stopwatch s_clock;
    static long s_t0Ticks;      // Stopwatch ticks of nominal tick 1
    static long s_periodTicks;

    static void Record(long scheduledIndex)
    {
        long now = s_clock.ElapsedTicks;
        if (!s_measuring) return;
        Interlocked.Increment(ref s_records);
        long due = s_t0Ticks + (scheduledIndex - 1) * s_periodTicks;
        long i = Interlocked.Increment(ref s_samples) - 1;
        if (i < s_lateness.Length) s_lateness[i] = now - due;
    }

    sealed class SttState { public long Count; }

    /// <summary>CPU seconds per thread name (/proc/self/task/*/stat, utime+stime).</summary>
    static Dictionary<string, double> ThreadCpu()
    {
        var d = new Dictionary<string, double>();
        foreach (var dir in Directory.GetDirectories("/proc/self/task"))
        {
            try
            {
                string stat = File.ReadAllText(Path.Combine(dir, "stat"));
                int open = stat.IndexOf('('), close = stat.LastIndexOf(')');
                string name = stat.Substring(open + 1, close - open - 1);
                var f = stat.Substring(close + 2).Split(' ');
                double secs = (double.Parse(f[11]) + double.Parse(f[12])) / 100.0; // clock ticks (USER_HZ 100)
                double v;
                d.TryGetValue(name, out v);
                d[name] = v + secs;
            }
            catch (Exception) { }
        }
        return d;
    }

    static int Child(string mode, double seconds)
    {
        s_clock = Stopwatch.StartNew();
        s_periodTicks = (long)(Period.TotalSeconds * Stopwatch.Frequency);
        s_lateness = new long[(int)Math.Min(20_000_000, Timers * seconds / Period.TotalSeconds * 1.2 + 1000)];
        long rssBefore = RssKb();
        var warm = TimeSpan.FromSeconds(1.5);
        // every timer's first nominal due time is the same instant (one shared period/phase)
        TimeSpan lead = TimeSpan.FromMilliseconds(1500);
        s_t0Ticks = s_clock.ElapsedTicks + (long)(lead.TotalSeconds * Stopwatch.Frequency);
        Func<TimeSpan> untilT0 = () =>
        {
            long d = s_t0Ticks - s_clock.ElapsedTicks;
            return d <= 0 ? TimeSpan.Zero : TimeSpan.FromTicks((long)(d * 1e7 / Stopwatch.Frequency));
        };

        Runtime rt = null;
        var stt = new List<System.Threading.Timer>();
        if (mode == "spot")
        {
            rt = new Runtime();
            for (int i = 0; i < Timers; i++)
                rt.Every(Period, t => Record(t.ScheduledIndex), new TimerOptions { FirstDue = untilT0() });
        }
        else
        {
            for (int i = 0; i < Timers; i++)
            {
                var st = new SttState();
                stt.Add(new System.Threading.Timer(o => { var s = (SttState)o; Record(Interlocked.Increment(ref s.Count)); },
                                                   st, untilT0(), Period));
            }
        }
        Thread.Sleep(lead + warm);
        var proc = Process.GetCurrentProcess();
        proc.Refresh();
        TimeSpan cpu0 = proc.TotalProcessorTime;
        var threadCpu0 = ThreadCpu();
        RuntimeStats st0 = rt != null ? rt.GetStats() : null;
        var sw = Stopwatch.StartNew();
        s_measuring = true;
        Thread.Sleep(TimeSpan.FromSeconds(seconds));
        s_measuring = false;
        double wall = sw.Elapsed.TotalSeconds;
        proc.Refresh();
        double cpu = (proc.TotalProcessorTime - cpu0).TotalSeconds;
        RuntimeStats st1 = rt != null ? rt.GetStats() : null;
        var threadCpu1 = ThreadCpu();
        Func<string, double> tcpu = name =>
        {
            double a, b;
            threadCpu1.TryGetValue(name, out b); threadCpu0.TryGetValue(name, out a);
            return b - a;
        };
        long rss = RssKb();
        long records = Interlocked.Read(ref s_records);
        int n = (int)Math.Min(Interlocked.Read(ref s_samples), s_lateness.Length);
        var lat = new long[n];
        Array.Copy(s_lateness, lat, n);
        Array.Sort(lat);
        Func<double, double> pct = q => n == 0 ? double.NaN : lat[Math.Min(n - 1, (int)(q * n))] * 1000.0 / Stopwatch.Frequency;
        string transitions = "null", crossings = "null", threads = "null";
        if (rt != null)
        {
            double recs = st1.RecordsReceived - st0.RecordsReceived;
            transitions = F((st1.ManagedTransitions - st0.ManagedTransitions) / Math.Max(1, recs));
            crossings = F((st1.HostCrossings - st0.HostCrossings) / Math.Max(1, recs));
            threads = st1.SchedulerThreads.ToString();
        }
        Console.WriteLine("RESULT {{\"mode\":\"{0}\",\"records\":{1},\"wall_s\":{2},\"cpu_s\":{3},\"records_per_cpu_s\":{4},"
            + "\"records_per_s\":{5},\"transitions_per_record\":{6},\"native_crossings_per_record\":{7},"
            + "\"lateness_p50_ms\":{8},\"lateness_p99_ms\":{9},\"rss_kib\":{10},\"rss_before_kib\":{11},\"scheduler_threads\":{12},"
            + "\"process_threads\":{13},\"cpu_s_native_scheduler\":{14},\"cpu_s_dispatcher\":{15},\"lateness_p999_ms\":{16}}}",
            mode, records, F(wall), F(cpu), F(records / Math.Max(1e-9, cpu)), F(records / wall), transitions, crossings,
            F(pct(0.5)), F(pct(0.99)), rss, rssBefore, threads, Process.GetCurrentProcess().Threads.Count,
            rt != null ? F(tcpu("spot-timer")) : "null", rt != null ? F(tcpu("spot-timer-disp")) : "null", F(pct(0.999)));
        Console.Out.Flush();
        if (rt != null) rt.Dispose();
        foreach (var t in stt) t.Dispose();
        return 0;
    }

    static string F(double v)
    {
        return double.IsNaN(v) || double.IsInfinity(v) ? "null" : v.ToString("0.######", CultureInfo.InvariantCulture);
    }

    // ---------------------------------------------------------------- parent: runs + medians

    static Dictionary<string, double> ParseFlat(string json)
    {
        var d = new Dictionary<string, double>();
        foreach (var part in json.Trim('{', '}').Split(','))
        {
            var kv = part.Split(new[] { ':' }, 2);
            double v;
            if (double.TryParse(kv[1], NumberStyles.Float, CultureInfo.InvariantCulture, out v)) d[kv[0].Trim('"')] = v;
        }
        return d;
    }

    static int Parent(double seconds, int runs, string outPath)
    {
        string exe = typeof(Bench).Assembly.Location;
        var results = new Dictionary<string, List<Dictionary<string, double>>> { { "spot", new List<Dictionary<string, double>>() }, { "threading_timer", new List<Dictionary<string, double>>() } };
        for (int r = 0; r < runs; r++)
        {
            foreach (var mode in results.Keys.ToList())
            {
                var psi = new ProcessStartInfo("mono", string.Format(CultureInfo.InvariantCulture, "--gc=sgen \"{0}\" --child {1} --seconds {2} --period-ms {3}", exe, mode, seconds, Period.TotalMilliseconds))
                { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
                using (var p = Process.Start(psi))
                {
                    p.ErrorDataReceived += (o, e) => { }; // Mono's timer thread can complain at exit; ignored
                    p.BeginErrorReadLine();
                    string output = p.StandardOutput.ReadToEnd();
                    p.WaitForExit();
                    var line = output.Split('\n').FirstOrDefault(l => l.StartsWith("RESULT "));
                    if (line == null) { Console.Error.WriteLine("run failed: " + mode + "\n" + output); return 1; }
                    Console.WriteLine("run {0} {1}: {2}", r + 1, mode, line.Substring(7));
                    results[mode].Add(ParseFlat(line.Substring(7)));
                }
            }
        }
        var keys = new[] { "records", "records_per_cpu_s", "records_per_s", "cpu_s", "transitions_per_record", "native_crossings_per_record",
                           "lateness_p50_ms", "lateness_p99_ms", "lateness_p999_ms", "rss_kib", "rss_before_kib", "cpu_s_native_scheduler", "cpu_s_dispatcher" };
        var json = new StringBuilder();
        json.AppendFormat(CultureInfo.InvariantCulture, "{{\n  \"benchmark\": \"20000 periodic timers (period {0} ms, shared phase) into C# handlers\",\n", Period.TotalMilliseconds);
        json.AppendFormat(CultureInfo.InvariantCulture, "  \"period_ms\": {0},\n", Period.TotalMilliseconds);
        json.AppendFormat(CultureInfo.InvariantCulture, "  \"seconds_per_run\": {0},\n  \"runs\": {1},\n", seconds, runs);
        json.AppendFormat("  \"runtime\": \"{0}\",\n", (Type.GetType("Mono.Runtime") != null ? "mono " : ".NET ") + Environment.Version);
        json.AppendFormat("  \"processors\": {0},\n", Environment.ProcessorCount);
        json.Append("  \"notes\": \"median and [min, max] over runs; each run a fresh process; lateness = handler start - nominal due time (spot: from scheduled_index; System.Threading.Timer: from its invocation count); transitions = managed->native calls of the delivery path (spot_session_batch + spot_complete) per record; System.Threading.Timer is a managed timer queue (no native transitions, one thread-pool work item per tick)\",\n");
        var summary = new Dictionary<string, Dictionary<string, double>>();
        int mi = 0;
        foreach (var kv in results)
        {
            json.AppendFormat("  \"{0}\": {{\n", kv.Key);
            summary[kv.Key] = new Dictionary<string, double>();
            int ki = 0;
            var present = keys.Where(k => kv.Value.All(x => x.ContainsKey(k))).ToList();
            foreach (var k in present)
            {
                var vals = kv.Value.Select(x => x[k]).OrderBy(x => x).ToList();
                double med = vals[vals.Count / 2];
                summary[kv.Key][k] = med;
                json.AppendFormat(CultureInfo.InvariantCulture, "    \"{0}\": {{\"median\": {1}, \"min\": {2}, \"max\": {3}, \"runs\": [{4}]}}{5}\n",
                    k, F(med), F(vals[0]), F(vals[vals.Count - 1]), string.Join(", ", kv.Value.Select(x => F(x[k]))),
                    ++ki < present.Count ? "," : "");
            }
            json.Append(++mi < results.Count ? "  },\n" : "  },\n");
        }
        double ratio = summary["spot"]["records_per_cpu_s"] / summary["threading_timer"]["records_per_cpu_s"];
        json.AppendFormat(CultureInfo.InvariantCulture, "  \"records_per_cpu_s_ratio_spot_vs_threading_timer\": {0}\n}}\n", F(ratio));
        Console.WriteLine(json.ToString());
        Console.WriteLine("spot/System.Threading.Timer records per CPU-second: {0:F1}x (target >= 10x); spot transitions per record: {1} (target <= 0.01)",
            ratio, F(summary["spot"].ContainsKey("transitions_per_record") ? summary["spot"]["transitions_per_record"] : double.NaN));
        if (outPath != null) File.WriteAllText(outPath, json.ToString());
        return 0;
    }
}
