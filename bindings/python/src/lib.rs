//! `spot_timer._native`: the pyo3 layer over `spot-timer-core`.
//!
//! The public Python API lives in `python/spot_timer/__init__.py`; this module provides the
//! parts that must be native:
//!
//! * [`NativeRuntime::pump`]: one `exchange` (waiting with the interpreter detached), then,
//!   attached once, the whole batch: per record the T1 re-check (`Runtime::begin`), the
//!   handler call and the completion, which goes back in the next exchange. One GIL entry
//!   per batch, never one per record.
//! * Python callables (handlers, release hooks, the exception handler) are kept in maps
//!   owned by the runtime object, which reports them to the garbage collector
//!   (`__traverse__` / `__clear__`). The core only carries a `u64` id per timer.
//! * Blocking waits (cancel, advance, close, gate) detach from the interpreter and wait in
//!   short slices so Ctrl-C stays responsive.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyException;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::PyTraverseError;

use spot_timer_core::{
    ClockKind, Completion, EndReason, EndResult, Error, GateMode, ManualClock, Outcome,
    OverrunPolicy, Owner, OwnerOptions, Record, Runtime, RuntimeConfig, Sink, TimerHandle,
    TimerSpec,
};

/// Longest uninterrupted detached wait before signals are checked again.
const SLICE: Duration = Duration::from_millis(5);

const MODE_MANUAL: u8 = 0;
const MODE_THREAD: u8 = 1;
const MODE_ASYNCIO: u8 = 2;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static ISCOROUTINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS
        .get_or_try_init(py, || py.import("spot_timer._errors").map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// Builds the exception of class `name` (defined in `spot_timer._errors`) with `msg`.
fn py_error(py: Python<'_>, name: &str, msg: String) -> PyErr {
    match errors_module(py).and_then(|m| m.getattr(name)) {
        Ok(cls) => match cls.call1((msg,)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// The one mapping of core errors to exception classes.
fn error_class(e: &Error) -> &'static str {
    match e {
        Error::InvalidArgument(_) => "InvalidArgumentError",
        Error::UnknownOwner(_) => "UnknownOwnerError",
        Error::LeaseExpired => "LeaseExpiredError",
        Error::Revoked => "RevokedError",
        Error::StaleHandle => "StaleHandleError",
        Error::InvalidCompletion(_) => "InvalidCompletionError",
        Error::Timeout => "CancelTimeoutError",
        Error::WouldDeadlock => "WouldDeadlockError",
        Error::CleanupFailed(_) => "CleanupFailedError",
        Error::Closed => "RuntimeClosedError",
        Error::NotManualClock => "NotManualClockError",
        Error::CapacityExhausted(_) => "CapacityExhaustedError",
        Error::Os(_) => "NativeOSError",
    }
}

fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = match &e {
        Error::WouldDeadlock => "would deadlock: a blocking cancel from inside this timer's own \
             callback (or of a callback this thread still has to deliver) waits for itself; the \
             cancel has taken effect - use cancel_nowait() or cancel_async() to observe its result"
            .to_string(),
        other => other.to_string(),
    };
    py_error(py, error_class(&e), msg)
}

fn reason_code(r: EndReason) -> u8 {
    r as u8
}

/// `(True, reason_code)` or `(False, exception)`.
fn end_result_tuple<'py>(py: Python<'py>, r: EndResult) -> PyResult<Bound<'py, PyTuple>> {
    match r {
        Ok(reason) => PyTuple::new(
            py,
            [
                true.into_pyobject(py)?.to_owned().into_any(),
                reason_code(reason).into_pyobject(py)?.into_any(),
            ],
        ),
        Err(e) => {
            let err = to_py(py, e);
            PyTuple::new(
                py,
                [
                    false.into_pyobject(py)?.to_owned().into_any(),
                    err.into_value(py).into_bound(py).into_any(),
                ],
            )
        }
    }
}

fn policy_from(code: u32) -> Option<OverrunPolicy> {
    OverrunPolicy::from_u32(code)
}

