//! How a runtime's records reach Python, chosen at construction (`Runtime(dispatch=...)`):
//!
//! * `"thread"`: worker threads (`threading.Thread`s, so Python sees them as its own), each
//!   keeping one Python thread state for the runtime's life and entering Python once per
//!   batch; they hold the runtime's shared state only, never the `Runtime` object, so an
//!   abandoned runtime is still collected (and its workers end with it).
//! * `"asyncio"`: the runtime's wakeup fd is registered with `loop.add_reader`; a coroutine
//!   handler becomes a task, and its record is completed when the task ends.
//! * `"manual"`: nothing runs until `Runtime.dispatch()` delivers on the caller's thread.
//!
//! All three pump through [`crate::dispatch::pump`] (the core's delivery driver).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use spot_timer_core::Error;

use crate::dispatch::{pump, Limits};
use crate::errors::to_py;
use crate::inner::{Inner, MODE_ASYNCIO, MODE_MANUAL, MODE_THREAD};
use crate::waiters::on_loop_thread;

/// The delivery of one runtime.
pub enum Delivery {
    /// The worker threads (`threading.Thread` objects).
    Threads(Vec<Py<PyAny>>),
    Asyncio(Arc<LoopReader>),
    Manual,
}

impl Delivery {
    /// The mode's name, as `Runtime(dispatch=...)` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Delivery::Threads(_) => "thread",
            Delivery::Asyncio(_) => "asyncio",
            Delivery::Manual => "manual",
        }
    }

    /// `workers` threads delivering `inner`'s records.
    pub fn start_threads(
        py: Python<'_>,
        inner: &Arc<Inner>,
        limits: Limits,
        workers: usize,
    ) -> PyResult<Self> {
        inner.mode.store(MODE_THREAD, Ordering::Relaxed);
        // Each worker pumps the same runtime: they share one backlog, so a handler that
        // blocks holds up only its own worker (an owner with a serial gate still runs one
        // callback at a time: the runtime hands out one of its records at a time).
        inner.dispatchers.store(workers, Ordering::Relaxed);
        let thread_class = py.import("threading")?.getattr("Thread")?;
        let mut threads = Vec::with_capacity(workers);
        for i in 0..workers {
            let kwargs = PyDict::new(py);
            let worker = Worker {
                inner: inner.clone(),
                limits,
            };
            kwargs.set_item("target", Bound::new(py, worker)?)?;
            let name = if workers == 1 {
                "spot-timer-dispatch".to_string()
            } else {
                format!("spot-timer-dispatch-{i}")
            };
            kwargs.set_item("name", name)?;
            kwargs.set_item("daemon", true)?;
            let t = thread_class.call((), Some(&kwargs))?;
            t.call_method0("start")?;
            threads.push(t.unbind());
        }
        Ok(Delivery::Threads(threads))
    }

    /// Delivery on `event_loop` (a running loop, or the one given).
    pub fn start_asyncio(
        py: Python<'_>,
        inner: &Arc<Inner>,
        limits: Limits,
        event_loop: Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        inner.mode.store(MODE_ASYNCIO, Ordering::Relaxed);
        let fd = inner.rt.wakeup_fd().map_err(|e| to_py(py, e))?;
        let reader = Arc::new(LoopReader {
            event_loop: event_loop.clone().unbind(),
            fd,
            attached: AtomicBool::new(true),
        });
        let callback = LoopPump {
            inner: inner.clone(),
            limits,
            reader: reader.clone(),
        };
        event_loop.call_method1("add_reader", (fd, Bound::new(py, callback)?))?;
        Ok(Delivery::Asyncio(reader))
    }

    pub fn manual(inner: &Inner) -> Self {
        inner.mode.store(MODE_MANUAL, Ordering::Relaxed);
        Delivery::Manual
    }

    /// Stops delivering: the loop forgets the fd; worker threads (which end once the runtime
    /// closed) are waited for until `deadline` (None: as long as they take).
    pub fn stop(&self, py: Python<'_>, deadline: Option<Instant>) -> PyResult<()> {
        match self {
            Delivery::Asyncio(reader) => reader.detach(py),
            Delivery::Threads(threads) => {
                let current = py.import("threading")?.call_method0("current_thread")?;
                for t in threads {
                    let t = t.bind(py);
                    if t.is(&current) || !t.call_method0("is_alive")?.is_truthy()? {
                        continue;
                    }
                    let left =
                        deadline.map(|d| d.saturating_duration_since(Instant::now()).as_secs_f64());
                    t.call_method1("join", (left,))?;
                }
            }
            Delivery::Manual => {}
        }
        Ok(())
    }
}

/// The body of one worker thread.
#[pyclass(module = "spot_timer._native", name = "Worker", frozen)]
struct Worker {
    inner: Arc<Inner>,
    limits: Limits,
}

