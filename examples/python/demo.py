"""The main job in Python: 10,000 owners x 2 timers on one scheduler thread, delivered into
Python handlers in batches (one GIL entry per batch).

    python examples/python/demo.py [--owners 10000] [--seconds 5]
"""
import argparse
import os
import sys
import time
from typing import Callable, List

import spot_timer as st

BOOT = time.CLOCK_BOOTTIME  # the runtime's real clock


def pct(sorted_values: List[int], p: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--owners", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--phases", type=int, default=20, help="distinct start phases per period")
    args = ap.parse_args()

    rt = st.Runtime(exception_handler=lambda e, t: print("handler error:", e, file=sys.stderr))
    lateness_ns: List[int] = []
    lat_append = lateness_ns.append
    clock_ns = time.clock_gettime_ns
    periods_ns = (100_000_000, 250_000_000)  # timer A every 100 ms, timer B every 250 ms

    def make_handler(t0_ns: int, period_ns: int) -> Callable[[st.Tick], None]:
        def handler(tick: st.Tick) -> None:
            lat_append(clock_ns(BOOT) - t0_ns - (tick.scheduled_index - 1) * period_ns)
        return handler

    t_reg = time.perf_counter()
    # everything starts once registration is done (about 20 us per timer, with a margin)
    start_ns = clock_ns(BOOT) + 200_000_000 + args.owners * 60_000
    phase_ns = 100_000_000 // args.phases
    for i in range(args.owners):
        owner = rt.owner(i)
        for key, period_ns in enumerate(periods_ns):
            # A busy machine may register slower than planned: never a first due time
            # in the past.
            now_ns = clock_ns(BOOT)
            t0 = max(start_ns + (i % args.phases) * phase_ns, now_ns)
            first_due = (t0 - now_ns) / 1e9
            owner.every(period_ns / 1e9, make_handler(t0, period_ns), key=key, first_due=first_due)
    t_reg = time.perf_counter() - t_reg
    s0 = rt.stats()
    print(f"registered {s0.live_timers} timers for {args.owners} owners in {t_reg:.2f} s; "
          f"scheduler threads = {s0.scheduler_threads}, OS timers = {s0.os_timers}")

    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    deadline = wall0 + args.seconds + 0.3
    while True:
        now = time.perf_counter()
        if now >= deadline:
            break
        time.sleep(min(0.5, deadline - now))
        s = rt.stats()
        print(f"\r  t={time.perf_counter() - wall0:4.1f}s  records={s.records_received:>9,}  "
              f"batches={s.batches:>6,}  records/GIL entry={s.records_per_crossing:8.1f}  "
              f"queue={s.queue_len:,}", end="", flush=True)
    print()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    s = rt.stats()
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
    rt.close()
    # What it did, not how fast: once every generation has ended, every tick that came due
    # was delivered, skipped by its policy or discarded with its generation.
    e = rt.stats()
    accounted = (e.completed_ok + e.completed_failed + e.ticks_skipped
                 + e.ticks_dropped_authority + e.ticks_discarded)
    identity_ok = e.live_timers == 0 and e.ticks_due == accounted
    print(f"accounting: {e.ticks_due:,} ticks due = {e.completed_ok + e.completed_failed:,} "
          f"delivered + {e.ticks_skipped:,} skipped + "
          f"{e.ticks_discarded + e.ticks_dropped_authority:,} discarded at the close")
    if not identity_ok:
        print(f"FAIL: accounting: due {e.ticks_due} vs accounted {accounted}", file=sys.stderr)

    lat = sorted(lateness_ns)
    rows = [
        ("owners x timers", f"{args.owners:,} x 2 = {s.registered:,}"),
        ("records delivered", f"{s.records_received:,}"),
        ("handler calls ok / failed", f"{s.completed_ok:,} / {s.completed_failed:,}"),
        ("batches (scheduler wakeups with records)", f"{s.batches:,}"),
        ("GIL entries (host crossings)", f"{s.host_crossings:,}"),
        ("records per GIL entry", f"{s.records_per_crossing:,.1f}"),
        ("lateness p50", f"{pct(lat, 50) / 1e6:.3f} ms"),
        ("lateness p99", f"{pct(lat, 99) / 1e6:.3f} ms"),
        ("ticks skipped (overrun policy)", f"{s.ticks_skipped:,}"),
        ("scheduler threads", f"{s.scheduler_threads}"),
        ("OS timers", f"{s.os_timers}"),
        ("process threads (main + dispatcher + scheduler)", f"{threads}"),
        ("CPU seconds / wall seconds", f"{cpu:.2f} / {wall:.2f}"),
        ("records per CPU second", f"{s.records_received / cpu if cpu else 0:,.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    print("-" * (width + 20))
    for k, v in rows:
        print(f"{k:<{width}}  {v:>16}")
    print("-" * (width + 20))
    ok = s.scheduler_threads == 1 and s.records_received > 0 and identity_ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
