//! The runtime's own lateness histogram and its Prometheus exposition.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use spot_timer_core::*;

#[test]
fn lateness_is_hand_over_minus_the_nominal_due_time_of_the_tick() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10)); // tick 1 due at 10 ms, handed over at 10 ms: on time
    assert_eq!(h.run_ready().len(), 1);
    h.advance(ms(15)); // now 25 ms: tick 2 (due 20 ms) handed over 5 ms late
    assert_eq!(h.run_ready().len(), 1);
    let l = h.rt.lateness();
    assert_eq!(l.count(), 2);
    assert_eq!(l.sum_ns, 5_000_000);
    assert_eq!(
        l.quantile(0.5),
        Some(Duration::from_nanos(1024)),
        "on time: first bucket"
    );
    let p100 = l.quantile(1.0).unwrap();
    assert!(p100 > ms(5) && p100 <= ms(5) * 5 / 4, "{p100:?}");
}

/// A minimal parser of the text format: (name with labels) -> value, and the TYPE lines.
fn parse(text: &str) -> (HashMap<String, f64>, HashMap<String, String>) {
    let mut samples = HashMap::new();
    let mut types = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
        } else if line.starts_with('#') || line.is_empty() {
            continue;
        } else {
            let (name, value) = line.rsplit_once(' ').expect("name value");
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
            assert!(
                samples.insert(name.to_string(), v).is_none(),
                "duplicate {name}"
            );
        }
    }
    (samples, types)
}

#[test]
fn the_prometheus_exposition_parses_and_marks_gauges_and_counters() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(30));
    h.run_ready();
    let text = h.rt.prometheus("spot_timer");
    let (samples, types) = parse(&text);
    let stats = h.rt.stats();
    for m in stats.metrics() {
        let name = match m.kind {
            MetricKind::Counter => format!("spot_timer_{}_total", m.name),
            MetricKind::Gauge => format!("spot_timer_{}", m.name),
        };
        let kind = if m.kind == MetricKind::Counter {
            "counter"
        } else {
            "gauge"
        };
        assert_eq!(types.get(&name).map(String::as_str), Some(kind), "{name}");
        assert!(samples.contains_key(&name), "{name} missing");
    }
    assert_eq!(samples["spot_timer_live_timers"], 1.0);
    assert_eq!(
        samples["spot_timer_records_published_total"],
        stats.records_published as f64
    );
    assert_eq!(
        types.get("spot_timer_lateness_seconds").map(String::as_str),
        Some("histogram")
    );
    // Buckets are cumulative, ascending in `le`, and end with +Inf == _count.
    let mut buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|(k, v)| {
            let le = k.strip_prefix("spot_timer_lateness_seconds_bucket{le=\"")?;
            let le = le.strip_suffix("\"}")?;
            Some((
                if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                },
                *v,
            ))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert!(buckets.len() > 100);
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative");
    let count = samples["spot_timer_lateness_seconds_count"];
    assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count));
    assert_eq!(count, stats.records_received as f64);
    assert!(samples.contains_key("spot_timer_lateness_seconds_sum"));
}
