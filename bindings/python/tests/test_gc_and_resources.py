"""Python callables held by the runtime are visible to the GC; resources do not grow with
the number of timers (contract verification 12, 13 as internal evidence)."""
import gc
import weakref

import spot_timer as st
from conftest import MS, step


def test_cycle_through_handler_is_collected():
    clock = st.ManualClock()

    class Spot:
        pass

    def make():
        rt = st.Runtime(clock, dispatch="manual")
        spot = Spot()
        spot.rt = rt
        # handler -> spot -> runtime -> (native) -> handler: a cycle through Rust-held objects
        spot.timer = rt.owner(1).every(10 * MS, lambda tick: spot.rt)
        return weakref.ref(spot), weakref.ref(rt)

    spot_ref, rt_ref = make()
    gc.collect()
    assert spot_ref() is None
    assert rt_ref() is None


def test_handlers_of_ended_timers_are_released(manual):
    owner = manual.owner(1)

    class Handler:
        def __call__(self, tick):
            pass

    h = Handler()
    ref = weakref.ref(h)
    timer = owner.every(10 * MS, h)
    del h
    assert manual.held_python_objects() == 1
    timer.cancel()
    assert manual.held_python_objects() == 0
    gc.collect()
    assert ref() is None


def test_contract_12_threads_and_os_timers_do_not_grow(manual):
    before = manual.stats()
    owners = [manual.owner(10_000 + i) for i in range(1000)]
    for o in owners:
        o.every(10 * MS, lambda t: None)
        o.every(15 * MS, lambda t: None)
    step(manual, 10 * MS)
    s = manual.stats()
    assert s.scheduler_threads == before.scheduler_threads == 1
    assert s.os_timers == 0
    assert s.wakeup_primitives == before.wakeup_primitives
    assert s.live_timers == 2000


def test_contract_13_long_running_timer_stats_do_not_grow(manual):
    owner = manual.owner(1)
    timer = owner.every(1 * MS, lambda t: None)
    step(manual, 1 * MS)
    held = manual.held_python_objects()
    for _ in range(2000):
        step(manual, 1 * MS)
    s = timer.stats()
    assert s.delivered == 2001
    assert manual.held_python_objects() == held
    assert manual.stats().queue_len <= 2


def test_threaded_runtime_in_a_cycle_is_collected_and_its_threads_stop():
    import threading
    import time

    before = threading.active_count()

    class Spot:
        pass

    def make():
        rt = st.Runtime()
        spot = Spot()
        spot.rt = rt
        spot.timer = rt.owner(1).every(10 * MS, lambda tick: spot.rt)
        return weakref.ref(rt)

    rt_ref = make()
    gc.collect()
    assert rt_ref() is None
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
