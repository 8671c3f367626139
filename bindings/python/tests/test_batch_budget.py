"""Runtime(batch_budget=): a pump takes only the records it expects to run within the budget
(from the measured time per record); the rest wait in the runtime, where a timer that fell
behind is handed its newest due tick when its turn comes (T5) instead of an old one."""
import datetime
import time

import pytest

import spot_timer as st
from conftest import MS


def _learn_slow_handlers(rt: st.Runtime, clock: st.ManualClock) -> None:
    """One batch of handlers that take 3 ms each: the runtime's estimate per record."""
    for i in range(3):
        rt.owner(1000 + i).after(0, lambda tick: time.sleep(3 * MS))
    clock.advance(0)
    assert rt.dispatch() == 3


@pytest.mark.parametrize("budget", [0.001, None])
def test_records_left_in_the_runtime_get_the_newest_due_tick(budget):
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual", batch_budget=budget)
    try:
        _learn_slow_handlers(rt, clock)
        seen = []

        def handler(tick):
            seen.append((tick.owner_id, tick.scheduled_index, tick.skipped_ticks))
            if len(seen) == 1:
                # The first handler runs past the next period: the timers still waiting
                # are now one tick behind.
                clock.advance(10 * MS)
            time.sleep(3 * MS)

        for i in range(3):
            rt.owner(i).every(10 * MS, handler)
        clock.advance(10 * MS)
        crossings = rt.stats().host_crossings
        ran = rt.dispatch()
        crossings = rt.stats().host_crossings - crossings
        assert seen[0][1:] == (1, 0)
        if budget is None:
            # One exchange took all three: the other two run tick 1, one period late, and
            # then tick 2 as well (2 exchanges of 3 records).
            assert [r[1:] for r in seen[1:3]] == [(1, 0), (1, 0)]
            assert (ran, crossings) == (6, 2)
        else:
            # One record per exchange: the other two were handed over after the clock
            # moved and run tick 2 only; then the first timer's tick 2.
            assert [r[1:] for r in seen[1:3]] == [(2, 1), (2, 1)]
            assert seen[3][1:] == (2, 0)
            assert (ran, crossings) == (4, 4)
    finally:
        rt.close()


def test_fast_handlers_still_come_in_one_batch():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual", batch_budget=0.001)
    try:
        count = [0]

        def handler(tick):
            count[0] += 1

        for i in range(300):
            rt.owner(i).every(10 * MS, handler)
        for _ in range(5):
            clock.advance(10 * MS)
            rt.dispatch()
        assert count[0] == 1500
        s = rt.stats()
        assert s.records_per_crossing > 100, s
    finally:
        rt.close()


def test_accounting_identity_holds_with_a_budget_in_overload():
    # 300 timers every 2 ms with handlers of about 50 us: more due than one thread runs.
    rt = st.Runtime(batch_budget=0.0005)
    timers = []
    try:
        spin = 50e-6

        def handler(tick):
            end = time.perf_counter() + spin
            while time.perf_counter() < end:
                pass

        for i in range(300):
            timers.append(rt.owner(i).every(2 * MS, handler))
        time.sleep(0.3)
        for t in timers:
            t.cancel(timeout=5.0)
    finally:
        rt.close()
    s = rt.stats()
    assert s.completed_ok > 0 and s.ticks_skipped > 0, s
    assert s.records_published == (
        s.completed_ok
        + s.completed_failed
        + s.completed_deferred
        + s.not_started
        + s.records_abandoned
    ), s


def test_batch_budget_argument_is_checked():
    for bad in (0, 0.0, -0.001, 1.5):
        with pytest.raises(st.InvalidDurationError):
            st.Runtime(dispatch="manual", batch_budget=bad)
    for bad in ("1ms", True):
        with pytest.raises(st.ArgumentTypeError):
            st.Runtime(dispatch="manual", batch_budget=bad)  # type: ignore[arg-type]
    for ok in (None, 1e-6, 1, datetime.timedelta(milliseconds=2)):
        st.Runtime(dispatch="manual", batch_budget=ok).close()
