//! The state a runtime's native objects share (`Runtime`, `Owner`, `Timer`, the dispatcher
//! handle): the core runtime, the Python objects of its timers and the state of the threads
//! that deliver its records. Data only: it imports none of the Python-facing classes, which
//! all import it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

use spot_timer_core::{Completion, Error, Outcome, Record, Runtime};

use crate::gil_cell::GilCell;
use crate::objects::PyObjects;

/// Longest uninterrupted detached wait before signals are checked again.
pub const SLICE: Duration = Duration::from_millis(5);

pub const MODE_MANUAL: u8 = 0;
pub const MODE_THREAD: u8 = 1;
pub const MODE_ASYNCIO: u8 = 2;

/// Keys that are not plain non-negative ints below 2^63 get ids from the upper half.
pub const AUTO_KEY_BASE: u64 = 1 << 63;

/// The cost per record assumed before any batch was timed: cautious, so that a first batch
/// of slow handlers stays near the budget; a batch or two of measurements replace it.
const ASSUMED_RECORD_NS: u64 = 1_000;

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
    /// Recent wall time per record of a batch, in ns (0: none timed yet); shared by the
    /// runtime's delivering threads. An estimate: concurrent updates may overwrite each other.
    pub record_ns: AtomicU64,
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

    /// How many records to take so that the batch runs in about `budget_ns` (at least one,
    /// at most `max_records`). A record left in the runtime keeps its place and gets the
    /// newest due tick when it is handed over (T5); one taken into a long batch only ages.
    pub fn batch_limit(&self, max_records: usize, budget_ns: u64) -> usize {
        if budget_ns == 0 {
            return max_records;
        }
        let per = match self.record_ns.load(Ordering::Relaxed) {
            0 => ASSUMED_RECORD_NS,
            n => n,
        };
        usize::try_from(budget_ns / per)
            .unwrap_or(usize::MAX)
            .clamp(1, max_records)
    }

    /// Folds the wall time of a batch of `records` into the per-record estimate (a moving
    /// average, so one slow handler moves it but does not set it).
    pub fn observe_batch(&self, records: usize, elapsed: Duration) {
        if records == 0 {
            return;
        }
        let sample = (elapsed.as_nanos() / records as u128).clamp(1, u64::MAX as u128) as u64;
        let old = self.record_ns.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            // old + (sample - old) / 4, without signed arithmetic
            (old - old / 4).saturating_add(sample / 4).max(1)
        };
        self.record_ns.store(new, Ordering::Relaxed);
    }

    /// The Python `Runtime`, while it exists.
    pub fn host<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        let weak = self.host.lock().as_ref()?.clone_ref(py);
        weak.bind(py).call0().ok().filter(|rt| !rt.is_none())
    }
}
