//! The primitives of the cross-thread protocols (slot words, owner gates and leases, the
//! owner lock). Under `--cfg spot_loom` they are loom's, so the loom models check the real
//! transition functions, not copies of them.

#[cfg(spot_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(spot_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64};

/// The lock of short critical sections (see `crate::spin_lock` for the rules of what may
/// run under it). Its `lock` never fails: no code under it calls host code, so a panic
/// cannot leave the runtime's state half-written.
#[cfg(not(spot_loom))]
pub(crate) type Mutex<T> = crate::spin_lock::SpinLock<T>;
#[cfg(not(spot_loom))]
pub(crate) type MutexGuard<'a, T> = crate::spin_lock::SpinLockGuard<'a, T>;

#[cfg(spot_loom)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
#[cfg(spot_loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

#[cfg(spot_loom)]
impl<T> Mutex<T> {
    pub fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
}