/// Python objects of one runtime, reported to the GC by [`NativeRuntime`].
#[derive(Default)]
struct PyObjects {
    handlers: HashMap<u64, Py<PyAny>>,
    releases: HashMap<u64, Py<PyAny>>,
    exception_handler: Option<Py<PyAny>>,
}

#[derive(Default)]
struct DispatchState {
    /// Completions waiting for the next exchange.
    completions: Vec<Completion>,
    /// Records received but not yet started (the rest of the current batch, and records a
    /// blocking cancel pulled in early).
    backlog: VecDeque<Record<u64>>,
    /// The thread that last delivered records (dispatcher or event-loop thread).
    delivery_thread: Option<ThreadId>,
    /// The exchange's record buffer, kept between calls: a batch of 20,000 records is
    /// megabytes, and freeing it on every call raises glibc's mmap threshold, after which
    /// the next copies stay resident in the heap (RSS growing round after round).
    out: Vec<Record<u64>>,
    /// An empty completion list with its capacity, for the same reason.
    spare_completions: Vec<Completion>,
}

struct Inner {
    rt: Runtime<u64>,
    objects: Arc<Mutex<PyObjects>>,
    /// Ids of generations that ended; their Python objects are dropped at the next
    /// attached call (the scheduler thread never touches Python for this).
    ended: Arc<Mutex<Vec<u64>>>,
    state: Mutex<DispatchState>,
    /// Timers whose coroutine handler is running (asyncio mode).
    async_inflight: Mutex<HashSet<u64>>,
    next_id: AtomicU64,
    mode: AtomicU8,
}

impl Inner {
    /// Drops the Python objects of ended generations (attached, outside any lock).
    fn purge(&self) {
        let ids = {
            let mut e = self.ended.lock();
            if e.is_empty() {
                return;
            }
            std::mem::take(&mut *e)
        };
        let mut dropped = Vec::with_capacity(ids.len());
        {
            let mut o = self.objects.lock();
            for id in ids {
                if let Some(h) = o.handlers.remove(&id) {
                    dropped.push(h);
                }
                if let Some(r) = o.releases.remove(&id) {
                    dropped.push(r);
                }
            }
        }
        drop(dropped);
    }

    fn may_help(&self) -> bool {
        if self.mode.load(Ordering::Relaxed) == MODE_MANUAL {
            return true;
        }
        self.state.lock().delivery_thread == Some(std::thread::current().id())
    }

    /// Called by a blocking cancel on a thread that delivers this runtime's records: hands
    /// in the completions it still holds and pulls the waiting records into the backlog,
    /// completing the ones that went stale, so the cancel does not wait for this thread.
    fn help(&self, py: Python<'_>) -> Result<(), Error> {
        let completions = std::mem::take(&mut self.state.lock().completions);
        let mut out = Vec::new();
        let r = py.detach(|| {
            self.rt
                .exchange(&completions, &mut out, 1 << 20, Some(Duration::ZERO))
        });
        match r {
            // A stale token is skipped and counted by the core; the rest were applied.
            Ok(_) | Err(Error::Closed) | Err(Error::InvalidCompletion(_)) => {}
            Err(e) => return Err(e),
        }
        let mut stale = Vec::new();
        {
            let mut st = self.state.lock();
            st.backlog.extend(out);
            st.backlog.retain(|rec| match rec {
                Record::Tick(t) => {
                    if !self.rt.startable(t) {
                        stale.push(t.complete(Outcome::NotStarted));
                        false
                    } else {
                        true
                    }
                }
                Record::CancelDone(_) => true,
            });
        }
        if !stale.is_empty() {
            let _ = self.rt.complete(&stale);
        }
        Ok(())
    }
}

/// A manual clock; time moves only when advanced.
#[pyclass(module = "spot_timer._native", name = "ManualClock", frozen)]
struct NativeClock {
    clock: ManualClock,
}

#[pymethods]
impl NativeClock {
    #[new]
    fn new() -> Self {
        Self {
            clock: ManualClock::new(),
        }
    }

    fn advance(&self, ns: u64) {
        self.clock.advance(Duration::from_nanos(ns));
    }

