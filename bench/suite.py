"""The side-by-side benchmark suite: `make bench` / `make bench QUICK=1` run this.

It runs every workload (W1-W6) for every system in the same run with the same parameters,
each measurement in a fresh process, repeated; it reports medians with the spread (min..max)
and writes bench/results/latest.json, latest.md and the PNG plots.

Harnesses (built by mk/bench.mk before this runs):
  build/bench/target/release/spot-bench-rust  bench/rust: spot-timer core, tokio, tokio-util
  build/bench/spot_c_bench                    bench/c/spot_c_bench.c: spot-timer via the C ABI
  build/bench/uv_bench                        bench/c/uv_bench.c: libuv uv_timer
  build/bench/gobench                         bench/go: Go time.AfterFunc
  bench/python_bench.py                       spot_timer / asyncio / uvloop / threading.Timer, W2 W3 W5
  bench/py_extra.py                           spot_timer / asyncio, W1 W4 W6
  build/dotnet/Bench.exe                      SpotTimer / System.Threading.Timer on Mono, W2 W3 (W2-overload)
  build/dotnet/Extra.exe                      SpotTimer / System.Threading.Timer on Mono, W1 W4 W6

A peer whose harness could not be built is listed under "missing" with the reason that the
build step left in build/bench/missing/<peer>.txt.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, "build", "bench")
RESULTS = os.path.join(HERE, "results")

RUST = os.path.join(BUILD, "target", "release", "spot-bench-rust")
SPOT_C = os.path.join(BUILD, "spot_c_bench")
UV = os.path.join(BUILD, "uv_bench")
GO = os.path.join(BUILD, "gobench")
PY = os.path.join(ROOT, "build", "venv-python", "bin", "python")
DOTNET_EXE = os.path.join(ROOT, "build", "dotnet", "Bench.exe")
DOTNET_EXTRA = os.path.join(ROOT, "build", "dotnet", "Extra.exe")
MONO = ["env", f"LD_LIBRARY_PATH={os.path.join(ROOT, 'target', 'release')}", "mono", "--gc=sgen"]

PERIOD_MS = 100

# system id -> (label, language, harness id, argument prefix)
SYSTEMS = {
    "spot-rust": ("spot-timer (Rust core)", "Rust", "rust", [RUST, "{w}", "spot"]),
    "spot-rust-handles": ("spot-timer (Rust core, TimerHandle)", "Rust", "rust", [RUST, "{w}", "spot-handles"]),
    "tokio-delayqueue": ("tokio-util DelayQueue", "Rust", "rust", [RUST, "{w}", "tokio-delayqueue"]),
    # W1's second round in the same runtime / queue: memory already grown and touched.
    "spot-rust-steady": ("spot-timer (Rust core), second round", "Rust", "rust", [RUST, "{w}", "spot-steady"]),
    "tokio-delayqueue-steady": ("tokio-util DelayQueue, second round", "Rust", "rust",
                                [RUST, "{w}", "tokio-delayqueue-steady"]),
    "tokio-sleep": ("tokio::time::sleep", "Rust", "rust", [RUST, "{w}", "tokio-sleep"]),
    "tokio-interval": ("tokio::time::Interval", "Rust", "rust", [RUST, "{w}", "tokio-interval"]),
    "spot-c": ("spot-timer (C ABI)", "C", "spot-c", [SPOT_C, "{w}"]),
    "libuv": ("libuv uv_timer", "C", "libuv", [UV, "{w}"]),
    "go": ("Go time.AfterFunc", "Go", "go", [GO, "{w}"]),
    "spot-py": ("spot_timer (Python)", "Python", "python", [PY, os.path.join(HERE, "py_extra.py"), "{w}", "spot_timer"]),
    "asyncio": ("asyncio call_later/call_at", "Python", "python", [PY, os.path.join(HERE, "py_extra.py"), "{w}", "asyncio"]),
    "uvloop": ("uvloop call_later/call_at", "Python", "uvloop", None),
    # The Python actor-shape workload (W7-py) runs these two through py_extra.py.
    "uvloop-py": ("uvloop call_later", "Python", "uvloop", [PY, os.path.join(HERE, "py_extra.py"), "{w}", "uvloop"]),
    "rloop": ("rloop call_later (an asyncio loop in Rust)", "Python", "rloop",
              [PY, os.path.join(HERE, "py_extra.py"), "{w}", "rloop"]),
    "threading-timer": ("threading.Timer", "Python", "python", None),
    "spot-dotnet": ("SpotTimer (.NET on Mono)", "C#", "dotnet", MONO + [DOTNET_EXTRA, "{w}", "spot"]),
    "threading-timer-net": ("System.Threading.Timer (Mono)", "C#", "dotnet", MONO + [DOTNET_EXTRA, "{w}", "stt"]),
}

W1_SYSTEMS = ["spot-rust", "spot-rust-handles", "tokio-delayqueue", "spot-rust-steady", "tokio-delayqueue-steady",
              "tokio-sleep", "spot-c", "libuv", "go", "spot-py",
              "asyncio", "uvloop-py", "rloop", "spot-dotnet", "threading-timer-net"]
W2_NATIVE = ["spot-rust", "tokio-interval", "tokio-delayqueue", "spot-c", "libuv", "go"]
# Harnesses that take W2's variants (phases spread over the period; a handler that does nothing).
W2_VARIANT_SYSTEMS = ["spot-rust", "tokio-interval", "tokio-delayqueue", "spot-c"]
OVERLOAD_PERIOD_MS = 10
W4_SYSTEMS = ["spot-rust", "tokio-delayqueue", "tokio-sleep", "spot-c", "libuv", "go", "spot-py", "asyncio",
              "spot-dotnet", "threading-timer-net"]
W7_PY_SYSTEMS = ["spot-py", "asyncio", "uvloop-py", "rloop"]
W7_NET_SYSTEMS = ["spot-dotnet", "threading-timer-net"]
W6_SYSTEMS = ["spot-rust", "tokio-delayqueue", "tokio-sleep", "spot-c", "libuv", "go", "spot-py", "spot-dotnet",
              "threading-timer-net"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 - machine info is best effort
        return ""


def machine_info():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = sh("awk '/MemTotal/ {print $2}' /proc/meminfo")
    return dict(
        nproc=os.cpu_count(),
        cpu_model=model,
        kernel=platform.release(),
        os=sh(". /etc/os-release && echo $PRETTY_NAME"),
        mem_total_gib=round(int(mem) / 1048576, 1) if mem.isdigit() else None,
        date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        commit=sh(f"git -C {ROOT} rev-parse --short HEAD"),
        tools=dict(
            rustc=sh("rustc --version"),
            go=sh("go version"),
            libuv=sh("pkg-config --modversion libuv"),
            python=sh(f"{PY} --version"),
            mono=sh("mono --version | head -1"),
            tokio=sh(f"grep -A1 '^name = \"tokio\"$' {HERE}/rust/Cargo.lock | tail -1"),
            tokio_util=sh(f"grep -A1 '^name = \"tokio-util\"$' {HERE}/rust/Cargo.lock | tail -1"),
        ),
    )


def missing_reason(harness):
    """Why a harness is not available, or None when it is."""
    p = os.path.join(BUILD, "missing", f"{harness}.txt")
    if os.path.exists(p):
        with open(p) as f:
            return f.read().strip() or "build failed"
    exe = {"rust": RUST, "spot-c": SPOT_C, "libuv": UV, "go": GO, "python": PY, "uvloop": PY, "rloop": PY,
           "dotnet": DOTNET_EXE}[harness]
    if not os.path.exists(exe):
        return f"harness not built ({os.path.relpath(exe, ROOT)} missing)"
    return None


class Suite:
    def __init__(self, quick):
        self.quick = quick
        self.results = []
        self.missing = []
        self.failures = []
        if quick:
            self.cfg = dict(reps=3, w1_sizes=[1_000, 100_000, 1_000_000], w1_py_sizes=[1_000, 100_000],
                            w2_sizes=[20_000], w2_seconds=1.0, w3_busy_seconds=1.0, w3_busy_reps=2,
                            w4_n=1_000_000, w4_reps=2, w5_batches=[1, 8, 64, 1024], w5_n=20_000, w5_reps=2,
                            w5_seconds=1.0, w6_n=100_000, dotnet_seconds=1.0, w1_pairs=3, w7_py_n=100_000)
        else:
            self.cfg = dict(reps=5, w1_sizes=[1_000, 100_000, 1_000_000], w1_py_sizes=[1_000, 100_000, 1_000_000],
                            w2_sizes=[1_000, 20_000], w2_seconds=3.0, w3_busy_seconds=3.0, w3_busy_reps=3,
                            w4_n=1_000_000, w4_reps=3, w5_batches=[1, 8, 64, 1024], w5_n=20_000, w5_reps=3,
                            w5_seconds=2.0, w6_n=400_000, dotnet_seconds=3.0, w1_pairs=11, w7_py_n=1_000_000)

    # ------------------------------------------------------------ recording
    def add(self, workload, system, params, runs, notes=None):
        metrics = {}
        keys = sorted({k for r in runs for k in r})
        for k in keys:
            vals = [r[k] for r in runs if isinstance(r.get(k), (int, float)) and r.get(k) == r.get(k)]
            if not vals:
                continue
            metrics[k] = dict(median=statistics.median(vals), min=min(vals), max=max(vals), runs=vals)
        label, lang, _, _ = SYSTEMS[system]
        self.results.append(dict(workload=workload, system=system, label=label, language=lang,
                                 params=params, metrics=metrics, n_runs=len(runs), notes=notes))

    def miss(self, workload, system, reason):
        label = SYSTEMS[system][0]
        self.missing.append(dict(workload=workload, system=system, label=label, reason=reason))

    def run_one(self, system, workload, args, timeout=300):
        tmpl = SYSTEMS[system][3]
        cmd = [a.replace("{w}", workload) for a in tmpl] + [str(a) for a in args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.failures.append(dict(system=system, workload=workload, args=args, error="timeout"))
            log(f"    {system} {workload} {args}: timeout")
            return None
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        if p.returncode != 0 or not line.startswith("{"):
            self.failures.append(dict(system=system, workload=workload, args=args,
                                      error=f"exit {p.returncode}: {p.stderr[-400:]}"))
            log(f"    {system} {workload} {args}: failed (exit {p.returncode}) {p.stderr[-300:]}")
            return None
        try:
            return json.loads(line)
        except json.JSONDecodeError as e:
            self.failures.append(dict(system=system, workload=workload, args=args, error=f"bad JSON ({e}): {line[:200]}"))
            log(f"    {system} {workload} {args}: bad JSON output")
            return None

    def repeat(self, workload, wid, system, args, reps, params, notes=None, timeout=300):
        self.interleaved(workload, wid, [system], args, reps, params, notes, timeout)

    def interleaved(self, workload, wid, systems, args, reps, params, notes=None, timeout=300,
                    alternate=False, per_round=None):
        """Runs each system `reps` times, round-robin (system A, B, C, A, B, C, ...), so a
        change in the machine's load hits every system alike; records the medians.
        `alternate`: every other round runs the systems in reverse order. `per_round(got)`:
        called with each round's {system: result}, to add figures that compare the systems
        of one round; a round with a failed run is then dropped whole."""
        ready = []
        for s in systems:
            reason = missing_reason(SYSTEMS[s][2])
            if reason:
                self.miss(workload, s, reason)
            else:
                ready.append(s)
        runs = {s: [] for s in ready}
        for i in range(reps):
            got = {}
            for s in (ready[::-1] if alternate and i % 2 else ready):
                r = self.run_one(s, wid, args, timeout)
                if r is not None:
                    got[s] = r
            if per_round is not None:
                if len(got) < len(ready):
                    continue  # the failed run is in `failures`
                per_round(got)
            for s, r in got.items():
                runs[s].append(r)
        for s in ready:
            if runs[s]:
                self.add(workload, s, params, runs[s], notes)
                log(f"  {workload} {s:18} {params}: {len(runs[s])} runs")
            else:
                self.miss(workload, s, "every run failed (see failures)")

    # ------------------------------------------------------------ workloads
    def w1(self):
        c = self.cfg
        for n in c["w1_sizes"]:
            systems = []
            for s in W1_SYSTEMS:
                if SYSTEMS[s][1] in ("Python", "C#") and n not in c["w1_py_sizes"]:
                    self.miss("W1", s, f"N={n:,} not run in QUICK mode for the managed hosts (about 30 s per run); "
                                       "run `make bench`")
                else:
                    systems.append(s)
            self.interleaved("W1", "w1", systems, [n], c["reps"], dict(n=n))
        # The slowest registrations of a first round at 1M (the Rust harness: the two
        # systems whose W1 is compared).
        self.interleaved("W1-tail", "w1tail", ["spot-rust", "tokio-delayqueue"], [1_000_000], c["reps"],
                         dict(n=1_000_000))
        self.w1_pairs()

    def w1_pairs(self):
        """W1's target comparison, spot-timer's Rust core against DelayQueue at 1M, run as
        back-to-back pairs (order alternating: AB, BA, AB, ...) so that both runs of a pair
        see the same state of a shared machine. The W1 rounds above put the other eleven
        systems (the managed hosts take about 30 s each at 1M) between two runs of one
        system, and a slow phase of the machine then lands on one side only. Each pair's
        ratio is recorded on spot-timer's row."""
        def ratio(got):
            if len(got) == 2:  # (one side's harness missing: its rows alone, no ratio)
                got["spot-rust"]["ratio_to_delayqueue"] = (got["spot-rust"]["arm_cancel_ns"] /
                                                          got["tokio-delayqueue"]["arm_cancel_ns"])

        self.interleaved("W1-pair", "w1", ["spot-rust", "tokio-delayqueue"], [1_000_000], self.cfg["w1_pairs"],
                         dict(n=1_000_000), alternate=True, per_round=ratio)

    def w2_native(self, busy):
        c = self.cfg
        wl = "W3-busy" if busy else "W2"
        sizes = [20_000] if busy else c["w2_sizes"]
        secs = c["w3_busy_seconds"] if busy else c["w2_seconds"]
        reps = c["w3_busy_reps"] if busy else c["reps"]
        for n in sizes:
            self.interleaved(wl, "w2", W2_NATIVE, [n, secs, PERIOD_MS], reps,
                             dict(n=n, period_ms=PERIOD_MS, seconds=secs, warmup_s=0.5))

    def w2_variants(self):
        """W2 with phases spread over the period (lateness of a steady stream), W2 with a
        handler that does nothing (the runtime's own cost per record), and W2-overload:
        20,000 timers every 10 ms (2 M ticks/s due) — what share each system delivers."""
        c = self.cfg
        n, secs, reps = 20_000, c["w2_seconds"], c["reps"]
        # spot-c takes a batch capacity before the variant arguments
        variant_args = lambda s, period, phase, handler: (
            [n, secs, period, 1024, phase, handler] if s == "spot-c" else [n, secs, period, phase, handler])
        for wl, phase, handler in (("W2-spread", "spread", "latency"), ("W2-noop", "same", "noop")):
            ready = [s for s in W2_VARIANT_SYSTEMS if not missing_reason(SYSTEMS[s][2])]
            runs = {s: [] for s in ready}
            for _ in range(reps):
                for s in ready:
                    r = self.run_one(s, "w2", variant_args(s, PERIOD_MS, phase, handler))
                    if r is not None:
                        runs[s].append(r)
            for s in W2_VARIANT_SYSTEMS:
                if runs.get(s):
                    self.add(wl, s, dict(n=n, period_ms=PERIOD_MS, seconds=secs, phases=phase, handler=handler), runs[s])
                    log(f"  {wl} {s}")
                else:
                    self.miss(wl, s, missing_reason(SYSTEMS[s][2]) or "every run failed (see failures)")
            for s in ("libuv", "go"):
                self.miss(wl, s, "its harness has no spread-phase / do-nothing variant yet")
        self.w2_python(False, "W2-noop")
        nominal = n * secs * 1000 / OVERLOAD_PERIOD_MS
        self.interleaved("W2-overload", "w2", W2_NATIVE, [n, secs, OVERLOAD_PERIOD_MS], reps,
                         dict(n=n, period_ms=OVERLOAD_PERIOD_MS, seconds=secs, nominal_ticks=int(nominal)))
        self.w2_python(False, "W2-overload")
        self.w2_dotnet(False, "W2-overload")
        for r in self.results:
            if r["workload"] == "W2-overload":
                p = r["params"]
                nominal = p["n"] * p["seconds"] * 1000 / p["period_ms"]
                vals = [x / nominal for x in r["metrics"]["records"]["runs"]]
                r["metrics"]["share_delivered"] = dict(median=statistics.median(vals), min=min(vals),
                                                       max=max(vals), runs=vals)

    def python_bench(self, extra, out):
        cmd = [PY, os.path.join(HERE, "python_bench.py"), "--out", out] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode != 0 or not os.path.exists(out):
            self.failures.append(dict(system="python", workload="W2", error=p.stderr[-600:]))
            return None
        with open(out) as f:
            return json.load(f)

    def w2_python(self, busy, variant=None):
        """W2 (or W3-busy) for the Python systems; `variant` "W2-noop" (a handler that does
        nothing) or "W2-overload" (20k timers every 10 ms) instead of plain W2."""
        c = self.cfg
        reason = missing_reason("python")
        wl = variant or ("W3-busy" if busy else "W2")
        names = {"spot_timer": "spot-py", "asyncio.call_at": "asyncio", "uvloop.call_at": "uvloop",
                 "rloop.call_at": "rloop", "threading.Timer": "threading-timer"}
        if reason:
            for s in names.values():
                self.miss(wl, s, reason)
            return
        secs = c["w3_busy_seconds"] if busy else c["w2_seconds"]
        sizes = [20_000] if busy or variant else c["w2_sizes"]
        reps = c["w3_busy_reps"] if busy else c["reps"]
        period = OVERLOAD_PERIOD_MS if variant == "W2-overload" else PERIOD_MS
        handler = "noop" if variant == "W2-noop" else "latency"
        impls = "spot_timer,asyncio.call_at"
        for peer, system in (("uvloop", "uvloop"), ("rloop", "rloop")):
            peer_reason = missing_reason(peer)
            if peer_reason:
                self.miss(wl, system, peer_reason)
            else:
                impls += f",{peer}.call_at"
        calls = [(sizes, impls, reps)]
        if not busy and not variant:
            # one OS thread per timer: threading.Timer runs at 1,000 timers only, and a run
            # takes about a minute there (1,000 threads fight over the GIL): once in QUICK, twice in full
            calls.append(([1_000], "threading.Timer", 1 if self.quick else 2))
        data = {"results": []}
        for i, (szs, impls, nrep) in enumerate(calls):
            out = os.path.join(BUILD, f"python_{wl}_{i}.json")
            d = self.python_bench(["--sizes", ",".join(map(str, szs)), "--impls", impls, "--repeats", str(nrep),
                                   "--seconds", str(secs), "--period-ms", str(period), "--handler", handler], out)
            if d is None:
                for imp in impls.split(","):
                    self.miss(wl, names[imp], "python_bench.py failed (see failures)")
                continue
            data["results"] += d["results"]
        if not busy and not variant and 20_000 in sizes:
            self.miss(wl, "threading-timer", "N=20,000: one OS thread per timer, not run above 2,000 timers")
        for r in data["results"]:
            s = names[r["impl"]]
            params = dict(n=r["n"], period_ms=period, seconds=secs, warmup_s=1.0)
            if variant == "W2-noop":
                params["handler"] = "noop"
            if "skipped" in r:
                self.miss(wl, s, f"N={r['n']:,}: {r['skipped']}")
                continue
            runs = [dict(records=x["records"], cpu_s=x["cpu"], records_per_cpu_s=x["records_per_cpu_s"],
                         cpu_ns_per_record=1e9 / x["records_per_cpu_s"] if x["records_per_cpu_s"] else None,
                         lat_p50_us=x["lat_p50_ms"] * 1e3, lat_p99_us=x["lat_p99_ms"] * 1e3,
                         lat_p999_us=x.get("lat_p999_ms", float("nan")) * 1e3,
                         crossings_per_record=x["crossings_per_record"]) for x in r["runs"]]
            notes = "one owner per timer (serial gate, the default), handlers on the binding's dispatcher thread" \
                if s == "spot-py" else ("the noop handler only re-arms and counts" if variant == "W2-noop" else None)
            if runs:
                self.add(wl, s, params, runs, notes)

    def w2_dotnet(self, busy, variant=None):
        c = self.cfg
        wl = variant or ("W3-busy" if busy else "W2")
        period = OVERLOAD_PERIOD_MS if variant == "W2-overload" else PERIOD_MS
        reason = missing_reason("dotnet")
        if reason:
            self.miss(wl, "spot-dotnet", reason)
            self.miss(wl, "threading-timer-net", reason)
            return
        out = os.path.join(BUILD, f"dotnet_{wl}.json")
        reps = c["w3_busy_reps"] if busy else c["reps"]
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.path.join(ROOT, "target", "release") + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["SPOT_REPO_ROOT"] = ROOT
        cmd = ["mono", "--gc=sgen", DOTNET_EXE, "--seconds", str(c["dotnet_seconds"]), "--runs", str(reps),
               "--period-ms", str(period), "--out", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        if p.returncode != 0 or not os.path.exists(out):
            self.failures.append(dict(system="dotnet", workload=wl, error=(p.stdout + p.stderr)[-600:]))
            self.miss(wl, "spot-dotnet", "Bench.exe failed (see failures)")
            self.miss(wl, "threading-timer-net", "Bench.exe failed (see failures)")
            return
        with open(out) as f:
            data = json.load(f)
        for key, s in (("spot", "spot-dotnet"), ("threading_timer", "threading-timer-net")):
            d = data.get(key)
            if not d:
                continue
            nr = len(d["records_per_cpu_s"]["runs"])

            def col(k, scale=1.0, d=d, nr=nr):
                return d[k]["runs"] if k in d else [None] * nr

            runs = []
            for i in range(nr):
                rps = col("records_per_cpu_s")[i]
                runs.append(dict(records=col("records")[i], records_per_cpu_s=rps,
                                 cpu_ns_per_record=1e9 / rps if rps else None,
                                 cpu_s=col("cpu_s")[i],
                                 lat_p50_us=(col("lateness_p50_ms")[i] or 0) * 1e3,
                                 lat_p99_us=(col("lateness_p99_ms")[i] or 0) * 1e3,
                                 lat_p999_us=(col("lateness_p999_ms")[i] * 1e3) if col("lateness_p999_ms")[i] is not None else None,
                                 crossings_per_record=col("native_crossings_per_record")[i]))
            notes = ("one owner per timer (serial gate), batches through spot_exchange to one managed "
                     "dispatcher thread") if s == "spot-dotnet" else "one System.Threading.Timer per timer (thread-pool callbacks)"
            self.add(wl, s, dict(n=20_000, period_ms=period, seconds=c["dotnet_seconds"], warmup_s=1.5), runs, notes)

    def w3_busy(self):
        """W3 on a busy host: one spinning process per core runs beside each measurement."""
        spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
        try:
            time.sleep(0.3)
            self.w2_native(busy=True)
            self.w2_python(busy=True)
            self.w2_dotnet(busy=True)
        finally:
            for p in spin:
                p.kill()
                p.wait()

    def w4(self):
        c = self.cfg
        self.interleaved("W4", "w4", W4_SYSTEMS, [c["w4_n"]], c["w4_reps"], dict(n=c["w4_n"]), timeout=600)
        self.miss("W4", "threading-timer", "one OS thread per timer: 1M threads cannot be created")

    def w5(self):
        c = self.cfg
        n = c["w5_n"]
        for b in c["w5_batches"]:
            self.repeat("W5", "w2", "spot-c", [n, c["w5_seconds"], PERIOD_MS, b], c["w5_reps"],
                        dict(n=n, batch=b, period_ms=PERIOD_MS, seconds=c["w5_seconds"]))
        reason = missing_reason("python")
        for b in c["w5_batches"]:
            if reason:
                self.miss("W5", "spot-py", reason)
                break
            out = os.path.join(BUILD, f"python_w5_{b}.json")
            data = self.python_bench(["--impls", "spot_timer", "--sizes", str(n), "--max-batch", str(b),
                                      "--repeats", str(c["w5_reps"]), "--seconds", str(c["w5_seconds"])], out)
            if not data or not data["results"] or not data["results"][0].get("runs"):
                self.miss("W5", "spot-py", f"batch {b}: python_bench.py failed")
                continue
            runs = [dict(records_per_cpu_s=x["records_per_cpu_s"], cpu_ns_per_record=1e9 / x["records_per_cpu_s"],
                         crossings_per_record=x["crossings_per_record"], lat_p50_us=x["lat_p50_ms"] * 1e3,
                         lat_p99_us=x["lat_p99_ms"] * 1e3) for x in data["results"][0]["runs"]]
            self.add("W5", "spot-py", dict(n=n, batch=b, period_ms=PERIOD_MS, seconds=c["w5_seconds"]), runs,
                     "Runtime(max_batch=batch); one owner per timer")
            log(f"  W5 spot-py batch={b}")
        self.miss("W5", "spot-dotnet", "the .NET binding has no batch-size setting; its crossings per record at "
                                       "its default batch are in W2 (crossings_per_record)")

    def w6(self):
        c = self.cfg
        for t in (1, 2):
            self.interleaved("W6", "w6", W6_SYSTEMS, [c["w6_n"], t], c["reps"], dict(n=c["w6_n"], threads=t))
        self.miss("W6", "asyncio", "an asyncio event loop is not thread-safe (call_soon_threadsafe hands work to the loop thread)")

    def w7_python(self):
        """The actor's shape from Python: 1M live one-shots, 2 per owner, 200k timeout
        resets and every timer cancelled, both in random order, beside asyncio, uvloop and
        rloop (interleaved runs, each in a fresh process)."""
        c = self.cfg
        n = c["w7_py_n"]
        self.interleaved("W7-py", "w7", W7_PY_SYSTEMS, [n], c["reps"], dict(n=n, per_owner=2), timeout=600)

    def w7_dotnet(self):
        """The actor's shape from .NET: 1M live one-shots, 2 per owner, 200k timeout resets
        (`Timer.Reset` / `Change`, and as cancel + register), every timer cancelled, both in
        random order, then the teardown of n live timers, beside System.Threading.Timer
        (interleaved runs, each in a fresh Mono process)."""
        c = self.cfg
        n = c["w7_py_n"]
        self.interleaved("W7-net", "w7", W7_NET_SYSTEMS, [n], c["reps"], dict(n=n, per_owner=2), timeout=900)


# ---------------------------------------------------------------- reporting

W5_SYSTEMS = ["spot-c", "spot-py", "spot-dotnet"]


def complete_missing(doc):
    """Every (workload, system) pair without a result gets a reason: nothing is dropped silently."""
    have = {(r["workload"], r["system"]) for r in doc["results"]} | {(m["workload"], m["system"]) for m in doc["missing"]}
    for wl in ("W1", "W2", "W2-spread", "W2-noop", "W2-overload", "W3-busy", "W4", "W5", "W6"):
        for s, (label, _, _, _) in SYSTEMS.items():
            if (wl, s) in have or (wl == "W5" and s not in W5_SYSTEMS):
                continue
            if s in ("spot-rust-handles", "spot-rust-steady", "tokio-delayqueue-steady") and wl != "W1":
                continue
            if s in ("uvloop-py", "rloop"):
                continue  # the Python actor-shape workload's peers (W7-py) only
            if wl in ("W2-spread", "W2-noop") and s in ("threading-timer", "spot-dotnet", "threading-timer-net",
                                                         "tokio-sleep") or (wl == "W2-spread" and s in ("spot-py",
                                                                                                        "asyncio", "uvloop")):
                reason = "this variant runs for the native harnesses only"
                doc["missing"].append(dict(workload=wl, system=s, label=label, reason=reason))
                continue
            if s == "tokio-sleep" and wl.startswith(("W2", "W3")):
                reason = "the periodic workloads use tokio::time::Interval, tokio's periodic form"
            elif s == "tokio-interval" and not wl.startswith(("W2", "W3")):
                reason = "the one-shot workloads use tokio::time::sleep"
            elif s == "uvloop" and not wl.startswith("W2"):
                reason = "uvloop runs in the Python W2 workloads (its timers are asyncio's API on libuv)"
            elif s == "threading-timer":
                reason = "one OS thread per timer: run only in W2 at 1,000 timers"
            elif s in ("spot-dotnet", "threading-timer-net"):
                reason = "no .NET harness for this workload yet"
            else:
                reason = "not measured in this run"
            doc["missing"].append(dict(workload=wl, system=s, label=label, reason=reason))

def med(r, k):
    m = r["metrics"].get(k)
    return m["median"] if m else None


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    if abs(v) >= 1e6 and digits == 0:
        return f"{v / 1e6:.2f} M"
    return f"{v:,.{digits}f}"


def cell(r, k, digits=0):
    m = r["metrics"].get(k)
    if not m:
        return "n/a"
    if len(m["runs"]) == 1:
        return fmt(m["median"], digits)
    return f"{fmt(m['median'], digits)} ({fmt(m['min'], digits)}–{fmt(m['max'], digits)})"


def find(results, wl, system, **params):
    for r in results:
        if r["workload"] == wl and r["system"] == system and all(r["params"].get(k) == v for k, v in params.items()):
            return r
    return None


def targets(results):
    out = []

    def ratio(a, b):
        return a / b if a is not None and b else None

    def add(target, r, measured, met):
        out.append(dict(target=target, measured=measured if r is not None else "n/a", met=r is not None and met))

    s = find(results, "W1", "spot-rust", n=1_000_000)
    d = find(results, "W1", "tokio-delayqueue", n=1_000_000)
    c = find(results, "W1", "spot-c", n=1_000_000)
    # The measurement of record is W1-pair (back-to-back pairs, see `Suite.w1_pairs`); the
    # ratio in the all-systems W1 rounds is shown beside it.
    ps = find(results, "W1-pair", "spot-rust", n=1_000_000)
    pd = find(results, "W1-pair", "tokio-delayqueue", n=1_000_000)
    r = ratio(ps and med(ps, "arm_cancel_ns"), pd and med(pd, "arm_cancel_ns"))
    rounds = ratio(s and med(s, "arm_cancel_ns"), d and med(d, "arm_cancel_ns"))
    pr = ps and ps["metrics"].get("ratio_to_delayqueue")
    add("W1: spot-timer (Rust core) ≤ 0.8× tokio-util DelayQueue's ns per arm+cancel at 1M (aim 0.5×; "
        "W1-pair medians)", r,
        r and (f"{r:.2f}× ({med(ps, 'arm_cancel_ns'):.0f} ns vs {med(pd, 'arm_cancel_ns'):.0f} ns, "
               f"{ps['n_runs']} pairs; per-pair ratio {pr['median']:.2f} ({pr['min']:.2f}–{pr['max']:.2f}); "
               f"in the all-systems W1 rounds: " + (f"{rounds:.2f}×" if rounds else "n/a") + ")"),
        r is not None and r <= 0.8)
    r = ratio(c and med(c, "arm_cancel_ns"), s and med(s, "arm_cancel_ns"))
    add("W1: C ABI ≤ 1.25× the Rust core's ns per arm+cancel at 1M", r,
        r and f"{r:.2f}× ({med(c, 'arm_cancel_ns'):.0f} ns vs {med(s, 'arm_cancel_ns'):.0f} ns)", r is not None and r <= 1.25)
    for system, limit in (("spot-rust", 96), ("spot-c", 112)):
        w = find(results, "W4", system)
        b = w and med(w, "runtime_bytes_per_timer")
        id_bytes = 8 if system == "spot-rust" else 16
        add(f"W4: ≤ {limit} bytes per live timer at 1M ({SYSTEMS[system][0]}; the runtime's memory, without the "
            f"host's {id_bytes}-byte id per timer)", b,
            b and f"{b:.0f} B (with the host's ids: {med(w, 'bytes_per_timer'):.0f} B)", b is not None and b <= limit)
    a = find(results, "W2", "spot-c", n=20_000)
    b = find(results, "W2", "tokio-interval", n=20_000)
    r = ratio(a and med(a, "records_per_cpu_s"), b and med(b, "records_per_cpu_s"))
    add("W2: C host ≥ 2× tokio Interval's records per CPU-second at 20k timers (aim 3×)", r,
        r and f"{r:.2f}× ({med(a, 'records_per_cpu_s'):,.0f} vs {med(b, 'records_per_cpu_s'):,.0f})", r is not None and r >= 2)
    rr = find(results, "W2", "spot-rust", n=20_000)
    r = ratio(a and med(a, "cpu_ns_per_record"), rr and med(rr, "cpu_ns_per_record"))
    add("W2: C ABI ≤ 1.25× the Rust core's CPU ns per record at 20k timers", r,
        r and f"{r:.2f}× ({med(a, 'cpu_ns_per_record'):.0f} ns vs {med(rr, 'cpu_ns_per_record'):.0f} ns)",
        r is not None and r <= 1.25)
    for system in ("spot-c", "spot-rust"):
        w = find(results, "W2-spread", system)
        p99 = w and med(w, "lat_p99_us")
        add(f"W3: lateness p99 ≤ 1 ms, 20k timers with phases spread over a 100 ms period, idle host "
            f"({SYSTEMS[system][0]})", p99, p99 and f"{p99 / 1000:.2f} ms (p50 {med(w, 'lat_p50_us') / 1000:.2f} ms)",
            p99 is not None and p99 <= 1000)
    def at_least(target, a, b, key, limit, unit):
        """A target "a's `key` ≥ `limit` × b's", with both figures shown."""
        r = ratio(a and med(a, key), b and med(b, key))
        add(target, r, r and f"{r:.2f}× ({med(a, key):,.0f} vs {med(b, key):,.0f} {unit})", r is not None and r >= limit)

    for system in ("spot-rust", "spot-c"):
        at_least(f"W6: 2 threads register ≥ 1.5× the rate of 1 thread ({SYSTEMS[system][0]})",
                 find(results, "W6", system, threads=2), find(results, "W6", system, threads=1),
                 "registrations_per_s", 1.5, "per s")
    for peer, spot, label in (("asyncio", "spot-py", "asyncio"), ("threading-timer-net", "spot-dotnet", "System.Threading.Timer")):
        at_least(f"W2: ≥ 10× {label} records per CPU-second at 20k timers", find(results, "W2", spot, n=20_000),
                 find(results, "W2", peer, n=20_000), "records_per_cpu_s", 10, "records/CPU-s")
    # Managed hosts at native speed (Python).
    def at_most(target, a, b, key, limit, unit, digits=0):
        """A target "a's `key` ≤ `limit` × b's", with both figures shown."""
        r = ratio(a and med(a, key), b and med(b, key))
        add(target, r, r and f"{r:.2f}× ({med(a, key):,.{digits}f} vs {med(b, key):,.{digits}f} {unit})",
            r is not None and r <= limit)

    at_most("Python W2-noop: spot_timer's CPU per record ≤ 0.25× asyncio's per callback (aim 0.1×)",
            find(results, "W2-noop", "spot-py"), find(results, "W2-noop", "asyncio"), "cpu_ns_per_record", 0.25, "ns")
    o = find(results, "W2-overload", "spot-py")
    share, p99 = o and med(o, "share_delivered"), o and med(o, "lat_p99_us")
    add("Python W2-overload (20k × 10 ms): ≥ 75% of nominal ticks delivered with lateness p99 ≤ 5 ms", share,
        share is not None and f"{share:.1%} delivered, p99 {p99 / 1000:.1f} ms",
        share is not None and share >= 0.75 and p99 <= 5000)
    at_least("Python W2-overload: records per CPU-second ≥ uvloop's", o, find(results, "W2-overload", "uvloop"),
             "records_per_cpu_s", 1, "records/CPU-s")
    at_least("Python W2-overload: records per CPU-second ≥ 3× asyncio's", o, find(results, "W2-overload", "asyncio"),
             "records_per_cpu_s", 3, "records/CPU-s")
    at_most("Python W1 at 1M: arm+cancel ≤ asyncio's", find(results, "W1", "spot-py", n=1_000_000),
            find(results, "W1", "asyncio", n=1_000_000), "arm_cancel_ns", 1, "ns")
    at_most("Python W1 at 1M: arm+cancel ≤ rloop's (the fastest asyncio loop)",
            find(results, "W1", "spot-py", n=1_000_000), find(results, "W1", "rloop", n=1_000_000),
            "arm_cancel_ns", 1, "ns")
    w = find(results, "W1", "spot-py", n=1_000_000)
    ns = w and med(w, "arm_cancel_ns")
    add("Python W1 at 1M: arm+cancel ≤ 300 ns", ns, ns and f"{ns:.0f} ns", ns is not None and ns <= 300)
    at_most("Python W4 at 1M: bytes per live timer ≤ asyncio's", find(results, "W4", "spot-py"),
            find(results, "W4", "asyncio"), "bytes_per_timer", 1, "B")
    w7 = [find(results, "W7-py", s_) for s_ in ("spot-py", "rloop")]
    at_most("Python W7-py (1M live, 2 per owner, random order): arm + cancel ≤ rloop's", w7[0], w7[1],
            "arm_cancel_ns", 1, "ns")
    at_most("Python W7-py: a timeout reset with Timer.reset ≤ 0.5× rloop's cancel + call_later", w7[0], w7[1],
            "reset_ns", 0.5, "ns")
    w7n = [find(results, "W7-net", s_) for s_ in ("spot-dotnet", "threading-timer-net")]
    for what, key in (("arm", "arm_ns"), ("random-order cancel (Dispose)", "cancel_ns"),
                      ("timeout reset (Timer.Reset vs Change)", "reset_ns")):
        at_most(f".NET W7-net (1M live, 2 per owner): {what} ≤ 1.0× System.Threading.Timer's (aim 0.5×)",
                w7n[0], w7n[1], key, 1, "ns")
    t = w7n[0] and med(w7n[0], "teardown_ns")
    add(".NET W7-net: teardown of a runtime ≤ 200 ns per live timer", t, t and f"{t:.0f} ns",
        t is not None and t <= 200)
    w = find(results, "W6", "spot-py", threads=1)
    ns = w and med(w, "ns_per_register")
    add("Python W6: a registration ≤ 250 ns (1 thread)", ns, ns and f"{ns:.0f} ns", ns is not None and ns <= 250)
    at_least("W2: .NET ≥ 8× System.Threading.Timer records per CPU-second at 20k timers (aim 10×)",
             find(results, "W2", "spot-dotnet", n=20_000), find(results, "W2", "threading-timer-net", n=20_000),
             "records_per_cpu_s", 8, "records/CPU-s")
    c = find(results, "W5", "spot-c", batch=1024)
    out.append(dict(target="W5: ≤ 0.01 crossings per record, 20k timers sharing a period (C ABI, batch capacity 1024)",
                    measured=(f"{med(c, 'crossings_per_record'):.5f}" if c else "n/a"),
                    met=(c is not None and med(c, "crossings_per_record") <= 0.01)))
    p = find(results, "W2", "spot-py", n=20_000)
    if p and med(p, "crossings_per_record") is not None:
        out.append(dict(target="W5 (Python, default max_batch 8192): ≤ 0.01 crossings per record at 20k timers",
                        measured=f"{med(p, 'crossings_per_record'):.5f}", met=med(p, "crossings_per_record") <= 0.01))
    p = find(results, "W2", "spot-dotnet", n=20_000)
    if p and med(p, "crossings_per_record") is not None:
        out.append(dict(target="W5 (.NET, default batch): ≤ 0.01 crossings per record at 20k timers",
                        measured=f"{med(p, 'crossings_per_record'):.5f}", met=med(p, "crossings_per_record") <= 0.01))
    return out


def write_md(doc, path):
    res = doc["results"]
    m = doc["machine"]
    L = []
    L.append(f"# spot-timer benchmark suite — {'QUICK ' if doc['config']['quick'] else ''}run of {m['date_utc']}\n")
    L.append(f"- Machine: {m['nproc']} CPUs, `{m['cpu_model']}`, {m['mem_total_gib']} GiB, Linux {m['kernel']} ({m['os']})")
    L.append(f"- Load average (1/5/15 min): before {doc['load_before']}, after {doc['load_after']} "
             "(the machine is shared; compare ratios within this run)")
    def tool(k, v):
        v = v.replace('version = ', '').strip('"')
        return v if k in ("rustc", "go", "python", "mono") else f"{k.replace('_', '-')} {v}"

    L.append(f"- Code: commit {m['commit']} (plus uncommitted changes, if any); tools: " +
             "; ".join(tool(k, v) for k, v in m["tools"].items() if v))
    L.append(f"- Medians over repeated runs (each a fresh process, with an in-process warm-up), spread min–max in "
             f"brackets. Suite wall time: {doc['wall_s']:.0f} s.")
    L.append("- spot-timer owners: 100 timers per owner with `GateMode::Concurrent` in the Rust, C and Python W1/W4/W6 "
             "harnesses and the Rust/C W2; the Python and .NET W2/W3 benches use one owner per timer (default serial gate).\n")

    L.append("## Targets\n")
    L.append("| target | measured | met? |\n|---|---|---|")
    for t in doc["targets"]:
        L.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    L.append("")

    def table(title, wl, cols, key=lambda r: (r["params"].get("n", 0), r["language"])):
        rows = sorted([r for r in res if r["workload"] == wl], key=key)
        if not rows:
            return
        L.append(f"## {title}\n")
        L.append("| " + " | ".join(["system", "language", "params"] + [c[0] for c in cols]) + " |")
        L.append("|" + "---|" * (3 + len(cols)))
        for r in rows:
            ps = ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in r["params"].items())
            L.append("| " + " | ".join([r["label"], r["language"], ps] + [cell(r, c[1], c[2]) for c in cols]) + " |")
        notes = sorted({f"{r['label']}: {r['notes']}" for r in rows if r.get("notes")})
        for n in notes:
            L.append(f"\n- {n}")
        L.append("")

    w1_times = [("ns per arm", "arm_ns", 0), ("ns per cancel", "cancel_ns", 0), ("ns per arm+cancel", "arm_cancel_ns", 0),
                ("CPU ns per arm+cancel", "cpu_ns_per_arm_cancel", 0)]
    table("W1 — arm + cancel churn (random deadlines 60–120 s, all cancelled)", "W1",
          w1_times + [("allocations per arm", "allocs_per_arm", 2), ("allocations per cancel", "allocs_per_cancel", 2)])
    L.append("spot-timer (Rust core) keeps timers by id (`Owner::register_id`, `Runtime::cancel_timer_nowait`); "
             "the TimerHandle row does the same through handles, each holding a reference to the runtime. "
             "The \"second round\" rows arm and cancel the same N timers again in the same runtime / queue and "
             "report that round: the memory the first round grew and touched is reused (the steady state of a "
             "long-running host); the other rows are a fresh runtime's first round. "
             "spot-timer's times include its scheduler thread's share (a sync / sentinel wait after each phase). "
             "Allocations: counting global allocator (Rust: every thread), `runtime.MemStats.Mallocs` (Go); libuv "
             "allocates nothing per timer (the caller owns `uv_timer_t`); n/a where not measurable from the harness "
             "(C ABI: allocations are inside the Rust library; Python: tracemalloc would miss the native heap). "
             "libuv's cancel is `uv_timer_stop` (the handle stays initialised); tokio `sleep` is armed by its first "
             "poll and cancelled by drop. CPU ns: the process's CPU time (user + system, every thread: spot-timer's "
             "scheduler and pretouch helper included) over the round, per timer (Rust harness only).\n")
    table("W1-pair — W1 at 1M, spot-timer (Rust core) and DelayQueue in back-to-back pairs", "W1-pair",
          w1_times + [("ratio to DelayQueue in its pair", "ratio_to_delayqueue", 2)])
    L.append("W1-pair: the two systems W1's target compares, run as pairs one right after the other (the order "
             "alternating from pair to pair), so both runs of a pair meet the same state of the shared machine; "
             "in the W1 rounds above eleven other systems run between two runs of one system. The target reads "
             "these medians.\n")
    table("W1-tail — the slowest registrations of a first round at 1M (each arm timed alone)", "W1-tail",
          [("p50 ns", "arm_p50_ns", 0), ("p99 ns", "arm_p99_ns", 0), ("p99.99 ns", "arm_p9999_ns", 0),
           ("max µs", "arm_max_us", 0), ("arms over 100 µs", "arms_over_100us", 0),
           ("ns per arm in arms over 10 µs", "stalled_ns_per_arm", 1)])
    L.append("W1-tail: W1's first round of arms at 1M, each timed with its own pair of clock reads (~25 ns of the "
             "p50 is the clock); the cancels are not run. A page fault or a table's growth lands in one arm: the "
             "last column is how much of the mean such stalls are.\n")
    table(f"W2 — expiry throughput ({PERIOD_MS} ms period, all timers sharing the phase)", "W2",
          [("records per CPU-s", "records_per_cpu_s", 0), ("CPU ns per record", "cpu_ns_per_record", 0),
           ("crossings per record", "crossings_per_record", 4)])
    L.append("W2: records per CPU-second = handler starts in the measured window / process CPU time (user + system, "
             "every thread: spot-timer's scheduler thread and the bindings' dispatcher threads included). The handler "
             "counts the tick and records its lateness, in the system's own language. Periodic timers are fixed rate "
             "and skip late ticks (spot-timer `SkipLateTicks`, tokio `MissedTickBehavior::Skip`; the libuv, Go and "
             "asyncio harnesses re-arm each timer for its next nominal due time). spot-timer's scheduler wakes on its "
             "resolution (2^19 ns, about 0.52 ms): timers due within one such tick come in one batch. Rust and C "
             "spot-timer hosts use "
             "`exchange` with a capacity of 1,024 records on one host thread.\n")
    table(f"W2-noop — the runtime's own cost: a handler that only counts ({PERIOD_MS} ms period, shared phase)", "W2-noop",
          [("records per CPU-s", "records_per_cpu_s", 0), ("CPU ns per record", "cpu_ns_per_record", 0),
           ("crossings per record", "crossings_per_record", 4)])
    table(f"W2-overload — 20,000 timers every {OVERLOAD_PERIOD_MS} ms (2 M ticks/s due)", "W2-overload",
          [("share of nominal ticks delivered", "share_delivered", 3), ("records per CPU-s", "records_per_cpu_s", 0),
           ("lateness p50 µs", "lat_p50_us", 0), ("lateness p99 µs", "lat_p99_us", 0)])
    L.append("W2-overload: more ticks are due than one host thread can run; every system skips late ticks (fixed "
             "rate). The share delivered is handler starts / nominal ticks in the window; lateness is of the ticks "
             "that ran.\n")
    table("W3 — lateness, idle host, phases spread evenly over the 100 ms period (W2-spread), µs", "W2-spread",
          [("p50", "lat_p50_us", 0), ("p99", "lat_p99_us", 0), ("p99.9", "lat_p999_us", 0),
           ("records per CPU-s", "records_per_cpu_s", 0), ("crossings per record", "crossings_per_record", 4)])
    table("W3 — lateness, idle host, all timers sharing one phase (from the W2 runs), µs", "W2",
          [("p50", "lat_p50_us", 0), ("p99", "lat_p99_us", 0), ("p99.9", "lat_p999_us", 0)])
    L.append("W3: lateness = handler start − nominal due time. In the W2 runs all 20,000 timers share one phase, so the p50..p99.9 "
             "of every system mostly measure how long it takes to run 20,000 handlers after one due instant (the "
             "last handler of a round is as late as the whole round takes).\n")
    table(f"W3 — lateness, busy host ({m['nproc']} spinning processes beside the run), µs", "W3-busy",
          [("p50", "lat_p50_us", 0), ("p99", "lat_p99_us", 0), ("p99.9", "lat_p999_us", 0),
           ("records per CPU-s", "records_per_cpu_s", 0)])
    table("W4 — RSS per live timer", "W4", [("bytes per timer", "bytes_per_timer", 1),
                                            ("without the host's handles", "runtime_bytes_per_timer", 1),
                                            ("RSS after (bytes)", "rss_after", 0)])
    L.append("W4: RSS growth over 1,000,000 live one-shot timers, divided by the count; it includes what the host "
             "keeps to cancel each timer (spot-timer: an 8-byte id in Rust, a 16-byte `spot_timer` in C; DelayQueue: "
             "an 8-byte key; tokio sleep: a boxed "
             "`Sleep` pointer). The second column subtracts it where the harness reports it.\n")
    table("W5 — boundary crossings and CPU per record versus batch size (20k timers, one shared period)", "W5",
          [("crossings per record", "crossings_per_record", 5), ("CPU ns per record", "cpu_ns_per_record", 0),
           ("records per CPU-s", "records_per_cpu_s", 0)],
          key=lambda r: (r["language"], r["params"]["batch"]))
    table("W7-py — the actor's shape from Python: live one-shots, 2 per owner, timeout resets and cancels in "
          "random order", "W7-py",
          [("ns per arm", "arm_ns", 0), ("ns per reset", "reset_ns", 0),
           ("ns per reset as cancel + register", "reset_cancel_register_ns", 0), ("ns per cancel", "cancel_ns", 0),
           ("ns per arm+cancel", "arm_cancel_ns", 0)])
    L.append("W7-py: one-shots with deadlines 60–120 s, two per owner (spot_timer: the default serial gate, keys 0 and "
             "1); then min(200,000, n/5) timeout resets of random timers (spot_timer: `Timer.reset`, and again as `cancel()` + "
             "`after()`; the asyncio loops: `cancel()` + `call_later`), then every timer cancelled in a random order. "
             "Each phase times the calls alone (indexes and deadlines drawn before it), in the same Python loop for "
             "every system; spot_timer's runtime runs its scheduler thread (the default `Runtime()`).\n")
    table("W7-net — the actor's shape from .NET: live one-shots, 2 per owner, timeout resets and cancels in "
          "random order, teardown", "W7-net",
          [("ns per arm", "arm_ns", 0), ("ns per reset", "reset_ns", 0),
           ("ns per reset as cancel + register", "reset_cancel_register_ns", 0), ("ns per cancel", "cancel_ns", 0),
           ("ns per timer at teardown", "teardown_ns", 0)])
    L.append("W7-net: as W7-py, in Mono: SpotTimer `Owner.After` (the default serial gate), `Timer.Reset` (in place "
             "when idle) and again `Cancel` + `After`, `Cancel`, then `Runtime.Dispose` with n timers live; "
             "System.Threading.Timer: `new Timer(cb, null, due, Infinite)`, `Change(due, Infinite)` and again "
             "`Dispose` + `new`, `Dispose`, and `Dispose` of each of n live timers.\n")
    table("W6 — registration from 1 and 2 threads", "W6",
          [("ns per registration (wall)", "ns_per_register", 0), ("registrations per s", "registrations_per_s", 0)],
          key=lambda r: (r["system"], r["params"]["threads"]))
    L.append("W6: libuv loops are not thread-safe, so each thread registers on its own loop; tokio-util DelayQueue "
             "is shared behind a `Mutex`; tokio `sleep` registers with a multi-thread runtime's timer; Go uses one "
             "goroutine per thread; spot-timer shares one runtime (each thread with its own owners), and its time runs "
             "until the scheduler thread has applied every registration (`Runtime::sync`; a sentinel timer through "
             "the C ABI), while the peers' time ends with the last call.\n")
    if doc["missing"]:
        L.append("## Missing or not run\n")
        L.append("| workload | system | reason |\n|---|---|---|")
        for x in doc["missing"]:
            L.append(f"| {x['workload']} | {x['label']} | {x['reason']} |")
        L.append("")
    if doc["failures"]:
        L.append("## Failed runs\n")
        for f in doc["failures"]:
            L.append(f"- {f.get('workload')} {f.get('system')} {f.get('args', '')}: `{str(f.get('error'))[:300]}`")
        L.append("")
    L.append("## Plots\n")
    for p in doc["plots"]:
        L.append(f"![{p}]({p})")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def plots(doc, outdir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        log(f"matplotlib missing ({e}): no plots")
        return []
    res = doc["results"]
    made = []
    sub = f"{doc['machine']['date_utc']}, {doc['machine']['nproc']} CPUs, load {doc['load_before'][0]}→{doc['load_after'][0]}"

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=110)
        plt.close(fig)
        made.append(name)

    def bars(ax, rows, key, labels=None):
        rows = [r for r in rows if med(r, key) is not None]
        ys = [med(r, key) for r in rows]
        lo = [med(r, key) - r["metrics"][key]["min"] for r in rows]
        hi = [r["metrics"][key]["max"] - med(r, key) for r in rows]
        colors = ["tab:red" if r["system"].startswith("spot") else "tab:gray" for r in rows]
        ax.barh(range(len(rows)), ys, xerr=[lo, hi], color=colors, capsize=3)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels or [r["label"] for r in rows], fontsize=8)
        ax.invert_yaxis()

    # W1: ns per arm+cancel versus N
    w1 = [r for r in res if r["workload"] == "W1"]
    if w1:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for s in dict.fromkeys(r["system"] for r in w1):
            rows = sorted([r for r in w1 if r["system"] == s], key=lambda r: r["params"]["n"])
            ax.errorbar([r["params"]["n"] for r in rows], [med(r, "arm_cancel_ns") for r in rows],
                        yerr=[[med(r, "arm_cancel_ns") - r["metrics"]["arm_cancel_ns"]["min"] for r in rows],
                              [r["metrics"]["arm_cancel_ns"]["max"] - med(r, "arm_cancel_ns") for r in rows]],
                        marker="o", capsize=3, label=SYSTEMS[s][0], lw=2.5 if s.startswith("spot") else 1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("timers armed then cancelled (N)")
        ax.set_ylabel("ns per arm + cancel (log)")
        ax.set_title(f"W1 arm+cancel churn — lower is better\n{sub}", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "w1_churn.png")
    # W2: records per CPU-second at 20k
    w2 = sorted([r for r in res if r["workload"] == "W2" and r["params"]["n"] == 20_000],
                key=lambda r: -(med(r, "records_per_cpu_s") or 0))
    if w2:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        bars(ax, w2, "records_per_cpu_s", [f"{r['label']} [{r['language']}]" for r in w2 if med(r, "records_per_cpu_s")])
        ax.set_xlabel("records delivered per CPU-second (process CPU, all threads)")
        ax.set_title(f"W2 expiry throughput, 20,000 timers, 100 ms period — higher is better\n{sub}", fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        save(fig, "w2_throughput.png")
    # W3: lateness p50/p99/p999 idle and busy at 20k
    for wl, name, title in (("W2", "w3_lateness_idle.png", "idle host"), ("W3-busy", "w3_lateness_busy.png", "busy host")):
        rows = [r for r in res if r["workload"] == wl and r["params"]["n"] == 20_000 and med(r, "lat_p50_us") is not None]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.5))
        w = 0.27
        for i, (k, lab) in enumerate((("lat_p50_us", "p50"), ("lat_p99_us", "p99"), ("lat_p999_us", "p99.9"))):
            ax.barh([j + (i - 1) * w for j in range(len(rows))], [max(med(r, k) or 0, 1) / 1000 for r in rows],
                    height=w, label=lab)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{r['label']} [{r['language']}]" for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("lateness: handler start − nominal due time, ms (log)")
        ax.set_title(f"W3 lateness, 20,000 timers sharing a 100 ms period, {title} — lower is better\n{sub}", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        save(fig, name)
    # W4
    w4 = sorted([r for r in res if r["workload"] == "W4"], key=lambda r: med(r, "bytes_per_timer") or 0)
    if w4:
        fig, ax = plt.subplots(figsize=(8, 4))
        bars(ax, w4, "bytes_per_timer", [f"{r['label']} [{r['language']}]" for r in w4])
        ax.axvline(96, color="k", ls="--", lw=1)
        ax.text(96, -0.6, " 96 B target", fontsize=8)
        ax.set_xlabel("RSS bytes per live timer at 1M timers")
        ax.set_title(f"W4 memory — lower is better\n{sub}", fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        save(fig, "w4_memory.png")
    # W5
    w5 = [r for r in res if r["workload"] == "W5"]
    if w5:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        for s in dict.fromkeys(r["system"] for r in w5):
            rows = sorted([r for r in w5 if r["system"] == s], key=lambda r: r["params"]["batch"])
            xs = [r["params"]["batch"] for r in rows]
            a1.plot(xs, [med(r, "crossings_per_record") for r in rows], marker="o", label=SYSTEMS[s][0])
            a2.plot(xs, [med(r, "cpu_ns_per_record") for r in rows], marker="o", label=SYSTEMS[s][0])
        a1.axhline(0.01, color="k", ls="--", lw=1)
        for a, yl in ((a1, "boundary crossings per record (log)"), (a2, "CPU ns per record (log)")):
            a.set_xscale("log", base=2)
            a.set_yscale("log")
            a.set_xlabel("batch capacity (records per crossing at most)")
            a.set_ylabel(yl)
            a.grid(True, which="both", alpha=0.3)
            a.legend(fontsize=8)
        fig.suptitle(f"W5 crossings and cost per record vs batch size, 20,000 timers sharing a period\n{sub}", fontsize=9)
        save(fig, "w5_batching.png")
    # W6
    w6 = [r for r in res if r["workload"] == "W6"]
    if w6:
        systems = list(dict.fromkeys(r["system"] for r in w6))
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for i, t in enumerate((1, 2)):
            ys = []
            for s in systems:
                r = find(res, "W6", s, threads=t)
                ys.append(med(r, "registrations_per_s") / 1e6 if r else 0)
            ax.barh([j + (i - 0.5) * 0.38 for j in range(len(systems))], ys, height=0.38, label=f"{t} thread(s)")
        ax.set_yticks(range(len(systems)))
        ax.set_yticklabels([f"{SYSTEMS[s][0]} [{SYSTEMS[s][1]}]" for s in systems], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("registrations per second, millions (all threads together)")
        ax.set_title(f"W6 registration from 1 and 2 threads — higher is better\n{sub}", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
        save(fig, "w6_registration.png")
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="W1,W2,W3,W4,W5,W6,W7", help="comma-separated workloads")
    ap.add_argument("--report-only", action="store_true", help="re-render latest.md and plots from latest.json")
    args = ap.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    os.makedirs(BUILD, exist_ok=True)
    if args.report_only:
        with open(os.path.join(RESULTS, "latest.json")) as f:
            doc = json.load(f)
        complete_missing(doc)
        doc["targets"] = targets(doc["results"])
        doc["plots"] = plots(doc, RESULTS)
        with open(os.path.join(RESULTS, "latest.json"), "w") as f:
            json.dump(doc, f, indent=1)
        write_md(doc, os.path.join(RESULTS, "latest.md"))
        return 0
    t0 = time.time()
    machine = machine_info()
    load_before = loadavg()
    suite = Suite(args.quick)
    only = args.only.split(",")
    log(f"bench suite ({'QUICK' if args.quick else 'full'}), load before {load_before}")
    loads = {}
    steps = [("W1", suite.w1), ("W2", lambda: (suite.w2_native(False), suite.w2_python(False), suite.w2_dotnet(False),
                                               suite.w2_variants())),
             ("W3", suite.w3_busy), ("W4", suite.w4), ("W5", suite.w5), ("W6", suite.w6), ("W7", suite.w7_python),
             ("W7", suite.w7_dotnet)]
    for wl, fn in steps:
        if wl in only:
            log(f"{wl} ...")
            l0, t1 = loadavg(), time.time()
            fn()
            loads[wl] = dict(before=l0, after=loadavg(), wall_s=round(time.time() - t1, 1))
    doc = dict(machine=machine, load_before=load_before, load_after=loadavg(), load_per_workload=loads,
               config=dict(quick=args.quick, **suite.cfg, period_ms=PERIOD_MS),
               wall_s=time.time() - t0, results=suite.results, missing=suite.missing, failures=suite.failures)
    complete_missing(doc)
    doc["targets"] = targets(suite.results)
    doc["plots"] = plots(doc, RESULTS)
    with open(os.path.join(RESULTS, "latest.json"), "w") as f:
        json.dump(doc, f, indent=1)
    write_md(doc, os.path.join(RESULTS, "latest.md"))
    log(f"wrote bench/results/latest.json, latest.md and {len(doc['plots'])} plots in {doc['wall_s']:.0f} s")
    for t in doc["targets"]:
        log(f"  {'MET ' if t['met'] else 'MISSED'} {t['target']}: {t['measured']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
