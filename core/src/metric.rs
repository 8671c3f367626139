//! A stats field as an exporter sees it: its name, whether it is a gauge or a counter,
//! and its value.

/// Whether a metric goes up and down (a gauge) or only up (a counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A value that may go up and down (live timers, queue length).
    Gauge,
    /// A running total that only increases (records published, wakeups).
    Counter,
}

/// One stats field for an exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The field's name (`records_published`).
    pub name: &'static str,
    /// Gauge or counter.
    pub kind: MetricKind,
    /// Its value.
    pub value: u64,
}

/// Writes `metrics` in the Prometheus text format (0.0.4), every name prefixed with
/// `prefix`: a gauge as `<prefix>_<name>`, a counter as `<prefix>_<name>_total`.
pub fn write_prometheus(out: &mut String, metrics: &[Metric], prefix: &str) {
    use std::fmt::Write;
    for m in metrics {
        let (suffix, kind) = match m.kind {
            MetricKind::Counter => ("_total", "counter"),
            MetricKind::Gauge => ("", "gauge"),
        };
        let _ = writeln!(out, "# TYPE {prefix}_{}{suffix} {kind}", m.name);
        let _ = writeln!(out, "{prefix}_{}{suffix} {}", m.name, m.value);
    }
}

/// Whether `prefix` may start a Prometheus metric name (`[a-zA-Z_][a-zA-Z0-9_]*`).
pub fn is_metric_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix
            .chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_alphabetic() || c == '_' || (i > 0 && c.is_ascii_digit()))
}
