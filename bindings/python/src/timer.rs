//! `spot_timer.Timer`: the handle of one timer generation (owner, key, generation), kept by
//! id: cancelling a timer that is not running ends it here, on the calling thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use spot_timer_core::{Cancelled, EndResult, Error, Reset, TimerId};

use crate::durations::{nanos, opt_nanos};
use crate::errors::{reason_code, to_py};
use crate::host::helpers;
use crate::inner::{Inner, MODE_ASYNCIO, SLICE};
use crate::waiters::{resolved_future, Waiter};

#[pyclass(module = "spot_timer", name = "Timer", frozen, weakref)]
// Not tracked by the garbage collector (no `__traverse__`), so a million timers cost a
// collection nothing: a timer holds no Python object that could lead back to itself. The
// runtime is reached through the runtime's weak reference to it; a key that is not an
// immutable value (str, bytes, int, float, bool, None, or a tuple of those) is kept by
// the runtime's key map, which the collector sees.
pub struct NativeTimer {
    pub inner: Arc<Inner>,
    // The generation's `TimerId`, flattened so `key_mapped` fits in its padding (a million
    // live timers are a million of these objects).
    pub slot: u32,
    pub generation: u64,
    pub key: u64,
    /// The key as given, when it is an immutable value other than the plain int `key`.
    pub key_obj: Option<Py<PyAny>>,
    /// The key is any other hashable: the runtime's key map holds it under `key`.
    pub key_mapped: bool,
    /// It has an `on_release` callback (whose failure must be its terminal result, so its
    /// end is always the core's ordinary one).
    pub on_release: bool,
    pub owner_id: u64,
    /// The payload the core carries for it: its handler's entry in the runtime's objects.
    pub pid: u64,
    /// It holds its generation's slot (`HeldTimer::into_id`), so its result stays readable
    /// while it lives; given back when it goes.
    pub held: bool,
}

impl Drop for NativeTimer {
    fn drop(&mut self) {
        if self.held {
            // This object took the hold of its generation when it was made (`held`) and
            // gives it back here, once: it cannot be refused.
            let _ = self.inner.rt.release_hold_of(self.id());
        }
    }
}

/// How a timer reports its key.
pub enum KeyKind {
    /// The key is the int id (given as an int, or an automatic id).
    Id,
    /// An immutable key object as given.
    Value(Py<PyAny>),
    /// Any other hashable: the runtime's key map holds it under the id.
    Mapped,
}

impl NativeTimer {
    pub fn new(
        inner: Arc<Inner>,
        id: TimerId,
        key: u64,
        kind: KeyKind,
        owner_id: u64,
        pid: u64,
        on_release: bool,
    ) -> Self {
        // (Every registration holds its generation: see `held`.)
        let (key_obj, key_mapped) = match kind {
            KeyKind::Id => (None, false),
            KeyKind::Value(k) => (Some(k), false),
            KeyKind::Mapped => (None, true),
        };
        Self {
            inner,
            slot: id.slot(),
            generation: id.generation(),
            key,
            key_obj,
            key_mapped,
            owner_id,
            pid,
            on_release,
            held: true,
        }
    }

    pub fn id(&self) -> TimerId {
        TimerId::from_parts(self.slot, self.generation).expect("an id the runtime handed out")
    }

    /// `EndReason(code)`, or the exception of a failed cleanup.
    fn end_reason(&self, py: Python<'_>, r: EndResult) -> PyResult<Py<PyAny>> {
        let code = r.map(reason_code).map_err(|e| to_py(py, e))?;
        Ok(helpers(py)?.end_reason(py, code))
    }

    /// Resolves `fut` (of `event_loop`; None: a `concurrent.futures.Future`) with this
    /// generation's end result: at once when it is known, else when the cancel's notice
    /// arrives (the delivering thread resolves it) or the runtime closes.
    fn await_end(
        &self,
        py: Python<'_>,
        fut: Py<PyAny>,
        event_loop: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let inner = &*self.inner;
        let id = self.id();
        let closed = |py| match inner.rt.timer_result(id) {
            Some(r) => Ok(r),
            None => Err(to_py(py, Error::Closed)),
        };
        if inner.rt.is_closed() {
            return Waiter::new(fut, event_loop, id).resolve(py, closed(py)?);
        }
        let tag = inner
            .waiters
            .lock()
            .insert(Waiter::new(fut, event_loop, id));
        let now = match inner.rt.cancel_timer_with_notice(id, tag) {
            // Its notice resolves it.
            Ok(None) => return Ok(()),
            Ok(Some(r)) => Ok(r),
            Err(Error::Closed) => closed(py),
            Err(e) => Err(to_py(py, e)),
        };
        // (Taken already when the close resolved it.)
        let waiter = inner.waiters.lock().take(tag);
        match (waiter, now) {
            (Some(w), Ok(r)) => w.resolve(py, r),
            (_, Err(e)) => Err(e),
            (None, Ok(_)) => Ok(()),
        }
    }

