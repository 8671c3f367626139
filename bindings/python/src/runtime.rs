//! `spot_timer.Runtime`: one scheduler thread and one deadline queue for all its timers.
//! Its arguments are checked here, each bad one raising a `SpotTimerError` subclass that
//! names it; how its records reach Python is `delivery_modes`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyWeakrefReference};
use pyo3::PyTraverseError;

use spot_timer_core::{GateMode, OwnerOptions};

use crate::args::Arg;
use crate::clock::PyManualClock;
use crate::delivery_modes::{dispatch_here, logger, Delivery};
use crate::dispatch::Limits;
use crate::durations::{nanos, opt_nanos};
use crate::errors::{fail, is_int, py_error, to_py, type_name, Exc};
use crate::host::helpers;
use crate::inner::Inner;
use crate::live_runtimes::{close_inner, LiveRuntime};
use crate::owner::{check_callable, NativeOwner};
use crate::timer::NativeTimer;

/// Records per exchange by default (`Runtime(max_batch=)`).
const MAX_BATCH: usize = 8192;
/// Time one batch of handlers may take, by default (`Runtime(batch_budget=)`).
const BATCH_BUDGET_NS: u64 = 1_000_000;

/// Where handler exceptions go when the application names no handler: `logging`.
#[pyfunction]
fn log_handler_exception(
    py: Python<'_>,
    exc: &Bound<'_, PyAny>,
    tick: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("exc_info", exc)?;
    logger(py)?.call_method(
        "error",
        ("spot_timer handler raised (%r)", tick),
        Some(&kwargs),
    )?;
    Ok(())
}

