//! Durations given as seconds (int or float) or `timedelta`, as integer nanoseconds: the one
//! conversion (the package's Python uses it too, as `_native.nanos`). A float is rounded half
//! to even, like Python's `round`; each error has one wording.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDelta, PyDeltaAccess, PyFloat, PyInt};

use crate::errors::{fail, py_error, Exc};

/// 2^64 as a float: the first value that does not fit in `u64`.
const U64_LIMIT: f64 = 18_446_744_073_709_551_616.0;

/// `value` (seconds as int or float, or a `timedelta`) in nanoseconds; `name` names it in
/// the error.
#[pyfunction]
pub fn nanos(py: Python<'_>, value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    let too_large = || {
        py_error(
            py,
            Exc::InvalidDuration,
            format!("{name} is too large: {}", repr(value)),
        )
    };
    let negative = || {
        py_error(
            py,
            Exc::InvalidDuration,
            format!("{name} must not be negative, got {}", repr(value)),
        )
    };
    if let Ok(f) = value.cast::<PyFloat>() {
        let x = f.value();
        if !x.is_finite() {
            return fail(
                py,
                Exc::InvalidDuration,
                format!(
                    "{name} must be a finite number of seconds, got {}",
                    repr(value)
                ),
            );
        }
        let ns = (x * 1e9).round_ties_even();
        return match ns {
            n if n < 0.0 => Err(negative()),
            n if n >= U64_LIMIT => Err(too_large()),
            n => Ok(n as u64),
        };
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        let Ok(s) = value.extract::<i128>() else {
            return Err(if value.lt(0)? {
                negative()
            } else {
                too_large()
            });
        };
        return match s.checked_mul(1_000_000_000) {
            Some(n) if n < 0 => Err(negative()),
            Some(n) => u64::try_from(n).map_err(|_| too_large()),
            None if s < 0 => Err(negative()),
            None => Err(too_large()),
        };
    }
    if let Ok(d) = value.cast::<PyDelta>() {
        let us = i128::from(d.get_days()) * 86_400_000_000
            + i128::from(d.get_seconds()) * 1_000_000
            + i128::from(d.get_microseconds());
        return match us * 1000 {
            n if n < 0 => Err(negative()),
            n => u64::try_from(n).map_err(|_| too_large()),
        };
    }
    let kind = if value.is_instance_of::<PyBool>() {
        "bool".to_string()
    } else {
        value.get_type().name()?.to_string()
    };
    fail(
        py,
        Exc::ArgumentType,
        format!("{name} must be seconds (int/float) or a timedelta, not {kind}"),
    )
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

pub fn opt_nanos(
    py: Python<'_>,
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Option<u64>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => nanos(py, v, name).map(Some),
    }
}
