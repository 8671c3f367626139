"""Contract verification 4: a period shorter than the handler never runs two callbacks of one
key at once."""
import threading
import time

import spot_timer as st
from conftest import MS, step


def test_contract_04_slow_handler_manual_clock(manual):
    owner = manual.owner(1)
    running = [0]
    peak = [0]
    ticks = []

    def slow(tick):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        ticks.append(tick)
        if tick.delivery_index < 10:
            manual.advance(35 * MS)  # the handler "takes" 3.5 periods
        running[0] -= 1

    owner.every(10 * MS, slow)
    for _ in range(10):
        step(manual, 10 * MS)
    assert peak[0] == 1
    assert len(ticks) >= 10
    assert all(t.skipped_ticks >= 0 for t in ticks)


def test_contract_04_slow_handler_real_clock_concurrent_gate():
    rt = st.Runtime()
    try:
        owner = rt.owner(1, gate=st.GateMode.CONCURRENT)
        lock = threading.Lock()
        running = {}
        overlap = []
        counts = {}

        def make(key):
            def slow(tick):
                with lock:
                    running[key] = running.get(key, 0) + 1
                    if running[key] > 1:
                        overlap.append(key)
                    counts[key] = counts.get(key, 0) + 1
                time.sleep(0.004)  # period is 1 ms
                with lock:
                    running[key] -= 1
            return slow

        timers = [owner.every(1 * MS, make(k), key=k) for k in range(3)]
        time.sleep(0.3)
        for t in timers:
            t.cancel(timeout=5)
        assert overlap == []
        assert all(c > 5 for c in counts.values())
    finally:
        rt.close()
