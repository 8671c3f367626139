//! `spot_timer._native.Runtime` (wrapped by the package's `Runtime`) and `ManualClock`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;

use spot_timer_core::{
    ClockKind, GateMode, ManualClock, OwnerOptions, Runtime, RuntimeConfig, Sink,
};

use crate::dispatch::{pump, NativeDispatcher, PumpResult};
use crate::errors::to_py;
use crate::gil_cell::GilCell;
use crate::inner::{DispatchState, Inner, MODE_MANUAL, NEXT_INNER_ID};
use crate::keys::Keys;
use crate::objects::PyObjects;
use crate::owner::NativeOwner;
use crate::waiters::Waiters;

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

/// A manual clock; time moves only when advanced.
#[pyclass(module = "spot_timer._native", name = "ManualClock", frozen)]
pub struct NativeClock {
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

#[pyclass(module = "spot_timer._native", name = "Runtime", frozen)]
pub struct NativeRuntime {
    pub inner: Arc<Inner>,
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
        let releases: Arc<Mutex<HashMap<u64, Py<PyAny>>>> = Arc::default();
        let ended = Arc::new(Mutex::new(Vec::new()));
        // One release function for the runtime, not a hook per registration: it runs the
        // timer's Python release callback (if it has one) and queues its objects to be
        // dropped at the next attached call.
        let release = {
            let (releases, ended) = (releases.clone(), ended.clone());
            move |pid: &u64| {
                let cb = {
                    let mut r = releases.lock();
                    if r.is_empty() {
                        None
                    } else {
                        r.remove(pid)
                    }
                };
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
                id: NEXT_INNER_ID.fetch_add(1, Ordering::Relaxed),
                rt,
                objects: GilCell::new(PyObjects::default()),
                releases,
                ended,
                state: GilCell::new(DispatchState::default()),
                async_inflight: Mutex::new(HashSet::new()),
                mode: AtomicU8::new(MODE_MANUAL),
                host: Mutex::new(None),
                budget: OnceLock::new(),
                dispatchers: AtomicUsize::new(0),
                waiters: Mutex::new(Waiters::default()),
                keys: Keys::default(),
            }),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { self.inner.objects.during_gc() }.visit(&visit)?;
        // Never blocks: the lock is only ever held for short sections without Python calls.
        if let Some(r) = self.inner.releases.try_lock() {
            for cb in r.values() {
                visit.call(cb)?;
            }
        }
        if let Some(w) = self.inner.waiters.try_lock() {
            w.visit(&visit)?;
        }
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { self.inner.keys.visit_during_gc(&visit) }?;
        Ok(())
    }

    fn __clear__(&self) {
        let taken = {
            // SAFETY: a GC callback of the object owning the cell.
            let o = unsafe { self.inner.objects.during_gc() };
            let mut t = o.clear_timers();
            t.extend(o.exception_handler.take());
            t.extend(self.inner.releases.lock().drain().map(|(_, r)| r));
            t
        };
        drop(taken);
        drop(self.inner.waiters.lock().drain());
        // SAFETY: a GC callback of the object owning the cell.
        unsafe { self.inner.keys.clear_during_gc() };
    }

    /// Remembers `runtime_ref` (a `weakref.ref` to the Python `Runtime`).
    fn attach_host(&self, runtime_ref: Py<PyAny>) {
        let old = self.inner.host.lock().replace(runtime_ref);
        drop(old);
    }

    /// 0 manual (`dispatch()`), 1 dispatcher thread, 2 asyncio.
    fn set_mode(&self, mode: u8) {
        self.inner.mode.store(mode, Ordering::Relaxed);
    }

    fn set_exception_handler(&self, py: Python<'_>, handler: Option<Py<PyAny>>) {
        let old = self
            .inner
            .objects
            .with(py, |o| std::mem::replace(&mut o.exception_handler, handler));
        drop(old);
    }

    /// A new authority of `owner_id`, as the public `Owner` object of `runtime`.
    #[pyo3(signature = (runtime, owner_id, lease_ns=None, concurrent=false))]
    fn acquire_owner(
        &self,
        py: Python<'_>,
        runtime: Py<PyAny>,
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
        Ok(NativeOwner::new(
            self.inner.clone(),
            runtime,
            owner,
            lease_ns,
        ))
    }

    /// One exchange and the batch it returned (see [`pump`]).
    #[pyo3(signature = (timeout_ns=None, max_records=8192, flush=false, window_ns=0, budget_ns=0))]
    fn pump<'py>(
        &self,
        py: Python<'py>,
        timeout_ns: Option<u64>,
        max_records: usize,
        flush: bool,
        window_ns: u64,
        budget_ns: u64,
    ) -> PyResult<PumpResult> {
        let limits = crate::dispatch::Limits {
            max_records,
            window_ns,
            budget_ns,
        };
        pump(py, &self.inner, timeout_ns, limits, flush)
    }

    /// A handle for the dispatcher thread: pumps this runtime without holding a Python
    /// reference to it (so the runtime and the handlers it holds stay collectable).
    fn dispatcher(&self) -> NativeDispatcher {
        self.inner.dispatchers.fetch_add(1, Ordering::Relaxed);
        NativeDispatcher {
            inner: self.inner.clone(),
        }
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
        // This thread's session goes (its records were abandoned with the close); other
        // threads drop theirs at their next pump or when they end.
        crate::dispatch::drop_session(self.inner.id);
        self.inner.async_inflight.lock().clear();
        // Every generation ended; drop their Python objects.
        self.inner.ended.lock().clear();
        let mut taken = self.inner.objects.with(py, |o| o.clear_timers());
        taken.extend(self.inner.releases.lock().drain().map(|(_, r)| r));
        drop(taken);
        // Cancels still awaited: their generations ended with the close.
        let waiting = self.inner.waiters.lock().drain();
        for w in waiting {
            if let Err(e) = w.resolve_closed(py, &self.inner.rt) {
                e.write_unraisable(py, None);
            }
        }
    }

    /// The stats fields as (name, "gauge" | "counter", value).
    fn metrics(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.inner
            .rt
            .stats()
            .metrics()
            .into_iter()
            .map(|m| (m.name, crate::errors::metric_kind(m.kind), m.value))
            .collect()
    }

    /// The lateness histogram: ([(upper bound ns or None for the last, count)], sum ns).
    fn lateness(&self) -> (Vec<(Option<u64>, u64)>, u64) {
        let l = self.inner.rt.lateness();
        let buckets = l
            .buckets
            .iter()
            .map(|b| ((b.upper_ns != u64::MAX).then_some(b.upper_ns), b.count))
            .collect();
        (buckets, l.sum_ns)
    }

    fn prometheus(&self, py: Python<'_>, prefix: &str) -> PyResult<String> {
        crate::errors::check_metric_prefix(py, prefix)?;
        Ok(self.inner.rt.prometheus(prefix))
    }

    /// Every stats field by name: the core's own list (`Stats::metrics`), so a field the
    /// core adds reaches Python without a list here (and `Stats(**...)` refuses it until
    /// the dataclass has it: a test fails).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for m in self.inner.rt.stats().metrics() {
            d.set_item(m.name, m.value)?;
        }
        Ok(d)
    }

    /// Python objects held for live timers (for tests of the GC integration).
    fn held_objects(&self, py: Python<'_>) -> usize {
        self.inner.purge(py);
        self.inner.objects.with(py, |o| o.held()) + self.inner.releases.lock().len()
    }

    /// True if `timer` belongs to this runtime.
    fn owns(&self, timer: &crate::timer::NativeTimer) -> bool {
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
