//! The state a runtime's native objects share (`Runtime`, `Owner`, `Timer`, the dispatcher
//! handle): the core runtime, the Python objects of its timers and the state of the threads
//! that deliver its records. Data only: it imports none of the Python-facing classes, which
//! all import it.

use std::collections::HashSet;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

use spot_timer_core::driver::Budget;
use spot_timer_core::{ClockKind, ManualClock, Runtime, RuntimeConfig, Sink};

use crate::errors::to_py;

use crate::gil_cell::GilCell;
use crate::keys::Keys;
use crate::objects::PyObjects;
use crate::releases::Releases;
use crate::waiters::Waiters;

/// Longest uninterrupted detached wait of the main thread before signals are checked again,
/// where no descriptor can be waited on instead (a gate, a blocking cancel, a node's
/// exchange).
pub const SLICE: Duration = Duration::from_millis(5);

/// How long one detached wait until `deadline` (None: no end) may last. Python runs signal
/// handlers on the main thread only, so only there is a wait cut into `SLICE`s (a Ctrl-C
/// is seen within one); any other thread — a dispatcher thread — waits in one piece, so an
/// idle runtime wakes it for nothing. None: wait without a limit.
pub fn wait_slice(deadline: Option<std::time::Instant>) -> Option<Duration> {
    let left = remaining(deadline);
    if !on_main_thread() {
        return left;
    }
    Some(left.map_or(SLICE, |l| l.min(SLICE)))
}

fn remaining(deadline: Option<std::time::Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()))
}

/// How a pump waits for records on the calling thread.
pub enum RecordWait {
    /// The exchange itself waits, up to this long (None: no end): a thread other than the
    /// main one, where no signal handler is waiting to run.
    InExchange(Option<Duration>),
    /// The main thread: the exchange does not wait; the pump then waits on the runtime's
    /// wakeup fd with [`wait_readable`], which a signal interrupts, so Ctrl-C is seen at
    /// once and an idle runtime still wakes nobody.
    OnFd(RawFd),
}

pub fn record_wait(rt: &Runtime<u64>, deadline: Option<std::time::Instant>) -> RecordWait {
    let left = remaining(deadline);
    if left.is_some_and(|l| l.is_zero()) {
        // Nothing to wait for (a pump that only takes what is ready makes no descriptor).
        return RecordWait::InExchange(left);
    }
    if on_main_thread() {
        // (Fails only on a closed runtime, or when no eventfd can be made: slices then.)
        match rt.wakeup_fd() {
            Ok(fd) => RecordWait::OnFd(fd),
            Err(_) => RecordWait::InExchange(wait_slice(deadline)),
        }
    } else {
        RecordWait::InExchange(left)
    }
}

/// Waits (call it detached) until `fd` is readable, `deadline` passes or a signal arrives
/// (poll returns EINTR: the caller checks signals). Like `time.sleep`, a signal that lands
/// between the caller's signal check and the poll is seen at the next wakeup.
pub fn wait_readable(fd: RawFd, deadline: Option<std::time::Instant>) {
    let timeout_ms = match remaining(deadline) {
        None => -1,
        // Rounded up: waking before the deadline would only wait again.
        Some(left) => left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32,
    };
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the runtime keeps `fd` open as long as it lives, and the
    // caller holds the runtime.
    unsafe { libc::poll(&mut p, 1, timeout_ms) };
}

/// Whether the calling thread is the process's main thread (Linux: its thread id is the
/// process id), where Python runs signal handlers.
fn on_main_thread() -> bool {
    // SAFETY: both calls only read ids of the calling process and thread.
    unsafe { libc::gettid() == libc::getpid() }
}

pub const MODE_MANUAL: u8 = 0;
pub const MODE_THREAD: u8 = 1;
pub const MODE_ASYNCIO: u8 = 2;

#[derive(Default)]
pub struct DispatchState {
    /// The threads that deliver records (dispatcher workers or the event-loop thread).
    pub delivery_threads: Vec<ThreadId>,
}

/// Ids of `Inner`s (the key of a thread's delivery sessions), never reused.
pub static NEXT_INNER_ID: AtomicU64 = AtomicU64::new(1);

pub struct Inner {
    /// Unique per process (see [`NEXT_INNER_ID`]).
    pub id: u64,
    pub rt: Runtime<u64>,
    /// Handlers (and the exception handler): attached threads only.
    pub objects: GilCell<PyObjects>,
    /// Release callbacks by payload: taken by whichever thread ends the generation.
    pub releases: Arc<Releases>,
    /// Payloads of generations that ended; their Python objects are dropped at the next
    /// attached call (the thread that ends a generation may not be attached).
    pub ended: Arc<Mutex<Vec<u64>>>,
    /// Attached threads only (the delivering thread, and a blocking cancel helping it).
    pub state: GilCell<DispatchState>,
    /// Generations whose coroutine handler is running (asyncio mode).
    pub async_inflight: Mutex<HashSet<u64>>,
    pub mode: AtomicU8,
    /// A weak reference to the Python `Runtime` (timers reach it through this, so they
    /// hold no reference the garbage collector would have to trace).
    pub host: Mutex<Option<Py<PyAny>>>,
    /// The dispatch budget (`Runtime(batch_budget=)`), shared by the runtime's delivering
    /// threads: made by the first pump that names one.
    pub budget: OnceLock<Arc<Budget>>,
    /// Dispatcher handles made (`workers=N` makes N).
    pub dispatchers: AtomicUsize,
    /// Futures awaiting a cancel's result, by the tag of its notice.
    pub waiters: Mutex<Waiters>,
    /// Key ids: automatic ones, and the maps of keys that are not plain ints (`keys.rs`).
    pub keys: Keys,
}

impl Inner {
    /// The core runtime and the Python state its timers share (on `clock`, or the real
    /// clock).
    pub fn new(py: Python<'_>, clock: Option<&ManualClock>) -> PyResult<Arc<Inner>> {
        let kind = match clock {
            Some(c) => ClockKind::Manual(c.clone()),
            None => ClockKind::Real,
        };
        let releases: Arc<Releases> = Arc::default();
        let ended = Arc::new(Mutex::new(Vec::new()));
        // One release function for the runtime, not a hook per registration: it runs the
        // timer's Python release callback (if it has one) and queues its objects to be
        // dropped at the next attached call.
        let release = {
            let (releases, ended) = (releases.clone(), ended.clone());
            move |pid: &u64, _why| {
                let r = match releases.end_carrier(*pid) {
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
        Ok(Arc::new(Inner {
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
        }))
    }

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
                dropped.extend(o.remove(id).into_iter().flatten());
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

    pub fn is_closed(&self) -> bool {
        self.rt.is_closed()
    }

    /// The budget a pump naming `budget_ns` delivers under (0: none).
    pub fn budget(&self, budget_ns: u64) -> Option<Arc<Budget>> {
        if budget_ns == 0 {
            return None;
        }
        Some(
            self.budget
                .get_or_init(|| Arc::new(Budget::new(Duration::from_nanos(budget_ns))))
                .clone(),
        )
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
