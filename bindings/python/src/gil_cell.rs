//! State that only threads attached to the interpreter touch, with the GIL as its lock: the
//! delivery state and the handler table are read and written once or twice per record, and
//! a mutex there would be a lock round trip per record on top of the GIL the caller holds
//! anyway.
//!
//! Ground rules for every `with` closure: it runs no Python code and drops no Python object
//! (a drop can run `__del__`, which could re-enter this module and reach the same cell).
//! Objects to drop are moved out and dropped after the closure returns.

use std::cell::UnsafeCell;

use pyo3::Python;

// The GIL is the lock: the module declares that it uses the GIL (`gil_used = true` in
// lib.rs), so a free-threaded interpreter turns the GIL on when it imports it.

pub struct GilCell<T>(UnsafeCell<T>);

// SAFETY: every access goes through `with` (attached, so the GIL is held) or `during_gc`
// (the collecting thread holds the GIL); `T: Send` because the holder may change threads.
unsafe impl<T: Send> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }

    /// Runs `f` with the state; `py` proves the GIL is held. `f` must follow the ground
    /// rules above (no Python code, no Python object dropped).
    pub fn with<R>(&self, _py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the GIL excludes every other thread from this cell, and the ground rules
        // exclude re-entry from this thread while `f` runs.
        unsafe { f(&mut *self.0.get()) }
    }

    /// The state from a garbage-collector callback (`__traverse__`, `__clear__`), where no
    /// `Python` token is available but the collecting thread holds the GIL.
    ///
    /// # Safety
    /// Only from a GC callback of an object that owns this cell; no `with` is running then
    /// (its closures run no Python code, so no collection can start inside one).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn during_gc(&self) -> &mut T {
        &mut *self.0.get()
    }
}
