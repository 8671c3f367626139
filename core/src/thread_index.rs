//! A small number for each live thread, handed back when the thread exits and given to the
//! next thread that asks, lowest first.
//!
//! The number picks a thread's counter stripe, deadline-queue shard and free-slot queue, so
//! threads rarely share them. Numbers below [`EXCLUSIVE`] are more than a hint: no two live
//! threads hold the same one, so state kept per exclusive number (a counter stripe, a cache
//! of free slots) is written by one thread at a time and needs no read-modify-write. A
//! number changes hands only through the pool's lock, which orders the previous holder's
//! writes before the next holder's reads. Threads beyond the first `EXCLUSIVE` live ones,
//! and code running in a thread's teardown after its number went back, use the shared
//! paths.

/// Numbers below this are exclusive to one live thread.
pub(crate) const EXCLUSIVE: usize = 16;

/// The numbers in use: the lowest returned one is handed out first.
#[cfg_attr(spot_loom, allow(dead_code))]
struct Pool {
    returned: std::collections::BinaryHeap<std::cmp::Reverse<usize>>,
    next: usize,
}

impl Pool {
    const fn new() -> Self {
        Self {
            returned: std::collections::BinaryHeap::new(),
            next: 0,
        }
    }

    fn take(&mut self) -> usize {
        match self.returned.pop() {
            Some(std::cmp::Reverse(n)) => n,
            None => {
                self.next += 1;
                self.next - 1
            }
        }
    }

    fn give_back(&mut self, n: usize) {
        self.returned.push(std::cmp::Reverse(n));
    }
}

#[cfg(not(spot_loom))]
mod held {
    use std::cell::Cell;
    use std::sync::{Mutex, MutexGuard};

    use super::{Pool, EXCLUSIVE};

    static POOL: Mutex<Pool> = Mutex::new(Pool::new());

    fn pool() -> MutexGuard<'static, Pool> {
        // Nothing that runs under this lock can panic half-way; a poisoned pool is intact.
        POOL.lock().unwrap_or_else(|e| e.into_inner())
    }

    const UNSET: usize = usize::MAX;

    thread_local! {
        /// The number, read on every operation: a constant-initialised cell without a
        /// destructor is one load.
        pub(super) static NUMBER: Cell<usize> = const { Cell::new(UNSET) };
        /// Gives the number back when the thread exits.
        static GIVE_BACK: GiveBack = const { GiveBack };
    }

    struct GiveBack;

    impl Drop for GiveBack {
        fn drop(&mut self) {
            let n = NUMBER.with(|c| c.replace(EXCLUSIVE));
            if n != UNSET && n != EXCLUSIVE {
                pool().give_back(n);
            }
        }
    }

    #[cold]
    pub(super) fn assign() -> usize {
        // Registering the destructor fails once the thread is being torn down: then the
        // thread gets no number of its own (and keeps none).
        if GIVE_BACK.try_with(|_| ()).is_err() {
            return EXCLUSIVE;
        }
        let n = pool().take();
        NUMBER.with(|c| c.set(n));
        n
    }

    #[inline]
    pub(super) fn get() -> usize {
        match NUMBER.with(|c| c.get()) {
            UNSET => assign(),
            n => n,
        }
    }
}

/// The calling thread's number.
#[cfg(not(spot_loom))]
#[inline]
pub(crate) fn thread_index() -> usize {
    held::get()
}

/// `number % count` without a division for the numbers below `count` — thread numbers
/// are handed out lowest first, so those are nearly all of them (a division costs more
/// than the rest of picking a shard).
#[inline]
pub(crate) fn spread(number: usize, count: usize) -> usize {
    if number < count {
        number
    } else {
        number % count
    }
}

// Loom's threads share one OS thread and so one thread-local number: nothing is exclusive.
#[cfg(spot_loom)]
pub(crate) fn thread_index() -> usize {
    EXCLUSIVE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_distinct_and_the_lowest_returned_is_reused_first() {
        let mut pool = Pool::new();
        assert_eq!(
            [pool.take(), pool.take(), pool.take(), pool.take()],
            [0, 1, 2, 3]
        );
        pool.give_back(2);
        pool.give_back(1);
        assert_eq!(pool.take(), 1);
        assert_eq!(pool.take(), 2);
        assert_eq!(pool.take(), 4);
    }

    #[cfg(not(spot_loom))]
    #[test]
    fn live_threads_hold_distinct_numbers() {
        let mine = thread_index();
        assert_eq!(thread_index(), mine, "a thread keeps its number");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(5));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let n = thread_index();
                    barrier.wait(); // all five threads are alive here
                    n
                })
            })
            .collect();
        barrier.wait();
        let mut live: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        live.push(mine);
        live.sort_unstable();
        live.dedup();
        assert_eq!(live.len(), 5, "live threads share no number: {live:?}");
    }
}
