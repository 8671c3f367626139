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
