//! The Prometheus text exposition (format 0.0.4) of a runtime's stats (each field marked
//! gauge or counter, `crate::metric`) and lateness histogram.

use std::fmt::Write;

use crate::lateness::Lateness;
use crate::metric::write_prometheus;
use crate::stats::Stats;

/// The Prometheus text exposition of `stats` and `lateness`, every name prefixed with
/// `prefix` (e.g. `spot_timer`): counters end in `_total`, the lateness is a histogram in
/// seconds (`<prefix>_lateness_seconds`).
pub(crate) fn prometheus(stats: &Stats, lateness: &Lateness, prefix: &str) -> String {
    let mut out = String::with_capacity(4096);
    write_prometheus(&mut out, &stats.metrics(), prefix);
    let h = format!("{prefix}_lateness_seconds");
    let _ = writeln!(
        out,
        "# HELP {h} How long after its nominal due time each record was handed to the host."
    );
    let _ = writeln!(out, "# TYPE {h} histogram");
    let mut cumulative = 0u64;
    for b in &lateness.buckets {
        cumulative += b.count;
        if b.upper_ns == u64::MAX {
            let _ = writeln!(out, "{h}_bucket{{le=\"+Inf\"}} {cumulative}");
        } else {
            let _ = writeln!(
                out,
                "{h}_bucket{{le=\"{}\"}} {cumulative}",
                b.upper_ns as f64 / 1e9
            );
        }
    }
    let _ = writeln!(out, "{h}_sum {}", lateness.sum_ns as f64 / 1e9);
    let _ = writeln!(out, "{h}_count {cumulative}");
    out
}
