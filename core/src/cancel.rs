//! The one terminal result of a timer generation (SPEC T2) and everyone waiting for it.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::error::Error;

/// Why a generation ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EndReason {
    /// Cancelled by the host.
    Cancelled = 0,
    /// Replaced by a newer registration of the same (owner, key).
    Superseded = 1,
    /// A one-shot timer delivered its callback.
    Completed = 2,
    /// The owner's lease ran out.
    LeaseExpired = 3,
    /// The owner authority was revoked or moved.
    Revoked = 4,
    /// The runtime was closed.
    RuntimeClosed = 5,
}

/// The terminal result of a generation: an end reason, or `Error::CleanupFailed` when the
/// release hook failed. Every caller sees the same value.
pub type EndResult = Result<EndReason, Error>;

type Subscriber = Box<dyn FnOnce(&EndResult) + Send>;

enum EndState {
    Open {
        subscribers: Vec<Subscriber>,
        notices: Vec<u64>,
    },
    Done(EndResult),
}

/// Outcome of asking for a cancel notice.
pub(crate) enum Notice {
    Queued,
    AlreadyDone(EndResult),
}

pub(crate) struct EndCell {
    state: Mutex<EndState>,
    done: Condvar,
}

impl Default for EndCell {
    fn default() -> Self {
        Self {
            state: Mutex::new(EndState::Open {
                subscribers: Vec::new(),
                notices: Vec::new(),
            }),
            done: Condvar::new(),
        }
    }
}

impl EndCell {
    pub fn get(&self) -> Option<EndResult> {
        match &*self.state.lock() {
            EndState::Done(r) => Some(r.clone()),
            EndState::Open { .. } => None,
        }
    }

    /// Publishes the result once; later calls are ignored. Returns the notice tags that
    /// were waiting, for the scheduler to deliver as records.
    pub fn finish(&self, result: EndResult) -> Vec<u64> {
        let (subscribers, notices) = {
            let mut st = self.state.lock();
            let EndState::Open {
                subscribers,
                notices,
            } = std::mem::replace(&mut *st, EndState::Done(result.clone()))
            else {
                return Vec::new();
            };
            (subscribers, notices)
        };
        self.done.notify_all();
        for s in subscribers {
            // A subscriber is host code; one that panics must not take the scheduler down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s(&result)));
        }
        notices
    }

    /// Waits for the result until `deadline` (forever with `None`).
    pub fn wait(&self, deadline: Option<Instant>) -> Option<EndResult> {
        let mut st = self.state.lock();
        loop {
            if let EndState::Done(r) = &*st {
                return Some(r.clone());
            }
            match deadline {
                None => self.done.wait(&mut st),
                Some(d) => {
                    if self.done.wait_until(&mut st, d).timed_out() {
                        if let EndState::Done(r) = &*st {
                            return Some(r.clone());
                        }
                        return None;
                    }
                }
            }
        }
    }

    /// Runs `f` with the result, now if it is known, else on the thread that publishes it.
    pub fn subscribe(&self, f: Subscriber) {
        let mut st = self.state.lock();
        match &mut *st {
            EndState::Open { subscribers, .. } => subscribers.push(f),
            EndState::Done(r) => {
                let r = r.clone();
                drop(st);
                f(&r);
            }
        }
    }

    pub fn notice(&self, tag: u64) -> Notice {
        let mut st = self.state.lock();
        match &mut *st {
            EndState::Open { notices, .. } => {
                notices.push(tag);
                Notice::Queued
            }
            EndState::Done(r) => Notice::AlreadyDone(r.clone()),
        }
    }
}
