"""Cancel from inside a handler: the blocking form raises a clear error at once, the
non-blocking form works; cancelling other timers from a handler does not deadlock."""
import threading
import time

import pytest

import spot_timer as st
from conftest import MS, step


def test_blocking_self_cancel_raises_would_deadlock_manual(manual):
    owner = manual.owner(1)
    box = {}
    outcome = []

    def handler(tick):
        try:
            box["t"].cancel(timeout=10)
        except st.WouldDeadlockError as e:
            outcome.append(e)
        box["fut"] = box["t"].cancel_nowait()
        outcome.append("still running")

    box["t"] = owner.every(10 * MS, handler)
    t0 = time.monotonic()
    step(manual, 10 * MS)
    assert time.monotonic() - t0 < 2
    assert isinstance(outcome[0], st.WouldDeadlockError) and "cancel_nowait" in str(outcome[0])
    assert outcome[1] == "still running"
    manual.dispatch()
    assert box["fut"].result(1) is st.EndReason.CANCELLED
    step(manual, 50 * MS)
    assert len(outcome) == 2


def test_blocking_self_cancel_in_dispatcher_thread():
    rt = st.Runtime()
    try:
        box = {}
        got = []
        done = threading.Event()

        def handler(tick):
            try:
                box["t"].cancel(timeout=10)
            except st.WouldDeadlockError as e:
                got.append(e)
            box["fut"] = box["t"].cancel_nowait()
            done.set()

        box["t"] = rt.owner(1).every(5 * MS, handler)
        assert done.wait(5)
        assert isinstance(got[0], st.WouldDeadlockError)
        assert box["fut"].result(5) is st.EndReason.CANCELLED
    finally:
        rt.close()


def test_cancel_sibling_in_same_batch_does_not_deadlock():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        box = {}
        ran = []
        results = []
        done = threading.Event()

        def a(tick):
            ran.append("a")
            t0 = time.monotonic()
            results.append(box["b"].cancel(timeout=5))
            results.append(time.monotonic() - t0)
            done.set()

        box["a"] = rt.owner(1).every(10 * MS, a, first_due=5 * MS)
        box["b"] = rt.owner(2).every(10 * MS, lambda t: ran.append("b"))
        rt.advance(0)  # the scheduler has applied both registrations
        rt.advance(10 * MS)  # both due: one batch, a (due 5 ms) first
        assert done.wait(5)
        assert results[0] is st.EndReason.CANCELLED
        assert results[1] < 1.0
        time.sleep(0.05)
        assert "b" not in ran
    finally:
        rt.close()


def test_cancel_sibling_that_already_ran_in_same_batch_manual(manual):
    box = {}
    results = []

    def a(tick):
        results.append(box["b"].cancel(timeout=5))

    box["b"] = manual.owner(2).every(10 * MS, lambda t: None, first_due=5 * MS)
    box["a"] = manual.owner(1).every(10 * MS, a)
    manual.dispatch()  # registrations applied before the clock moves
    manual.advance(10 * MS)  # b (due 5) and a (due 10) in one batch, b runs first
    manual.dispatch()
    assert results == [st.EndReason.CANCELLED]


def test_one_shot_cancel_from_own_handler_nowait(manual):
    box = {}

    def handler(tick):
        box["fut"] = box["t"].cancel_nowait()

    box["t"] = manual.owner(1).after(5 * MS, handler)
    step(manual, 5 * MS)
    manual.dispatch()
    # The one-shot may end as completed or cancelled - the future sees the one terminal result.
    assert box["fut"].result(1) in (st.EndReason.CANCELLED, st.EndReason.COMPLETED)
    assert box["t"].result() is box["fut"].result(0)
