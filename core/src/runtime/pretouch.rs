//! The pretouch helper: a thread that makes the memory of slots no registration has
//! reached yet exist before one does, so that a registration in a growing table writes a
//! slot line whose page is already there instead of taking the page fault itself (a
//! fault per 64 new slots, several microseconds each on a virtual machine whose host
//! backs guest memory lazily).
//!
//! Ground rules:
//! - The slot table asks (`SlotTable::allocate`'s `ahead`), a registering thread posts the
//!   request here, and only the helper runs `SlotTable::pretouch` for it. A request is a
//!   slot index the memory below which is wanted; requests only grow. After each request
//!   it also runs `Shards::provision`: the shards that grew get their next window of wheel
//!   memory, made on the helper and handed over under the shard's lock.
//! - The helper is started by the first request, so a runtime whose table never grows
//!   past its first 16,384 slots never has one. It holds the runtime until `stop`, which
//!   `close` calls (and dropping a `Runtime` closes it): no helper outlives its runtime's
//!   close.
//! - Nothing waits for the helper. A registration that reaches a slot before the helper
//!   did takes the fault as it would without one; the helper's later touch of that page
//!   finds it present and changes nothing.
//! - Under Miri and loom there is no helper: requests are dropped.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;

use super::shared::Shared;

#[derive(Default)]
pub(crate) struct Pretouch {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// The highest index asked for.
    wanted: u32,
    /// Memory below this was made.
    done: u32,
    /// The helper, once started (taken by `stop`).
    thread: Option<JoinHandle<()>>,
    started: bool,
    stop: bool,
}

/// The helper's stack: it calls nothing deep.
#[cfg(not(any(miri, spot_loom)))]
const STACK: usize = 64 << 10;

impl Pretouch {
    /// Asks that the slot lines below `end` be made to exist; starts the helper on the
    /// first request. Returns without waiting for the memory.
    #[cfg(not(any(miri, spot_loom)))]
    pub fn request<P: Send + Sync + 'static>(&self, shared: &Weak<Shared<P>>, end: u32) {
        let mut st = lock(&self.state);
        if st.stop || end <= st.wanted {
            return;
        }
        st.wanted = end;
        if st.started {
            drop(st);
            self.wake.notify_one();
            return;
        }
        st.started = true;
        // What lies more than two windows below the first request was touched by the
        // registrations that got there.
        st.done = end.saturating_sub(2 * crate::slot::PRETOUCH_WINDOW);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        // Spawned under the lock, so that `stop` finds the handle to join.
        let spawned = std::thread::Builder::new()
            .name("spot-timer-pretouch".into())
            .stack_size(STACK)
            .spawn(move || run(shared));
        match spawned {
            Ok(h) => st.thread = Some(h),
            // Without a helper, registrations take their page faults themselves.
            Err(_) => st.stop = true,
        }
    }

    #[cfg(any(miri, spot_loom))]
    pub fn request<P: Send + Sync + 'static>(&self, _shared: &Weak<Shared<P>>, _end: u32) {}

    /// Ends the helper, if one runs, and waits for it (at most one window of page faults
    /// away). Idempotent; no request starts a helper afterwards.
    pub fn stop(&self) {
        let h = {
            let mut st = lock(&self.state);
            st.stop = true;
            st.thread.take()
        };
        self.wake.notify_all();
        if let Some(h) = h {
            let _ = h.join();
        }
    }

    /// Memory below this index was made by the helper (0 when none ran).
    #[cfg(test)]
    pub fn done(&self) -> u32 {
        lock(&self.state).done
    }

    /// Is a helper thread started and not yet stopped?
    #[cfg(test)]
    pub fn running(&self) -> bool {
        lock(&self.state).thread.is_some()
    }
}

/// The helper's loop: waits for a request beyond what it made, makes it, repeats. It holds
/// the runtime until `stop`, which `close` calls before the runtime can go away.
#[cfg(not(any(miri, spot_loom)))]
fn run<P: Send + Sync + 'static>(shared: Arc<Shared<P>>) {
    // Lowest priority: woken by a registering thread, the helper must not take that
    // thread's CPU (an ordinary thread woken there may preempt the waker for as long as
    // its window of faults takes, a few hundred microseconds). When no CPU is idle, the
    // registrations take their faults themselves, as without a helper.
    let idle = libc::sched_param { sched_priority: 0 };
    // SAFETY: sets the calling thread's own policy; failure leaves it as it was.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) };
    let p = &shared.pretouch;
    loop {
        let (first, end) = {
            let mut st = lock(&p.state);
            while !st.stop && st.done >= st.wanted {
                st = p.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.stop {
                return;
            }
            (st.done, st.wanted)
        };
        shared.slots.pretouch(first, end);
        // The timers in those slots will be armed too: the shards that grew get their
        // next window of wheel memory made here as well.
        shared
            .shards
            .provision(crate::slot::PRETOUCH_WINDOW as usize);
        let mut st = lock(&p.state);
        st.done = st.done.max(end);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(all(test, not(any(miri, spot_loom))))]
mod tests {
    use std::time::{Duration, Instant};

    use crate::{GateMode, OwnerOptions, Runtime, RuntimeConfig, TimerSpec};

    fn runtime_with(timers: u64) -> Runtime {
        let rt = Runtime::new(RuntimeConfig::default()).unwrap();
        let owner = rt
            .acquire_owner(
                1,
                OwnerOptions {
                    lease: None,
                    gate: GateMode::Concurrent,
                },
            )
            .unwrap();
        for key in 0..timers {
            owner
                .register_id(key, TimerSpec::after(Duration::from_secs(600)), (), None)
                .unwrap();
        }
        rt
    }

    #[test]
    fn a_small_table_starts_no_helper() {
        let rt = runtime_with(1_000);
        assert!(!rt.shared.pretouch.running());
        assert_eq!(rt.shared.pretouch.done(), 0);
    }

    #[test]
    fn a_growing_table_gets_its_next_window_made_and_close_ends_the_helper() {
        let n = (1 << 16) + 3 * crate::slot::PRETOUCH_WINDOW as u64;
        let rt = runtime_with(n);
        assert!(rt.shared.pretouch.running());
        // The helper makes the memory up to the window after the last one reached.
        let high = rt.shared.slots.high_water();
        let deadline = Instant::now() + Duration::from_secs(30);
        while rt.shared.pretouch.done() <= high {
            assert!(
                Instant::now() < deadline,
                "helper stuck at {}",
                rt.shared.pretouch.done()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let shared = rt.shared.clone();
        drop(rt); // closes it
        assert!(!shared.pretouch.running(), "close joined the helper");
        // A request after close starts nothing.
        shared.pretouch.request(&shared.me, u32::MAX);
        assert!(!shared.pretouch.running());
        assert_eq!(
            std::sync::Arc::strong_count(&shared),
            1,
            "nothing else holds the runtime"
        );
    }
}