    fn now_ns(&self) -> u64 {
        use spot_timer_core::Clock;
        self.clock.now()
    }
}

/// Tick info handed to a handler (contract T4).
#[pyclass(module = "spot_timer", name = "Tick", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone)]
struct PyTick {
    #[pyo3(get)]
    delivery_index: u64,
    #[pyo3(get)]
    scheduled_index: u64,
    #[pyo3(get)]
    skipped_ticks: u64,
    #[pyo3(get)]
    owner_id: u64,
    #[pyo3(get)]
    key: u64,
}

#[pymethods]
impl PyTick {
    fn __repr__(&self) -> String {
        format!(
            "Tick(delivery_index={}, scheduled_index={}, skipped_ticks={})",
            self.delivery_index, self.scheduled_index, self.skipped_ticks
        )
    }
}

type PumpResult<'py> = Option<(usize, Option<Bound<'py, PyList>>, usize)>;

/// The dispatcher thread's handle (holds no Python objects).
#[pyclass(module = "spot_timer._native", name = "Dispatcher", frozen)]
struct NativeDispatcher {
    inner: Arc<Inner>,
}

#[pymethods]
impl NativeDispatcher {
    #[pyo3(signature = (timeout_ns=None, max_records=8192, flush=false, window_ns=0))]
    fn pump<'py>(
        &self,
        py: Python<'py>,
        timeout_ns: Option<u64>,
        max_records: usize,
        flush: bool,
        window_ns: u64,
    ) -> PyResult<PumpResult<'py>> {
        pump(py, &self.inner, timeout_ns, max_records, flush, window_ns)
    }

    fn is_closed(&self) -> bool {
        self.inner.rt.is_closed()
    }
}

#[pyclass(module = "spot_timer._native", name = "Runtime", frozen)]
struct NativeRuntime {
    inner: Arc<Inner>,
}