/// The exception handler to keep: the one given (checked), or the logging one.
fn handler_or_logging(
    py: Python<'_>,
    given: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Py<PyAny>> {
    match given.filter(|h| !h.is_none()) {
        Some(h) => {
            check_callable(py, h, name)?;
            Ok(h.clone().unbind())
        }
        None => Ok(wrap_pyfunction!(log_handler_exception, py)?
            .into_any()
            .unbind()),
    }
}

/// An int argument in `low..=high`; `name` names it in the error.
fn int_in(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    name: &str,
    low: i64,
    high: i64,
) -> PyResult<i64> {
    if !is_int(value) {
        return fail(py, Exc::ArgumentType, format!("{name} must be an int"));
    }
    match value.extract::<i64>() {
        Ok(v) if (low..=high).contains(&v) => Ok(v),
        _ => fail(
            py,
            Exc::InvalidArgument,
            format!("{name} must be in {low}..={high}, got {value}"),
        ),
    }
}

/// One spot-timer runtime: one scheduler thread, one deadline queue for all its timers.
#[pyclass(module = "spot_timer", name = "Runtime", frozen, weakref)]
pub struct PyRuntime {
    live: Arc<LiveRuntime>,
    clock: Option<Py<PyManualClock>>,
}

impl PyRuntime {
    fn inner(&self) -> &Arc<Inner> {
        &self.live.inner
    }

    fn is_closed(&self) -> bool {
        self.live.closed.load(Ordering::Acquire) || self.inner().rt.is_closed()
    }

    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.is_closed() {
            return fail(py, Exc::RuntimeClosed, "runtime is closed");
        }
        Ok(())
    }
}

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(
        text_signature = "(clock=None, *, dispatch='thread', exception_handler=None, loop=None, max_batch=8192, batch_window=0, workers=1, batch_budget=0.001)"
    )]
    #[pyo3(signature = (
        clock=None, *, dispatch=Arg::Default, exception_handler=None, r#loop=None,
        max_batch=Arg::Default, batch_window=Arg::Default, workers=Arg::Default,
        batch_budget=Arg::Default,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        clock: Option<&Bound<'_, PyAny>>,
        dispatch: Arg<'_>,
        exception_handler: Option<&Bound<'_, PyAny>>,
        r#loop: Option<&Bound<'_, PyAny>>,
        max_batch: Arg<'_>,
        batch_window: Arg<'_>,
        workers: Arg<'_>,
        batch_budget: Arg<'_>,
    ) -> PyResult<Self> {
        let clock = match clock.filter(|c| !c.is_none()) {
            None => None,
            Some(c) => Some(c.cast::<PyManualClock>().map_err(|_| {
                let ty = type_name(c);
                py_error(
                    py,
                    Exc::ArgumentType,
                    format!("clock must be None (real clock) or a ManualClock, not {ty}"),
                )
            })?),
        };
        let mode = match dispatch.given() {
            None => "thread".to_string(),
            Some(d) => match d.extract::<String>() {
                Ok(m) if ["thread", "asyncio", "manual"].contains(&m.as_str()) => m,
                _ => {
                    return fail(
                        py,
                        Exc::InvalidArgument,
                        format!(
                            "dispatch must be 'thread', 'asyncio' or 'manual', got {}",
                            d.repr()?
                        ),
                    )
                }
            },
        };
        let max_records = match max_batch.given() {
            None => MAX_BATCH,
            Some(m) => int_in(py, m, "max_batch", 1, 1 << 20)? as usize,
        };
        let workers = match workers.given() {
            None => 1,
            Some(w) => int_in(py, w, "workers", 1, 64)? as usize,
        };
        if workers != 1 && mode != "thread" {
            return fail(
                py,
                Exc::DispatchMode,
                format!("workers={workers} is for dispatch='thread', not '{mode}'"),
            );
        }
        let handler = handler_or_logging(py, exception_handler, "exception_handler")?;
        let window_ns = match batch_window.given() {
            None => 0,
            Some(w) => nanos(py, w, "batch_window")?,
        };
        if window_ns > 100_000_000 {
            return fail(
                py,
                Exc::InvalidDuration,
                "batch_window must be at most 0.1 s",
            );
        }
        let budget_ns = match batch_budget.given() {
            None => BATCH_BUDGET_NS,
            Some(b) => match opt_nanos(py, Some(b), "batch_budget")? {
                None => 0,
                Some(b) if b > 0 && b <= 1_000_000_000 => b,
                Some(_) => return fail(
                    py,
                    Exc::InvalidDuration,
                    "batch_budget must be more than 0 and at most 1 s (None: take up to max_batch)",
                ),
            },
        };
        let limits = Limits {
            max_records,
            window_ns,
            budget_ns,
        };
        let inner = Inner::new(py, clock.map(|c| &c.get().clock))?;
        inner
            .objects
            .with(py, |o| o.exception_handler = Some(handler));
        if let Some(c) = &clock {
            c.get().attach(&inner);
        }
        let delivery = match mode.as_str() {
            "thread" => Delivery::start_threads(py, &inner, limits, workers),
            "asyncio" => {
                let event_loop = match r#loop.filter(|l| !l.is_none()) {
                    Some(l) => Ok(l.clone()),
                    None => py
                        .import("asyncio")?
                        .call_method0("get_running_loop")
                        .map_err(|e| {
                            if e.is_instance_of::<PyRuntimeError>(py) {
                                py_error(
                                    py,
                                    Exc::DispatchMode,
                                    "dispatch='asyncio' needs a running event loop or loop=..."
                                        .into(),
                                )
                            } else {
                                e
                            }
                        }),
                };
                event_loop.and_then(|l| Delivery::start_asyncio(py, &inner, limits, l))
            }
            _ => Ok(Delivery::manual(&inner)),
        };
        let delivery = match delivery {
            Ok(d) => d,
            Err(e) => {
                close_inner(py, &inner);
                return Err(e);
            }
        };
        let live = LiveRuntime::open(inner, delivery, limits);
        Ok(Self {
            live,
            clock: clock.map(|c| c.clone().unbind()),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let inner = self.inner();
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { inner.objects.during_gc() }.visit(&visit)?;
        // Never blocks: the lock is only ever held for short sections without Python calls.
        inner.releases.visit(&visit)?;
        if let Some(w) = inner.waiters.try_lock() {
            w.visit(&visit)?;
        }
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { inner.keys.visit_during_gc(&visit) }?;
        Ok(())
    }

    fn __clear__(&self) {
        let inner = self.inner();
        let taken = {
            // SAFETY: a GC callback of the object owning the cell.
            let o = unsafe { inner.objects.during_gc() };
            let mut t = o.clear_timers();
            t.extend(o.exception_handler.take());
            t.extend(inner.releases.drain());
            t
        };
        drop(taken);
        drop(inner.waiters.lock().drain());
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { inner.keys.clear_during_gc() };
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.live.close(py, Some(Duration::from_secs(2)))
    }

    /// `async with Runtime(...)`: an awaitable that gives the runtime.
    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let fut = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .call_method0("create_future")?;
        fut.call_method1("set_result", (slf,))?;
        Ok(fut)
    }

    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live.close(py, Some(Duration::from_secs(2)))?;
        let fut = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .call_method0("create_future")?;
        fut.call_method1("set_result", (py.None(),))?;
        Ok(fut)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.is_closed()
    }

    /// The ManualClock, or None on the real clock.
    #[getter]
    fn clock(&self, py: Python<'_>) -> Option<Py<PyManualClock>> {
        self.clock.as_ref().map(|c| c.clone_ref(py))
    }

    /// ``"thread"``, ``"asyncio"`` or ``"manual"``.
    #[getter]
    fn dispatch_mode(&self) -> &'static str {
        self.live.delivery.name()
    }

    /// Starts a new authority for owner ``id`` (an older authority of the id is revoked).
    ///
    /// ``lease``: seconds/timedelta until the authority expires unless renewed (None: never).
    /// ``gate``: SERIAL (default: one callback at a time across the owner's timers) or
    /// CONCURRENT.
    #[pyo3(signature = (id, *, lease=None, gate=Arg::Default))]
    fn owner(
        slf: &Bound<'_, Self>,
        id: &Bound<'_, PyAny>,
        lease: Option<&Bound<'_, PyAny>>,
        gate: Arg<'_>,
    ) -> PyResult<NativeOwner> {
        let py = slf.py();
        let this = slf.get();
        this.check_open(py)?;
        if !is_int(id) {
            let ty = type_name(id);
            return fail(
                py,
                Exc::ArgumentType,
                format!("owner id must be an int, not {ty}"),
            );
        }
        let owner_id: u64 = id.extract().map_err(|_| {
            py_error(
                py,
                Exc::InvalidArgument,
                format!("owner id must be in 0..2**64-1, got {id}"),
            )
        })?;
        let lease_ns = opt_nanos(py, lease, "lease")?;
        if lease_ns == Some(0) {
            return fail(py, Exc::InvalidDuration, "lease must be greater than zero");
        }
        let concurrent = match gate.given() {
            None => false,
            Some(g) => match g.extract::<u8>() {
                Ok(v) if v <= 1 && !g.is_instance_of::<PyBool>() => v == 1,
                _ => {
                    return fail(
                        py,
                        Exc::ArgumentType,
                        format!("gate must be a GateMode, not {}", g.repr()?),
                    )
                }
            },
        };
        let inner = this.inner();
        {
            // Timers reach their runtime through this (`Timer.runtime`).
            let mut host = inner.host.lock();
            if host.is_none() {
                *host = Some(PyWeakrefReference::new(slf)?.into_any().unbind());
            }
        }
        let opts = OwnerOptions {
            lease: lease_ns.map(Duration::from_nanos),
            gate: if concurrent {
                GateMode::Concurrent
            } else {
                GateMode::Serial
            },
        };
        let owner = inner
            .rt
            .acquire_owner(owner_id, opts)
            .map_err(|e| to_py(py, e))?;
        Ok(NativeOwner::new(
            inner.clone(),
            slf.clone().into_any().unbind(),
            owner,
            lease_ns,
        ))
    }

    /// Cancels ``timer`` (which must belong to this runtime) and waits for its result
    /// (``Timer.cancel``: in asyncio mode on the loop thread it never waits).
    #[pyo3(signature = (timer, timeout=None))]
    fn cancel<'py>(
        &self,
        py: Python<'py>,
        timer: &Bound<'py, PyAny>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Ok(t) = timer.cast::<NativeTimer>() else {
            let ty = type_name(timer);
            return fail(py, Exc::ArgumentType, format!("expected a Timer, not {ty}"));
        };
        if !Arc::ptr_eq(self.inner(), &t.get().inner) {
            return fail(
                py,
                Exc::ForeignTimer,
                "the timer belongs to a different runtime",
            );
        }
        timer.call_method1("cancel", (timeout,))
    }

    /// Advances the ManualClock; returns once everything that became due was fired.
    fn advance(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(clock) = &self.clock else {
            return fail(
                py,
                Exc::NotManualClock,
                "runtime does not use a manual clock",
            );
        };
        self.check_open(py)?;
        clock.get().advance(py, by)
    }

    /// The runtime's clock in seconds (monotonic; boot time for the real clock).
    fn now(&self) -> f64 {
        self.inner().rt.now() as f64 / 1e9
    }

    /// ``dispatch="manual"``: delivers ready records on this thread until none is left
    /// and every completion was applied; returns the number of records handled. With a
    /// timeout, first waits up to that long for records (None: until some arrive).
    #[pyo3(signature = (timeout=Arg::Default), text_signature = "($self, timeout=0)")]
    fn dispatch(&self, py: Python<'_>, timeout: Arg<'_>) -> PyResult<usize> {
        let mode = self.live.delivery.name();
        if mode != "manual" {
            return fail(
                py,
                Exc::DispatchMode,
                format!("dispatch() is for dispatch='manual' runtimes; this one uses '{mode}'"),
            );
        }
        self.check_open(py)?;
        let timeout_ns = match timeout.given() {
            None => Some(0),
            Some(t) => opt_nanos(py, Some(t), "timeout")?,
        };
        dispatch_here(
            py,
            self.inner(),
            self.live.limits,
            timeout_ns,
            self.clock.is_some(),
        )
    }

    /// Sets where handler exceptions go (``handler(exc, tick)``); None: ``logging``.
    fn set_exception_handler(
        &self,
        py: Python<'_>,
        handler: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let handler = handler_or_logging(py, handler, "exception handler")?;
        let old = self
            .inner()
            .objects
            .with(py, |o| o.exception_handler.replace(handler));
        drop(old);
        Ok(())
    }

    /// A snapshot of the counters (``Stats``). Its fields are the core's own list, so a
    /// field the core adds reaches Python without a list here (``Stats`` refuses it until
    /// it has the field: a test fails).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = PyDict::new(py);
        for m in self.inner().rt.stats().metrics() {
            d.set_item(m.name, m.value)?;
        }
        helpers(py)?.stats.bind(py).call((), Some(&d))
    }

    /// Every stats field as ``(name, "gauge" | "counter", value)``.
    fn metrics(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.inner()
            .rt
            .stats()
            .metrics()
            .into_iter()
            .map(|m| (m.name, crate::errors::metric_kind(m.kind), m.value))
            .collect()
    }

    /// How late records were handed over (hand-over minus the nominal due time of each
    /// record's tick): ``([(upper bound in seconds, or None for the last bucket, count)],
    /// sum in seconds)`` — fixed log-linear buckets, not cumulative.
    fn lateness(&self) -> (Vec<(Option<f64>, u64)>, f64) {
        let l = self.inner().rt.lateness();
        let buckets = l
            .buckets
            .iter()
            .map(|b| {
                (
                    (b.upper_ns != u64::MAX).then_some(b.upper_ns as f64 / 1e9),
                    b.count,
                )
            })
            .collect();
        (buckets, l.sum_ns as f64 / 1e9)
    }

    /// Seconds: the upper bound of the bucket holding quantile ``q`` (0..1) of the
    /// lateness (``inf`` for the last bucket); None when nothing was recorded.
    fn lateness_quantile(&self, py: Python<'_>, q: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let value: f64 = q.extract()?;
        if !(0.0..=1.0).contains(&value) {
            return fail(
                py,
                Exc::InvalidArgument,
                format!("quantile {} is not between 0 and 1", q.repr()?),
            );
        }
        Ok(self.inner().rt.lateness().quantile(value).map(|d| {
            if d.as_nanos() >= u128::from(u64::MAX) {
                f64::INFINITY
            } else {
                d.as_secs_f64()
            }
        }))
    }

    /// The stats (gauges and counters, counters ending in ``_total``) and the lateness
    /// histogram in the Prometheus text format 0.0.4.
    #[pyo3(signature = (prefix="spot_timer"))]
    fn prometheus(&self, py: Python<'_>, prefix: &str) -> PyResult<String> {
        crate::errors::check_metric_prefix(py, prefix)?;
        Ok(self.inner().rt.prometheus(prefix))
    }

    /// Python callables the runtime holds for live timers (diagnostics).
    fn held_python_objects(&self, py: Python<'_>) -> usize {
        let inner = self.inner();
        inner.purge(py);
        inner.objects.with(py, |o| o.held()) + inner.releases.len()
    }

    /// Ends every timer (``EndReason.RUNTIME_CLOSED``), stops the scheduler and the
    /// delivery. Idempotent. Waits up to ``timeout`` for the worker threads (None: as long
    /// as they take).
    #[pyo3(signature = (timeout=Arg::Default), text_signature = "($self, timeout=2.0)")]
    fn close(&self, py: Python<'_>, timeout: Arg<'_>) -> PyResult<()> {
        let timeout = match timeout.given() {
            None => Some(Duration::from_secs(2)),
            Some(t) => opt_nanos(py, Some(t), "timeout")?.map(Duration::from_nanos),
        };
        self.live.close(py, timeout)
    }

    fn __repr__(&self) -> String {
        let state = if self.is_closed() { "closed" } else { "open" };
        format!("<spot_timer.Runtime {} {state}>", self.live.delivery.name())
    }
}
