"""The runtime's lateness histogram and its Prometheus exposition, from Python: the text
format, and the prometheus_client collector."""
import math

import pytest

import spot_timer as st


def _runtime_with_one_late_tick() -> st.Runtime:
    clock = st.ManualClock()
    rt = st.Runtime(clock=clock, dispatch="manual")
    seen = []
    rt.owner(1).every(0.010, seen.append)
    rt.advance(0.025)  # tick 2 (due at 20 ms) is handed over at 25 ms
    rt.dispatch()
    assert [t.scheduled_index for t in seen] == [2]
    return rt


def test_lateness_is_hand_over_minus_the_nominal_due_time():
    rt = _runtime_with_one_late_tick()
    buckets, total = rt.lateness()
    assert sum(c for _, c in buckets) == 1
    assert total == pytest.approx(0.005)
    p100 = rt.lateness_quantile(1.0)
    assert p100 is not None and 0.005 < p100 <= 0.005 * 5 / 4
    with pytest.raises(st.InvalidArgumentError):
        rt.lateness_quantile(2.0)
    kinds = dict((n, k) for n, k, _ in rt.metrics())
    assert kinds["live_timers"] == "gauge" and kinds["records_published"] == "counter"
    rt.close()


def test_the_text_exposition_parses():
    rt = _runtime_with_one_late_tick()
    text = rt.prometheus("app")
    assert "# TYPE app_live_timers gauge\n" in text
    assert "# TYPE app_records_published_total counter\n" in text
    assert 'app_lateness_seconds_bucket{le="+Inf"} 1\n' in text
    for line in text.splitlines():
        if line and not line.startswith("#"):
            value = line.rsplit(" ", 1)[1]
            assert math.isfinite(float(value)), line
    with pytest.raises(st.InvalidArgumentError):
        rt.prometheus("9bad")
    rt.close()


def test_the_prometheus_client_collector():
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from spot_timer.prometheus import RuntimeCollector

    rt = _runtime_with_one_late_tick()
    registry = prometheus_client.CollectorRegistry()
    registry.register(RuntimeCollector(rt, prefix="app"))
    text = prometheus_client.generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["app_live_timers"].type == "gauge"
    assert families["app_records_published"].type == "counter"
    assert families["app_records_published"].samples[0].value == 1
    hist = families["app_lateness_seconds"]
    assert hist.type == "histogram"
    count = [s for s in hist.samples if s.name == "app_lateness_seconds_count"][0]
    assert count.value == 1
    rt.close()
    del rt
    import gc

    gc.collect()
    assert prometheus_client.generate_latest(registry) == b""  # the runtime is gone


def test_the_stats_fields_are_the_cores_list_in_every_python_place():
    """One schema: the core's list of stats fields (`metrics()`) is the dataclass's and what
    `stats()` fills (the dataclass keeps its own order). A field added in Rust only fails
    here."""
    import dataclasses

    rt = st.Runtime(st.ManualClock(), dispatch="manual")
    try:
        core = sorted(n for n, _, _ in rt.metrics())
        assert len(core) == len(set(core)) > 20
        assert sorted(f.name for f in dataclasses.fields(st.Stats)) == core
        assert sorted(dataclasses.asdict(rt.stats())) == core
    finally:
        rt.close()
