//! Metrics through the C ABI: the runtime's lateness quantiles and a
//! Prometheus text exposition of its stats and lateness histogram.

use std::ffi::{c_char, CStr};

use spot_timer_core::is_metric_prefix;

use crate::boundary::{boundary, Failure, FfiResult, Out, TextOut};
use crate::handles;
use crate::node::NODES;
use crate::status::*;

/// Writes the quantile `q` (0..=1) of how late records were handed to the host (hand-over
/// time minus the nominal due time of the tick each stands for) as the upper bound of its
/// histogram bucket, in nanoseconds; `UINT64_MAX` when nothing was recorded yet.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT (q not in 0..=1).
#[no_mangle]
pub unsafe extern "C" fn spot_lateness_quantile(rt: u64, q: f64, out_ns: *mut u64) -> spot_status {
    boundary("spot_lateness_quantile", || {
        let out = Out::new(out_ns, "out_ns")?;
        if !(0.0..=1.0).contains(&q) {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                format!("quantile {q} is not between 0 and 1"),
            ));
        }
        let ffi = handles::get(rt)?;
        let ns = ffi
            .rt
            .lateness()
            .quantile(q)
            .map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128) as u64);
        out.write(ns);
        Ok(())
    })
}

/// Writes the Prometheus text exposition (format 0.0.4) of the runtime's stats (each
/// marked gauge or counter; counters end in `_total`) and lateness histogram
/// (`<prefix>_lateness_seconds`) to `buf`, NUL-terminated, every name prefixed with
/// `prefix` (NULL: "spot_timer"). `*out_len` receives the text's full length without
/// the NUL: when it is `>= cap` the text was cut; call again with a larger buffer.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT (prefix not a valid metric name, cap 0).
#[no_mangle]
pub unsafe extern "C" fn spot_prometheus(
    rt: u64,
    prefix: *const c_char,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
) -> spot_status {
    boundary("spot_prometheus", || {
        let out = TextOut::new(buf, cap, out_len)?;
        let prefix = metric_prefix(prefix, "spot_timer")?;
        let ffi = handles::get(rt)?;
        out.write(&ffi.rt.prometheus(&prefix));
        Ok(())
    })
}

/// The prefix a host passed (NULL: `default`), checked to start a metric name.
unsafe fn metric_prefix(prefix: *const c_char, default: &str) -> FfiResult<String> {
    let prefix = if prefix.is_null() {
        default.to_string()
    } else {
        CStr::from_ptr(prefix).to_string_lossy().into_owned()
    };
    if !is_metric_prefix(&prefix) {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            format!("prefix {prefix:?} is not a metric name ([a-zA-Z_][a-zA-Z0-9_]*)"),
        ));
    }
    Ok(prefix)
}

/// Writes the Prometheus text exposition (format 0.0.4) of node `node`'s counters (the
/// fields of `struct spot_node_stats`, each marked gauge or counter; counters end in
/// `_total`) to `buf`, NUL-terminated, every name prefixed with `prefix` (NULL:
/// "spot_node"). `*out_len` receives the text's full length without the NUL: when it is
/// `>= cap` the text was cut; call again with a larger buffer. Also after the node shut
/// down, until `spot_node_free`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT (prefix not a valid metric name, cap 0).
#[no_mangle]
pub unsafe extern "C" fn spot_node_prometheus(
    node: u64,
    prefix: *const c_char,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
) -> spot_status {
    boundary("spot_node_prometheus", || {
        let out = TextOut::new(buf, cap, out_len)?;
        let prefix = metric_prefix(prefix, "spot_node")?;
        let n = NODES.get(node)?;
        out.write(&n.node.stats().prometheus(&prefix));
        Ok(())
    })
}
