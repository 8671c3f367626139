//! Register+cancel churn with 1k / 100k / 1M live timers already registered: spot-timer vs
//! tokio-util's `DelayQueue` (insert+remove) vs a `BinaryHeap` with lazy deletion.
//!
//! One iteration is one register of a fresh timer and one cancel of the timer registered
//! `WINDOW` iterations earlier (so a timer is really armed in the queue before it is
//! cancelled, as in real churn; the window adds `WINDOW` live timers to each size). For
//! spot-timer the cancel is the non-blocking form and each measured sample ends with
//! `Runtime::sync`, so the figure includes the scheduler thread's share of the work
//! (command hand-off, queue update, slot release), not just the host's.

mod common;

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spot_timer_core::{GateMode, Owner, OwnerOptions, Runtime, TimerHandle, TimerSpec};
use tokio_util::time::DelayQueue;

/// Far in the future, so nothing fires while the benchmark runs.
const FAR: Duration = Duration::from_secs(3600);
/// Timers per owner for the pre-registered population (the demo's shape).
const PER_OWNER: usize = 2;
/// A cancel hits the timer registered this many iterations earlier.
const WINDOW: usize = 1024;

struct SpotSetup {
    rt: Runtime<()>,
    churn_owner: Owner<()>,
    _live: Vec<TimerHandle<()>>,
    window: VecDeque<TimerHandle<()>>,
    next_key: u64,
}

impl SpotSetup {
    fn register(&mut self) -> TimerHandle<()> {
        self.next_key += 1;
        self.churn_owner
            .register(self.next_key, TimerSpec::every(FAR), (), None)
            .expect("register")
    }
}

fn spot_setup(live: usize) -> SpotSetup {
    let (rt, _clock) = Runtime::<()>::manual().expect("runtime");
    let mut handles = Vec::with_capacity(live);
    let mut owner = None;
    for i in 0..live {
        if i % PER_OWNER == 0 {
            owner = Some(
                rt.acquire_owner(i as u64 + 1, OwnerOptions::default())
                    .expect("owner"),
            );
        }
        let o = owner.as_ref().expect("owner");
        // Spread the live deadlines so the queue has a realistic shape.
        let spec = TimerSpec::every(FAR + Duration::from_micros(i as u64));
        handles.push(o.register(i as u64, spec, (), None).expect("register"));
    }
    let churn_owner = rt
        .acquire_owner(
            u64::MAX,
            OwnerOptions {
                lease: None,
                gate: GateMode::Serial,
            },
        )
        .expect("owner");
    let mut s = SpotSetup {
        rt,
        churn_owner,
        _live: handles,
        window: VecDeque::with_capacity(WINDOW + 1),
        next_key: 0,
    };
    for _ in 0..WINDOW {
        let h = s.register();
        s.window.push_back(h);
    }
    s.rt.sync().expect("sync");
    assert_eq!(s.rt.stats().live_timers, (live + WINDOW) as u64);
    s
}

fn churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("register_cancel");
    group.throughput(Throughput::Elements(1));
    for &live in &common::churn_sizes() {
        // spot-timer
        {
            let mut s = spot_setup(live);
            group.bench_function(BenchmarkId::new("spot-timer", live), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let h = s.register();
                        s.window.push_back(h);
                        let old = s.window.pop_front().expect("window");
                        black_box(old.cancel_nowait().expect("cancel"));
                    }
                    s.rt.sync().expect("sync");
                    start.elapsed()
                })
            });
            if live == common::churn_sizes()[0] {
                // The blocking form: each cancel waits for the scheduler's terminal result
                // (a thread round trip), so this is latency, not throughput.
                group.bench_function(
                    BenchmarkId::new("spot-timer (blocking cancel)", live),
                    |b| {
                        b.iter(|| {
                            let h = s.register();
                            s.window.push_back(h);
                            let old = s.window.pop_front().expect("window");
                            black_box(old.cancel(None).expect("cancel"))
                        })
                    },
                );
            }
            s.rt.sync().expect("sync");
            let st = s.rt.stats();
            assert_eq!(st.live_timers, (live + WINDOW) as u64);
            eprintln!(
                "  spot-timer {live}: after {} registrations: queue_len {} (live {}), \
                 stale entries dropped {}, compactions {}",
                st.registered,
                st.queue_len,
                st.live_timers,
                st.stale_entries_dropped,
                st.compactions
            );
        }
        // tokio-util DelayQueue, inside a (paused) current-thread runtime as its docs ask.
        {
            let tokio_rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("tokio runtime");
            let _guard = tokio_rt.enter();
            let mut dq: DelayQueue<()> = DelayQueue::with_capacity(live + 1024);
            let _keys: Vec<_> = (0..live)
                .map(|i| dq.insert((), FAR + Duration::from_micros(i as u64)))
                .collect();
            let mut window: VecDeque<_> = (0..WINDOW).map(|_| dq.insert((), FAR)).collect();
            group.bench_function(BenchmarkId::new("tokio-util DelayQueue", live), |b| {
                b.iter(|| {
                    window.push_back(dq.insert((), FAR));
                    let old = window.pop_front().expect("window");
                    black_box(dq.remove(&old));
                })
            });
            assert_eq!(dq.len(), live + WINDOW);
        }
        // BinaryHeap baseline with lazy deletion.
        {
            let mut h = common::HeapTimers::with_capacity(live + 1024);
            let far = FAR.as_nanos() as u64;
            for i in 0..live {
                h.insert(far + i as u64 * 1000);
            }
            let mut window: VecDeque<_> = (0..WINDOW).map(|_| h.insert(far)).collect();
            group.bench_function(BenchmarkId::new("std BinaryHeap", live), |b| {
                b.iter(|| {
                    window.push_back(h.insert(far));
                    let old = window.pop_front().expect("window");
                    h.cancel(black_box(old));
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = churn
}
criterion_main!(benches);
