//! The one mapping of lifecycle errors to the exception classes (`exceptions.rs`),
//! each with the attributes it names (`spot_id`, `queue`, `reason`, `expected`, ...).

use std::cell::RefCell;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use spot_lifecycle::{LifecycleError, SpotId};

use super::types::types;
use crate::errors::{py_error, py_error_with, Exc};

thread_local! {
    /// The exception a Python factory raised on this thread, for the `CreationFailed` error
    /// the same call returns (its `__cause__`). Callers waiting for another thread's
    /// creation get the message only.
    static FACTORY_ERROR: RefCell<Option<(SpotId, PyErr)>> = const { RefCell::new(None) };
}

/// Keeps the factory's exception for the error this thread's call is about to return.
pub fn stash_factory_error(spot: SpotId, err: PyErr) {
    let old = FACTORY_ERROR.with(|f| f.borrow_mut().replace((spot, err)));
    drop(old);
}

/// Forgets a kept factory exception (before a call that may create).
pub fn clear_factory_error() {
    let old = FACTORY_ERROR.with(|f| f.borrow_mut().take());
    drop(old);
}

fn take_factory_error(spot: SpotId) -> Option<PyErr> {
    let (id, err) = FACTORY_ERROR.with(|f| f.borrow_mut().take())?;
    (id == spot).then_some(err)
}

/// The exception for `e`. Never fails: if the exception class cannot be built, the error
/// building it is returned instead.
pub fn to_py(py: Python<'_>, e: LifecycleError) -> PyErr {
    match build(py, e) {
        Ok(err) | Err(err) => err,
    }
}

fn build(py: Python<'_>, e: LifecycleError) -> PyResult<PyErr> {
    let msg = e.to_string();
    let kw = PyDict::new(py);
    let t = types(py)?;
    let name = match e {
        LifecycleError::NotFound(spot) => {
            kw.set_item("spot_id", spot.0)?;
            Exc::NotFound
        }
        LifecycleError::StaleRoute { spot, reason } => {
            kw.set_item("spot_id", spot.0)?;
            kw.set_item("reason", t.stale_reason(py, reason))?;
            Exc::StaleRoute
        }
        LifecycleError::CapacityExceeded { queue } => {
            kw.set_item("queue", t.queue(py, queue))?;
            Exc::CapacityExceeded
        }
        LifecycleError::Unavailable {
            spot, may_have_run, ..
        } => {
            kw.set_item("spot_id", spot.0)?;
            kw.set_item("may_have_run", may_have_run)?;
            Exc::Unavailable
        }
        LifecycleError::CreationFailed { spot, message } => {
            let cause = match take_factory_error(spot) {
                // KeyboardInterrupt, SystemExit in the factory: not a failed creation to
                // report, the interpreter's own signal — it goes on as it was raised.
                Some(c) if !c.is_instance_of::<PyException>(py) => return Ok(c),
                other => other,
            };
            kw.set_item("spot_id", spot.0)?;
            kw.set_item("message", &*message)?;
            let err = py_error_with(py, Exc::CreationFailed, msg, Some(&kw));
            err.set_cause(py, cause);
            return Ok(err);
        }
        LifecycleError::WrongKind {
            spot,
            expected,
            actual,
        } => {
            kw.set_item("spot_id", spot.0)?;
            kw.set_item("expected", t.spot_kind(py, expected))?;
            kw.set_item("actual", t.spot_kind(py, actual))?;
            Exc::WrongKind
        }
        LifecycleError::InvalidKind(_) => return Ok(py_error(py, Exc::InvalidKind, msg)),
        LifecycleError::InvalidArgument(_) => return Ok(py_error(py, Exc::InvalidArgument, msg)),
        LifecycleError::Store(_) => return Ok(py_error(py, Exc::LocationStore, msg)),
        LifecycleError::Closed | LifecycleError::Timer(spot_timer_core::Error::Closed) => {
            return Ok(closed(py))
        }
        LifecycleError::Timer(t) => return Ok(crate::errors::to_py(py, t)),
    };
    Ok(py_error_with(py, name, msg, Some(&kw)))
}

/// `NodeClosedError`: the node was shut down.
pub fn closed(py: Python<'_>) -> PyErr {
    py_error(py, Exc::NodeClosed, "the node is shut down".into())
}
