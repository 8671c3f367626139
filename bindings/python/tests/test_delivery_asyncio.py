"""Delivery mode 2: asyncio (wakeup fd registered with loop.add_reader)."""
import asyncio
import time

import spot_timer as st
from conftest import MS


def test_asyncio_plain_and_coroutine_handlers():
    async def main():
        rt = st.Runtime(dispatch="asyncio")
        try:
            plain, coro = [], []

            async def async_handler(tick):
                await asyncio.sleep(0)
                coro.append(tick)

            o1, o2 = rt.owner(1), rt.owner(2)
            t1 = o1.every(5 * MS, plain.append)
            t2 = o2.every(5 * MS, async_handler)
            await asyncio.sleep(0.2)
            assert len(plain) > 5 and len(coro) > 5
            assert [t.delivery_index for t in coro] == list(range(1, len(coro) + 1))
            assert await t1.cancel_async() is st.EndReason.CANCELLED
            assert await t2.cancel_async() is st.EndReason.CANCELLED
        finally:
            rt.close()

    asyncio.run(main())


def test_asyncio_coroutine_tick_completes_when_it_finishes_delay_next_tick_and_no_overlap():
    async def main():
        rt = st.Runtime(dispatch="asyncio")
        try:
            starts, running, peak = [], [0], [0]

            async def slow(tick):
                starts.append(time.monotonic())
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                await asyncio.sleep(0.05)  # longer than the period
                running[0] -= 1

            timer = rt.owner(1).every(
                20 * MS, slow, policy=st.OverrunPolicy.DELAY_NEXT_TICK
            )
            await asyncio.sleep(0.6)
            assert peak[0] == 1
            gaps = [b - a for a, b in zip(starts, starts[1:])]
            assert len(gaps) >= 3
            # each start is one period after the previous coroutine *finished*: >= 50 + 20 ms
            assert min(gaps) >= 0.065, gaps
            assert await timer.cancel_async() is st.EndReason.CANCELLED
        finally:
            rt.close()

    asyncio.run(main())


def test_asyncio_cancel_async_waits_for_running_coroutine():
    async def main():
        rt = st.Runtime(dispatch="asyncio")
        try:
            started = asyncio.Event()
            finished = []

            async def handler(tick):
                started.set()
                await asyncio.sleep(0.1)
                finished.append(tick.delivery_index)

            timer = rt.owner(1).every(5 * MS, handler)
            await asyncio.wait_for(started.wait(), 5)
            result = await asyncio.wait_for(timer.cancel_async(), 5)
            assert result is st.EndReason.CANCELLED
            assert finished == [1]
        finally:
            rt.close()

    asyncio.run(main())


def test_asyncio_cancel_on_the_loop_never_waits_nor_raises():
    """Like asyncio.TimerHandle.cancel(): cancel() on the loop takes effect at once and never
    blocks the loop, whether or not the handler happens to be running; it returns the
    terminal result when the timer ended at once, else None."""

    async def main():
        rt = st.Runtime(dispatch="asyncio")
        try:
            owner = rt.owner(1)
            # not running: ends at once
            idle = owner.every(10.0, lambda t: None)
            assert idle.cancel() is st.EndReason.CANCELLED

            # a coroutine handler in flight: None, no new tick starts, the coroutine finishes
            started, finished = asyncio.Event(), []

            async def handler(tick):
                started.set()
                await asyncio.sleep(0.05)
                finished.append(tick.delivery_index)

            timer = owner.every(5 * MS, handler)
            await asyncio.wait_for(started.wait(), 5)
            t0 = time.monotonic()
            assert timer.cancel(timeout=5) is None
            assert time.monotonic() - t0 < 0.02  # did not wait for the coroutine
            assert not timer.is_live
            assert await asyncio.wait_for(timer.cancel_async(), 5) is st.EndReason.CANCELLED
            assert finished == [1]

            # a plain handler cancelling its own timer: None (the result follows its return)
            results = []

            def own(tick):
                results.append(me.cancel())

            me = owner.every(5 * MS, own)
            await asyncio.sleep(0.1)
            assert results == [None]
            assert me.result() is st.EndReason.CANCELLED
        finally:
            rt.close()

    asyncio.run(main())


def test_asyncio_coroutine_exception_goes_to_handler_with_its_tick():
    async def main():
        errors, ticks = [], []

        def on_error(e, tick):
            errors.append(e)
            ticks.append(tick)

        async with st.Runtime(dispatch="asyncio", exception_handler=on_error) as rt:
            async def bad(tick):
                raise ValueError("boom")

            timer = rt.owner(1).every(5 * MS, bad, key=4)
            await asyncio.sleep(0.1)
            assert len(errors) >= 2 and all(isinstance(e, ValueError) for e in errors)
            assert all(isinstance(t, st.Tick) and t.owner_id == 1 and t.key == 4 for t in ticks)
            assert [t.delivery_index for t in ticks] == list(range(1, len(ticks) + 1))
            assert timer.stats().failed >= 2
            await timer.cancel_async()
        assert rt.closed  # async with closed it

    asyncio.run(main())


def test_asyncio_manual_clock():
    async def main():
        clock = st.ManualClock()
        rt = st.Runtime(clock, dispatch="asyncio")
        try:
            ticks = []
            rt.owner(1).every(10 * MS, ticks.append)
            rt.advance(10 * MS)
            for _ in range(20):
                await asyncio.sleep(0.01)
                if ticks:
                    break
            assert [t.scheduled_index for t in ticks] == [1]
        finally:
            rt.close()

    asyncio.run(main())


def test_asyncio_needs_a_loop():
    try:
        st.Runtime(dispatch="asyncio")
    except st.DispatchModeError:
        pass
    else:
        raise AssertionError("expected DispatchModeError")
