//! Bytes per live timer, measured with a counting global allocator: heap bytes in use
//! after registering N timers minus before, divided by N. N = 1,000,000 (100,000 with
//! `SPOT_BENCH_QUICK=1`). The host's own vector of handles/keys is allocated before the
//! first reading and so is not counted; everything the timer structure allocates is
//! (timer cells, slot table, scheduler state, deadline queue, owners, key maps).
//!
//! Run: `cargo bench -p spot-timer-core --bench memory`

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::Duration;

use spot_timer_core::{GateMode, OwnerOptions, Runtime, TimerHandle, TimerSpec};
use tokio_util::time::DelayQueue;

struct Counting;

static IN_USE: AtomicIsize = AtomicIsize::new(0);
/// Live allocations by size (bytes 0..SIZE_CLASSES), to show what a timer is made of.
const SIZE_CLASSES: usize = 1024;
static BY_SIZE: [AtomicIsize; SIZE_CLASSES] = [const { AtomicIsize::new(0) }; SIZE_CLASSES];

/// Bytes in use in allocations of SIZE_CLASSES bytes or more (tables, vectors).
static LARGE: AtomicIsize = AtomicIsize::new(0);

fn count(size: usize, delta: isize) {
    IN_USE.fetch_add(size as isize * delta, Relaxed);
    if size < SIZE_CLASSES {
        BY_SIZE[size].fetch_add(delta, Relaxed);
    } else {
        LARGE.fetch_add(size as isize * delta, Relaxed);
    }
}

/// Allocation counts by size.
fn by_size() -> Vec<isize> {
    BY_SIZE.iter().map(|c| c.load(Relaxed)).collect()
}

// SAFETY: forwards every call to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(layout.size(), -1);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(layout.size(), -1);
            count(new_size, 1);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn in_use() -> isize {
    IN_USE.load(Relaxed)
}

const FAR: Duration = Duration::from_secs(3600);

/// spot-timer: N timers, `per_owner` timers per owner.
fn spot(n: usize, per_owner: usize) -> f64 {
    let (rt, _clock) = Runtime::<()>::manual().expect("runtime");
    rt.sync().expect("sync");
    let mut handles: Vec<TimerHandle<()>> = Vec::with_capacity(n);
    let before = in_use();
    let large_before = LARGE.load(Relaxed);
    let sizes_before = by_size();
    let mut owner = None;
    for i in 0..n {
        if i % per_owner == 0 {
            let options = OwnerOptions {
                lease: None,
                gate: GateMode::Serial,
            };
            owner = Some(rt.acquire_owner(i as u64 + 1, options).expect("owner"));
        }
        let spec = TimerSpec::every(FAR + Duration::from_micros(i as u64));
        let o = owner.as_ref().expect("owner");
        handles.push(o.register(i as u64, spec, (), None).expect("register"));
    }
    drop(owner);
    rt.sync().expect("sync");
    let after = in_use();
    assert_eq!(rt.stats().live_timers, n as u64);
    // Small allocations made once per timer (or per owner) or more.
    let per_item: Vec<String> = by_size()
        .iter()
        .zip(sizes_before)
        .enumerate()
        .filter(|(_, (a, b))| **a - *b >= (n / per_owner) as isize)
        .map(|(size, (a, b))| format!("{} x {size} B", a - b))
        .collect();
    let large = (LARGE.load(Relaxed) - large_before) as f64 / n as f64;
    eprintln!(
        "  spot-timer, {per_owner} per owner: small allocations: {}; \
         allocations >= {SIZE_CLASSES} B (tables, vectors): {large:.1} B per timer",
        per_item.join(", ")
    );
    drop(handles);
    (after - before) as f64 / n as f64
}

fn delay_queue(n: usize) -> f64 {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime");
    let _guard = tokio_rt.enter();
    let mut keys = Vec::with_capacity(n);
    let before = in_use();
    let mut dq: DelayQueue<()> = DelayQueue::new();
    for i in 0..n {
        keys.push(dq.insert((), FAR + Duration::from_micros(i as u64)));
    }
    let after = in_use();
    assert_eq!(dq.len(), n);
    (after - before) as f64 / n as f64
}

fn binary_heap(n: usize) -> f64 {
    let mut ids = Vec::with_capacity(n);
    let before = in_use();
    let mut h = common::HeapTimers::default();
    for i in 0..n {
        ids.push(h.insert(FAR.as_nanos() as u64 + i as u64));
    }
    let after = in_use();
    assert_eq!(h.len(), n);
    (after - before) as f64 / n as f64
}

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this binary has nothing to filter.
    let n = if common::quick() { 100_000 } else { 1_000_000 };
    println!("bytes per live timer at {n} live timers (counting allocator):");
    println!("| structure | bytes per live timer |");
    println!("|---|---:|");
    let rows = [
        ("spot-timer (2 timers per owner)", spot(n, 2)),
        ("spot-timer (1,000 timers per owner)", spot(n, 1000)),
        ("tokio-util DelayQueue", delay_queue(n)),
        ("std BinaryHeap + generations", binary_heap(n)),
    ];
    for (name, bytes) in rows {
        println!("| {name} | {bytes:.1} |");
    }
}