#[pymethods]
impl Worker {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        loop {
            let err = match pump(py, &self.inner, None, self.limits, false) {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => continue,
                Err(e) => e,
            };
            if err.is_instance_of::<PyKeyboardInterrupt>(py) {
                // A handler raised it (its tick completed as failed). Only the main thread
                // gets KeyboardInterrupt in Python, so it goes there as a Ctrl-C would:
                // SIGINT to the main thread, which also wakes it from a blocking call.
                let main = py.import("threading")?.call_method0("main_thread")?;
                let signal = py.import("signal")?;
                signal.call_method1(
                    "pthread_kill",
                    (main.getattr("ident")?, signal.getattr("SIGINT")?),
                )?;
            } else if err.is_instance_of::<PySystemExit>(py) {
                // As threading does for a thread that raises SystemExit: not an error to
                // report; the handler's tick completed as failed and delivery goes on.
                logger(py)?.call_method1(
                    "debug",
                    ("spot_timer handler raised SystemExit on the dispatcher thread",),
                )?;
            } else {
                let kwargs = PyDict::new(py);
                kwargs.set_item("exc_info", err.value(py))?;
                logger(py)?.call_method(
                    "error",
                    ("spot_timer dispatcher error",),
                    Some(&kwargs),
                )?;
                if self.inner.is_closed() {
                    return Ok(());
                }
            }
        }
    }
}

pub fn logger(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("logging")?
        .call_method1("getLogger", ("spot_timer",))
}

/// The runtime's wakeup fd on an asyncio loop.
pub struct LoopReader {
    event_loop: Py<PyAny>,
    fd: i32,
    attached: AtomicBool,
}

impl LoopReader {
    /// The loop forgets the fd (once; from any thread).
    pub fn detach(&self, py: Python<'_>) {
        if !self.attached.swap(false, Ordering::AcqRel) {
            return;
        }
        let (event_loop, fd) = (self.event_loop.bind(py), self.fd);
        let detach = || -> PyResult<()> {
            let running = event_loop.call_method0("is_running")?.is_truthy()?;
            if on_loop_thread(py, event_loop)? || !running {
                event_loop.call_method1("remove_reader", (fd,))?;
            } else {
                let remove = event_loop.getattr("remove_reader")?;
                event_loop.call_method1("call_soon_threadsafe", (remove, fd))?;
            }
            Ok(())
        };
        // A loop that closed meanwhile has nothing to forget.
        let _ = detach();
    }
}

/// The reader callback: one pump of what is ready, on the loop's thread.
#[pyclass(module = "spot_timer._native", name = "LoopPump", frozen)]
struct LoopPump {
    inner: Arc<Inner>,
    limits: Limits,
    reader: Arc<LoopReader>,
}

#[pymethods]
impl LoopPump {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let Some(pass) = pump(py, &self.inner, Some(0), self.limits, true)? else {
            // Closed (the runtime's close detaches the reader too; this covers a close the
            // interpreter's exit made, or a runtime that was collected).
            self.reader.detach(py);
            return Ok(());
        };
        let ensure_future = py.import("asyncio")?.getattr("ensure_future")?;
        for kept in pass.coroutines {
            let kwargs = PyDict::new(py);
            kwargs.set_item("loop", &self.reader.event_loop)?;
            let coro = kept.borrow(py).coro.clone_ref(py);
            let task = ensure_future.call((coro,), Some(&kwargs))?;
            task.call_method1("add_done_callback", (kept,))?;
        }
        Ok(())
    }
}

/// `Runtime.dispatch()`: delivers ready records on this thread until none is left and
/// every completion was applied; the number of records handled. `timeout_ns`: first wait
/// up to that long for records (None: until some arrive).
pub fn dispatch_here(
    py: Python<'_>,
    inner: &Arc<Inner>,
    limits: Limits,
    mut timeout_ns: Option<u64>,
    manual_clock: bool,
) -> PyResult<usize> {
    let mut total = 0;
    loop {
        let Some(pass) = pump(py, inner, timeout_ns, limits, false)? else {
            break;
        };
        total += pass.ran;
        timeout_ns = Some(0);
        if pass.ran > 0 || pass.pending > 0 {
            continue;
        }
        if !manual_clock {
            break;
        }
        // Records that went stale were completed inside the exchange without waiting for
        // the scheduler; wait for it so what they changed is visible (and deliver anything
        // they made due).
        match py.detach(|| inner.rt.sync()) {
            Ok(()) => {}
            Err(Error::Closed) => break,
            Err(e) => return Err(to_py(py, e)),
        }
        let Some(pass) = pump(py, inner, Some(0), limits, false)? else {
            break;
        };
        total += pass.ran;
        if pass.ran == 0 && pass.pending == 0 {
            break;
        }
    }
    Ok(total)
}