    /// The cancel on the event-loop thread of an asyncio-mode runtime: requests the end,
    /// completes this thread's records that went stale, and reports the result if that
    /// ended the generation; never waits.
    fn cancel_on_loop(&self) -> PyResult<Option<EndResult>> {
        let inner = &*self.inner;
        // (The cancel itself completes what this thread's delivery session holds of it.)
        match inner.rt.cancel_timer(self.id(), Some(Duration::ZERO)) {
            Err(Error::Timeout) | Err(Error::WouldDeadlock) => {}
            other => return Ok(Some(other)),
        }
        Ok(inner.rt.timer_result(self.id()))
    }

    /// Cancels without waiting: the result when the generation ended here, None when it
    /// ends later. An idle timer without `on_release` ends with one compare-and-swap, and
    /// its objects go here and now (the core hands its payload back instead of releasing
    /// it through the runtime's release function).
    fn cancel_here(&self, py: Python<'_>) -> Result<Option<EndResult>, Error> {
        let inner = &*self.inner;
        if self.on_release {
            return inner.rt.cancel_timer_nowait(self.id());
        }
        inner.objects.with(py, |o| o.prefetch(self.pid));
        Ok(match inner.rt.cancel_timer_keeping_payload(self.id())? {
            Cancelled::PayloadKept(r) => {
                let dropped = inner.objects.with(py, |o| o.remove(self.pid));
                drop(dropped);
                Some(r)
            }
            Cancelled::Released(r) => Some(r),
            Cancelled::Later => None,
        })
    }

    fn blocking_cancel(&self, py: Python<'_>, timeout_ns: Option<u64>) -> PyResult<EndResult> {
        let inner = &*self.inner;
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        match self.cancel_here(py) {
            Ok(Some(r)) => return Ok(r),
            Ok(None) => {}
            // As a blocking cancel reports them (a made-up or closed handle).
            Err(e) => return Ok(Err(e)),
        }
        // Its record is with a host: this thread's own delivery session may hold it.
        match inner.rt.cancel_timer(self.id(), Some(Duration::ZERO)) {
            Err(Error::Timeout) => {}
            other => return Ok(other),
        }
        if inner.async_inflight.lock().contains(&self.generation) && inner.may_help(py) {
            // Its coroutine runs on this very event-loop thread.
            return Ok(Err(Error::WouldDeadlock));
        }
        // Each try also hands in what this thread's delivery session holds (the core's
        // help for a blocking cancel on a delivering thread).
        loop {
            let slice = match deadline {
                None => SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            };
            let id = self.id();
            match py.detach(|| inner.rt.cancel_timer(id, Some(slice))) {
                Err(Error::Timeout) => {}
                other => return Ok(other),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Err(Error::Timeout));
            }
            py.check_signals()?;
        }
    }
}

