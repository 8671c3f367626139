//! Expiry throughput: records delivered per second with 1k / 100k periodic timers.
//!
//! One iteration is one period: the clock moves on by one period, every timer fires once,
//! the host drains and completes all of them.
//! - spot-timer: manual clock, `Runtime::advance`, then `exchange` until all N records are
//!   in, completions handed back (the timers re-arm on completion).
//! - tokio-util `DelayQueue`: paused tokio clock, `tokio::time::advance`, then
//!   `poll_expired` N times, each expired entry re-inserted one period later.
//! - `BinaryHeap`: pop every due entry, push it back one period later.

mod common;

use std::future::poll_fn;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spot_timer_core::{
    Completion, GateMode, Outcome, OwnerOptions, Record, Runtime, TimerHandle, TimerSpec,
};
use tokio_util::time::DelayQueue;

const PERIOD: Duration = Duration::from_secs(1);
/// Timers per owner. The owners' gates are concurrent: each timer still never overlaps
/// itself, but an owner's timers are not serialised against each other.
const PER_OWNER: usize = 100;
const SIZES: [usize; 2] = [1_000, 100_000];
/// Distinct first-due offsets within one period (1 ms apart).
const SPREAD: u64 = 1000;

fn offset(i: usize) -> Duration {
    PERIOD / SPREAD as u32 * (i as u64 % SPREAD + 1) as u32
}

fn expiry(c: &mut Criterion) {
    let mut group = c.benchmark_group("expiry");
    for &n in &SIZES {
        group.throughput(Throughput::Elements(n as u64));
        // spot-timer
        {
            let (rt, _clock) = Runtime::<u32>::manual().expect("runtime");
            let mut handles: Vec<TimerHandle<u32>> = Vec::with_capacity(n);
            let mut owner = None;
            for i in 0..n {
                if i % PER_OWNER == 0 {
                    owner = Some(
                        rt.acquire_owner(
                            i as u64 + 1,
                            OwnerOptions {
                                lease: None,
                                gate: GateMode::Concurrent,
                            },
                        )
                        .expect("owner"),
                    );
                }
                let spec = TimerSpec::every(PERIOD).first_due(offset(i));
                let o = owner.as_ref().expect("owner");
                handles.push(
                    o.register(i as u64, spec, i as u32, None)
                        .expect("register"),
                );
            }
            rt.sync().expect("sync");
            let mut out: Vec<Record<u32>> = Vec::with_capacity(n);
            let mut done: Vec<Completion> = Vec::with_capacity(n);
            group.bench_function(BenchmarkId::new("spot-timer", n), |b| {
                b.iter(|| {
                    rt.complete(&done).expect("complete");
                    done.clear();
                    rt.advance(PERIOD).expect("advance");
                    let mut got = 0;
                    while got < n {
                        out.clear();
                        let k = rt
                            .exchange(&[], &mut out, 65_536, Some(Duration::ZERO))
                            .expect("exchange");
                        assert!(k > 0, "expected {n} records, got {got}");
                        got += k;
                        for r in &out {
                            if let Record::Tick(t) = r {
                                black_box(t.payload());
                                done.push(t.complete(Outcome::Ok));
                            }
                        }
                    }
                    got
                })
            });
            drop(handles);
        }
        // tokio-util DelayQueue on a paused tokio clock.
        {
            let tokio_rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("tokio runtime");
            let mut dq: DelayQueue<u32> = DelayQueue::with_capacity(n);
            tokio_rt.block_on(async {
                for i in 0..n {
                    dq.insert(i as u32, offset(i));
                }
            });
            group.bench_function(BenchmarkId::new("tokio-util DelayQueue", n), |b| {
                b.iter(|| {
                    tokio_rt.block_on(async {
                        tokio::time::advance(PERIOD).await;
                        for _ in 0..n {
                            let e = poll_fn(|cx| dq.poll_expired(cx))
                                .await
                                .expect("an expired entry");
                            let due = e.deadline() + PERIOD;
                            dq.insert_at(black_box(e.into_inner()), due);
                        }
                    });
                    n
                })
            });
        }
        // BinaryHeap baseline.
        {
            let period = PERIOD.as_nanos() as u64;
            let mut h = common::HeapTimers::with_capacity(n);
            for i in 0..n {
                h.insert(offset(i).as_nanos() as u64);
            }
            let mut now = 0u64;
            group.bench_function(BenchmarkId::new("std BinaryHeap", n), |b| {
                b.iter(|| {
                    now += period;
                    let fired = h.fire_periodic(now, period);
                    assert_eq!(fired, n);
                    fired
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = expiry
}
criterion_main!(benches);