#[pymethods]
impl NativeRuntime {
    #[new]
    #[pyo3(signature = (clock=None))]
    fn new(py: Python<'_>, clock: Option<&NativeClock>) -> PyResult<Self> {
        let kind = match clock {
            Some(c) => ClockKind::Manual(c.clock.clone()),
            None => ClockKind::Real,
        };
        let objects = Arc::new(Mutex::new(PyObjects::default()));
        let ended = Arc::new(Mutex::new(Vec::new()));
        // One release function for the runtime, not a hook and an end subscriber per
        // registration: it runs the timer's Python release callback (if it has one) and
        // queues its objects to be dropped at the next attached call.
        let release = {
            let (objects, ended) = (objects.clone(), ended.clone());
            move |pid: &u64| {
                let cb = objects.lock().releases.remove(pid);
                let r = match cb {
                    Some(cb) => run_release(cb),
                    None => Ok(()),
                };
                ended.lock().push(*pid);
                r
            }
        };
        let rt = Runtime::new(RuntimeConfig {
            clock: kind,
            sink: Sink::Exchange,
            release: Some(Box::new(release)),
            ..RuntimeConfig::default()
        })
        .map_err(|e| to_py(py, e))?;
        Ok(Self {
            inner: Arc::new(Inner {
                rt,
                objects,
                ended,
                state: Mutex::new(DispatchState::default()),
                async_inflight: Mutex::new(HashSet::new()),
                next_id: AtomicU64::new(1),
                mode: AtomicU8::new(MODE_MANUAL),
            }),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // Never blocks: the lock is only ever held for short sections without Python calls.
        if let Some(o) = self.inner.objects.try_lock() {
            for h in o.handlers.values() {
                visit.call(h)?;
            }
            for r in o.releases.values() {
                visit.call(r)?;
            }
            visit.call(&o.exception_handler)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        let taken = std::mem::take(&mut *self.inner.objects.lock());
        drop(taken);
    }

    /// 0 manual (`dispatch()`), 1 dispatcher thread, 2 asyncio.
    fn set_mode(&self, mode: u8) {
        self.inner.mode.store(mode, Ordering::Relaxed);
    }

    fn set_exception_handler(&self, handler: Option<Py<PyAny>>) {
        let old = std::mem::replace(&mut self.inner.objects.lock().exception_handler, handler);
        drop(old);
    }

    #[pyo3(signature = (owner_id, lease_ns=None, concurrent=false))]
    fn acquire_owner(
        &self,
        py: Python<'_>,
        owner_id: u64,
        lease_ns: Option<u64>,
        concurrent: bool,
    ) -> PyResult<NativeOwner> {
        let opts = OwnerOptions {
            lease: lease_ns.map(Duration::from_nanos),
            gate: if concurrent {
                GateMode::Concurrent
            } else {
                GateMode::Serial
            },
        };
        let owner = self
            .inner
            .rt
            .acquire_owner(owner_id, opts)
            .map_err(|e| to_py(py, e))?;
        Ok(NativeOwner {
            inner: self.inner.clone(),
            owner,
        })
    }

    /// One exchange and the batch it returned (see [`pump`]).
    #[pyo3(signature = (timeout_ns=None, max_records=8192, flush=false, window_ns=0))]
    fn pump<'py>(
        &self,
        py: Python<'py>,
        timeout_ns: Option<u64>,
        max_records: usize,
        flush: bool,
        window_ns: u64,
    ) -> PyResult<PumpResult<'py>> {
        pump(py, &self.inner, timeout_ns, max_records, flush, window_ns)
    }

    /// A handle for the dispatcher thread: pumps this runtime without holding a Python
    /// reference to it (so the runtime and the handlers it holds stay collectable).
    fn dispatcher(&self) -> NativeDispatcher {
        NativeDispatcher {
            inner: self.inner.clone(),
        }
    }

    /// Completion of a coroutine handler (asyncio mode).
    fn complete_async(&self, token: u64, timer_id: u64, ok: bool) {
        self.inner.async_inflight.lock().remove(&timer_id);
        let outcome = if ok { Outcome::Ok } else { Outcome::Failed };
        self.inner
            .state
            .lock()
            .completions
            .push(Completion::new(token, outcome));
    }

    fn pending_completions(&self) -> usize {
        self.inner.state.lock().completions.len()
    }

    fn wakeup_fd(&self, py: Python<'_>) -> PyResult<i32> {
        self.inner.rt.wakeup_fd().map_err(|e| to_py(py, e))
    }

    /// Waits until the scheduler processed everything sent so far and fired what is due.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let inner = self.inner.clone();
        py.detach(move || inner.rt.sync()).map_err(|e| to_py(py, e))
    }

    fn now_ns(&self) -> u64 {
        self.inner.rt.now()
    }

    fn is_closed(&self) -> bool {
        self.inner.rt.is_closed()
    }

    fn close(&self, py: Python<'_>) {
        let inner = self.inner.clone();
        // Joins the scheduler thread (which may run Python release hooks): detached.
        py.detach(move || inner.rt.close());
        let backlog = std::mem::take(&mut self.inner.state.lock().backlog);
        drop(backlog);
        self.inner.async_inflight.lock().clear();
        // Every generation ended; drop their Python objects.
        let taken = {
            let mut o = self.inner.objects.lock();
            (
                std::mem::take(&mut o.handlers),
                std::mem::take(&mut o.releases),
            )
        };
        self.inner.ended.lock().clear();
        drop(taken);
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.rt.stats();
        let d = PyDict::new(py);
        macro_rules! put {
            ($($f:ident),*) => { $( d.set_item(stringify!($f), s.$f)?; )* };
        }
        put!(
            scheduler_threads,
            wakeup_primitives,
            os_timers,
            queue_len,
            live_timers,
            owners,
            wakeups,
            batches,
            records_published,
            host_crossings,
            records_received,
            completed_ok,
            completed_failed,
            completed_deferred,
            not_started,
            ticks_skipped,
            ticks_dropped_authority,
            registered,
            ended,
            cleanup_failures,
            invalid_completions,
            stale_entries_dropped,
            compactions,
            gate_waits,
            ticks_due,
            ticks_discarded,
            records_taken_back,
            records_abandoned,
            scheduler_wakes_by_hosts
        );
        Ok(d)
    }

