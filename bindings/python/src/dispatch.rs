//! Delivery: one exchange with the core (waiting detached), then, attached once, the whole
//! batch: per record the T1 re-check (`Runtime::begin`), the handler call and the
//! completion, which goes back with the next exchange. One GIL entry per batch.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};

use spot_timer_core::{Error, Outcome, Record};

use crate::errors::{end_result_tuple, py_error, to_py};
use crate::inner::{Inner, MODE_ASYNCIO, MODE_MANUAL, SLICE};

static ISAWAITABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Tick info handed to a handler (contract T4). Equal ticks: same owner, key and indices.
#[pyclass(module = "spot_timer", name = "Tick", frozen, eq, hash)]
pub struct PyTick {
    #[pyo3(get)]
    delivery_index: u64,
    #[pyo3(get)]
    scheduled_index: u64,
    #[pyo3(get)]
    skipped_ticks: u64,
    #[pyo3(get)]
    owner_id: u64,
    /// The key id the core uses.
    key_id: u64,
    /// The key as given, when it is not the plain int `key_id`.
    key_obj: Option<Py<PyAny>>,
}

impl PyTick {
    fn identity(&self) -> (u64, u64, u64, u64, u64) {
        (
            self.delivery_index,
            self.scheduled_index,
            self.skipped_ticks,
            self.owner_id,
            self.key_id,
        )
    }
}

impl PartialEq for PyTick {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for PyTick {}

impl std::hash::Hash for PyTick {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state)
    }
}

#[pymethods]
impl PyTick {
    /// The timer's key as it was given (an automatic key: its int id).
    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.key_obj {
            Some(k) => Ok(k.clone_ref(py)),
            None => Ok(self.key_id.into_pyobject(py)?.into_any().unbind()),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Tick(delivery_index={}, scheduled_index={}, skipped_ticks={})",
            self.delivery_index, self.scheduled_index, self.skipped_ticks
        )
    }
}

pub type PumpResult<'py> = Option<(usize, Option<Bound<'py, PyList>>, usize)>;

/// The dispatcher thread's handle (holds no Python objects).
#[pyclass(module = "spot_timer._native", name = "Dispatcher", frozen)]
pub struct NativeDispatcher {
    pub inner: Arc<Inner>,
}

#[pymethods]
impl NativeDispatcher {
    #[pyo3(signature = (timeout_ns=None, max_records=8192, flush=false, window_ns=0, budget_ns=0))]
    fn pump<'py>(
        &self,
        py: Python<'py>,
        timeout_ns: Option<u64>,
        max_records: usize,
        flush: bool,
        window_ns: u64,
        budget_ns: u64,
    ) -> PyResult<PumpResult<'py>> {
        let limits = Limits {
            max_records,
            window_ns,
            budget_ns,
        };
        pump(py, &self.inner, timeout_ns, limits, flush)
    }

    fn is_closed(&self) -> bool {
        self.inner.rt.is_closed()
    }
}

/// How much one exchange takes.
#[derive(Clone, Copy)]
pub struct Limits {
    /// Records per exchange at most (`Runtime(max_batch=)`).
    pub max_records: usize,
    /// After the first records, wait this long for more to join the batch (0: don't).
    pub window_ns: u64,
    /// Take only the records expected to run within this time, from the measured time per
    /// record (0: up to `max_records`). In overload the rest stay in the runtime, where a
    /// late timer is handed its newest due tick when its turn comes, instead of aging in
    /// the backlog behind a long batch.
    pub budget_ns: u64,
}

