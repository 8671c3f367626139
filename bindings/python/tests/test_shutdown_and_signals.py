"""Interpreter shutdown with live timers and a running dispatcher exits promptly; Ctrl-C
stays responsive while blocked in cancel."""
import os
import signal
import subprocess
import sys
import textwrap
import time

SHUTDOWN_SCRIPT = textwrap.dedent(
    """
    import asyncio, time, spot_timer as st
    rt = st.Runtime()
    n = [0]
    def h(tick):
        n[0] += 1
    for i in range(2000):
        rt.owner(i).every(0.001, h)
    arts = st.Runtime()  # a second runtime, never closed
    arts.owner(1).every(0.002, lambda t: time.sleep(0.001))
    time.sleep(0.3)
    assert n[0] > 0
    print("exiting", flush=True)
    """
)


def _run(script, timeout=10):
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout
    )
    return p, time.monotonic() - t0


def test_shutdown_with_live_timers_exits_promptly():
    p, elapsed = _run(SHUTDOWN_SCRIPT)
    assert p.returncode == 0, p.stderr
    assert "exiting" in p.stdout
    # exit itself (after the 0.3 s of work and interpreter start-up) within 2 s
    assert elapsed < 0.3 + 2.0, elapsed


def test_shutdown_while_handler_is_running():
    script = textwrap.dedent(
        """
        import time, threading, spot_timer as st
        rt = st.Runtime()
        started = threading.Event()
        def h(tick):
            started.set()
            time.sleep(0.2)
        rt.owner(1).every(0.001, h)
        started.wait(5)
        print("exiting", flush=True)
        """
    )
    p, elapsed = _run(script)
    assert p.returncode == 0, p.stderr
    assert elapsed < 2.5, elapsed


def test_ctrl_c_interrupts_blocking_cancel():
    script = textwrap.dedent(
        """
        import signal, threading, time, spot_timer as st
        # Python must handle SIGINT (a shell that started the tests in the background
        # leaves it ignored).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rt = st.Runtime()
        started = threading.Event()
        def h(tick):
            started.set()
            time.sleep(3)  # a long callback: cancel waits for it
        t = rt.owner(1).every(0.001, h)
        started.wait(5)
        print("blocking", flush=True)
        try:
            t.cancel()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    p = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout.readline().strip() == "blocking"
        time.sleep(0.2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        assert line == "interrupted", p.stderr.read()
        assert time.monotonic() - t0 < 1.0
    finally:
        p.wait(10)


def test_ctrl_c_interrupts_a_manual_pump_on_the_main_thread():
    script = textwrap.dedent(
        """
        import signal, time, spot_timer as st
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rt = st.Runtime(dispatch="manual")
        rt.owner(1).every(3600, lambda t: None)
        print("pumping", flush=True)
        try:
            rt.dispatch(30.0)
            print("returned", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        rt.close()
        """
    )
    p = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout.readline().strip() == "pumping"
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        assert line == "interrupted", p.stderr.read()
        assert time.monotonic() - t0 < 5.0
    finally:
        p.wait(40)