    /// Python objects held for live timers (for tests of the GC integration).
    fn held_objects(&self) -> usize {
        self.inner.purge();
        let o = self.inner.objects.lock();
        o.handlers.len() + o.releases.len()
    }

    /// True if `timer` belongs to this runtime (looked up by its id in this runtime's table).
    fn owns(&self, timer: &NativeTimer) -> bool {
        Arc::ptr_eq(&self.inner, &timer.inner)
    }
}

impl Drop for NativeRuntime {
    fn drop(&mut self) {
        if !self.inner.rt.is_closed() {
            let inner = self.inner.clone();
            // Closing joins the scheduler thread: never while attached.
            let _ = Python::try_attach(|py| py.detach(|| inner.rt.close()));
            if !self.inner.rt.is_closed() {
                self.inner.rt.close();
            }
        }
    }
}

/// One exchange and the batch it returned. Returns `None` once the runtime is closed,
/// else `(records, extras, pending_completions)` where `extras` is `None` or a list of
/// `(0, token, timer_id, coroutine)` (a coroutine handler to run; asyncio mode) and
/// `(1, tag, ok, value)` (a cancel notice).
fn pump<'py>(
    py: Python<'py>,
    inner: &Inner,
    timeout_ns: Option<u64>,
    max_records: usize,
    flush: bool,
    window_ns: u64,
) -> PyResult<PumpResult<'py>> {
    inner.purge();
    let allow_coroutines = inner.mode.load(Ordering::Relaxed) == MODE_ASYNCIO;
    let (mut completions, have_backlog, mut out) = {
        let mut st = inner.state.lock();
        st.delivery_thread = Some(std::thread::current().id());
        let spare = std::mem::take(&mut st.spare_completions);
        (
            std::mem::replace(&mut st.completions, spare),
            !st.backlog.is_empty(),
            std::mem::take(&mut st.out),
        )
    };
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
    {
        let mut st = inner.state.lock();
        st.backlog.extend(out.drain(..));
        st.out = out;
        completions.clear();
        st.spare_completions = completions;
    }
    let mut extras: Option<Bound<'py, PyList>> = None;
    let mut processed = 0usize;
    loop {
        let rec = inner.state.lock().backlog.pop_front();
        let Some(rec) = rec else { break };
        processed += 1;
        match rec {
            Record::Tick(t) => {
                let pid = *t.payload();
                let handler = inner
                    .objects
                    .lock()
                    .handlers
                    .get(&pid)
                    .map(|h| h.clone_ref(py));
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
                            key: t.key(),
                        };
                        let tick = Bound::new(py, tick)?;
                        match h.bind(py).call1((&tick,)) {
                            Ok(res) if res.is_none() => Outcome::Ok,
                            Ok(res) => {
                                if is_coroutine(py, &res)? {
                                    if allow_coroutines {
                                        inner.async_inflight.lock().insert(pid);
                                        let item = (0u8, t.token(), pid, res).into_pyobject(py)?;
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
                                    inner
                                        .state
                                        .lock()
                                        .completions
                                        .push(t.complete(Outcome::Failed));
                                    return Err(err);
                                }
                                report(py, inner, err, &tick);
                                Outcome::Failed
                            }
                        }
                    }
                };
                inner.state.lock().completions.push(t.complete(outcome));
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
    let pending = if flush {
        let c = std::mem::take(&mut inner.state.lock().completions);
        match inner.rt.complete(&c) {
            // A stale token is skipped and counted by the core; the rest were applied.
            Ok(()) | Err(Error::Closed) | Err(Error::InvalidCompletion(_)) => {}
            Err(e) => return Err(to_py(py, e)),
        }
        0
    } else {
        inner.state.lock().completions.len()
    };
    inner.purge();
    Ok(Some((processed, extras, pending)))
}

fn is_coroutine(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let f = ISCOROUTINE.get_or_try_init(py, || {
        py.import("inspect")
            .and_then(|m| m.getattr("isawaitable"))
            .map(|f| f.unbind())
    })?;
    f.bind(py).call1((obj,))?.is_truthy()
}

