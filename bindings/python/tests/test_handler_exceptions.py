"""A handler that raises: the tick completes as failed, the error reaches the exception
handler (default: logging), the dispatcher keeps going."""
import logging
import time

import pytest

import spot_timer as st
from conftest import MS, step


def test_exception_handler_receives_error_and_delivery_goes_on():
    clock = st.ManualClock()
    errors = []
    rt = st.Runtime(clock, dispatch="manual", exception_handler=lambda e, t: errors.append((e, t)))
    try:
        ticks = []

        def handler(tick):
            ticks.append(tick)
            if tick.delivery_index == 1:
                raise ValueError("first tick fails")

        timer = rt.owner(1).every(10 * MS, handler)
        step(rt, 10 * MS)
        step(rt, 10 * MS)
        assert [t.delivery_index for t in ticks] == [1, 2]
        assert len(errors) == 1
        exc, tick = errors[0]
        assert isinstance(exc, ValueError) and tick.delivery_index == 1
        s = timer.stats()
        assert (s.delivered, s.failed) == (2, 1)
        assert rt.stats().completed_failed == 1
    finally:
        rt.close()


def test_default_exception_handler_logs(caplog):
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual")
    try:
        rt.owner(1).every(10 * MS, lambda t: 1 / 0)
        with caplog.at_level(logging.ERROR, logger="spot_timer"):
            step(rt, 10 * MS)
        assert any("ZeroDivisionError" in (r.exc_text or "") or r.exc_info for r in caplog.records)
    finally:
        rt.close()


def test_dispatcher_thread_survives_exceptions():
    rt = st.Runtime(exception_handler=lambda e, t: None)
    try:
        good = [0]
        rt.owner(1).every(2 * MS, lambda t: 1 / 0)
        rt.owner(2).every(2 * MS, lambda t: good.__setitem__(0, good[0] + 1))
        time.sleep(0.2)
        assert good[0] > 10
        assert rt.stats().completed_failed > 10
    finally:
        rt.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_failing_exception_handler_does_not_stop_delivery():
    def bad_handler(e, t):
        raise RuntimeError("handler of handlers fails")

    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual", exception_handler=bad_handler)
    try:
        ticks = []

        def handler(tick):
            ticks.append(tick)
            raise KeyError("x")

        rt.owner(1).every(10 * MS, handler)
        step(rt, 10 * MS)
        step(rt, 10 * MS)
        assert len(ticks) == 2
    finally:
        rt.close()


def test_coroutine_handler_in_thread_mode_is_reported():
    errors = []
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual", exception_handler=lambda e, t: errors.append(e))
    try:
        async def coro(tick):
            pass

        rt.owner(1).every(10 * MS, coro)
        step(rt, 10 * MS)
        assert len(errors) == 1 and isinstance(errors[0], st.ArgumentTypeError)
    finally:
        rt.close()


def _finished(s):
    return s.completed_ok + s.completed_failed + s.completed_deferred + s.not_started + s.records_abandoned


def test_keyboard_interrupt_mid_batch_keeps_the_rest_for_the_next_dispatch(manual):
    """A handler that raises KeyboardInterrupt fails its tick and the exception reaches the
    caller; the records of the batch after it run at the next dispatch, each once."""
    ran = []

    def handler(tick):
        ran.append(tick.key)
        if len(ran) == 3:
            raise KeyboardInterrupt

    o = manual.owner(1, gate=st.GateMode.CONCURRENT)
    for k in range(8):
        o.every(10 * MS, handler, key=k)
    manual.advance(10 * MS)
    with pytest.raises(KeyboardInterrupt):
        manual.dispatch()
    assert len(ran) == 3
    manual.dispatch()
    assert sorted(ran) == list(range(8)), "each timer's tick once"
    s = manual.stats()
    assert (s.completed_ok, s.completed_failed) == (7, 1), s
    manual.close()
    s = manual.stats()
    assert s.records_published == _finished(s), s


def test_a_coroutine_that_ends_after_the_close_completes_nothing_and_raises_nothing():
    import asyncio

    async def main():
        rt = st.Runtime(dispatch="asyncio")
        started, release = asyncio.Event(), asyncio.Event()
        ended = []

        async def slow(tick):
            started.set()
            await release.wait()
            ended.append(tick.delivery_index)

        rt.owner(1).after(1 * MS, slow)
        await asyncio.wait_for(started.wait(), 30)
        rt.close()
        release.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert ended == [1]
        s = rt.stats()
        assert s.records_published == _finished(s), s

    asyncio.run(main())
