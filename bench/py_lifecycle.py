"""Lifecycle from Python: send→handler records per CPU-second, spot_timer.lifecycle against
the actor registry a Python user writes by hand (a dict of actors, each a bounded
asyncio.Queue drained by its own task).

    python py_lifecycle.py [--spots N] [--messages N] [--repeats N]

Each run sends N messages round-robin to N spots from the main thread and handles them
with a handler that only counts; CPU is process time (sender + handler + runtime threads).
Prints one JSON object per system: median, min and max records per CPU-second, and the
ratio of the medians. Runs of the two systems are interleaved.
"""
import asyncio
import json
import statistics
import sys
import time

from spot_timer.lifecycle import Node

PAYLOAD = b"payload!"


def spot_timer_run(spots: int, messages: int) -> float:
    node = Node(1, 1 << 62, instance_idle_timeout=None)
    for i in range(spots):
        node.create_user_spot(i + 1)
    handled = 0

    def handler(_rec: object) -> None:
        nonlocal handled
        handled += 1

    t0 = time.process_time()
    sent = 0
    while sent < messages:
        # Send a window, then handle what is ready: the lanes stay bounded (1,024 per Spot).
        window = min(messages - sent, 100_000)
        send = node.send
        for k in range(sent, sent + window):
            send(k % spots + 1, PAYLOAD)
        sent += window
        while handled < sent:
            node.dispatch(handler, timeout=0.05, max_records=8192)
    cpu = time.process_time() - t0
    node.shutdown()
    return messages / cpu


def asyncio_run(spots: int, messages: int) -> float:
    async def main() -> float:
        handled = 0
        done = asyncio.Event()

        async def actor(q: "asyncio.Queue[bytes]") -> None:
            nonlocal handled
            while True:
                await q.get()
                handled += 1
                if handled == messages:
                    done.set()

        queues = {i + 1: asyncio.Queue(maxsize=1024) for i in range(spots)}
        tasks = [asyncio.create_task(actor(q)) for q in queues.values()]
        t0 = time.process_time()
        sent = 0
        while sent < messages:
            window = min(messages - sent, 100_000)
            for k in range(sent, sent + window):
                queues[k % spots + 1].put_nowait(PAYLOAD)
            sent += window
            while handled < sent:
                await asyncio.sleep(0)
        await done.wait()
        cpu = time.process_time() - t0
        for t in tasks:
            t.cancel()
        return messages / cpu

    return asyncio.run(main())


def main() -> None:
    args = sys.argv[1:]

    def opt(name: str, default: int) -> int:
        return int(args[args.index(name) + 1]) if name in args else default

    spots, messages, repeats = opt("--spots", 1000), opt("--messages", 300_000), opt("--repeats", 5)
    runs: dict = {"spot_timer.lifecycle": [], "asyncio queues": []}
    for _ in range(repeats):
        runs["spot_timer.lifecycle"].append(spot_timer_run(spots, messages))
        runs["asyncio queues"].append(asyncio_run(spots, messages))
    med = {k: statistics.median(v) for k, v in runs.items()}
    for k, v in runs.items():
        print(json.dumps({"system": k, "spots": spots, "messages": messages,
                          "records_per_cpu_s": round(med[k]), "min": round(min(v)), "max": round(max(v))}))
    print(json.dumps({"ratio_spot_over_asyncio": round(med["spot_timer.lifecycle"] / med["asyncio queues"], 2)}))


if __name__ == "__main__":
    main()
