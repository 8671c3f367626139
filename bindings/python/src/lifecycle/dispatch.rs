//! A node's delivery into Python: the core's delivery driver over the node
//! (`spot_lifecycle::NodeSource`); this file only says how one record runs in Python.
//! One receive (detached, in short slices on the main thread so Ctrl-C stays responsive),
//! then, attached, the batch through the handler — the driver claims each start right
//! before it; OK when the handler returned, FAILED when it raised (reported to the node's
//! exception handler) — and the outcomes are sent before `dispatch` returns.
//!
//! A handler that raises KeyboardInterrupt or SystemExit fails its record and the
//! exception propagates; the rest of the batch stays in the driver for the next
//! `dispatch`, as the timer runtime's dispatcher does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use spot_lifecycle::{LifecycleError, Node, NodeSource, Outcome, SpotRecord};
use spot_timer_core::driver::{Driver, Host, Verdict};

use super::callbacks::Callbacks;
use super::errors::to_py;
use super::record::PySpotRecord;
use crate::dispatch::{is_coroutine, OnThisThread};
use crate::errors::{py_error, Exc};
use crate::inner::wait_slice;

/// A node's driver, kept between dispatches (it holds the rest of a stopped batch). A
/// second thread that dispatches meanwhile runs a driver of its own for its call.
#[derive(Default)]
pub struct Delivery {
    driver: Mutex<Option<Driver<NodeSource>>>,
}

impl Delivery {
    /// One receive and its batch; returns how many records were handled.
    pub fn dispatch(
        &self,
        py: Python<'_>,
        node: &Arc<Node>,
        callbacks: &Callbacks,
        handler: &Bound<'_, PyAny>,
        timeout: Option<Duration>,
        max: usize,
    ) -> PyResult<usize> {
        let mut kept = self.driver.try_lock();
        let mut own = None;
        let driver = match kept.as_mut() {
            Some(slot) => slot.get_or_insert_with(|| Driver::new(NodeSource::new(node.clone()))),
            None => own.insert(Driver::new(NodeSource::new(node.clone()))),
        };
        receive(py, driver, timeout, max)?;
        let mut host = PyNodeHost {
            py,
            handler,
            callbacks,
            fatal: None,
        };
        let pass = driver.run(&mut host);
        let d = OnThisThread(&mut *driver);
        let sent = py.detach(move || {
            let d = d;
            d.0.flush()
        });
        if let Some(e) = host.fatal {
            return Err(e);
        }
        match sent {
            Ok(())
            | Err(LifecycleError::Closed)
            | Err(LifecycleError::Timer(spot_timer_core::Error::Closed)) => {}
            Err(e) => return Err(to_py(py, e)),
        }
        Ok(pass.ran + pass.not_started)
    }

    /// The node stops: the rest of a stopped batch completes as not started (its messages
    /// count as dropped). A driver in use by a dispatch ends with that dispatch.
    pub fn stop(&self) {
        let driver = self.driver.try_lock().and_then(|mut d| d.take());
        drop(driver);
    }
}

/// Waits (detached, in slices on the main thread) until records arrive or `timeout` ends.
fn receive(
    py: Python<'_>,
    driver: &mut Driver<NodeSource>,
    timeout: Option<Duration>,
    max: usize,
) -> PyResult<()> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let slice = wait_slice(deadline);
        let d = OnThisThread(&mut *driver);
        let n = py
            .detach(move || {
                let d = d;
                d.0.receive(slice, max)
            })
            .map_err(|e| to_py(py, e))?;
        if n > 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
        py.check_signals()?;
    }
}

/// Runs one record in Python: what the driver asks of a host.
struct PyNodeHost<'a, 'py> {
    py: Python<'py>,
    handler: &'a Bound<'py, PyAny>,
    callbacks: &'a Callbacks,
    /// KeyboardInterrupt, SystemExit, or a record that could not be built: propagates.
    fatal: Option<PyErr>,
}

impl Host<NodeSource> for PyNodeHost<'_, '_> {
    fn run(&mut self, rec: &SpotRecord) -> Verdict {
        match self.run_one(rec) {
            Ok(outcome) => Verdict::Done(outcome),
            Err(e) => {
                self.fatal = Some(e);
                Verdict::Stop(Outcome::Failed)
            }
        }
    }
}

impl PyNodeHost<'_, '_> {
    fn run_one(&self, rec: &SpotRecord) -> PyResult<Outcome> {
        let py = self.py;
        let obj = Bound::new(py, PySpotRecord::new(py, rec))?.into_any();
        match self.handler.call1((&obj,)) {
            Ok(res) if res.is_none() => Ok(Outcome::Ok),
            Ok(res) => {
                if !is_coroutine(py, &res)? {
                    return Ok(Outcome::Ok);
                }
                let _ = res.call_method0("close");
                let err = py_error(
                    py,
                    Exc::ArgumentType,
                    "the handler returned a coroutine; Node.dispatch() runs handlers \
                     synchronously (await inside a task of your own instead)"
                        .into(),
                );
                self.callbacks.report(py, err, Some(&obj));
                Ok(Outcome::Failed)
            }
            Err(err) if err.is_instance_of::<PyException>(py) => {
                self.callbacks.report(py, err, Some(&obj));
                Ok(Outcome::Failed)
            }
            Err(err) => Err(err),
        }
    }
}
