"""spot_timer on an asyncio event loop: coroutine handlers, await cancel_async().

    python examples/python/asyncio_example.py
"""
import asyncio

import spot_timer as st


async def main() -> None:
    rt = st.Runtime(dispatch="asyncio")  # wakeup fd registered with loop.add_reader
    try:
        owner = rt.owner(7)

        async def fetch(tick: st.Tick) -> None:
            # The tick completes when the coroutine finishes: with DELAY_NEXT_TICK the next
            # one is due one period after that.
            await asyncio.sleep(0.05)
            print(f"fetch #{tick.delivery_index} done")

        def heartbeat(tick: st.Tick) -> None:
            print(f"heartbeat #{tick.delivery_index} (skipped {tick.skipped_ticks})")

        fetcher = owner.every(0.1, fetch, key="fetch", policy=st.OverrunPolicy.DELAY_NEXT_TICK)
        beat = owner.every(0.25, heartbeat, key="beat")
        await asyncio.sleep(1.0)
        print("fetch  ->", (await fetcher.cancel_async()).name)
        print("beat   ->", (await beat.cancel_async()).name)
        print(rt.stats())
    finally:
        rt.close()


if __name__ == "__main__":
    asyncio.run(main())