/// One exchange and the batch it returned. Returns `None` once the runtime is closed,
/// else `(records, extras, pending_completions)` where `extras` is `None` or a list of
/// `(0, token, generation, coroutine, tick)` (a coroutine handler to run; asyncio mode) and
/// `(1, tag, ok, value)` (a cancel notice).
pub fn pump<'py>(
    py: Python<'py>,
    inner: &Inner,
    timeout_ns: Option<u64>,
    limits: Limits,
    flush: bool,
) -> PyResult<PumpResult<'py>> {
    let Limits {
        window_ns,
        budget_ns,
        ..
    } = limits;
    let max_records = inner.batch_limit(limits.max_records, budget_ns);
    inner.purge(py);
    let mode = inner.mode.load(Ordering::Relaxed);
    let allow_coroutines = mode == MODE_ASYNCIO;
    let me = std::thread::current().id();
    let (mut completions, have_backlog, mut out) = inner.state.with(py, |st| {
        // (Manual mode lets every thread help; the list stays the workers or the loop.)
        if mode != MODE_MANUAL && !st.delivery_threads.contains(&me) {
            st.delivery_threads.push(me);
        }
        let spare = std::mem::take(&mut st.spare_completions);
        (
            std::mem::replace(&mut st.completions, spare),
            !st.backlog.is_empty(),
            std::mem::take(&mut st.out),
        )
    });
    let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
    if have_backlog {
        // Hand in the completions, but don't wait: the backlog is work to do now.
        let r = if completions.is_empty() {
            Ok(())
        } else {
            py.detach(|| inner.rt.complete(&completions))
        };
        completions.clear();
        if let Err(e) = r {
            if e != Error::Closed {
                return Err(to_py(py, e));
            }
        }
    } else {
        loop {
            let slice = match deadline {
                None => SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            };
            let r = if completions.is_empty() && slice.is_zero() {
                inner.rt.exchange(&[], &mut out, max_records, Some(slice))
            } else {
                py.detach(|| {
                    let r = inner
                        .rt
                        .exchange(&completions, &mut out, max_records, Some(slice));
                    if window_ns > 0 && !out.is_empty() && out.len() < max_records {
                        // Let records that come due within the window join this batch.
                        std::thread::sleep(Duration::from_nanos(window_ns));
                        let room = max_records - out.len();
                        let _ = inner.rt.exchange(&[], &mut out, room, Some(Duration::ZERO));
                    }
                    r
                })
            };
            match r {
                Ok(_) => {}
                Err(Error::Closed) => return Ok(None),
                // A stale token is skipped and counted by the core; the rest were applied.
                Err(Error::InvalidCompletion(_)) => {}
                Err(e) => return Err(to_py(py, e)),
            }
            completions.clear();
            if !out.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            py.check_signals()?;
        }
    }
    completions.clear();
    inner.state.with(py, |st| {
        st.backlog.extend(out.drain(..));
        st.out = out;
        st.spare_completions = completions;
    });
    let mut extras: Option<Bound<'py, PyList>> = None;
    let mut processed = 0usize;
    let started = Instant::now();
    loop {
        let rec = inner.state.with(py, |st| st.backlog.pop_front());
        let Some(rec) = rec else { break };
        processed += 1;
        match rec {
            Record::Tick(t) => {
                let pid = *t.payload();
                let (handler, key_obj) = inner.objects.with(py, |o| {
                    (
                        o.handler(pid).map(|h| h.clone_ref(py)),
                        o.key(pid).map(|k| k.clone_ref(py)),
                    )
                });
                let outcome = match handler {
                    None => Outcome::NotStarted,
                    Some(_) if !inner.rt.begin(&t) => Outcome::NotStarted,
                    Some(h) => {
                        let tk = t.tick();
                        let tick = PyTick {
                            delivery_index: tk.delivery_index,
                            scheduled_index: tk.scheduled_index,
                            skipped_ticks: tk.skipped_ticks,
                            owner_id: t.owner_id(),
                            key_id: t.key(),
                            key_obj,
                        };
                        let tick = Bound::new(py, tick)?;
                        match h.bind(py).call1((&tick,)) {
                            Ok(res) if res.is_none() => Outcome::Ok,
                            Ok(res) => {
                                if is_coroutine(py, &res)? {
                                    if allow_coroutines {
                                        let generation = t.timer_id().generation;
                                        inner.async_inflight.lock().insert(generation);
                                        let item = (0u8, t.token(), generation, res, &tick)
                                            .into_pyobject(py)?;
                                        extras
                                            .get_or_insert_with(|| PyList::empty(py))
                                            .append(item)?;
                                        continue;
                                    }
                                    let _ = res.call_method0("close");
                                    let err = py_error(
                                        py,
                                        "ArgumentTypeError",
                                        "the handler returned a coroutine, but coroutine \
                                         handlers need the asyncio delivery mode"
                                            .into(),
                                    );
                                    report(py, inner, err, &tick);
                                    Outcome::Failed
                                } else {
                                    Outcome::Ok
                                }
                            }
                            Err(err) => {
                                let fatal = !err.is_instance_of::<PyException>(py);
                                if fatal {
                                    // KeyboardInterrupt / SystemExit: the tick failed,
                                    // the rest of the batch waits for the next pump.
                                    inner.push_completion(py, t.complete(Outcome::Failed));
                                    return Err(err);
                                }
                                report(py, inner, err, &tick);
                                Outcome::Failed
                            }
                        }
                    }
                };
                inner.push_completion(py, t.complete(outcome));
            }
            Record::CancelDone(n) => {
                let res = end_result_tuple(py, n.result.clone())?;
                let item = PyTuple::new(
                    py,
                    [
                        1u8.into_pyobject(py)?.into_any(),
                        n.tag.into_pyobject(py)?.into_any(),
                        res.get_item(0)?,
                        res.get_item(1)?,
                    ],
                )?;
                extras
                    .get_or_insert_with(|| PyList::empty(py))
                    .append(item)?;
            }
        }
    }
    if budget_ns != 0 {
        inner.observe_batch(processed, started.elapsed());
    }
    let pending = if flush {
        let c = inner
            .state
            .with(py, |st| std::mem::take(&mut st.completions));
        match inner.rt.complete(&c) {
            // A stale token is skipped and counted by the core; the rest were applied.
            Ok(()) | Err(Error::Closed) | Err(Error::InvalidCompletion(_)) => {}
            Err(e) => return Err(to_py(py, e)),
        }
        0
    } else {
        inner.state.with(py, |st| st.completions.len())
    };
    inner.purge(py);
    Ok(Some((processed, extras, pending)))
}

pub fn is_coroutine(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let f = ISAWAITABLE.get_or_try_init(py, || {
        py.import("inspect")
            .and_then(|m| m.getattr("isawaitable"))
            .map(|f| f.unbind())
    })?;
    f.bind(py).call1((obj,))?.is_truthy()
}

/// Sends a handler's exception to the runtime's exception handler (or `sys.unraisablehook`).
fn report(py: Python<'_>, inner: &Inner, err: PyErr, tick: &Bound<'_, PyTick>) {
    let handler = inner.objects.with(py, |o| {
        o.exception_handler.as_ref().map(|h| h.clone_ref(py))
    });
    match handler {
        Some(h) => {
            let exc = err.into_value(py);
            if let Err(e2) = h.bind(py).call1((exc, tick)) {
                e2.write_unraisable(py, Some(h.bind(py)));
            }
        }
        None => err.write_unraisable(py, Some(tick.as_any())),
    }
}
