//! The few pieces of `spot_timer/__init__.py` the native classes call back into, handed over
//! once at import (`_native.configure`): the Python-side duration parser (for the types
//! and errors the native fast path leaves to it), the result enum, the stats class and the
//! resolved-future factory.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

pub struct Helpers {
    /// `_nanos(value, name) -> int`: every duration the native fast path does not take.
    pub nanos: Py<PyAny>,
    /// The members of `EndReason`, by value (a cancel returns one without calling the
    /// enum class).
    pub end_reasons: Vec<Py<PyAny>>,
    /// `TimerStats`.
    pub timer_stats: Py<PyAny>,
    /// `_done_future(ok, value) -> concurrent.futures.Future`: an already resolved future.
    pub done_future: Py<PyAny>,
    /// `_cancel_async(timer) -> coroutine`.
    pub cancel_async: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// Called once by `spot_timer/__init__.py` at import.
#[pyfunction]
pub fn configure(
    py: Python<'_>,
    nanos: Py<PyAny>,
    end_reason: &Bound<'_, PyAny>,
    timer_stats: Py<PyAny>,
    done_future: Py<PyAny>,
    cancel_async: Py<PyAny>,
) -> PyResult<()> {
    let end_reasons = spot_timer_core::EndReason::ALL
        .iter()
        .map(|r| end_reason.call1((r.code(),)).map(|m| m.unbind()))
        .collect::<PyResult<Vec<_>>>()?;
    let _ = HELPERS.set(
        py,
        Helpers {
            nanos,
            end_reasons,
            timer_stats,
            done_future,
            cancel_async,
        },
    );
    Ok(())
}

impl Helpers {
    /// The `EndReason` member of `code`.
    pub fn end_reason(&self, py: Python<'_>, code: u8) -> Py<PyAny> {
        self.end_reasons[usize::from(code)].clone_ref(py)
    }
}

pub fn helpers(py: Python<'_>) -> PyResult<&Helpers> {
    HELPERS.get(py).ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err("spot_timer._native used before configure()")
    })
}
