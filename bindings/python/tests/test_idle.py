"""An idle runtime costs nothing: with no timer due, its threads do not wake (each dispatch
mode, and a lifecycle node with nothing to renew). Counted in context switches of the
process's threads (/proc), not in time, so a busy machine changes nothing."""
import asyncio
import os
import time

import pytest

import spot_timer as st
from spot_timer import lifecycle as lc


def switches_of_other_threads():
    """Voluntary context switches of every thread of this process but the calling one."""
    me = str(__import__("threading").get_native_id())
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total


def idle_switches(seconds=1.0):
    time.sleep(0.2)  # let start-up settle
    before = switches_of_other_threads()
    time.sleep(seconds)
    return switches_of_other_threads() - before


@pytest.mark.parametrize("timers", [0, 100])
def test_thread_mode_does_not_wake_while_nothing_is_due(timers):
    rt = st.Runtime()
    try:
        owner = rt.owner(1)
        for k in range(timers):
            owner.every(3600, lambda t: None, key=k)  # due in an hour
        woke = idle_switches()
        assert woke <= 5, f"{woke} wake-ups of the runtime's threads in one idle second"
    finally:
        rt.close()


def test_asyncio_mode_does_not_wake_while_nothing_is_due():
    async def main():
        rt = st.Runtime(dispatch="asyncio")
        try:
            rt.owner(1).every(3600, lambda t: None)
            await asyncio.sleep(0.2)
            before = switches_of_other_threads()
            await asyncio.sleep(1.0)
            return switches_of_other_threads() - before
        finally:
            rt.close()

    woke = asyncio.run(main())
    assert woke <= 5, f"{woke} wake-ups of the runtime's threads in one idle second"


def test_an_idle_node_does_not_wake():
    node = lc.Node(1, 1001, lc.Store())
    try:
        node.send_or_create(7, b"x")
        node.dispatch(lambda r: None, timeout=0.05)
        woke = idle_switches()
        assert woke <= 5, f"{woke} wake-ups of the node's threads in one idle second"
    finally:
        node.shutdown()


def switches_of_this_thread():
    with open(f"/proc/self/task/{__import__('threading').get_native_id()}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


def test_manual_mode_pump_on_the_main_thread_does_not_wake_while_nothing_is_due():
    # The main thread, where Python runs signal handlers: the pump waits on the runtime's
    # wakeup descriptor (a signal interrupts that wait), not in short slices.
    rt = st.Runtime(dispatch="manual")
    try:
        rt.owner(1).every(3600, lambda t: None)
        rt.dispatch(0)
        before = switches_of_this_thread()
        t0 = time.monotonic()
        got = rt.dispatch(1.0)
        elapsed = time.monotonic() - t0
        woke = switches_of_this_thread() - before
        assert got == 0
        assert elapsed >= 0.99, f"the pump returned after {elapsed:.3f} s of a 1 s wait"
        assert woke <= 5, f"{woke} wake-ups of the pumping main thread in one idle second"
    finally:
        rt.close()


def test_manual_mode_pump_on_the_main_thread_wakes_for_a_due_timer():
    rt = st.Runtime(dispatch="manual")
    try:
        ran = []
        rt.owner(1).after(0.05, lambda t: ran.append(t.delivery_index))
        deadline = time.monotonic() + 30
        got = 0
        while not ran and time.monotonic() < deadline:
            got += rt.dispatch(10.0)
        assert ran == [1] and got == 1
    finally:
        rt.close()


def test_manual_mode_pump_on_the_main_thread_returns_when_another_thread_closes():
    rt = st.Runtime(dispatch="manual")
    rt.owner(1).every(3600, lambda t: None)
    closer = __import__("threading").Timer(0.2, rt.close)
    closer.start()
    t0 = time.monotonic()
    rt.dispatch(20.0)
    elapsed = time.monotonic() - t0
    closer.join()
    assert rt.closed
    assert elapsed < 10, f"the pump noticed the close after {elapsed:.1f} s"
