//! The ready queue (contract T10): records the scheduler published, waiting for a host's
//! `exchange` (with an eventfd that is readable while any wait, and for good once the
//! runtime closed, so a host polling it learns of the close), or for the scheduler's
//! next call of the batch callback. A record here is only a slot and the word it was
//! published with; the host builds the full record when it receives it.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::tick::CancelNotice;

/// A published record: the slot and its word (QUEUED) at publication.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub slot: u32,
    pub word: u64,
}

#[derive(Default)]
pub(crate) struct Ready {
    pub ticks: VecDeque<Pending>,
    pub notices: VecDeque<CancelNotice>,
    /// Set by [`ReadyQueue::close`]: the fd then stays readable.
    closed: bool,
}

impl Ready {
    pub fn is_empty(&self) -> bool {
        self.ticks.is_empty() && self.notices.is_empty()
    }
}

#[derive(Default)]
pub(crate) struct ReadyQueue {
    queue: Mutex<Ready>,
    arrived: Condvar,
    eventfd: OnceLock<OwnedFd>,
}

impl ReadyQueue {
    /// Appends records under one lock and wakes waiting hosts once.
    pub fn publish(&self, ticks: &mut Vec<Pending>, notices: &mut Vec<CancelNotice>) {
        let mut q = self.queue.lock();
        let was_empty = q.is_empty();
        q.ticks.extend(ticks.drain(..));
        q.notices.extend(notices.drain(..));
        if was_empty {
            self.signal_fd();
        }
        drop(q);
        self.arrived.notify_all();
    }

    /// Locks the queue, waiting until it is non-empty, `deadline` passes (`Some(past)`:
    /// don't wait) or `closed()` turns true.
    pub fn wait_nonempty(
        &self,
        deadline: Option<Instant>,
        closed: impl Fn() -> bool,
    ) -> MutexGuard<'_, Ready> {
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

    pub fn lock(&self) -> MutexGuard<'_, Ready> {
        self.queue.lock()
    }

    /// Called with the queue locked after taking from it (a host's exchange, the batch
    /// callback's turn): keeps the fd readable exactly while records wait, and gives back
    /// what a burst grew the queue to.
    pub fn after_take(&self, q: &mut Ready) {
        if q.is_empty() && !q.closed {
            self.clear_fd();
        }
        crate::trim::trim_deque(&mut q.ticks);
        crate::trim::trim_deque(&mut q.notices);
    }

    /// The runtime closed: every waiter wakes, and the fd turns readable for good (a host
    /// that waits on it, an event loop's reader or a thread polling it, then asks and is
    /// answered `Closed`).
    pub fn close(&self) {
        let mut q = self.queue.lock();
        q.closed = true;
        self.signal_fd();
        drop(q);
        self.arrived.notify_all();
    }

    pub fn len(&self) -> usize {
        let q = self.queue.lock();
        q.ticks.len() + q.notices.len()
    }

    pub fn has_fd(&self) -> bool {
        self.eventfd.get().is_some()
    }

    /// The eventfd, created on first request, readable while records wait.
    pub fn fd(&self) -> Result<RawFd> {
        let fd = self.eventfd.get_or_init_fallible()?;
        let q = self.queue.lock();
        if !q.is_empty() || q.closed {
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

trait InitEventFd {
    fn get_or_init_fallible(&self) -> Result<&OwnedFd>;
}

impl InitEventFd for OnceLock<OwnedFd> {
    fn get_or_init_fallible(&self) -> Result<&OwnedFd> {
        if let Some(fd) = self.get() {
            return Ok(fd);
        }
        // SAFETY: plain syscall; the returned descriptor is checked and then owned.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(Error::Os(std::io::Error::last_os_error().to_string()));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // A racing initialiser may win; our descriptor is then closed by its drop.
        let _ = self.set(fd);
        Ok(self.get().expect("set above or by the winner"))
    }
}
