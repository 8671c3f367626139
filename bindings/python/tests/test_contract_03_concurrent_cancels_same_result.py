"""Contract verification 3: concurrent cancels all complete after the running callback and
cleanup; when cleanup fails every caller sees the same failure."""
import threading
import time

import pytest

import spot_timer as st
from conftest import MS


def _run_concurrent_cancels(release):
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        owner = rt.owner(1)
        started = threading.Event()
        log = []

        def handler(tick):
            started.set()
            time.sleep(0.2)
            log.append("handler-end")

        def on_release():
            log.append("cleanup")
            release()

        timer = owner.every(10 * MS, handler, on_release=on_release)
        rt.advance(10 * MS)
        assert started.wait(5)
        results = []
        lock = threading.Lock()

        def canceller():
            try:
                r = timer.cancel(timeout=5)
                with lock:
                    results.append(("ok", r, list(log)))
            except st.SpotTimerError as e:
                with lock:
                    results.append(("err", e, list(log)))

        threads = [threading.Thread(target=canceller) for _ in range(8)]
        for t in threads:
            t.start()
        fut = timer.cancel_nowait()
        for t in threads:
            t.join(10)
        return results, fut, timer, log
    finally:
        rt.close()


def test_contract_03_all_cancellers_see_success_after_callback_and_cleanup():
    results, fut, timer, log = _run_concurrent_cancels(lambda: None)
    assert len(results) == 8
    for kind, r, seen_log in results:
        assert kind == "ok" and r is st.EndReason.CANCELLED
        assert seen_log == ["handler-end", "cleanup"]
    assert fut.result(5) is st.EndReason.CANCELLED
    assert timer.result() is st.EndReason.CANCELLED


def test_contract_03_cleanup_failure_is_the_same_for_every_caller():
    def failing():
        raise OSError("disk on fire")

    results, fut, timer, log = _run_concurrent_cancels(failing)
    assert len(results) == 8
    messages = set()
    for kind, e, seen_log in results:
        assert kind == "err" and isinstance(e, st.CleanupFailedError)
        assert seen_log == ["handler-end", "cleanup"]
        messages.add(str(e))
    assert len(messages) == 1 and "disk on fire" in messages.pop()
    with pytest.raises(st.CleanupFailedError):
        fut.result(5)
    with pytest.raises(st.CleanupFailedError):
        timer.cancel()
    with pytest.raises(st.CleanupFailedError):
        timer.result()
