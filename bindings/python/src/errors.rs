//! The one mapping of core errors to the exception classes (`exceptions.rs`), and the
//! helpers that raise one.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use spot_timer_core::{EndReason, Error};

pub use crate::exceptions::Exc;

/// The exception `exc` with `msg`.
pub fn py_error(py: Python<'_>, exc: Exc, msg: String) -> PyErr {
    crate::exceptions::new_err(py, exc, msg)
}

/// Raises `exc` with `msg`: `return fail(py, Exc::X, "...")`.
pub fn fail<T>(py: Python<'_>, exc: Exc, msg: impl Into<String>) -> PyResult<T> {
    Err(py_error(py, exc, msg.into()))
}

/// The name of `obj`'s type, for messages ("?" if it has none).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// An int that is not a bool.
pub fn is_int(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<pyo3::types::PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>()
}

/// [`py_error`] with the class's attributes (`spot_id=...`) from `attrs`.
pub fn py_error_with(
    py: Python<'_>,
    exc: Exc,
    msg: String,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    let attrs: Vec<(String, Bound<'_, PyAny>)> = attrs
        .map(|d| {
            d.iter()
                .filter_map(|(k, v)| Some((k.extract::<String>().ok()?, v)))
                .collect()
        })
        .unwrap_or_default();
    let refs: Vec<(&str, Bound<'_, PyAny>)> =
        attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    crate::exceptions::new_err_with(py, exc, msg, &refs)
}

fn error_class(e: &Error) -> Exc {
    match e {
        Error::InvalidArgument(_) => Exc::InvalidArgument,
        Error::UnknownOwner(_) => Exc::UnknownOwner,
        Error::LeaseExpired => Exc::LeaseExpired,
        Error::Revoked => Exc::Revoked,
        Error::StaleHandle => Exc::StaleHandle,
        Error::InvalidCompletion(_) => Exc::InvalidCompletion,
        Error::Timeout => Exc::CancelTimeout,
        Error::WouldDeadlock => Exc::WouldDeadlock,
        Error::CleanupFailed(_) => Exc::CleanupFailed,
        Error::Closed => Exc::RuntimeClosed,
        Error::NotManualClock => Exc::NotManualClock,
        Error::CapacityExhausted(_) => Exc::CapacityExhausted,
        Error::Os(_) => Exc::NativeOS,
    }
}

pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = match &e {
        Error::WouldDeadlock => "would deadlock: a blocking cancel from inside this timer's own \
             callback (or of a callback this thread still has to deliver) waits for itself; the \
             cancel has taken effect - use cancel_nowait() or cancel_async() to observe its result"
            .to_string(),
        other => other.to_string(),
    };
    py_error(py, error_class(&e), msg)
}

/// The `EndReason` value a terminal result carries (its Python enum has the same numbers).
pub fn reason_code(r: EndReason) -> u8 {
    r as u8
}

/// `"gauge"` or `"counter"`, as `metrics()` names a field's kind in every class.
pub fn metric_kind(k: spot_timer_core::MetricKind) -> &'static str {
    match k {
        spot_timer_core::MetricKind::Gauge => "gauge",
        spot_timer_core::MetricKind::Counter => "counter",
    }
}

/// `InvalidArgumentError` unless `prefix` may start a metric name.
pub fn check_metric_prefix(py: Python<'_>, prefix: &str) -> PyResult<()> {
    if spot_timer_core::is_metric_prefix(prefix) {
        return Ok(());
    }
    fail(
        py,
        Exc::InvalidArgument,
        format!("prefix {prefix:?} is not a metric name ([a-zA-Z_][a-zA-Z0-9_]*)"),
    )
}
