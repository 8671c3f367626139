"""Reliability faults through the Python binding (issue 7): a handler raising on every tick
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
