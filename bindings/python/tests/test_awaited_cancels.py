"""Awaited cancels (`cancel_nowait`, `cancel_async`) of a generation whose handler runs:
the future resolves exactly once, with the generation's one terminal result, whichever
comes first — the handler's end, the notice's delivery, or the runtime's close — and never
stays pending. Public API only; every wait has a deadline."""
import asyncio
import random
import threading
import time

import spot_timer as st

DEADLINE = 10.0


def _running_timer(rt, gate, started):
    def handler(_tick):
        started.set()
        gate.wait(DEADLINE)

    return rt.owner(1).every(0.001, handler)


def test_cancel_nowait_races_the_running_handler_and_resolves_cancelled():
    rounds = 300
    rng = random.Random(7)
    through_notice = 0
    with st.Runtime() as rt:
        for i in range(rounds):
            gate, started = threading.Event(), threading.Event()
            t = _running_timer(rt, gate, started)
            assert started.wait(DEADLINE), f"round {i}: the handler never started"
            delay = rng.random() * 0.0005
            opener = threading.Timer(delay, gate.set)
            opener.start()
            fut = t.cancel_nowait()
            through_notice += not fut.done()
            assert fut.result(DEADLINE) == st.EndReason.CANCELLED, f"round {i}"
            assert t.result() == st.EndReason.CANCELLED
            opener.join(DEADLINE)
    # Most rounds cancel while the handler runs: the notice resolves the future.
    assert through_notice > rounds // 4, through_notice


def test_close_resolves_a_cancel_still_awaited():
    rt = st.Runtime()
    gate, started = threading.Event(), threading.Event()
    t = _running_timer(rt, gate, started)
    assert started.wait(DEADLINE)
    fut = t.cancel_nowait()
    assert not fut.done()  # the handler still runs
    threading.Timer(0.05, gate.set).start()
    rt.close()
    # The generation ended with its cancel (the handler ended first) or with the close.
    assert fut.result(DEADLINE) in (st.EndReason.CANCELLED, st.EndReason.RUNTIME_CLOSED)
    assert fut.result() == t.result()


def test_cancel_async_from_another_threads_loop_while_the_handler_runs():
    """The awaiting task's loop is not the delivering thread: the notice resolves the
    future through the loop's call_soon_threadsafe."""
    with st.Runtime() as rt:
        results = []
        for _ in range(50):
            gate, started = threading.Event(), threading.Event()
            t = _running_timer(rt, gate, started)
            assert started.wait(DEADLINE)

            async def main():
                task = asyncio.ensure_future(t.cancel_async())
                await asyncio.sleep(0.001)
                assert not task.done()
                gate.set()
                return await asyncio.wait_for(task, DEADLINE)

            results.append(asyncio.run(main()))
        assert results == [st.EndReason.CANCELLED] * 50


def test_a_cancelled_awaiter_leaves_the_result_to_the_timer():
    """The task awaiting cancel_async gives up (its future is cancelled): the notice
    finds the future done and leaves it so; the timer still reports its end."""
    with st.Runtime() as rt:
        gate, started = threading.Event(), threading.Event()
        t = _running_timer(rt, gate, started)
        assert started.wait(DEADLINE)

        async def main():
            task = asyncio.ensure_future(t.cancel_async())
            await asyncio.sleep(0.001)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return "gave up"
            return "resolved"

        assert asyncio.run(main()) == "gave up"
        gate.set()
        deadline = time.monotonic() + DEADLINE
        while t.result() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert t.result() == st.EndReason.CANCELLED
