//! The hot path allocates nothing in steady state: once a runtime has served a workload
//! (slots, key tables, queue chunks and per-thread caches exist), registering and
//! cancelling timers of the same owners again — the churn of an actor runtime — allocates
//! nothing on the calling thread. Counted by a global allocator that counts the
//! allocations of the thread under test only.
//!
//! One growth step is allowed per measured window, and no more. The deadline queue is
//! compacted by the arming thread and by the scheduler's own thread, whenever each gets
//! there; how long the queue grows between two compactions, and so how many chunks its
//! arena needs at its peak, depends on where the scheduler's compactions fall. When one
//! falls later in the measured window than in any warm-up round, the arena takes one more
//! segment of chunks (seen once in CI on a busy machine, 1 allocation). A per-operation
//! allocation would show as thousands.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use spot_timer_core::*;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; counting touches only a const thread-local
// and an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.try_with(|c| c.get()).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.try_with(|c| c.get()).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by this thread while `f` runs.
fn allocations_of(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTED.with(|c| c.set(true));
    f();
    COUNTED.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Allocations a measured window may make: one arena segment (see the module doc).
const GROWTH_STEPS: u64 = 1;

/// `rounds` of: register every (owner, key) as a one-shot 60–120 s away, then cancel them
/// all by id.
fn churn(owners: &[Owner<u32>], keys: u64, rounds: u32, rt: &Runtime<u32>, ids: &mut Vec<TimerId>) {
    for r in 0..rounds {
        ids.clear();
        for (i, o) in owners.iter().enumerate() {
            for k in 0..keys {
                let delay = Duration::from_secs(60 + (i as u64 + k + u64::from(r)) % 60);
                ids.push(o.register_id(k, TimerSpec::after(delay), 0, None).unwrap());
            }
        }
        for id in ids.iter() {
            assert_eq!(
                rt.cancel_timer_nowait(*id).unwrap(),
                Some(Ok(EndReason::Cancelled))
            );
        }
    }
}

fn steady_state(owner_count: u64, keys: u64) -> u64 {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owners: Vec<Owner<u32>> = (0..owner_count)
        .map(|i| {
            rt.acquire_owner(
                i + 1,
                OwnerOptions {
                    gate: GateMode::Concurrent,
                    ..OwnerOptions::default()
                },
            )
            .unwrap()
        })
        .collect();
    let mut ids = Vec::with_capacity(owners.len() * keys as usize);
    // Warm-up: the tables reach their working size, the thread's caches fill, the queue
    // goes through its compaction cycle.
    churn(&owners, keys, 30, &rt, &mut ids);
    let n = allocations_of(|| churn(&owners, keys, 10, &rt, &mut ids));
    rt.close();
    n
}

/// Owners whose keys come and go (a new key per request, at most two live at once): each
/// registration finds the owner's inline keys held by cancelled generations.
fn keys_come_and_go(owner_count: u64) -> u64 {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owners: Vec<Owner<u32>> = (0..owner_count)
        .map(|i| rt.acquire_owner(i + 1, OwnerOptions::default()).unwrap())
        .collect();
    let mut ids = Vec::with_capacity(owners.len() * 2);
    let mut key = 0u64;
    let mut round = |ids: &mut Vec<TimerId>| {
        ids.clear();
        for o in &owners {
            for _ in 0..2 {
                key += 1;
                let delay = Duration::from_secs(60 + key % 60);
                ids.push(
                    o.register_id(key, TimerSpec::after(delay), 0, None)
                        .unwrap(),
                );
            }
        }
        for id in ids.iter() {
            assert_eq!(
                rt.cancel_timer_nowait(*id).unwrap(),
                Some(Ok(EndReason::Cancelled))
            );
        }
    };
    for _ in 0..30 {
        round(&mut ids);
    }
    let n = allocations_of(|| {
        for _ in 0..10 {
            round(&mut ids);
        }
    });
    rt.close();
    n
}

#[test]
fn owners_whose_keys_come_and_go_churn_without_allocating() {
    let n = keys_come_and_go(1_000);
    assert!(n <= GROWTH_STEPS, "{n} allocations in the measured window");
}

#[test]
fn owners_with_one_timer_churn_without_allocating() {
    let n = steady_state(2_000, 1);
    assert!(n <= GROWTH_STEPS, "{n} allocations in the measured window");
}

#[test]
fn owners_with_a_hundred_timers_churn_without_allocating() {
    let n = steady_state(50, 100);
    assert!(n <= GROWTH_STEPS, "{n} allocations in the measured window");
}
