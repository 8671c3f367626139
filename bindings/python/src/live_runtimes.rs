//! The runtimes still open: what a `Runtime` object and the interpreter's exit hook share,
//! and the close of a runtime (the hook closes every one still open, so that no worker or
//! scheduler thread touches the interpreter while it finalizes).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::delivery_modes::Delivery;
use crate::dispatch::Limits;
use crate::inner::Inner;

/// A runtime that may still need closing: what a `Runtime` object and the interpreter's
/// exit hook share (the hook closes every one still open, so that no worker or scheduler
/// thread touches the interpreter while it finalizes).
pub struct LiveRuntime {
    pub inner: Arc<Inner>,
    pub delivery: Delivery,
    pub limits: Limits,
    pub closed: AtomicBool,
}

static LIVE: Mutex<Vec<Weak<LiveRuntime>>> = Mutex::new(Vec::new());

impl LiveRuntime {
    /// A runtime now open, closed at exit unless it was closed (or collected) before.
    pub fn open(inner: Arc<Inner>, delivery: Delivery, limits: Limits) -> Arc<Self> {
        let live = Arc::new(LiveRuntime {
            inner,
            delivery,
            limits,
            closed: AtomicBool::new(false),
        });
        let mut all = LIVE.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&live));
        live
    }

    pub fn close(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Delivery::Asyncio(reader) = &self.delivery {
            reader.detach(py);
        }
        close_inner(py, &self.inner);
        self.delivery
            .stop(py, timeout.map(|t| Instant::now() + t))?;
        LIVE.lock()
            .retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), self));
        Ok(())
    }
}

impl Drop for LiveRuntime {
    fn drop(&mut self) {
        if self.inner.rt.is_closed() {
            return;
        }
        let inner = self.inner.clone();
        // Closing joins the scheduler thread: never while attached.
        let _ = Python::try_attach(|py| {
            if let Delivery::Asyncio(reader) = &self.delivery {
                reader.detach(py);
            }
            py.detach(|| inner.rt.close())
        });
        if !self.inner.rt.is_closed() {
            self.inner.rt.close();
        }
    }
}

/// Ends every generation and stops the scheduler; drops the Python objects the runtime
/// held and resolves the cancels still awaited.
pub fn close_inner(py: Python<'_>, inner: &Arc<Inner>) {
    let rt = inner.clone();
    // Joins the scheduler thread (which may run Python release hooks): detached.
    py.detach(move || rt.rt.close());
    // This thread's session goes (its records were abandoned with the close); other
    // threads drop theirs at their next pump or when they end.
    crate::dispatch::drop_session(inner.id);
    inner.async_inflight.lock().clear();
    // Every generation ended; drop their Python objects.
    inner.ended.lock().clear();
    let mut taken = inner.objects.with(py, |o| o.clear_timers());
    taken.extend(inner.releases.drain());
    drop(taken);
    // Cancels still awaited: their generations ended with the close.
    let waiting = inner.waiters.lock().drain();
    for w in waiting {
        if let Err(e) = w.resolve_closed(py, &inner.rt) {
            e.write_unraisable(py, None);
        }
    }
}

/// The interpreter's exit: every runtime still open is closed.
#[pyfunction]
pub fn close_all_at_exit(py: Python<'_>) {
    let live: Vec<Arc<LiveRuntime>> = LIVE.lock().iter().filter_map(Weak::upgrade).collect();
    for rt in live {
        let _ = rt.close(py, Some(Duration::from_secs(1)));
    }
}
