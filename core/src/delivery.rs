//! Hand-over of batches to the host (SPEC T10): a ready queue drained by `exchange` (with
//! an eventfd that is readable while records are pending), or a batch callback.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use once_cell::sync::OnceCell;
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::tick::{Completion, Record};

/// Receives each batch on the scheduler thread, in one call per wakeup.
///
/// Completions pushed into `completions` are applied as soon as the call returns, so a
/// host whose handlers are synchronous completes a batch without a second crossing. A
/// handler may also complete later through [`crate::Runtime::complete`].
pub trait BatchHandler<P>: Send + 'static {
    fn on_batch(&mut self, batch: &[Record<P>], completions: &mut Vec<Completion>);
}

impl<P, F> BatchHandler<P> for F
where
    F: FnMut(&[Record<P>], &mut Vec<Completion>) + Send + 'static,
{
    fn on_batch(&mut self, batch: &[Record<P>], completions: &mut Vec<Completion>) {
        self(batch, completions)
    }
}

/// Where a runtime delivers its batches.
#[derive(Default)]
pub enum Sink<P> {
    /// Records wait in a ready queue for [`crate::Runtime::exchange`].
    #[default]
    Exchange,
    /// Records go to a callback on the scheduler thread, one call per batch.
    Callback(Box<dyn BatchHandler<P>>),
}

pub(crate) struct ReadyQueue<P> {
    queue: Mutex<VecDeque<Record<P>>>,
    arrived: Condvar,
    eventfd: OnceCell<OwnedFd>,
}

impl<P> ReadyQueue<P> {
    pub fn new() -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            eventfd: OnceCell::new(),
        }
    }

    /// Appends a whole batch under one lock and wakes the host once.
    pub fn publish(&self, batch: &mut Vec<Record<P>>) {
        let mut q = self.queue.lock();
        let was_empty = q.is_empty();
        q.extend(batch.drain(..));
        if was_empty {
            self.signal_fd();
        }
        drop(q);
        self.arrived.notify_all();
    }

    /// Locks the queue, waiting until it is non-empty, `deadline` passes (`Some(past)`
    /// means "don't wait") or `closed()` turns true.
    pub fn wait_nonempty(
        &self,
        deadline: Option<Instant>,
        closed: impl Fn() -> bool,
    ) -> MutexGuard<'_, VecDeque<Record<P>>> {
        let mut q = self.queue.lock();
        while q.is_empty() && !closed() {
            match deadline {
                None => self.arrived.wait(&mut q),
                Some(d) => {
                    if Instant::now() >= d || self.arrived.wait_until(&mut q, d).timed_out() {
                        break;
                    }
                }
            }
        }
        q
    }

    /// Called with the queue lock held after draining: keeps the fd readable exactly while
    /// records are pending.
    pub fn after_drain(&self, q: &VecDeque<Record<P>>) {
        if q.is_empty() {
            self.clear_fd();
        }
    }

    pub fn wake_all(&self) {
        let _q = self.queue.lock();
        self.arrived.notify_all();
    }

    pub fn len(&self) -> usize {
        self.queue.lock().len()
    }

    pub fn take_all(&self) -> VecDeque<Record<P>> {
        std::mem::take(&mut *self.queue.lock())
    }

    pub fn has_fd(&self) -> bool {
        self.eventfd.get().is_some()
    }

    /// The eventfd, created on first request, readable while records are pending.
    pub fn fd(&self) -> Result<RawFd> {
        let fd = self.eventfd.get_or_try_init(|| {
            // SAFETY: plain syscall; the returned descriptor is checked and then owned.
            let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if raw < 0 {
                return Err(Error::Os(std::io::Error::last_os_error().to_string()));
            }
            // SAFETY: `raw` is a fresh descriptor nobody else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        })?;
        let q = self.queue.lock();
        if !q.is_empty() {
            self.signal_fd();
        }
        Ok(fd.as_raw_fd())
    }

    fn signal_fd(&self) {
        if let Some(fd) = self.eventfd.get() {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a valid u64 to an eventfd we own. EAGAIN (counter
            // saturated) leaves it readable, which is all we need.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }

    fn clear_fd(&self) {
        if let Some(fd) = self.eventfd.get() {
            let mut buf: u64 = 0;
            // SAFETY: reads 8 bytes into a valid u64 from a non-blocking eventfd we own.
            unsafe { libc::read(fd.as_raw_fd(), (&mut buf as *mut u64).cast(), 8) };
        }
    }
}
