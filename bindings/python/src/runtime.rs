//! The native runtime object: the core runtime, the Python objects of its timers, and the
//! state of the thread that delivers its records.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;

use spot_timer_core::{
    ClockKind, Completion, Error, GateMode, ManualClock, Outcome, OwnerOptions, Record, Runtime,
    RuntimeConfig, Sink,
};

use crate::dispatch::{pump, NativeDispatcher, PumpResult};
use crate::errors::to_py;
use crate::gil_cell::GilCell;
use crate::objects::PyObjects;
use crate::owner::NativeOwner;

pub const MODE_MANUAL: u8 = 0;
pub const MODE_THREAD: u8 = 1;
pub const MODE_ASYNCIO: u8 = 2;

/// Keys that are not plain non-negative ints below 2^63 get ids from the upper half.
pub const AUTO_KEY_BASE: u64 = 1 << 63;

#[derive(Default)]
pub struct DispatchState {
    /// Completions waiting for the next exchange.
    pub completions: Vec<Completion>,
    /// Records received but not yet started (the rest of the current batch, and records a
    /// blocking cancel pulled in early).
    pub backlog: VecDeque<Record<u64>>,
    /// The threads that deliver records (dispatcher workers or the event-loop thread).
    pub delivery_threads: Vec<ThreadId>,
    /// The exchange's record buffer, kept between calls: a batch of 20,000 records is
    /// megabytes, and freeing it on every call raises glibc's mmap threshold, after which
    /// the next copies stay resident in the heap (RSS growing round after round).
    pub out: Vec<Record<u64>>,
    /// An empty completion list with its capacity, for the same reason.
    pub spare_completions: Vec<Completion>,
}

pub struct Inner {
    pub rt: Runtime<u64>,
    /// Handlers (and the exception handler): attached threads only.
    pub objects: GilCell<PyObjects>,
    /// Release callbacks by payload: taken by whichever thread ends the generation.
    pub releases: Arc<Mutex<HashMap<u64, Py<PyAny>>>>,
    /// Payloads of generations that ended; their Python objects are dropped at the next
    /// attached call (the thread that ends a generation may not be attached).
    pub ended: Arc<Mutex<Vec<u64>>>,
    /// Attached threads only (the delivering thread, and a blocking cancel helping it).
    pub state: GilCell<DispatchState>,
    /// Generations whose coroutine handler is running (asyncio mode).
    pub async_inflight: Mutex<HashSet<u64>>,
    /// Next automatic key id (keys given as None or as a non-int hashable).
    pub next_key: AtomicU64,
    pub mode: AtomicU8,
    /// A weak reference to the Python `Runtime` (timers reach it through this, so they
    /// hold no reference the garbage collector would have to trace).
    pub host: Mutex<Option<Py<PyAny>>>,
}

impl Inner {
    /// Drops the Python objects of ended generations (attached, outside any lock).
    pub fn purge(&self, py: Python<'_>) {
        let ids = {
            let mut e = self.ended.lock();
            if e.is_empty() {
                return;
            }
            std::mem::take(&mut *e)
        };
        let mut dropped = Vec::with_capacity(ids.len());
        self.objects.with(py, |o| {
            for id in ids {
                o.remove(id, &mut dropped);
            }
        });
        drop(dropped);
    }

    pub fn may_help(&self, py: Python<'_>) -> bool {
        if self.mode.load(Ordering::Relaxed) == MODE_MANUAL {
            return true;
        }
        let me = std::thread::current().id();
        self.state.with(py, |st| st.delivery_threads.contains(&me))
    }

    /// Records a completion for the next exchange.
    pub fn push_completion(&self, py: Python<'_>, c: Completion) {
        self.state.with(py, |st| st.completions.push(c));
    }

    /// Called by a blocking cancel on a thread that delivers this runtime's records: hands
    /// in the completions it still holds and pulls the waiting records into the backlog,
    /// completing the ones that went stale, so the cancel does not wait for this thread.
    pub fn help(&self, py: Python<'_>) -> Result<(), Error> {
        let completions = self
            .state
            .with(py, |st| std::mem::take(&mut st.completions));
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
        self.state.with(py, |st| {
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
        });
        if !stale.is_empty() {
            let _ = self.rt.complete(&stale);
        }
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        self.rt.is_closed()
    }

    /// The Python `Runtime`, while it exists.
    pub fn host<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        let weak = self.host.lock().as_ref()?.clone_ref(py);
        weak.bind(py).call0().ok().filter(|rt| !rt.is_none())
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
                rt,
                objects: GilCell::new(PyObjects::default()),
                releases,
                ended,
                state: GilCell::new(DispatchState::default()),
                async_inflight: Mutex::new(HashSet::new()),
                next_key: AtomicU64::new(AUTO_KEY_BASE),
                mode: AtomicU8::new(MODE_MANUAL),
                host: Mutex::new(None),
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

    /// A fresh key id for a key that is not a plain int.
    fn next_key(&self) -> u64 {
        self.inner.next_key.fetch_add(1, Ordering::Relaxed)
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
    fn complete_async(&self, py: Python<'_>, token: u64, generation: u64, ok: bool) {
        self.inner.async_inflight.lock().remove(&generation);
        let outcome = if ok { Outcome::Ok } else { Outcome::Failed };
        self.inner
            .push_completion(py, Completion::new(token, outcome));
    }

    fn pending_completions(&self, py: Python<'_>) -> usize {
        self.inner.state.with(py, |st| st.completions.len())
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
        self.inner.state.with(py, |st| st.backlog.clear());
        self.inner.async_inflight.lock().clear();
        // Every generation ended; drop their Python objects.
        self.inner.ended.lock().clear();
        let mut taken = self.inner.objects.with(py, |o| o.clear_timers());
        taken.extend(self.inner.releases.lock().drain().map(|(_, r)| r));
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
