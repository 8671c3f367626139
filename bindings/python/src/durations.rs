//! Durations given as seconds (int or float) or `timedelta`, as integer nanoseconds.
//!
//! Exact `int` and `float` are converted here, as `_nanos` in `__init__.py` does (a float is
//! rounded half to even, like Python's `round`); every other type and every value out of
//! range goes to `_nanos`, so each error has one wording.

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};

use crate::host::helpers;

/// 2^64 as a float: the first value that does not fit in `u64`.
const U64_LIMIT: f64 = 18_446_744_073_709_551_616.0;

pub fn nanos(py: Python<'_>, value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        let x = f.value();
        if x.is_finite() && x >= 0.0 {
            let ns = (x * 1e9).round_ties_even();
            if ns < U64_LIMIT {
                return Ok(ns as u64);
            }
        }
    } else if value.is_exact_instance_of::<PyInt>() {
        if let Ok(s) = value.extract::<u64>() {
            if let Some(ns) = s.checked_mul(1_000_000_000) {
                return Ok(ns);
            }
        }
    }
    helpers(py)?
        .nanos
        .bind(py)
        .call1((value, name))?
        .extract::<u64>()
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
