//! Delivery into Python: the core's delivery driver (`spot_timer_core::driver`) over this
//! thread's session; this file only says how one record runs in Python. One receive
//! (waiting detached), then, attached once, the whole batch: the driver claims each start
//! right before the handler and writes its outcome, which goes back with the next receive.
//! One GIL entry per batch.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use spot_timer_core::driver::{Driver, Host, Pass, Ticket, TimerSource, Verdict};
use spot_timer_core::{Error, Outcome, Record};

use crate::errors::{py_error, to_py, Exc};
use crate::inner::{record_wait, wait_readable, Inner, RecordWait, MODE_ASYNCIO, MODE_MANUAL};

/// The driver a thread delivers one runtime's records with.
type TimerDriver = Driver<TimerSource<u64>>;

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

/// What one pump did (`None` instead once the runtime closed).
pub type PumpResult = Option<Pumped>;

/// What one pump did, and what is left to do: start the coroutines of kept records
/// (asyncio mode).
pub struct Pumped {
    /// Records handled (run, not started, or notices).
    pub ran: usize,
    /// Outcomes written and not sent yet (they go with the next pump).
    pub pending: usize,
    /// Records kept for coroutine handlers, whose coroutines are to be started.
    pub coroutines: Vec<Py<PyKept>>,
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

/// `&mut` across `py.detach`: the closure runs on the calling thread, which owns the session.
pub struct OnThisThread<T>(pub T);
// SAFETY: `Python::detach` runs its closure synchronously on the calling thread, so the
// thread-bound session never leaves the thread that owns it.
unsafe impl<T> Send for OnThisThread<T> {}

/// One thread's session over one runtime.
struct Slot {
    runtime: u64,
    inner: Weak<Inner>,
    /// `None` while a pump on this thread uses it (a nested pump makes its own).
    session: Option<TimerDriver>,
    capacity: usize,
}

thread_local! {
    /// The sessions of this thread, one per runtime it delivers for: made by its first
    /// pump, dropped when the runtime closes (on this thread, or noticed at a later pump)
    /// or when the thread ends (a session completes what it still holds as it goes).
    static SESSIONS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// Takes this thread's session for `inner` out of the map (made when there is none).
/// True with it: a nested pump's own session, dropped when that pump ends.
fn take_session(
    inner: &Arc<Inner>,
    capacity: usize,
    window: Duration,
    budget_ns: u64,
) -> Result<(TimerDriver, bool), Error> {
    let made = || -> Result<TimerDriver, Error> {
        let d = Driver::new(TimerSource::new(&inner.rt, capacity)?).with_window(window);
        Ok(match inner.budget(budget_ns) {
            Some(b) => d.with_budget(b),
            None => d,
        })
    };
    enum Found {
        Free(TimerDriver),
        Busy,
        /// Too small for this pump: dropped (outside the borrow), a bigger one is made.
        Small(Slot),
        Missing,
    }
    let found = SESSIONS.with(|m| {
        let mut m = m.borrow_mut();
        let Some(at) = m.iter().position(|s| s.runtime == inner.id) else {
            return Found::Missing;
        };
        if m[at].session.is_none() {
            return Found::Busy;
        }
        if m[at].capacity < capacity {
            return Found::Small(m.swap_remove(at));
        }
        match m[at].session.take() {
            Some(s) => Found::Free(s),
            None => Found::Busy,
        }
    });
    match found {
        Found::Free(session) => return Ok((session, false)),
        // A pump on this thread is using it: a nested pump gets a session of its own.
        Found::Busy => return Ok((made()?, true)),
        Found::Small(slot) => drop(slot),
        Found::Missing => {}
    }
    let session = made()?;
    let dead = SESSIONS.with(|m| {
        let mut m = m.borrow_mut();
        // Sessions of runtimes that closed or went away meanwhile go now.
        let mut dead = Vec::new();
        let mut i = 0;
        while i < m.len() {
            let gone = m[i]
                .inner
                .upgrade()
                .is_none_or(|other| other.rt.is_closed());
            if gone && m[i].session.is_some() {
                dead.push(m.swap_remove(i));
            } else {
                i += 1;
            }
        }
        m.push(Slot {
            runtime: inner.id,
            inner: Arc::downgrade(inner),
            session: None,
            capacity,
        });
        dead
    });
    drop(dead);
    Ok((session, false))
}

/// Puts the session back after a pump (drops it once the runtime closed).
fn return_session(inner: &Inner, session: TimerDriver) {
    let closed = inner.rt.is_closed();
    let spare = SESSIONS.with(|m| {
        let mut m = m.borrow_mut();
        let at = m.iter().position(|s| s.runtime == inner.id);
        match at {
            Some(at) if m[at].session.is_none() && !closed => {
                m[at].session = Some(session);
                None
            }
            Some(at) if closed => {
                let slot = m.swap_remove(at);
                Some((Some(session), slot.session))
            }
            _ => Some((Some(session), None)),
        }
    });
    drop(spare);
}

/// Drops this thread's session for runtime `id` (the runtime closed).
pub fn drop_session(id: u64) {
    let slot = SESSIONS.with(|m| {
        let mut m = m.borrow_mut();
        let at = m.iter().position(|s| s.runtime == id)?;
        Some(m.swap_remove(at))
    });
    drop(slot);
}

/// One receive and the batch it returned. Returns `None` once the runtime is closed,
/// else `(records, extras, pending_completions)` where `extras` is `None` or a list of
/// `(0, kept, generation, coroutine, tick)` (a coroutine handler to run, asyncio mode;
/// `kept.complete(ok)` completes its record) and `(1, tag, ok, value)` (a cancel notice).
///
/// The records come from this thread's driver: it sends the outcomes of the previous batch
/// with the receive, claims each start right before its handler, and lets a blocking
/// cancel on this thread complete the records of the batch it would otherwise wait for.
pub fn pump<'py>(
    py: Python<'py>,
    inner: &Arc<Inner>,
    timeout_ns: Option<u64>,
    limits: Limits,
    flush: bool,
) -> PyResult<PumpResult> {
    let capacity = limits.max_records.max(1);
    // With several dispatchers a worker takes one record at a time, so that a handler that
    // blocks holds up nothing but its own worker.
    let max_records = if inner.dispatchers.load(Ordering::Relaxed) > 1 {
        1
    } else {
        capacity
    };
    inner.purge(py);
    let mode = inner.mode.load(Ordering::Relaxed);
    let me = std::thread::current().id();
    inner.state.with(py, |st| {
        // (Manual mode lets every thread cancel as a delivering thread; the list stays the
        // workers or the loop.)
        if mode != MODE_MANUAL && !st.delivery_threads.contains(&me) {
            st.delivery_threads.push(me);
        }
    });
    let window = Duration::from_nanos(limits.window_ns);
    let (mut driver, nested) = match take_session(inner, capacity, window, limits.budget_ns) {
        Ok(s) => s,
        Err(Error::Closed) => return Ok(None),
        Err(e) => return Err(to_py(py, e)),
    };
    let r = run_batch(
        py,
        inner,
        &mut driver,
        timeout_ns,
        max_records,
        mode == MODE_ASYNCIO,
        flush,
    );
    if nested {
        drop(driver);
    } else {
        return_session(inner, driver);
    }
    inner.purge(py);
    r
}

/// Waits for a batch (detached), then runs it attached.
fn run_batch<'py>(
    py: Python<'py>,
    inner: &Arc<Inner>,
    driver: &mut TimerDriver,
    timeout_ns: Option<u64>,
    max_records: usize,
    allow_coroutines: bool,
    flush: bool,
) -> PyResult<PumpResult> {
    let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
    loop {
        let wait = record_wait(&inner.rt, deadline);
        let slice = match wait {
            RecordWait::InExchange(slice) => slice,
            RecordWait::OnFd(_) => Some(Duration::ZERO),
        };
        // Attached only when nothing can wait: no outcomes to send, no window to sleep.
        let r = if slice.is_some_and(|s| s.is_zero())
            && !driver.has_window()
            && !driver.holds_batch()
        {
            driver.receive(slice, max_records)
        } else {
            let d = OnThisThread(&mut *driver);
            py.detach(move || {
                let d = d;
                d.0.receive(slice, max_records)
            })
        };
        match r {
            Ok(n) if n > 0 => break,
            Ok(_) => {}
            Err(Error::Closed) => return Ok(None),
            Err(e) => return Err(to_py(py, e)),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let RecordWait::OnFd(fd) = wait {
            py.check_signals()?;
            py.detach(|| wait_readable(fd, deadline));
        }
        py.check_signals()?;
    }
    let mut host = PyTimerHost {
        py,
        inner,
        allow_coroutines,
        coroutines: Vec::new(),
        coroutine: None,
        fatal: None,
    };
    let pass = driver.run(&mut host);
    let PyTimerHost {
        coroutines, fatal, ..
    } = host;
    if let Some(e) = fatal {
        return Err(e);
    }
    let Pass {
        ran,
        held,
        not_started,
        notices,
        ..
    } = pass;
    let pending = if flush {
        match driver.flush() {
            Ok(()) | Err(Error::Closed) => {}
            Err(e) => return Err(to_py(py, e)),
        }
        0
    } else {
        ran - held + not_started
    };
    Ok(Some(Pumped {
        ran: ran + not_started + notices,
        pending,
        coroutines,
    }))
}

/// A coroutine handler's record, kept until the coroutine ends (asyncio mode). The
/// coroutine runs as a task whose done callback is this object.
#[pyclass(module = "spot_timer._native", name = "Kept", frozen)]
pub struct PyKept {
    ticket: Mutex<Option<Ticket<TimerSource<u64>>>>,
    generation: u64,
    inner: Weak<Inner>,
    /// The coroutine the handler returned.
    pub coro: Py<PyAny>,
    /// Its tick (for the exception handler).
    tick: Py<PyTick>,
}

#[pymethods]
impl PyKept {
    /// The coroutine's task ended: its exception goes to the exception handler, and the
    /// record completes (OK if it returned, FAILED if it raised or was cancelled). Later
    /// calls do nothing.
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut ok = !task.call_method0("cancelled")?.is_truthy()?;
        if ok {
            let exc = task.call_method0("exception")?;
            if !exc.is_none() {
                ok = false;
                if let Some(inner) = self.inner.upgrade() {
                    report(py, &inner, PyErr::from_value(exc), self.tick.bind(py));
                }
            }
        }
        self.complete(py, ok);
        Ok(())
    }
}

