//! The timers' Python release callbacks (`on_release=`), taken by whichever thread ends a
//! generation (attached or not). A reset may leave two generations carrying one payload
//! for a while (the old one still running, the new one registered beside it: see
//! `Timer.reset`), so each callback counts its carriers and runs when the last one ends.

use std::collections::HashMap;

use parking_lot::Mutex;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

struct Release {
    callback: Py<PyAny>,
    carriers: u32,
}

/// The release callbacks of one runtime, by payload.
#[derive(Default)]
pub struct Releases(Mutex<HashMap<u64, Release>>);

impl Releases {
    pub fn insert(&self, pid: u64, callback: Py<PyAny>) {
        self.0.lock().insert(
            pid,
            Release {
                callback,
                carriers: 1,
            },
        );
    }

    /// One more generation carries `pid`: false (and nothing counted) if it has no
    /// callback.
    pub fn add_carrier(&self, pid: u64) -> bool {
        let mut map = self.0.lock();
        match map.get_mut(&pid) {
            Some(r) => {
                r.carriers += 1;
                true
            }
            None => false,
        }
    }

    /// A generation carrying `pid` ended: its callback, when it was the last carrier.
    pub fn end_carrier(&self, pid: u64) -> Option<Py<PyAny>> {
        let mut map = self.0.lock();
        if map.is_empty() {
            return None;
        }
        let r = map.get_mut(&pid)?;
        r.carriers -= 1;
        if r.carriers > 0 {
            return None;
        }
        map.remove(&pid).map(|r| r.callback)
    }

    /// Forgets `pid`'s callback whoever carries it (a registration that failed).
    pub fn remove(&self, pid: u64) -> Option<Py<PyAny>> {
        self.0.lock().remove(&pid).map(|r| r.callback)
    }

    /// Every callback (the runtime closed, or the collector clears it).
    pub fn drain(&self) -> Vec<Py<PyAny>> {
        self.0.lock().drain().map(|(_, r)| r.callback).collect()
    }

    pub fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// For the garbage collector; never blocks (the lock is only held for short sections
    /// without Python calls, so a busy lock is skipped rather than waited for).
    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(map) = self.0.try_lock() {
            for r in map.values() {
                visit.call(&r.callback)?;
            }
        }
        Ok(())
    }
}