/// Sends a handler's exception to the runtime's exception handler (or `sys.unraisablehook`).
fn report(py: Python<'_>, inner: &Inner, err: PyErr, tick: &Bound<'_, PyTick>) {
    let handler = inner
        .objects
        .lock()
        .exception_handler
        .as_ref()
        .map(|h| h.clone_ref(py));
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

/// One authority of an owner.
#[pyclass(module = "spot_timer._native", name = "Owner", frozen)]
struct NativeOwner {
    inner: Arc<Inner>,
    owner: Owner<u64>,
}

#[pymethods]
impl NativeOwner {
    #[getter]
    fn id(&self) -> u64 {
        self.owner.id()
    }

    #[getter]
    fn epoch(&self) -> u64 {
        self.owner.epoch()
    }

    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check().map_err(|e| to_py(py, e))
    }

    #[pyo3(signature = (lease_ns=None))]
    fn renew(&self, py: Python<'_>, lease_ns: Option<u64>) -> PyResult<()> {
        self.owner
            .renew(lease_ns.map(Duration::from_nanos))
            .map_err(|e| to_py(py, e))
    }

    fn revoke(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.revoke().map_err(|e| to_py(py, e))
    }

    /// Like `revoke`, and the runtime forgets the owner once its timers have ended. Only
    /// takes the owner map's lock briefly and sends a command: called attached, like
    /// `revoke`.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.release().map_err(|e| to_py(py, e))
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (key, period_ns, first_due_ns, policy, max_catch_up_ticks, handler, release=None))]
    fn register(
        &self,
        py: Python<'_>,
        key: u64,
        period_ns: Option<u64>,
        first_due_ns: Option<u64>,
        policy: u32,
        max_catch_up_ticks: u64,
        handler: Py<PyAny>,
        release: Option<Py<PyAny>>,
    ) -> PyResult<NativeTimer> {
        let inner = &self.inner;
        inner.purge();
        if inner.rt.is_closed() {
            return Err(to_py(py, Error::Closed));
        }
        let policy = policy_from(policy).ok_or_else(|| {
            py_error(
                py,
                "InvalidArgumentError",
                format!("unknown overrun policy {policy}"),
            )
        })?;
        let mut spec = match (period_ns, first_due_ns) {
            (Some(p), _) => TimerSpec::every(Duration::from_nanos(p)),
            (None, Some(d)) => TimerSpec::after(Duration::from_nanos(d)),
            (None, None) => {
                return Err(py_error(
                    py,
                    "InvalidArgumentError",
                    "a timer needs a period or a delay".into(),
                ))
            }
        };
        if let (Some(_), Some(d)) = (period_ns, first_due_ns) {
            spec = spec.first_due(Duration::from_nanos(d));
        }
        spec = spec.policy(policy).max_catch_up_ticks(max_catch_up_ticks);
        let pid = inner.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut o = inner.objects.lock();
            if let Some(r) = release {
                o.releases.insert(pid, r);
            }
            o.handlers.insert(pid, handler);
        }
        match self.owner.register(key, spec, pid, None) {
            Ok(handle) => Ok(NativeTimer {
                inner: inner.clone(),
                handle,
                pid,
                key,
                owner_id: self.owner.id(),
            }),
            Err(e) => {
                let taken = {
                    let mut o = inner.objects.lock();
                    (o.handlers.remove(&pid), o.releases.remove(&pid))
                };
                drop(taken);
                Err(to_py(py, e))
            }
        }
    }

    /// Takes the owner's execution gate (T9), waiting up to `timeout_ns` (None: forever).
    #[pyo3(signature = (timeout_ns=None))]
    fn enter_gate(&self, py: Python<'_>, timeout_ns: Option<u64>) -> PyResult<bool> {
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        loop {
            let slice = match deadline {
                None => SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            };
            let owner = &self.owner;
            if py.detach(|| owner.enter_gate(Some(slice))) {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }

    fn leave_gate(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.leave_gate().map_err(|e| to_py(py, e))
    }
}

/// Runs a timer's Python release callback on the thread that ends its generation; its
/// exception becomes the generation's terminal result (`CleanupFailed`).
fn run_release(cb: Py<PyAny>) -> Result<(), String> {
    Python::try_attach(|py| match cb.bind(py).call0() {
        Ok(_) => Ok(()),
        Err(e) => {
            let v = e.value(py);
            let name = v
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "Exception".into());
            Err(format!("{name}: {v}"))
        }
    })
    .unwrap_or(Ok(()))
}