impl PyKept {
    fn complete(&self, py: Python<'_>, ok: bool) {
        let Some(ticket) = self.ticket.lock().take() else {
            return;
        };
        if let Some(inner) = self.inner.upgrade() {
            inner.async_inflight.lock().remove(&self.generation);
        }
        let outcome = if ok { Outcome::Ok } else { Outcome::Failed };
        // (After the close the record ended with it: nothing to report.)
        let _ = py.detach(move || ticket.complete(outcome));
    }
}

/// Runs one timer record in Python: what the driver asks of a host.
struct PyTimerHost<'a, 'py> {
    py: Python<'py>,
    inner: &'a Arc<Inner>,
    allow_coroutines: bool,
    coroutines: Vec<Py<PyKept>>,
    /// The coroutine a handler returned and its tick, until the driver hands its ticket.
    coroutine: Option<(Bound<'py, PyAny>, Bound<'py, PyTick>)>,
    /// KeyboardInterrupt, SystemExit, or an error building the call: propagates.
    fatal: Option<PyErr>,
}

impl Host<TimerSource<u64>> for PyTimerHost<'_, '_> {
    fn run(&mut self, record: &Record<u64>) -> Verdict {
        match self.run_one(record) {
            Ok(v) => v,
            Err(e) => {
                self.fatal = Some(e);
                Verdict::Stop(Outcome::Failed)
            }
        }
    }