#[pymethods]
impl NativeTimer {
    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(k) = &self.key_obj {
            return Ok(k.clone_ref(py));
        }
        if self.key_mapped {
            return self.inner.keys.key_of(py, self.owner_id, self.key);
        }
        Ok(self.key.into_pyobject(py)?.into_any().unbind())
    }

    #[getter]
    fn owner_id(&self) -> u64 {
        self.owner_id
    }

    /// The runtime (raises `RuntimeClosedError` once it was garbage-collected).
    #[getter]
    fn runtime<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.inner.host(py).ok_or_else(|| to_py(py, Error::Closed))
    }

    /// True while this generation may still start callbacks.
    #[getter]
    fn is_live(&self) -> bool {
        self.inner
            .rt
            .timer(self.id())
            .map(|h| h.is_live())
            .unwrap_or(false)
    }

    /// The terminal result once there is one (raises `CleanupFailedError` if the release
    /// hook failed); None while the timer lives.
    fn result(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.inner.rt.timer_result(self.id()) {
            None => Ok(None),
            Some(r) => self.end_reason(py, r).map(Some),
        }
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.inner.rt.timer_stats(self.id()).unwrap_or_default();
        let d = PyDict::new(py);
        d.set_item("delivered", s.delivered)?;
        d.set_item("failed", s.failed)?;
        d.set_item("skipped_ticks", s.skipped_ticks)?;
        d.set_item("last_scheduled_index", s.last_scheduled_index)?;
        helpers(py)?.timer_stats.bind(py).call((), Some(&d))
    }

    /// Cancels and waits (detached, in slices, Ctrl-C responsive) for the terminal result.
    /// A timer that is not running ends here, on the calling thread. Raises
    /// `WouldDeadlockError` from inside the timer's own handler (the cancel still takes
    /// effect), `CancelTimeoutError` on timeout.
    ///
    /// In asyncio mode on the event-loop thread it never waits (a wait there would stop the
    /// very loop that runs the handler): the terminal result when the timer ended at once,
    /// else None (its handler is running; the cancel has taken effect).
    #[pyo3(signature = (timeout=None))]
    fn cancel(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let timeout_ns = opt_nanos(py, timeout, "timeout")?;
        if self.inner.mode.load(Ordering::Relaxed) == MODE_ASYNCIO && self.inner.may_help(py) {
            return match self.cancel_on_loop()? {
                Some(r) => self.end_reason(py, r),
                None => Ok(py.None()),
            };
        }
        let r = self.blocking_cancel(py, timeout_ns)?;
        self.end_reason(py, r)
    }

    /// Cancels without waiting; the future resolves with the terminal result (already
    /// resolved when the timer ended here and now). Works from inside the timer's own
    /// handler.
    fn cancel_nowait(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let known = match this.cancel_here(py) {
            Ok(r) => r,
            Err(Error::Closed) => Some(
                this.inner
                    .rt
                    .timer_result(this.id())
                    .ok_or_else(|| to_py(py, Error::Closed))?,
            ),
            Err(e) => return Err(to_py(py, e)),
        };
        if let Some(r) = known {
            return resolved_future(py, r);
        }
        // Ends later (its record is with the host): the result comes as a notice.
        let fut = py
            .import("concurrent.futures")?
            .getattr("Future")?
            .call0()?
            .unbind();
        this.await_end(py, fut.clone_ref(py), None)?;
        Ok(fut)
    }

    /// Moves this timer: a new generation of the same key, handler, ``on_release``, period
    /// and policy, whose first tick is due ``delay`` (seconds or ``timedelta``) from now;
    /// this one ends ``SUPERSEDED``. An idle timer is moved in place (the timeout reset of a
    /// connection or an actor costs no registration); one whose handler runs now gets the
    /// new generation beside it. Returns the new generation's handle. Raises
    /// ``StaleHandleError`` once this generation ended (register the key again instead).
    fn reset<'py>(
        &self,
        py: Python<'py>,
        delay: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, NativeTimer>> {
        let delay = Duration::from_nanos(nanos(py, delay, "delay")?);
        let inner = &self.inner;
        if inner.is_closed() {
            return Err(to_py(py, Error::Closed));
        }
        // A release callback must not run while a second generation may carry the payload:
        // count the new one before the core decides (the old one may end meanwhile, on
        // another thread). The objects need no such care: only an attached thread frees
        // them, and this one holds the interpreter until the count is right.
        let has_release = inner.releases.add_carrier(self.pid);
        let reset = inner.rt.reset_timer_held(self.id(), delay, self.pid);
        match reset.as_ref().map(|(r, _)| r) {
            Ok(Reset::Registered(_)) => {
                let carried = inner.objects.with(py, |o| o.add_carrier(self.pid));
                debug_assert!(carried, "a live generation keeps its objects");
            }
            // In place (the old generation released nothing) or refused.
            _ if has_release => {
                if let Some(cb) = inner.releases.end_carrier(self.pid) {
                    // The old generation ended meanwhile and left its callback to us.
                    if let Err(e) = cb.bind(py).call0() {
                        e.write_unraisable(py, Some(cb.bind(py)));
                    }
                }
            }
            _ => {}
        }
        let id = reset.map_err(|e| to_py(py, e))?.1.into_id();
        let timer = NativeTimer {
            inner: inner.clone(),
            slot: id.slot(),
            generation: id.generation(),
            key: self.key,
            key_obj: self.key_obj.as_ref().map(|k| k.clone_ref(py)),
            key_mapped: self.key_mapped,
            owner_id: self.owner_id,
            pid: self.pid,
            on_release: self.on_release,
            held: true,
        };
        let obj = Bound::new(py, timer)?;
        // SAFETY: see `NativeOwner::register` (a timer is never traced).
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
        Ok(obj)
    }

    /// Cancels without blocking the event loop: a future of the running loop that
    /// resolves with the terminal result (at once when it is known, else when the
    /// delivering thread has its notice).
    fn cancel_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let fut = event_loop.call_method0("create_future")?;
        self.await_end(py, fut.clone().unbind(), Some(event_loop.unbind()))?;
        Ok(fut)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let key = self.key(py)?;
        Ok(format!(
            "<spot_timer.Timer owner={} key={} live={}>",
            self.owner_id,
            key.bind(py).repr()?,
            if self.is_live() { "True" } else { "False" }
        ))
    }
}