/// The handle of one generation.
#[pyclass(module = "spot_timer._native", name = "Timer", frozen)]
struct NativeTimer {
    inner: Arc<Inner>,
    handle: TimerHandle<u64>,
    pid: u64,
    key: u64,
    owner_id: u64,
}

fn result_value(py: Python<'_>, r: EndResult) -> PyResult<u8> {
    r.map(reason_code).map_err(|e| to_py(py, e))
}

#[pymethods]
impl NativeTimer {
    #[getter]
    fn key(&self) -> u64 {
        self.key
    }

    #[getter]
    fn owner_id(&self) -> u64 {
        self.owner_id
    }

    #[getter]
    fn timer_id(&self) -> u64 {
        self.pid
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.handle.id().generation
    }

    fn is_live(&self) -> bool {
        self.handle.is_live()
    }

    /// The terminal result: None while running, else the reason code (raises if cleanup failed).
    fn result(&self, py: Python<'_>) -> PyResult<Option<u8>> {
        self.handle
            .result()
            .map(|r| result_value(py, r))
            .transpose()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.handle.stats();
        let d = PyDict::new(py);
        d.set_item("delivered", s.delivered)?;
        d.set_item("failed", s.failed)?;
        d.set_item("skipped_ticks", s.skipped_ticks)?;
        d.set_item("last_scheduled_index", s.last_scheduled_index)?;
        Ok(d)
    }

    /// Blocking cancel: waits (detached, in slices, checking signals) for the terminal
    /// result. Raises `WouldDeadlockError` from inside the timer's own callback.
    #[pyo3(signature = (timeout_ns=None))]
    fn cancel(&self, py: Python<'_>, timeout_ns: Option<u64>) -> PyResult<u8> {
        let inner = &*self.inner;
        let h = &self.handle;
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        match h.cancel(Some(Duration::ZERO)) {
            Err(Error::Timeout) => {}
            other => return result_value(py, other),
        }
        if inner.async_inflight.lock().contains(&self.pid) && inner.may_help() {
            // Its coroutine runs on this very event-loop thread.
            return Err(to_py(py, Error::WouldDeadlock));
        }
        loop {
            if inner.may_help() {
                inner.help(py).map_err(|e| to_py(py, e))?;
            }
            let slice = match deadline {
                None => SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            };
            match py.detach(|| h.cancel(Some(slice))) {
                Err(Error::Timeout) => {}
                other => return result_value(py, other),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(to_py(py, Error::Timeout));
            }
            py.check_signals()?;
        }
    }

    /// Non-blocking cancel. `None`: the result arrives later as a notice carrying `tag`;
    /// else `(ok, reason_code_or_exception)` at once.
    fn cancel_notice<'py>(
        &self,
        py: Python<'py>,
        tag: u64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        match self.handle.cancel_with_notice(tag) {
            Ok(None) => Ok(None),
            Ok(Some(r)) => end_result_tuple(py, r).map(Some),
            Err(e) => Err(to_py(py, e)),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<spot_timer Timer owner={} key={} generation={}>",
            self.owner_id,
            self.key,
            self.handle.id().generation
        )
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeClock>()?;
    m.add_class::<NativeRuntime>()?;
    m.add_class::<NativeOwner>()?;
    m.add_class::<NativeTimer>()?;
    m.add_class::<NativeDispatcher>()?;
    m.add_class::<PyTick>()?;
    m.add("MODE_MANUAL", MODE_MANUAL)?;
    m.add("MODE_THREAD", MODE_THREAD)?;
    m.add("MODE_ASYNCIO", MODE_ASYNCIO)?;
    m.add("MAX_TIMERS", spot_timer_core::MAX_TIMERS)?;
    Ok(())
}
