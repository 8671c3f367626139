"""Python delivery benchmark: spot_timer vs asyncio (and uvloop, rloop) call_at re-arming vs
threading.Timer.

N periodic timers sharing one period (100 ms by default, same phase) deliver into Python
handlers for a fixed duration. The handler records its lateness (``--handler latency``, the
default) or does nothing (``--handler noop``: spot_timer's handler returns at once, the
asyncio handlers only re-arm; each system's own cost per record). Each (implementation, N) runs in a fresh subprocess (clean RSS), repeated;
the table shows medians with min..max spread. Writes bench/results/python.json.

    python bench/python_bench.py [--quick] [--repeats 3] [--seconds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PERIOD = float(os.environ.get("SPOT_BENCH_PERIOD_MS", "100")) / 1000
NOOP = os.environ.get("SPOT_BENCH_HANDLER", "latency") == "noop"
WARMUP = 1.0


def rss_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def run_spot(n, seconds):
    import spot_timer as st

    BOOT = time.CLOCK_BOOTTIME
    clock_ns = time.clock_gettime_ns
    period_ns = int(PERIOD * 1e9)
    lat = []
    measuring = [False]
    # --max-batch (W5 of bench/suite.py): records handed into Python per crossing at most
    rt = st.Runtime(max_batch=int(os.environ.get("SPOT_BENCH_MAX_BATCH", "8192")))

    def make(t0):
        if NOOP:
            def noop(tick):
                pass
            return noop

        def h(tick):
            if measuring[0]:
                lat.append(clock_ns(BOOT) - t0 - (tick.scheduled_index - 1) * period_ns)
        return h

    start = clock_ns(BOOT) + 300_000_000 + n * 25_000  # after registration has finished
    for i in range(n):
        rt.owner(i).every(PERIOD, make(start), first_due=(start - clock_ns(BOOT)) / 1e9)
    time.sleep(WARMUP)
    s0 = rt.stats()
    c0 = time.process_time()
    measuring[0] = True
    time.sleep(seconds)
    measuring[0] = False
    cpu = time.process_time() - c0
    s1 = rt.stats()
    rss = rss_kib()
    rt.close()
    records = s1.records_received - s0.records_received
    crossings = s1.host_crossings - s0.host_crossings
    return dict(records=records, cpu=cpu, crossings_per_record=crossings / records if records else None,
                lat_ns=lat, rss_kib=rss, threads=s1.scheduler_threads)


def run_asyncio(n, seconds, loop_kind="asyncio"):
    import asyncio

    async def main():
        loop = asyncio.get_running_loop()
        lat = []
        count = [0]
        measuring = [False]
        start = loop.time() + 0.3 + n * 25e-6

        def make():
            k = [0]

            def cb():
                now = loop.time()
                if measuring[0]:
                    if not NOOP:
                        lat.append(int((now - (start + k[0] * PERIOD)) * 1e9))
                    count[0] += 1
                # fixed rate, skipping late ticks
                k[0] += 1
                nxt = start + k[0] * PERIOD
                if nxt < now:
                    k[0] = int((now - start) / PERIOD) + 1
                    nxt = start + k[0] * PERIOD
                loop.call_at(nxt, cb)
            return cb

        for _ in range(n):
            loop.call_at(start, make())
        await asyncio.sleep(WARMUP)
        c0 = time.process_time()
        measuring[0] = True
        await asyncio.sleep(seconds)
        measuring[0] = False
        cpu = time.process_time() - c0
        return dict(records=count[0], cpu=cpu, crossings_per_record=None, lat_ns=lat,
                    rss_kib=rss_kib(), threads=1)

    if loop_kind == "uvloop":
        import uvloop

        return uvloop.run(main())
    if loop_kind == "rloop":
        import rloop

        loop = rloop.new_event_loop()
        try:
            return loop.run_until_complete(main())
        finally:
            loop.close()
    return asyncio.run(main())


def run_uvloop(n, seconds):
    return run_asyncio(n, seconds, loop_kind="uvloop")


def run_rloop(n, seconds):
    return run_asyncio(n, seconds, loop_kind="rloop")


def run_threading_timer(n, seconds):
    import threading

    threading.stack_size(256 * 1024)
    lat = []
    count = [0]
    measuring = [False]
    stop = [False]
    lock = threading.Lock()
    start = time.monotonic() + 0.2

    def arm(k):
        due = start + k * PERIOD

        def cb():
            now = time.monotonic()
            if measuring[0]:
                with lock:
                    lat.append(int((now - due) * 1e9))
                    count[0] += 1
            if not stop[0]:
                nk = max(k + 1, int((now - start) / PERIOD) + 1)
                arm(nk)

        t = threading.Timer(max(0.0, due - time.monotonic()), cb)
        t.daemon = True
        t.start()

    for _ in range(n):
        arm(0)
    time.sleep(WARMUP)
    c0 = time.process_time()
    measuring[0] = True
    time.sleep(seconds)
    measuring[0] = False
    cpu = time.process_time() - c0
    rss = rss_kib()
    stop[0] = True
    return dict(records=count[0], cpu=cpu, crossings_per_record=1.0, lat_ns=lat, rss_kib=rss,
                threads=threading.active_count())


IMPLS = {"spot_timer": run_spot, "asyncio.call_at": run_asyncio, "uvloop.call_at": run_uvloop,
         "rloop.call_at": run_rloop, "threading.Timer": run_threading_timer}


def worker(impl, n, seconds):
    r = IMPLS[impl](n, seconds)
    lat = r.pop("lat_ns")
    r["lat_p50_ms"] = pct(lat, 50) / 1e6
    r["lat_p99_ms"] = pct(lat, 99) / 1e6
    r["lat_p999_ms"] = pct(lat, 99.9) / 1e6
    r["records_per_cpu_s"] = r["records"] / r["cpu"] if r["cpu"] > 0 else None
    print(json.dumps(r), flush=True)
    os._exit(0)  # don't wait for timer threads


def spread(values, fmt):
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(vals))}..{fmt.format(max(vals))})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--sizes", default="1000,20000")
    ap.add_argument("--impls", default=",".join(IMPLS), help="comma-separated subset of the implementations")
    ap.add_argument("--max-batch", type=int, default=None, help="spot_timer: Runtime(max_batch=...)")
    ap.add_argument("--period-ms", type=float, default=None, help="the timers' period (default 100)")
    ap.add_argument("--handler", choices=("latency", "noop"), default=None)
    ap.add_argument("--worker", nargs=3, metavar=("IMPL", "N", "SECONDS"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "python.json"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), float(args.worker[2]))
        return 0
    if args.quick:
        args.repeats, args.seconds = 1, 1.0
    if args.max_batch is not None:
        os.environ["SPOT_BENCH_MAX_BATCH"] = str(args.max_batch)
    if args.period_ms is not None:
        os.environ["SPOT_BENCH_PERIOD_MS"] = str(args.period_ms)
    if args.handler is not None:
        os.environ["SPOT_BENCH_HANDLER"] = args.handler
    impls = [i for i in IMPLS if i in args.impls.split(",")]
    if args.impls == ",".join(IMPLS):  # the default set: uvloop and rloop only where installed
        for mod in ("uvloop", "rloop"):
            try:
                __import__(mod)
            except ImportError:
                impls.remove(f"{mod}.call_at")
    sizes = [int(x) for x in args.sizes.split(",")]
    results = []
    for n in sizes:
        for impl in impls:
            if impl == "threading.Timer" and n > 2000:
                results.append(dict(impl=impl, n=n, skipped="one OS thread per timer: not run above 2,000 timers"))
                continue
            runs = []
            for _ in range(args.repeats):
                p = subprocess.run([sys.executable, __file__, "--worker", impl, str(n), str(args.seconds)],
                                   capture_output=True, text=True, timeout=120 + 4 * args.seconds)
                if p.returncode != 0 or not p.stdout.strip():
                    print(f"{impl} n={n} failed: {p.stderr[-500:]}", file=sys.stderr)
                    continue
                runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
            results.append(dict(impl=impl, n=n, runs=runs))
            print(f"  done: {impl:16} n={n:>6,} ({len(runs)} runs)", file=sys.stderr, flush=True)

    head = f"{'impl':16} {'N':>7} {'records/CPU-s':>30} {'crossings/record':>18} {'lat p50 ms':>24} {'lat p99 ms':>24} {'RSS MiB':>20}"
    period = float(os.environ.get("SPOT_BENCH_PERIOD_MS", "100")) / 1000
    print(f"\nPython delivery benchmark: period {period * 1000:g} ms (shared), {args.seconds:g} s per run, "
          f"medians of {args.repeats} runs (min..max)")
    print(head)
    print("-" * len(head))
    for r in results:
        if "skipped" in r:
            print(f"{r['impl']:16} {r['n']:>7,}  skipped: {r['skipped']}")
            continue
        runs = r["runs"]
        print(f"{r['impl']:16} {r['n']:>7,} "
              f"{spread([x['records_per_cpu_s'] for x in runs], '{:,.0f}'):>30} "
              f"{spread([x['crossings_per_record'] for x in runs], '{:.4f}'):>18} "
              f"{spread([x['lat_p50_ms'] for x in runs], '{:.2f}'):>24} "
              f"{spread([x['lat_p99_ms'] for x in runs], '{:.2f}'):>24} "
              f"{spread([x['rss_kib'] / 1024 for x in runs], '{:.1f}'):>20}")
    summary = {}
    for n in sizes:
        by = {r["impl"]: r for r in results if r["n"] == n and "runs" in r and r["runs"]}
        if "spot_timer" in by and "asyncio.call_at" in by:
            a = statistics.median(x["records_per_cpu_s"] for x in by["spot_timer"]["runs"])
            b = statistics.median(x["records_per_cpu_s"] for x in by["asyncio.call_at"]["runs"])
            summary[f"spot_vs_asyncio_records_per_cpu_s_ratio_n{n}"] = a / b if b else None
    for k, v in summary.items():
        print(f"{k}: {v:.2f}x" if v else f"{k}: n/a")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(period_s=period, handler=os.environ.get("SPOT_BENCH_HANDLER", "latency"), seconds=args.seconds, repeats=args.repeats,
                       python=sys.version.split()[0], results=results, summary=summary), f, indent=2)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
