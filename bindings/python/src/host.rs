//! The few pieces of `spot_timer/__init__.py` the native classes use, handed over once at
//! import (`_native.configure`): the result enum's members and the stats
//! classes (read, never called on the registration, cancel or delivery paths).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

pub struct Helpers {
    /// The members of `EndReason`, by value (a cancel returns one without calling the
    /// enum class).
    pub end_reasons: Vec<Py<PyAny>>,
    /// `Stats`.
    pub stats: Py<PyAny>,
    /// `TimerStats`.
    pub timer_stats: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// Called once by `spot_timer/__init__.py` at import.
#[pyfunction]
pub fn configure(
    py: Python<'_>,
    end_reason: &Bound<'_, PyAny>,
    stats: Py<PyAny>,
    timer_stats: Py<PyAny>,
) -> PyResult<()> {
    let end_reasons = spot_timer_core::EndReason::ALL
        .iter()
        .map(|r| end_reason.call1((r.code(),)).map(|m| m.unbind()))
        .collect::<PyResult<Vec<_>>>()?;
    let _ = HELPERS.set(
        py,
        Helpers {
            end_reasons,
            stats,
            timer_stats,
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