    fn keep(&mut self, record: &Record<u64>, ticket: Ticket<TimerSource<u64>>) {
        let Some((coro, tick)) = self.coroutine.take() else {
            return;
        };
        let Record::Tick(t) = record else { return };
        let generation = t.timer_id().generation();
        self.inner.async_inflight.lock().insert(generation);
        let kept = PyKept {
            ticket: Mutex::new(Some(ticket)),
            generation,
            inner: Arc::downgrade(self.inner),
            coro: coro.unbind(),
            tick: tick.unbind(),
        };
        match Py::new(self.py, kept) {
            Ok(k) => self.coroutines.push(k),
            Err(e) => {
                self.fatal.get_or_insert(e);
            }
        }
    }

    fn notice(&mut self, record: &Record<u64>) {
        let Record::CancelDone(n) = record else {
            return;
        };
        // The future a `cancel_nowait` / `cancel_async` returned (none: nobody awaits it).
        let waiter = self.inner.waiters.lock().take(n.tag);
        if let Some(w) = waiter {
            if let Err(e) = w.resolve(self.py, n.result.clone()) {
                self.fatal.get_or_insert(e);
            }
        }
    }
}

impl PyTimerHost<'_, '_> {
    fn run_one(&mut self, record: &Record<u64>) -> PyResult<Verdict> {
        let py = self.py;
        let inner = self.inner;
        let Record::Tick(t) = record else {
            return Ok(Verdict::Done(Outcome::NotStarted));
        };
        let pid = *t.payload();
        let (handler, key_obj) = inner.objects.with(py, |o| {
            (
                o.handler(pid).map(|h| h.clone_ref(py)),
                o.key(pid).map(|k| k.clone_ref(py)),
            )
        });
        let Some(h) = handler else {
            return Ok(Verdict::Done(Outcome::NotStarted));
        };
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
            Ok(res) if res.is_none() => Ok(Verdict::Done(Outcome::Ok)),
            Ok(res) => {
                if !is_coroutine(py, &res)? {
                    return Ok(Verdict::Done(Outcome::Ok));
                }
                if self.allow_coroutines {
                    // Completed by its `Kept` when it finishes.
                    self.coroutine = Some((res, tick));
                    return Ok(Verdict::Held);
                }
                let _ = res.call_method0("close");
                let err = py_error(
                    py,
                    Exc::ArgumentType,
                    "the handler returned a coroutine, but coroutine handlers need the \
                     asyncio delivery mode"
                        .into(),
                );
                report(py, inner, err, &tick);
                Ok(Verdict::Done(Outcome::Failed))
            }
            Err(err) if err.is_instance_of::<PyException>(py) => {
                report(py, inner, err, &tick);
                Ok(Verdict::Done(Outcome::Failed))
            }
            // KeyboardInterrupt / SystemExit: the tick failed; the rest of the batch stays
            // in the driver for this thread's next pump.
            Err(err) => Err(err),
        }
    }
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
