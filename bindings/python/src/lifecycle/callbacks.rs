//! A node's Python callables — the factory, the closing callback and the exception
//! handler — and the Rust closures the lifecycle crate calls, on whichever thread creates
//! or closes a Spot. Such a thread is detached from the interpreter (every node call
//! detaches), so each closure attaches for the call only.
//!
//! The callables are kept in one place the garbage collector sees (`Node.__traverse__`);
//! the mutexes are only taken attached, for a clone or a take, never around Python code.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

use spot_lifecycle::{CloseReason, ClosingCallback, Factory, SpotId, SpotKind};

use super::errors::stash_factory_error;
use super::types::types;
use crate::dispatch::is_coroutine;

#[derive(Default)]
pub struct Callbacks {
    factory: Mutex<Option<Py<PyAny>>>,
    on_close: Mutex<Option<Py<PyAny>>>,
    exception_handler: Mutex<Option<Py<PyAny>>>,
}

fn get(py: Python<'_>, slot: &Mutex<Option<Py<PyAny>>>) -> Option<Py<PyAny>> {
    slot.lock().as_ref().map(|f| f.clone_ref(py))
}

/// `"TypeName: message"` of an exception (just the type name when it has no message).
pub fn describe(py: Python<'_>, err: &PyErr) -> String {
    let v = err.value(py);
    let name = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    match v.str().map(|s| s.to_string()) {
        Ok(s) if !s.is_empty() => format!("{name}: {s}"),
        _ => name,
    }
}

impl Callbacks {
    pub fn new(
        factory: Option<Py<PyAny>>,
        on_close: Option<Py<PyAny>>,
        exception_handler: Option<Py<PyAny>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            factory: Mutex::new(factory),
            on_close: Mutex::new(on_close),
            exception_handler: Mutex::new(exception_handler),
        })
    }

    /// `__traverse__`: never blocks (the locks are only held for a clone or a take).
    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for slot in [&self.factory, &self.on_close, &self.exception_handler] {
            if let Some(g) = slot.try_lock() {
                if let Some(f) = g.as_ref() {
                    visit.call(f)?;
                }
            }
        }
        Ok(())
    }

    /// `__clear__`: takes the callables out (the caller drops them, outside the locks).
    pub fn take_all(&self) -> Vec<Py<PyAny>> {
        [&self.factory, &self.on_close, &self.exception_handler]
            .into_iter()
            .filter_map(|slot| slot.lock().take())
            .collect()
    }

    /// The factory as the lifecycle crate takes it: runs the Python factory
    /// `factory(spot_id, kind)`; an exception fails the creation with its message (and is
    /// kept as the `__cause__` of the `CreationFailedError` this thread's call raises).
    pub fn factory(self: &Arc<Self>) -> Factory {
        let me = self.clone();
        Arc::new(move |id: SpotId, kind: SpotKind| {
            Python::try_attach(|py| {
                // Cleared by the garbage collector: the node is unreachable.
                let Some(f) = get(py, &me.factory) else {
                    return Ok(());
                };
                let kind_obj = types(py)
                    .map(|t| t.spot_kind(py, kind))
                    .map_err(|e| describe(py, &e))?;
                match f.bind(py).call1((id.0, kind_obj)) {
                    Ok(res) => {
                        if !res.is_none() && is_coroutine(py, &res).unwrap_or(false) {
                            let _ = res.call_method0("close");
                            return Err("the factory returned a coroutine; a factory must be \
                                        a plain function (it runs on the creating thread)"
                                .into());
                        }
                        Ok(())
                    }
                    Err(err) => {
                        let msg = describe(py, &err);
                        stash_factory_error(id, err);
                        Err(msg)
                    }
                }
            })
            .unwrap_or_else(|| Err("the Python interpreter is not available".into()))
        })
    }

    /// The closing callback as the lifecycle crate takes it: `on_close(spot_id, kind,
    /// reason)`; an exception goes to the node's exception handler (the close goes on).
    pub fn on_close(self: &Arc<Self>) -> ClosingCallback {
        let me = self.clone();
        Arc::new(move |id: SpotId, kind: SpotKind, reason: CloseReason| {
            let _ = Python::try_attach(|py| {
                let Some(f) = get(py, &me.on_close) else {
                    return;
                };
                let args =
                    types(py).map(|t| (id.0, t.spot_kind(py, kind), t.close_reason(py, reason)));
                let r = args.and_then(|a| f.bind(py).call1(a));
                if let Err(err) = r {
                    me.report(py, err, None);
                }
            });
        })
    }

    /// Sends an exception raised by a handler (or the closing callback: `record` None) to
    /// the node's exception handler — by default a log record on the `spot_timer` logger.
    /// If the exception handler raises too, that goes to `sys.unraisablehook`.
    pub fn report(&self, py: Python<'_>, err: PyErr, record: Option<&Bound<'_, PyAny>>) {
        let handler = match get(py, &self.exception_handler) {
            Some(h) => h,
            None => match types(py) {
                Ok(t) => t.default_exception_handler.clone_ref(py),
                Err(e) => {
                    e.write_unraisable(py, None);
                    err.write_unraisable(py, record);
                    return;
                }
            },
        };
        let exc = err.into_value(py);
        let rec = record.cloned().unwrap_or_else(|| py.None().into_bound(py));
        if let Err(e2) = handler.bind(py).call1((exc, rec)) {
            e2.write_unraisable(py, Some(handler.bind(py)));
        }
    }
}
