//! The lock of the runtime's short critical sections (an owner's key table, a shard of the
//! deadline queue, the free-slot queues, the cold table).
//!
//! Ground rules for every section under it: bounded work on the runtime's own structures,
//! no host code, no blocking, no allocation in steady state. Under those rules a lock that
//! costs one read-modify-write to take and a plain store to give back beats a parking
//! mutex, whose release is a second read-modify-write (each one waits for the thread's
//! earlier stores to reach the cache). A waiter spins briefly, then yields its CPU — the
//! holder may have been preempted — until the lock is free.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and one guard exists at a time.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: as above; moving the lock moves the value.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinLockGuard { lock: self }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 6 {
                    for _ in 0..(1 << spins) {
                        std::hint::spin_loop();
                    }
                    spins += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

pub(crate) struct SpinLockGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the lock's only one.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the lock's only one.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinLockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_never_hold_it_together() {
        let lock = std::sync::Arc::new(SpinLock::new((0u64, false)));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..if cfg!(miri) { 50 } else { 50_000 } {
                        let mut g = lock.lock();
                        assert!(!g.1, "two holders at once");
                        g.1 = true;
                        g.0 += 1;
                        std::hint::spin_loop();
                        g.1 = false;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let expected = 4 * if cfg!(miri) { 50 } else { 50_000 };
        assert_eq!(lock.lock().0, expected);
    }
}
