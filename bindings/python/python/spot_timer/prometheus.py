"""A ``prometheus_client`` collector for a spot-timer ``Runtime`` (optional: importing this
module needs ``prometheus_client``; nothing else in the package does).

    from prometheus_client import REGISTRY, start_http_server
    from spot_timer.prometheus import RuntimeCollector

    REGISTRY.register(RuntimeCollector(rt))
    start_http_server(9100)

Gauges and counters come from the runtime's own marking of its stats fields; the lateness
histogram (``<prefix>_lateness_seconds``) from the runtime's fixed buckets. Without a
client library, ``Runtime.prometheus()`` renders the same in the text format.
"""
from __future__ import annotations

import weakref
from typing import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from . import Runtime

__all__ = ["RuntimeCollector"]


class RuntimeCollector(Collector):
    """Collects one runtime's stats and lateness histogram on every scrape. Holds the
    runtime weakly: once it is gone (or closed and collected) a scrape yields nothing."""

    def __init__(self, runtime: Runtime, prefix: str = "spot_timer") -> None:
        self._runtime = weakref.ref(runtime)
        self._prefix = prefix

    def collect(self) -> Iterator[Metric]:
        rt = self._runtime()
        if rt is None:
            return
        p = self._prefix
        for name, kind, value in rt.metrics():
            if kind == "counter":
                yield CounterMetricFamily(f"{p}_{name}", f"spot-timer counter {name}", value=value)
            else:
                yield GaugeMetricFamily(f"{p}_{name}", f"spot-timer gauge {name}", value=value)
        buckets, total = rt.lateness()
        cumulative = 0
        rows = []
        for upper, count in buckets:
            cumulative += count
            rows.append(("+Inf" if upper is None else repr(upper), cumulative))
        yield HistogramMetricFamily(
            f"{p}_lateness_seconds",
            "How long after its nominal due time each record was handed to the host.",
            buckets=rows,
            sum_value=total,
        )
