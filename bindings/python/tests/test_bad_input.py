"""Every bad input raises a specific exception with a clear message; nothing crashes."""
import datetime
import math

import pytest

import spot_timer as st
from conftest import MS


def noop(tick):
    pass


@pytest.mark.parametrize(
    "period,exc",
    [
        ("1s", st.ArgumentTypeError),
        (None, st.ArgumentTypeError),
        (True, st.ArgumentTypeError),
        ([1], st.ArgumentTypeError),
        (-1.0, st.InvalidDurationError),
        (-1, st.InvalidDurationError),
        (datetime.timedelta(seconds=-1), st.InvalidDurationError),
        (math.nan, st.InvalidDurationError),
        (math.inf, st.InvalidDurationError),
        (0, st.InvalidDurationError),
        (1e30, st.InvalidDurationError),
    ],
)
def test_bad_period(manual, period, exc):
    with pytest.raises(exc) as info:
        manual.owner(1).every(period, noop)
    assert "period" in str(info.value)
    assert isinstance(info.value, st.SpotTimerError)


def test_durations_accept_timedelta_and_numbers(manual):
    o = manual.owner(1)
    o.every(datetime.timedelta(milliseconds=10), noop)
    o.every(1, noop)
    o.after(0, noop)
    o.after(datetime.timedelta(0), noop)


@pytest.mark.parametrize("delay", [-0.5, math.nan, "x"])
def test_bad_delay(manual, delay):
    with pytest.raises((st.InvalidDurationError, st.ArgumentTypeError)):
        manual.owner(1).after(delay, noop)


@pytest.mark.parametrize("n", [0, -1, 2**31, 2**64])
def test_max_catch_up_out_of_range(manual, n):
    with pytest.raises(st.InvalidArgumentError, match="max_catch_up_ticks"):
        manual.owner(1).every(
            10 * MS, noop, policy=st.OverrunPolicy.CATCH_UP_BOUNDED, max_catch_up_ticks=n
        )


def test_max_catch_up_wrong_type(manual):
    with pytest.raises(st.ArgumentTypeError, match="max_catch_up_ticks"):
        manual.owner(1).every(
            10 * MS, noop, policy=st.OverrunPolicy.CATCH_UP_BOUNDED, max_catch_up_ticks=2.5
        )


def test_max_catch_up_ignored_for_other_policies(manual):
    manual.owner(1).every(10 * MS, noop, max_catch_up_ticks=0)


def test_bad_policy(manual):
    with pytest.raises(st.ArgumentTypeError, match="policy"):
        manual.owner(1).every(10 * MS, noop, policy="skip")
    with pytest.raises(st.ArgumentTypeError, match="policy"):
        manual.owner(1).every(10 * MS, noop, policy=7)


@pytest.mark.parametrize("handler", [None, 42, "print"])
def test_handler_not_callable(manual, handler):
    with pytest.raises(st.HandlerNotCallableError, match="handler must be callable"):
        manual.owner(1).every(10 * MS, handler)
    assert manual.held_python_objects() == 0


def test_on_release_not_callable(manual):
    with pytest.raises(st.HandlerNotCallableError, match="on_release"):
        manual.owner(1).every(10 * MS, noop, on_release=3)


def test_bad_owner_id_and_lease(manual):
    with pytest.raises(st.ArgumentTypeError, match="owner id"):
        manual.owner("a")
    with pytest.raises(st.InvalidArgumentError, match="owner id"):
        manual.owner(-1)
    with pytest.raises(st.InvalidDurationError, match="lease"):
        manual.owner(1, lease=-1)
    with pytest.raises(st.InvalidDurationError, match="lease"):
        manual.owner(1, lease=0)
    with pytest.raises(st.ArgumentTypeError, match="gate"):
        manual.owner(1, gate="serial")


def test_unhashable_key(manual):
    with pytest.raises(st.ArgumentTypeError, match="hashable"):
        manual.owner(1).every(10 * MS, noop, key=[1])


def test_bad_runtime_arguments():
    with pytest.raises(st.ArgumentTypeError, match="clock"):
        st.Runtime(clock="manual")
    with pytest.raises(st.InvalidArgumentError, match="dispatch"):
        st.Runtime(dispatch="greenlet")
    with pytest.raises(st.HandlerNotCallableError):
        st.Runtime(dispatch="manual", exception_handler=1)


def test_use_after_close():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual")
    owner = rt.owner(1)
    timer = owner.every(10 * MS, noop)
    rt.close()
    rt.close()  # idempotent
    with pytest.raises(st.RuntimeClosedError, match="closed"):
        rt.owner(2)
    with pytest.raises(st.RuntimeClosedError):
        owner.every(10 * MS, noop)
    with pytest.raises(st.RuntimeClosedError):
        owner.renew()
    with pytest.raises(st.RuntimeClosedError):
        rt.advance(1)
    with pytest.raises(st.RuntimeClosedError):
        rt.dispatch()
    assert timer.cancel() is st.EndReason.RUNTIME_CLOSED
    assert timer.cancel_nowait().result(1) is st.EndReason.RUNTIME_CLOSED


def test_cancel_foreign_runtime_timer():
    a = st.Runtime(st.ManualClock(), dispatch="manual")
    b = st.Runtime(st.ManualClock(), dispatch="manual")
    try:
        timer = a.owner(1).every(10 * MS, noop)
        with pytest.raises(st.ForeignTimerError, match="different runtime"):
            b.cancel(timer)
        assert timer.is_live
        with pytest.raises(st.ArgumentTypeError):
            b.cancel("timer")
        assert a.cancel(timer) is st.EndReason.CANCELLED
    finally:
        a.close()
        b.close()


def test_advance_on_real_clock():
    rt = st.Runtime(dispatch="manual")
    try:
        with pytest.raises(st.NotManualClockError):
            rt.advance(1)
    finally:
        rt.close()


def test_dispatch_in_thread_mode():
    rt = st.Runtime()
    try:
        with pytest.raises(st.DispatchModeError):
            rt.dispatch()
    finally:
        rt.close()


def test_cancel_timeout(manual):
    import threading

    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        gate = threading.Event()
        started = threading.Event()

        def h(t):
            started.set()
            gate.wait(5)

        timer = rt.owner(1).every(10 * MS, h)
        rt.advance(10 * MS)
        assert started.wait(5)
        with pytest.raises(st.CancelTimeoutError):
            timer.cancel(timeout=0.05)
        with pytest.raises(st.InvalidDurationError):
            timer.cancel(timeout=-1)
        gate.set()
        assert timer.cancel(timeout=5) is st.EndReason.CANCELLED
    finally:
        rt.close()


def test_tick_is_frozen(manual):
    ticks = []
    manual.owner(1).every(10 * MS, ticks.append)
    manual.advance(10 * MS)
    manual.dispatch()
    with pytest.raises(AttributeError):
        ticks[0].delivery_index = 5
