"""Delivery mode 1: one dispatcher thread, one GIL entry per batch."""
import threading
import time

import pytest

import spot_timer as st
from conftest import MS


def _wait_for(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


def test_threads_one_crossing_per_batch():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        seen = []
        threads = set()
        for i in range(500):
            rt.owner(i).every(10 * MS, lambda tick: (seen.append(tick), threads.add(threading.get_ident())))
        rt.advance(10 * MS)  # 500 records become due at one scheduler wakeup
        assert _wait_for(lambda: len(seen) == 500)
        s = rt.stats()
        assert s.host_crossings == 1, s
        assert s.records_received == 500
        assert len(threads) == 1 and threading.get_ident() not in threads
        assert s.scheduler_threads == 1 and s.os_timers == 0
    finally:
        rt.close()


def test_threads_real_clock_delivers_and_batches():
    # Timers registered a few microseconds apart come due at different scheduler wakeups;
    # a 2 ms batch window lets the dispatcher collect them into one GIL entry.
    rt = st.Runtime(batch_window=0.002)
    try:
        count = [0]

        def handler(tick):
            count[0] += 1

        for i in range(200):
            rt.owner(i).every(5 * MS, handler, first_due=5 * MS)
        time.sleep(0.4)
        s = rt.stats()
        assert count[0] > 1000
        assert s.records_per_crossing > 10, s
    finally:
        rt.close()
    assert rt.closed
    assert rt.stats().scheduler_threads == 0


def test_threads_cancel_nowait_future():
    rt = st.Runtime()
    try:
        timer = rt.owner(1).every(5 * MS, lambda t: None)
        fut = timer.cancel_nowait()
        assert fut.result(5) is st.EndReason.CANCELLED
    finally:
        rt.close()


def test_threads_close_resolves_pending_futures_and_ends_timers():
    rt = st.Runtime()
    timer = rt.owner(1).every(10.0, lambda t: None)
    rt.close()
    assert timer.result() is st.EndReason.RUNTIME_CLOSED
    assert timer.cancel() is st.EndReason.RUNTIME_CLOSED


def test_workers_a_blocking_handler_holds_up_only_its_own_worker():
    """workers=N: one handler sleeping 1 s does not stop the other timers; an owner with a
    serial gate still runs one callback at a time (T9)."""
    import threading

    rt = st.Runtime(workers=4)
    try:
        counts = [0] * 9
        lock = threading.Lock()
        slow_started = threading.Event()

        def slow(tick):
            slow_started.set()
            time.sleep(1.0)

        def make(i):
            def h(tick):
                with lock:
                    counts[i] += 1
            return h

        rt.owner(100).every(10 * MS, slow)
        for i in range(9):
            rt.owner(i).every(10 * MS, make(i))
        # two timers of one serial owner never overlap, also across workers
        serial_running, serial_overlap = [0], [0]

        def serial(tick):
            with lock:
                serial_running[0] += 1
                serial_overlap[0] = max(serial_overlap[0], serial_running[0])
            time.sleep(0.003)
            with lock:
                serial_running[0] -= 1

        so = rt.owner(200)
        so.every(2 * MS, serial, key=1)
        so.every(2 * MS, serial, key=2)
        assert slow_started.wait(5)
        time.sleep(0.5)  # the slow handler is still running
        with lock:
            snapshot = list(counts)
        assert all(c >= 10 for c in snapshot), snapshot
        assert serial_overlap[0] == 1
    finally:
        rt.close()


def test_workers_argument_is_checked():
    with pytest.raises(st.InvalidArgumentError):
        st.Runtime(workers=0)
    with pytest.raises(st.ArgumentTypeError):
        st.Runtime(workers=2.0)
    with pytest.raises(st.DispatchModeError):
        st.Runtime(st.ManualClock(), dispatch="manual", workers=2)


def test_keyboard_interrupt_in_a_handler_reaches_the_main_thread(tmp_path):
    """Like Ctrl-C: a handler that raises KeyboardInterrupt on the dispatcher thread
    interrupts the main thread (Python delivers KeyboardInterrupt only there); SystemExit
    is not reported as an internal error. Both ticks complete as failed."""
    import subprocess
    import sys

    script = tmp_path / "interrupt.py"
    script.write_text(
        "import logging, signal, time\n"
        "import spot_timer as st\n"
        "# Python must handle SIGINT (a shell that started the tests in the background leaves it\n"
        "# ignored, and then nothing turns into KeyboardInterrupt).\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "errors = []\n"
        "logging.getLogger('spot_timer').addHandler(logging.Handler())\n"
        "class Count(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        if record.levelno >= logging.ERROR: errors.append(record.getMessage())\n"
        "logging.getLogger('spot_timer').addHandler(Count())\n"
        "rt = st.Runtime()\n"
        "def leave(tick): raise SystemExit(3)\n"
        "def stop(tick): raise KeyboardInterrupt\n"
        "rt.owner(1).after(0.01, leave)\n"
        "rt.owner(2).after(0.2, stop)\n"
        "try:\n"
        "    time.sleep(10)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    # the interrupt can arrive before the dispatcher hands back the completion\n"
        "    deadline = time.monotonic() + 5\n"
        "    while rt.stats().completed_failed < 2 and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    print('interrupted', rt.stats().completed_failed, errors)\n"
        "rt.close()\n"
    )
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "interrupted 2 []", p.stdout + p.stderr
    assert time.monotonic() - t0 < 8, "the main thread's sleep was not interrupted"
