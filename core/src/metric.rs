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
