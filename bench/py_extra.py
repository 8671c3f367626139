"""Python workloads of the suite that bench/python_bench.py (W2/W3/W5) does not cover.

One invocation = one measured run, one JSON object on stdout (bench/suite.py drives it):

    python py_extra.py w1 <system> <n>            arm + cancel churn (random deadlines 60..120 s)
    python py_extra.py w4 <system> <n>            RSS bytes per live timer
    python py_extra.py w6 <system> <n> <threads>  registration from 1..k threads
    python py_extra.py w7 <system> <n>            the actor's shape: n live, 2 per owner, timeout
                                                  resets and cancels in random order

Systems: spot_timer (W1/W4/W6: owners of 100 timers, GateMode.CONCURRENT; W7: owners of 2 timers,
the default serial gate; Owner.after + Timer.cancel, which returns the terminal result at once
for a timer that is not running; W7's reset is Timer.reset), and the asyncio loops asyncio,
uvloop and rloop in W1 and W7 (asyncio only in W4) (loop.call_later + TimerHandle.cancel; a
reset is cancel + call_later).
"""
import asyncio
import json
import os
import random
import sys
import threading
import time
import tracemalloc

PER_OWNER = 100


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def deadlines(n, seed):
    r = random.Random(seed)
    return [60.0 + r.random() * 60.0 for _ in range(n)]


def noop(*_a):
    pass


def spot_owners(rt, st, n, base=1):
    return [rt.owner(base + i, gate=st.GateMode.CONCURRENT) for i in range((n + PER_OWNER - 1) // PER_OWNER)]


def w1_once(system, n, seed):
    dl = deadlines(n, seed)
    if system == "spot_timer":
        import spot_timer as st

        rt = st.Runtime()
        owners = spot_owners(rt, st, n)
        t0 = time.perf_counter_ns()
        ts = [owners[i // PER_OWNER].after(d, noop, key=i) for i, d in enumerate(dl)]
        t1 = time.perf_counter_ns()
        for t in ts:  # a timer that is not running ends on the caller: cancel() returns its result
            t.cancel()
        t2 = time.perf_counter_ns()
        rt.close()
        return (t1 - t0) / n, (t2 - t1) / n

    # The asyncio loops (asyncio, uvloop, rloop): call_later on the running loop.
    async def main():
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter_ns()
        hs = [loop.call_later(d, noop) for d in dl]
        t1 = time.perf_counter_ns()
        for h in hs:
            h.cancel()
        t2 = time.perf_counter_ns()
        return (t1 - t0) / n, (t2 - t1) / n

    loop = peer_loop(system)
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def w1(system, n):
    w1_once(system, min(n, 20000), 7)  # warm-up
    arm, cancel = w1_once(system, n, 12345)
    # allocations: tracemalloc counts Python-heap blocks only (not the native core's), so
    # they are not comparable across systems and not reported.
    return dict(arm_ns=arm, cancel_ns=cancel, arm_cancel_ns=arm + cancel, allocs_per_arm=None, allocs_per_cancel=None)


KEEP = []


def w4(system, n):
    dl = deadlines(n, 99)
    before = rss_bytes()
    if system == "spot_timer":
        import spot_timer as st

        rt = st.Runtime()
        owners = spot_owners(rt, st, n)
        KEEP.append((rt, owners, [owners[i // PER_OWNER].after(d, noop, key=i) for i, d in enumerate(dl)]))
    elif system == "asyncio":
        loop = asyncio.new_event_loop()
        KEEP.append((loop, [loop.call_later(d, noop) for d in dl]))
    else:
        raise SystemExit(f"unknown system {system}")
    time.sleep(0.3)
    after = rss_bytes()
    return dict(rss_before=before, rss_after=after, bytes_per_timer=(after - before) / n)


def w6(system, n, threads):
    if system != "spot_timer":
        raise SystemExit("w6: only spot_timer (an asyncio loop is not thread-safe)")
    import spot_timer as st

    rt = st.Runtime()
    per = n // threads
    owners = [spot_owners(rt, st, per, base=1 + t * 1_000_000) for t in range(threads)]
    dls = [deadlines(per, 1000 + t) for t in range(threads)]
    barrier = threading.Barrier(threads + 1)
    starts, ends = [], []

    def work(t):
        os_, dl = owners[t], dls[t]
        barrier.wait()
        starts.append(time.perf_counter_ns())
        keep = [os_[i // PER_OWNER].after(d, noop, key=i) for i, d in enumerate(dl)]
        ends.append(time.perf_counter_ns())
        KEEP.append(keep)

    ths = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in ths:
        th.start()
    barrier.wait()
    for th in ths:
        th.join()
    el = max(ends) - min(starts)
    total = per * threads
    return dict(ns_per_register=el / total, registrations_per_s=total / (el / 1e9))


RESETS = 200_000


def peer_loop(system):
    if system == "asyncio":
        return asyncio.new_event_loop()
    if system == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    if system == "rloop":
        import rloop

        return rloop.new_event_loop()
    raise SystemExit(f"unknown system {system}")


def w7(system, n):
    """1M live one-shots (deadlines 60..120 s), 2 per owner; then min(200k, n/5) timeout
    resets of random timers (spot_timer: Timer.reset, and again as cancel + after; the
    peers: cancel + call_later); then every timer cancelled in a random order. Each phase
    times the operations alone: the indexes and deadlines are drawn before it."""
    r = random.Random(777)
    dl = deadlines(n, 4242)
    resets = min(RESETS, n // 5)
    picks = r.sample(range(n), resets)
    picks2 = r.sample(range(n), resets)
    order = list(range(n))
    r.shuffle(order)
    out = {}
    if system == "spot_timer":
        import spot_timer as st

        rt = st.Runtime()
        owners = [rt.owner(1 + i) for i in range((n + 1) // 2)]
        t0 = time.perf_counter_ns()
        ts = [owners[i >> 1].after(d, noop, key=i & 1) for i, d in enumerate(dl)]
        t1 = time.perf_counter_ns()
        for i in picks:
            ts[i] = ts[i].reset(dl[i])
        t2 = time.perf_counter_ns()
        for i in picks2:
            ts[i].cancel()
            ts[i] = owners[i >> 1].after(dl[i], noop, key=i & 1)
        t3 = time.perf_counter_ns()
        for i in order:
            ts[i].cancel()
        t4 = time.perf_counter_ns()
        rt.close()
        out["reset_cancel_register_ns"] = (t3 - t2) / resets
    else:
        loop = peer_loop(system)
        t0 = time.perf_counter_ns()
        ts = [loop.call_later(d, noop) for d in dl]
        t1 = time.perf_counter_ns()
        for i in picks:
            ts[i].cancel()
            ts[i] = loop.call_later(dl[i], noop)
        t2 = time.perf_counter_ns()
        t3 = t2
        for i in order:
            ts[i].cancel()
        t4 = time.perf_counter_ns()
    out.update(arm_ns=(t1 - t0) / n, reset_ns=(t2 - t1) / resets, cancel_ns=(t4 - t3) / n)
    out["arm_cancel_ns"] = out["arm_ns"] + out["cancel_ns"]
    return out


def main():
    a = sys.argv[1:]
    if a[0] == "w1":
        r = w1(a[1], int(a[2]))
    elif a[0] == "w4":
        r = w4(a[1], int(a[2]))
    elif a[0] == "w6":
        r = w6(a[1], int(a[2]), int(a[3]))
    elif a[0] == "w7":
        r = w7(a[1], int(a[2]))
    else:
        raise SystemExit(__doc__)
    print(json.dumps(r), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
