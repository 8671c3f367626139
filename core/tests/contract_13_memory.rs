//! Contract verification 13: a long-running timer's statistics do not grow memory. Its
//! own test binary, because it counts every byte the process allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use spot_timer_core::*;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn contract_13_long_running_timer_statistics_do_not_grow_memory() {
    let (rt, _clock) = Runtime::<u64>::manual().unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let t = owner
        .register(1, TimerSpec::every(Duration::from_millis(1)), 0, None)
        .unwrap();
    let mut out = Vec::with_capacity(16);
    let mut done = Vec::with_capacity(16);
    let mut run = |ticks: u64| {
        for _ in 0..ticks {
            rt.advance(Duration::from_millis(1)).unwrap();
            rt.exchange(&done, &mut out, 16, Some(Duration::ZERO))
                .unwrap();
            done.clear();
            for r in out.drain(..) {
                if let Record::Tick(r) = r {
                    done.push(r.complete(Outcome::Ok));
                }
            }
        }
    };
    run(1_000);
    let after_warmup = LIVE.load(Ordering::SeqCst);
    run(20_000);
    let after_long_run = LIVE.load(Ordering::SeqCst);
    let stats = t.stats();
    assert!(stats.delivered >= 20_000, "{stats:?}");
    let growth = after_long_run - after_warmup;
    assert!(
        growth.abs() < 4096,
        "memory grew by {growth} bytes over 20,000 ticks"
    );
}
