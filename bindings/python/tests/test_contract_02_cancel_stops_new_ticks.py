"""Contract verification 2: after cancel no later tick starts; a running callback runs to its
end."""
import threading
import time

import spot_timer as st
from conftest import MS, step


def test_contract_02_cancel_waits_for_running_callback_then_nothing_starts():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        owner = rt.owner(1)
        started = threading.Event()
        calls = []

        def handler(tick):
            calls.append(("start", tick.delivery_index))
            started.set()
            time.sleep(0.3)
            calls.append(("end", tick.delivery_index))

        timer = owner.every(10 * MS, handler)
        rt.advance(10 * MS)
        assert started.wait(5)
        t0 = time.monotonic()
        assert timer.cancel(timeout=5) is st.EndReason.CANCELLED
        # cancel returned only after the running callback reached its end
        assert calls[-1] == ("end", 1)
        assert time.monotonic() - t0 > 0.1
        rt.advance(100 * MS)
        time.sleep(0.1)
        assert calls == [("start", 1), ("end", 1)]
    finally:
        rt.close()


def test_contract_02_cancel_in_manual_mode(manual):
    owner = manual.owner(1)
    calls = []
    timer = owner.every(10 * MS, calls.append)
    step(manual, 10 * MS)
    assert timer.cancel(timeout=1) is st.EndReason.CANCELLED
    step(manual, 100 * MS)
    assert len(calls) == 1
    # a second cancel sees the same recorded result
    assert timer.cancel() is st.EndReason.CANCELLED
    assert timer.result() is st.EndReason.CANCELLED


def test_contract_02_cancel_of_ready_but_unstarted_record(manual):
    owner = manual.owner(1)
    calls = []
    timer = owner.every(10 * MS, calls.append)
    manual.advance(10 * MS)  # record ready, not dispatched
    assert timer.cancel(timeout=1) is st.EndReason.CANCELLED
    manual.dispatch()
    assert calls == []
