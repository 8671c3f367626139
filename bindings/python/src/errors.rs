//! The one mapping of core errors to the exception classes of `spot_timer._errors`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use spot_timer_core::{EndReason, Error};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS
        .get_or_try_init(py, || py.import("spot_timer._errors").map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// Builds the exception of class `name` (defined in `spot_timer._errors`) with `msg`.
pub fn py_error(py: Python<'_>, name: &str, msg: String) -> PyErr {
    py_error_with(py, name, msg, None)
}

/// [`py_error`] with keyword arguments for the class's attributes (`spot_id=...`).
pub fn py_error_with(
    py: Python<'_>,
    name: &str,
    msg: String,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    match errors_module(py).and_then(|m| m.getattr(name)) {
        Ok(cls) => match cls.call((msg,), kwargs) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

fn error_class(e: &Error) -> &'static str {
    match e {
        Error::InvalidArgument(_) => "InvalidArgumentError",
        Error::UnknownOwner(_) => "UnknownOwnerError",
        Error::LeaseExpired => "LeaseExpiredError",
        Error::Revoked => "RevokedError",
        Error::StaleHandle => "StaleHandleError",
        Error::InvalidCompletion(_) => "InvalidCompletionError",
        Error::Timeout => "CancelTimeoutError",
        Error::WouldDeadlock => "WouldDeadlockError",
        Error::CleanupFailed(_) => "CleanupFailedError",
        Error::Closed => "RuntimeClosedError",
        Error::NotManualClock => "NotManualClockError",
        Error::CapacityExhausted(_) => "CapacityExhaustedError",
        Error::Os(_) => "NativeOSError",
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
    Err(py_error(
        py,
        "InvalidArgumentError",
        format!("prefix {prefix:?} is not a metric name ([a-zA-Z_][a-zA-Z0-9_]*)"),
    ))
}
