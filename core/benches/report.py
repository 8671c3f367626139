#!/usr/bin/env python3
"""Summarises the criterion results of the spot-timer benchmarks as markdown tables.

Reads <target>/criterion/{register_cancel,expiry}/*/*/new/{estimates,sample,benchmark}.json
(written by `cargo bench -p spot-timer-core`) and prints, per benchmark: the median time
per iteration, the 95 % confidence interval of that median, and the spread of the
per-sample means (min .. max). Usage: report.py [TARGET_DIR]
"""
import json
import os
import sys

IMPLS = ["spot-timer", "spot-timer (blocking cancel)", "tokio-util DelayQueue", "std BinaryHeap"]


def load(base, group):
    rows = {}
    gdir = os.path.join(base, "criterion", group)
    if not os.path.isdir(gdir):
        return rows
    for impl in os.listdir(gdir):
        idir = os.path.join(gdir, impl)
        if not os.path.isdir(idir) or impl == "report":
            continue
        for size in os.listdir(idir):
            new = os.path.join(idir, size, "new")
            try:
                est = json.load(open(os.path.join(new, "estimates.json")))
                smp = json.load(open(os.path.join(new, "sample.json")))
                meta = json.load(open(os.path.join(new, "benchmark.json")))
            except (OSError, ValueError):
                continue
            per_iter = [t / i for t, i in zip(smp["times"], smp["iters"])]
            elems = (meta.get("throughput") or {}).get("Elements", 1)
            rows[(meta["function_id"], int(meta["value_str"]))] = {
                "median": est["median"]["point_estimate"],
                "lo": est["median"]["confidence_interval"]["lower_bound"],
                "hi": est["median"]["confidence_interval"]["upper_bound"],
                "min": min(per_iter),
                "max": max(per_iter),
                "n": len(per_iter),
                "elems": elems,
            }
    return rows


def fmt_ns(ns):
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns / 1e6:.2f} ms"


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "target")
    churn = load(base, "register_cancel")
    if churn:
        print("### Register + cancel (ns per pair, lower is better)\n")
        print("| live timers | implementation | median | 95 % CI of median | sample spread (min .. max) | vs DelayQueue |")
        print("|---:|---|---:|---:|---:|---:|")
        for size in sorted({s for _, s in churn}):
            dq = churn.get(("tokio-util DelayQueue", size))
            for impl in IMPLS:
                r = churn.get((impl, size))
                if not r:
                    continue
                ratio = f"{r['median'] / dq['median']:.2f}x" if dq else "-"
                print(f"| {size:,} | {impl} | {r['median']:.1f} ns | {r['lo']:.1f} .. {r['hi']:.1f} ns"
                      f" | {r['min']:.1f} .. {r['max']:.1f} ns | {ratio} |")
        print()
    exp = load(base, "expiry")
    if exp:
        print("### Expiry throughput (records per second, higher is better)\n")
        print("| timers | implementation | median time per round | records/s at median | sample spread (records/s, min .. max) |")
        print("|---:|---|---:|---:|---:|")
        for size in sorted({s for _, s in exp}):
            for impl in IMPLS:
                r = exp.get((impl, size))
                if not r:
                    continue
                rate = r["elems"] / (r["median"] / 1e9)
                lo = r["elems"] / (r["max"] / 1e9)
                hi = r["elems"] / (r["min"] / 1e9)
                print(f"| {size:,} | {impl} | {fmt_ns(r['median'])} | {rate / 1e6:.2f} M/s"
                      f" | {lo / 1e6:.2f} .. {hi / 1e6:.2f} M/s |")
        print()


if __name__ == "__main__":
    main()
