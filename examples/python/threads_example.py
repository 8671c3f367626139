"""spot_timer with the default delivery mode: one dispatcher thread calls the handlers.

    python examples/python/threads_example.py
"""
import time

import spot_timer as st


def main() -> None:
    with st.Runtime() as rt:
        owner = rt.owner(42, lease=1.0)  # the owner's authority expires unless renewed

        def poll(tick: st.Tick) -> None:
            print(f"poll   #{tick.delivery_index} (nominal {tick.scheduled_index}, skipped {tick.skipped_ticks})")

        def slow(tick: st.Tick) -> None:
            time.sleep(0.25)  # slower than its period: ticks are skipped, never overlapped
            print(f"slow   #{tick.delivery_index} (nominal {tick.scheduled_index}, skipped {tick.skipped_ticks})")

        poll_timer = owner.every(0.2, poll, key="poll")
        owner.every(0.1, slow, key="slow", policy=st.OverrunPolicy.SKIP_LATE_TICKS)
        owner.after(0.5, lambda tick: print("one-shot fired"), key="once")

        for _ in range(3):
            time.sleep(0.4)
            owner.renew()  # keep the authority alive

        result = poll_timer.cancel(timeout=1.0)  # None only in asyncio mode on the loop thread
        print("cancel poll ->", result.name if result is not None else "pending")
        s = rt.stats()
        print(f"records={s.records_received} crossings={s.host_crossings} scheduler_threads={s.scheduler_threads}")


if __name__ == "__main__":
    main()
