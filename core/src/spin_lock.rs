//! The lock of the runtime's short critical sections (an owner's key table, a shard of the
//! deadline queue, the free-slot queues, the cold table).
//!
//! Ground rules for every section under it: bounded work on the runtime's own structures,
//! no host code, no blocking, no allocation in steady state. Under those rules a lock that
//! costs one read-modify-write to take and a plain store to give back beats a parking
//! mutex, whose release is a second read-modify-write (each one waits for the thread's
//! earlier stores to reach the cache). A waiter spins briefly, then yields its CPU — the
//! holder may have been preempted — until the lock is free.
//!
//! What runs under each of them, and the one nesting allowed:
//! - an owner's key table (`OwnerBook`): key-table operations and compare-and-swaps on the
//!   slot words of its keys (claiming ends, succession); ends are finished after the guard
//!   is gone. It may be taken under the owner id map's read-write lock, never the reverse.
//! - a deadline-queue shard: wheel inserts, polls and the adoption of segments made
//!   outside it.
//! - a free-slot queue: pushes and pops of slot numbers.
//! - the owner table's free-index queue: one push or pop (under the id map's lock).
//! - a cold-table shard: its map only (the cold table states its own rules).
//!
//! No spin lock is taken under another spin lock.
//!
//! A spin lock cannot be taken twice by one thread: the second `lock` would spin for ever
//! behind the first. Debug builds check that (a re-entry panics, naming the lock's type),
//! that no spin lock is taken under another, and that the places that run host code hold
//! none ([`assert_none_held`]).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    /// The holding thread's token (0: none), for the re-entry check.
    #[cfg(debug_assertions)]
    holder: std::sync::atomic::AtomicUsize,
    value: UnsafeCell<T>,
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::Cell;

    thread_local! {
        static TOKEN: u8 = const { 0 };
        static HELD: Cell<usize> = const { Cell::new(0) };
    }

    /// A number no other live thread has: the address of this thread's own local.
    pub fn this_thread() -> usize {
        TOKEN.with(|t| t as *const u8 as usize)
    }

    pub fn add(n: isize) {
        HELD.with(|h| h.set(h.get().wrapping_add_signed(n)));
    }

    pub fn count() -> usize {
        HELD.with(Cell::get)
    }
}

/// Panics (debug builds) when the calling thread holds a spin lock: called before host
/// code runs (`what` names it), since host code may call back into the runtime and take
/// the same lock, or block while others spin behind it.
#[inline]
pub(crate) fn assert_none_held(what: &str) {
    #[cfg(debug_assertions)]
    {
        let n = held::count();
        assert!(
            n == 0,
            "{what} would run while this thread holds {n} spin lock(s)"
        );
    }
    #[cfg(not(debug_assertions))]
    let _ = what;
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
            #[cfg(debug_assertions)]
            holder: std::sync::atomic::AtomicUsize::new(0),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        #[cfg(debug_assertions)]
        let me = self.check_not_held();
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        #[cfg(debug_assertions)]
        {
            self.holder.store(me, std::sync::atomic::Ordering::Relaxed);
            held::add(1);
        }
        SpinLockGuard { lock: self }
    }

    /// Panics when the calling thread already holds this lock; returns its token. Only this
    /// thread ever stores its token, and it clears it before it unlocks, so a token read
    /// here equal to its own is this thread's current hold, never a stale value.
    #[cfg(debug_assertions)]
    fn check_not_held(&self) -> usize {
        let me = held::this_thread();
        if self.holder.load(std::sync::atomic::Ordering::Relaxed) == me {
            panic!(
                "a thread took a spin lock it already holds (SpinLock<{}>): it would spin for ever",
                std::any::type_name::<T>()
            );
        }
        assert!(
            held::count() == 0,
            "a spin lock (SpinLock<{}>) taken while this thread holds another: no spin lock \
             nests in another",
            std::any::type_name::<T>()
        );
        me
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
        #[cfg(debug_assertions)]
        {
            self.lock
                .holder
                .store(0, std::sync::atomic::Ordering::Relaxed);
            held::add(-1);
        }
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(debug_assertions)]
    fn a_thread_that_takes_a_lock_it_holds_panics() {
        let lock = SpinLock::new(1u32);
        let held = lock.lock();
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(lock.lock());
        }));
        let msg = again.expect_err("re-entry must panic");
        let msg = msg
            .downcast_ref::<String>()
            .expect("a formatted panic message");
        assert!(msg.contains("already holds"), "{msg}");
        drop(held);
        // Released (also by the unwinding of the failed attempt): it can be taken again.
        assert_eq!(*lock.lock(), 1);
    }

    #[test]
    #[cfg(debug_assertions)]
    fn host_code_may_not_run_under_a_spin_lock() {
        assert_none_held("nothing");
        let lock = SpinLock::new(());
        let g = lock.lock();
        let r = std::panic::catch_unwind(|| assert_none_held("a hook"));
        assert!(r.is_err(), "held count not seen");
        drop(g);
        assert_none_held("a hook");
    }

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
