"""Nothing in the native module calls up into the package's own Python on the registration,
cancel, reset and delivery paths: counted from the outside with `sys.setprofile` over
100,000 operations (every key kind, every duration kind, blocking and non-blocking cancels,
resets, delivery, and awaited cancels on an asyncio loop). User callbacks are not the package's and are not counted."""
import datetime
import enum
import sys

import spot_timer as st
import spot_timer.lifecycle as lc


class Color(enum.IntEnum):
    RED = 1
    BLUE = 2


def _count_upcalls(body):
    """Runs `body` and returns the package functions called from outside the package's
    Python: from native code (a private function can be called from nowhere else) or while
    a native call of the package is under way."""
    calls = []
    native_depth = 0

    def in_package(frame):
        # By module: a dataclass's generated __init__ has no file of its own.
        name = frame.f_globals.get("__name__", "")
        return name == "spot_timer" or name.startswith("spot_timer.")

    def profile(frame, event, arg):
        nonlocal native_depth
        if event == "c_call":
            native_depth += 1
        elif event in ("c_return", "c_exception"):
            native_depth = max(0, native_depth - 1)
        elif event == "call" and in_package(frame):
            caller = frame.f_back
            from_outside = caller is None or not in_package(caller)
            private = frame.f_code.co_name.startswith("_")
            if (private and from_outside) or (native_depth > 0 and not from_outside):
                calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        body()
    finally:
        sys.setprofile(None)
    return calls


def test_registrations_cancels_and_deliveries_never_call_the_package():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="manual")
    owners = [rt.owner(i) for i in range(1, 101)]
    seen = []
    keys = [None, 7, "name", ("tuple", 1), Color.RED, frozenset({3})]
    periods = [0.01, 1, datetime.timedelta(milliseconds=10)]

    def body():
        for i in range(50_000):
            o = owners[i % len(owners)]
            key = keys[i % len(keys)]
            period = periods[i % len(periods)]
            t = o.every(period, seen.append, key=key) if i % 2 else o.after(period, seen.append, key=key)
            _ = t.key
            if i % 4 == 0:
                t.cancel()
            elif i % 4 == 1:
                t.cancel_nowait().result(0)
            elif i % 8 == 2:
                t = t.reset(period)  # a timeout reset: in place
                t = t.reset(datetime.timedelta(seconds=1))
            if i % 1000 == 999:
                rt.advance(0.02)  # package code: its own calls down are not counted
                rt.dispatch()

    upcalls = _count_upcalls(body)
    assert seen, "nothing was delivered"
    assert upcalls == [], sorted(set(upcalls))
    rt.close()


def test_asyncio_delivery_and_awaited_cancels_never_call_the_package():
    import asyncio

    seen = []

    async def main():
        rt = st.Runtime(dispatch="asyncio")
        owner = rt.owner(1)

        async def coro(tick):
            seen.append(tick)

        timers = [owner.every(0.001, coro, key=i) for i in range(200)]
        await asyncio.sleep(0.05)
        for t in timers:
            await t.cancel_async()
        rt.close()

    calls = _count_upcalls(lambda: asyncio.run(main()))
    assert seen, "nothing was delivered"
    ours = [c for c in calls if c not in ("main", "coro")]
    assert ours == [], sorted(set(ours))


def test_the_counter_sees_an_upcall():
    """The check above can fail: a native call that reaches a package function is seen."""
    rt = st.Runtime(st.ManualClock(), dispatch="manual")
    o = rt.owner(1)
    t = o.after(1, lambda tick: None)

    def body():
        # A builtin (native) calling back into a private package function, as an up-call
        # from the extension module would.
        list(map(lambda x: lc._default_exception_handler(ValueError(x), None), [3, 1]))
        sorted([3, 1, 2], key=lambda x: st.TimerStats(x, 0, 0, 0).delivered)

    calls = _count_upcalls(body)
    assert "_default_exception_handler" in calls and "__init__" in calls, calls
    t.cancel()
    rt.close()
