//! Futures waiting for a cancel's end result (`Timer.cancel_nowait`, `Timer.cancel_async`)
//! when the generation ends later: the one table of them, keyed by the tag the core's
//! cancel notice carries, and their resolution. The delivering thread resolves a waiter
//! when its notice arrives; a close resolves the rest. Nothing here calls the package's
//! Python code.

use std::collections::HashMap;

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::PyTraverseError;

use spot_timer_core::{EndReason, EndResult, Runtime, TimerId};

use crate::errors::{reason_code, to_py};
use crate::host::helpers;

/// A future and the event loop it belongs to (None: a `concurrent.futures.Future`).
pub struct Waiter {
    fut: Py<PyAny>,
    event_loop: Option<Py<PyAny>>,
    timer: TimerId,
}

/// The waiters of one runtime.
#[derive(Default)]
pub struct Waiters {
    next_tag: u64,
    by_tag: HashMap<u64, Waiter>,
}

impl Waiters {
    /// Adds a waiter; the tag its generation's cancel notice is to carry.
    pub fn insert(&mut self, waiter: Waiter) -> u64 {
        self.next_tag += 1;
        self.by_tag.insert(self.next_tag, waiter);
        self.next_tag
    }

    pub fn take(&mut self, tag: u64) -> Option<Waiter> {
        self.by_tag.remove(&tag)
    }

    pub fn drain(&mut self) -> Vec<Waiter> {
        self.by_tag.drain().map(|(_, w)| w).collect()
    }

    /// The futures and loops it holds, for the garbage collector.
    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for w in self.by_tag.values() {
            visit.call(&w.fut)?;
            if let Some(lp) = &w.event_loop {
                visit.call(lp)?;
            }
        }
        Ok(())
    }
}

impl Waiter {
    /// `fut` (of `event_loop`) waiting for the end of generation `timer`.
    pub fn new(fut: Py<PyAny>, event_loop: Option<Py<PyAny>>, timer: TimerId) -> Self {
        Self {
            fut,
            event_loop,
            timer,
        }
    }

    /// Resolves the future with `result`: the `EndReason`, or the cleanup failure. On its
    /// event loop's thread at once, from any other through `call_soon_threadsafe`; a
    /// future already done (cancelled by its awaiter) stays as it is.
    pub fn resolve(self, py: Python<'_>, result: EndResult) -> PyResult<()> {
        let (ok, value) = result_value(py, result)?;
        let settle = settle_fn(py)?;
        match &self.event_loop {
            Some(lp) if !on_loop_thread(py, lp.bind(py))? => {
                // A closed loop refuses: nobody is left to await the future.
                let _ = lp
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (settle, &self.fut, ok, value));
                Ok(())
            }
            _ => settle.call1((&self.fut, ok, value)).map(drop),
        }
    }

    /// Resolves it after a close: the generation's recorded result, else `RUNTIME_CLOSED`.
    pub fn resolve_closed(self, py: Python<'_>, rt: &Runtime<u64>) -> PyResult<()> {
        let result = rt
            .timer_result(self.timer)
            .unwrap_or(Ok(EndReason::RuntimeClosed));
        self.resolve(py, result)
    }
}

/// `(true, EndReason member)` or `(false, the cleanup failure's exception)`.
fn result_value(py: Python<'_>, result: EndResult) -> PyResult<(bool, Py<PyAny>)> {
    Ok(match result {
        Ok(reason) => (true, helpers(py)?.end_reason(py, reason_code(reason))),
        Err(e) => (false, to_py(py, e).into_value(py).into_any()),
    })
}

static FUTURE: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// A `concurrent.futures.Future` born resolved with `result` (a cancel whose result was
/// known at once). Its state never changes, so it shares one condition with every other
/// such future instead of making a lock of its own.
pub fn resolved_future(py: Python<'_>, result: EndResult) -> PyResult<Py<PyAny>> {
    let (cls, condition) = FUTURE.get_or_try_init(py, || {
        let cls = py.import("concurrent.futures")?.getattr("Future")?;
        let condition = py.import("threading")?.getattr("Condition")?.call0()?;
        Ok::<_, PyErr>((cls.unbind(), condition.unbind()))
    })?;
    let cls = cls.bind(py);
    let fut = cls.call_method1("__new__", (cls,))?;
    let (ok, value) = result_value(py, result)?;
    fut.setattr("_condition", condition)?;
    fut.setattr("_state", "FINISHED")?;
    fut.setattr("_result", if ok { value.clone_ref(py) } else { py.None() })?;
    fut.setattr("_exception", if ok { py.None() } else { value })?;
    fut.setattr("_waiters", pyo3::types::PyList::empty(py))?;
    fut.setattr("_done_callbacks", pyo3::types::PyList::empty(py))?;
    Ok(fut.unbind())
}

pub fn on_loop_thread(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<bool> {
    let running = py.import("asyncio")?.call_method0("_get_running_loop")?;
    Ok(running.is(event_loop))
}

static SETTLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn settle_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    SETTLE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(wrap_pyfunction!(settle, py)?.into_any().unbind())
        })
        .map(|f| f.bind(py))
}

/// Sets `fut`'s result (`ok`) or exception unless it is done already.
#[pyfunction]
fn settle(fut: &Bound<'_, PyAny>, ok: bool, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if fut.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    let method = if ok { "set_result" } else { "set_exception" };
    match fut.call_method1(method, (value,)) {
        // Cancelled by its awaiter meanwhile (a concurrent future has its own lock).
        Err(e)
            if e.is_instance_of::<pyo3::exceptions::PyException>(fut.py())
                && fut.call_method0("done")?.is_truthy()? =>
        {
            Ok(())
        }
        other => other.map(drop),
    }
}
