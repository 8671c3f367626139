"""Reliability faults through the Python binding: a handler raising on every tick
for 1M ticks keeps memory flat; interpreter shutdown with 20k live timers exits promptly.

Run by `make test-reliability` with the binding's venv (build/venv-python). Sizes:
RELIABILITY_PY_TICKS (default 1_000_000)."""
import os
import subprocess
import sys
import textwrap
import time

import spot_timer as st


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_raising_handler_one_million_ticks_memory_flat():
    total = int(os.environ.get("RELIABILITY_PY_TICKS", "1000000"))
    timers = 1000
    rounds = total // timers
    errors = [0]

    def on_error(exc, tick):
        errors[0] += 1

    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual", exception_handler=on_error)
    owner = rt.owner(1, gate=st.GateMode.CONCURRENT)

    def handler(tick):
        raise RuntimeError("boom %d" % tick.delivery_index)

    handles = [owner.every(0.001, handler, key=k) for k in range(timers)]
    samples = []
    started = time.monotonic()
    for r in range(rounds):
        rt.advance(0.001)
        while rt.dispatch(0):
            pass
        if r in (rounds // 10, rounds // 2, rounds - 1):
            samples.append((rss_bytes(), rt.held_python_objects()))
    rt.advance(0)
    while rt.dispatch(0):
        pass
    stats = rt.stats()
    rt.close()
    elapsed = time.monotonic() - started
    assert errors[0] == rounds * timers, (errors[0], rounds * timers)
    assert stats.completed_failed == rounds * timers, stats
    assert stats.completed_ok == 0, stats
    base_rss, base_held = samples[0]
    for rss, held in samples[1:]:
        assert held <= base_held, (samples,)
        # Flat: less than 2 MiB above the sample taken after the first 10%.
        assert rss - base_rss < 2 * 1024 * 1024, (samples,)
    print(
        "FIGURES py_raising_handler: ticks=%d failed=%d secs=%.1f rss_mib=%s held=%s"
        % (
            rounds * timers,
            stats.completed_failed,
            elapsed,
            [round(s[0] / 1048576, 1) for s in samples],
            [s[1] for s in samples],
        )
    )
    del handles


SHUTDOWN_SCRIPT = textwrap.dedent(
    """
    import time, spot_timer as st
    rt = st.Runtime()
    count = [0]
    def handler(tick):
        count[0] += 1
    owners = [rt.owner(o) for o in range(10000)]
    timers = [o.every(0.001 * (1 + (i % 10)), handler, key=k)
              for i, o in enumerate(owners) for k in range(2)]
    assert rt.stats().live_timers <= 20000
    time.sleep(0.5)
    print("ticks", count[0], "live", rt.stats().live_timers, flush=True)
    # no close(): the interpreter shuts down with 20k live timers
    """
)


def test_interpreter_shutdown_with_20k_live_timers():
    started = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", SHUTDOWN_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr[-2000:])
    assert "ticks" in p.stdout, p.stdout
    ticks = int(p.stdout.split()[1])
    assert ticks > 0, p.stdout
    assert elapsed < 30, elapsed
    print("FIGURES py_shutdown: %s exit_secs_total=%.2f rc=0" % (p.stdout.strip(), elapsed))


def test_actor_churn_keeps_the_record_identity_and_memory_flat_over_rounds():
    """An actor framework's load: 10,000 owners x 2 timers, two worker threads
    re-registering, cancelling, revoking, re-acquiring and releasing owners, then every
    owner released at the end of each round. Every record the runtime published is
    accounted for exactly once (completed ok / failed / deferred, not started, or
    abandoned), ticks too, and the resident memory after each later round stays within 5%
    of the second round's. The first round is the warm-up: the tables and Python's object
    arenas grow to the load's peak there, by an amount that varies from run to run
    (+1.8-4.9% over the first round at the second to fourth, measured); a leak grows on
    round after round.

    RSS is checked after glibc has returned its free pages (malloc_trim): what glibc keeps
    of freed memory depends on which of its per-thread arenas a block came from, not on
    what the process uses. The untrimmed figures are printed (+3-4% over 4 rounds on an
    idle 2-core machine, more under load)."""
    import ctypes
    import random
    import threading

    libc = ctypes.CDLL("libc.so.6")
    rounds = max(3, int(os.environ.get("RELIABILITY_PY_ROUNDS", "4")))
    round_secs = float(os.environ.get("RELIABILITY_PY_ROUND_SECS", "2"))
    n_owners = 10_000
    rt = st.Runtime(dispatch="thread")
    ran = [0]

    def handler(tick):
        ran[0] += 1

    lock = threading.Lock()
    work = {"base": 0, "owners": {}, "stop": 0.0, "quit": False}
    go = [threading.Event(), threading.Event()]
    done = [threading.Event(), threading.Event()]

    def worker(k):
        rnd = random.Random(k)
        while True:
            go[k].wait()
            go[k].clear()
            if work["quit"]:
                return
            base, stop = work["base"], work["stop"]
            while time.monotonic() < stop:
                oid = base + rnd.randrange(n_owners)
                with lock:
                    o = work["owners"].get(oid)
                op = rnd.randrange(5)
                try:
                    if op == 0 and o is not None:
                        o.every(0.005 + 0.001 * rnd.randrange(20), handler, key=rnd.randrange(2))
                    elif op == 1 and o is not None:
                        o.after(0.002, handler, key=2).cancel_nowait()
                    elif op == 2 and o is not None:
                        o.revoke()
                    elif op == 3:
                        n = rt.owner(oid)
                        n.every(0.010, handler, key=0)
                        with lock:
                            work["owners"][oid] = n
                    elif op == 4 and o is not None:
                        o.release()
                        with lock:
                            work["owners"].pop(oid, None)
                except st.SpotTimerError:
                    pass  # a stale authority (revoked or released by the other worker)
            done[k].set()

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(2)]
    for t in workers:
        t.start()
    rss, rss_untrimmed = [], []
    for r in range(rounds):
        base = r * 10 * n_owners
        owners = {}
        for i in range(n_owners):
            o = rt.owner(base + i)
            o.every(0.010 + 0.001 * (i % 40), handler, key=0)
            o.every(0.025, handler, key=1)
            owners[base + i] = o
        work.update(base=base, owners=owners, stop=time.monotonic() + round_secs)
        for e in go:
            e.set()
        for e in done:
            e.wait()
            e.clear()
        # Every owner of the round goes away for good: a fresh authority of each id (which
        # also ends any authority the workers left behind) is released.
        for oid in range(base, base + n_owners):
            rt.owner(oid).release()
        work["owners"] = owners = None
        deadline = time.monotonic() + 30
        while rt.stats().live_timers and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rt.stats().live_timers == 0, rt.stats()
        assert rt.stats().owners == 0, rt.stats()
        rss_untrimmed.append(rss_bytes())
        libc.malloc_trim(0)
        rss.append(rss_bytes())
    work["quit"] = True
    for e in go:
        e.set()
    rt.close()
    s = rt.stats()
    assert s.ticks_due == (
        s.completed_ok + s.completed_failed + s.ticks_skipped
        + s.ticks_dropped_authority + s.ticks_discarded
    ), s
    assert s.records_published == (
        s.completed_ok + s.completed_failed + s.completed_deferred
        + s.not_started + s.records_abandoned
    ), s
    assert s.completed_ok == ran[0], (s.completed_ok, ran[0])
    mib = lambda v: [round(x / 1048576, 1) for x in v]  # noqa: E731
    growth = [x / rss[1] - 1 for x in rss[2:]]
    assert all(g <= 0.05 for g in growth), (mib(rss), mib(rss_untrimmed))
    print(
        "FIGURES py_actor_churn: rounds=%d secs=%.1f callbacks=%d records_published=%d "
        "taken_back=%d rss_mib=%s max_growth_over_round2_pct=%.1f untrimmed_rss_mib=%s"
        % (
            rounds, round_secs, ran[0], s.records_published, s.records_taken_back,
            mib(rss), 100 * max(growth, default=0.0), mib(rss_untrimmed),
        )
    )
