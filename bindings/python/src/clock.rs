//! `spot_timer.ManualClock`: the time of deterministic tests, moved only by `advance`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

use spot_timer_core::{Clock, Error, ManualClock};

use crate::durations::nanos;
use crate::errors::to_py;
use crate::inner::Inner;

/// A clock that moves only when advanced: deterministic tests.
///
/// ``advance()`` returns after every runtime on this clock fired what became due (the
/// records are then ready for delivery; in ``dispatch="manual"`` mode call
/// ``runtime.dispatch()`` to run the handlers).
#[pyclass(module = "spot_timer", name = "ManualClock", frozen)]
pub struct PyManualClock {
    pub clock: ManualClock,
    /// The runtimes on this clock (not kept alive by it).
    runtimes: Mutex<Vec<Weak<Inner>>>,
}

impl PyManualClock {
    /// `inner` runs on this clock: `advance` waits for its scheduler too.
    pub fn attach(&self, inner: &Arc<Inner>) {
        let mut r = self.runtimes.lock();
        r.retain(|w| w.strong_count() > 0);
        r.push(Arc::downgrade(inner));
    }
}

#[pymethods]
impl PyManualClock {
    #[new]
    fn new() -> Self {
        Self {
            clock: ManualClock::new(),
            runtimes: Mutex::new(Vec::new()),
        }
    }

    /// Current time in seconds since the clock was created.
    #[getter]
    fn now(&self) -> f64 {
        self.clock.now() as f64 / 1e9
    }

    /// Current time in nanoseconds since the clock was created.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.clock.now()
    }

    /// Moves the clock by ``by`` (seconds or ``timedelta``); returns once every open runtime
    /// on it fired what became due.
    pub fn advance(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let ns = nanos(py, by, "by")?;
        self.clock.advance(Duration::from_nanos(ns));
        let open: Vec<Arc<Inner>> = self
            .runtimes
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|inner| !inner.is_closed())
            .collect();
        for inner in open {
            match py.detach(|| inner.rt.sync()) {
                Ok(()) | Err(Error::Closed) => {}
                Err(e) => return Err(to_py(py, e)),
            }
        }
        Ok(())
    }
}
