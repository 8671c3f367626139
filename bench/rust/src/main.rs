//! Rust side of the side-by-side benchmark suite (driven by `bench/suite.py`).
//!
//! One invocation = one measured run of one workload on one system; it prints one JSON
//! object on stdout. Usage:
//!
//! ```text
//! spot-bench-rust w1 <system> <n>                      arm + cancel churn
//! spot-bench-rust w1tail <system> <n>                  W1's arms timed one by one
//! spot-bench-rust w2 <system> <n> <seconds> <period_ms> periodic expiry (also W3 lateness)
//! spot-bench-rust w4 <system> <n>                      RSS per live timer
//! spot-bench-rust w6 <system> <n> <threads>            registration from 1..k threads
//! ```
//!
//! Systems: `spot` (spot-timer core, real clock, exchange delivery, owners of 100 timers
//! with `GateMode::Concurrent`), `tokio-delayqueue` (tokio-util `DelayQueue`),
//! `tokio-sleep` (`tokio::time::sleep`), `tokio-interval` (`tokio::time::Interval`, W2).

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use spot_timer_core::{
    EndReason, GateMode, Outcome, Owner, OwnerOptions, Record, Runtime, RuntimeConfig, TimerHandle,
    TimerId, TimerSpec,
};
use tokio_util::time::DelayQueue;

// ---------------------------------------------------------------- counting allocator

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.load(Relaxed)
}

// ---------------------------------------------------------------- helpers

const PER_OWNER: usize = 100;

fn cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for l in s.lines() {
        if let Some(v) = l.strip_prefix("VmRSS:") {
            let kib: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            return kib * 1024;
        }
    }
    0
}

/// Deadlines: 60 s .. 120 s away, pseudo-random (xorshift), so nothing fires in a run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn deadline(&mut self) -> Duration {
        Duration::from_millis(60_000 + self.next() % 60_000)
    }
}

/// Lateness histogram, 1 µs buckets up to 2 s (shared by every system alike).
struct Hist {
    b: Vec<AtomicU32>,
    count: AtomicU64,
}
const HIST_US: usize = 2_000_000;
impl Hist {
    fn new() -> Self {
        Self {
            b: (0..=HIST_US).map(|_| AtomicU32::new(0)).collect(),
            count: AtomicU64::new(0),
        }
    }
    fn add(&self, late: Duration) {
        let us = (late.as_nanos() / 1000) as usize;
        self.b[us.min(HIST_US)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }
    fn pct(&self, p: f64) -> f64 {
        let n = self.count.load(Relaxed);
        if n == 0 {
            return f64::NAN;
        }
        let want = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut acc = 0u64;
        for (i, c) in self.b.iter().enumerate() {
            acc += c.load(Relaxed) as u64;
            if acc >= want {
                return i as f64;
            }
        }
        HIST_US as f64
    }
}

fn late(now: Instant, due: Instant) -> Duration {
    now.saturating_duration_since(due)
}

fn spot_runtime() -> Runtime<u32> {
    Runtime::new(RuntimeConfig::default()).expect("spot runtime")
}

fn spot_owners(rt: &Runtime<u32>, n: usize, base: u64) -> Vec<Owner<u32>> {
    spot_owners_of(rt, n, base, PER_OWNER)
}

/// `n.div_ceil(per_owner)` owners with concurrent gates and no lease.
fn spot_owners_of(rt: &Runtime<u32>, n: usize, base: u64, per_owner: usize) -> Vec<Owner<u32>> {
    (0..n.div_ceil(per_owner))
        .map(|i| {
            rt.acquire_owner(
                base + i as u64,
                OwnerOptions {
                    lease: None,
                    gate: GateMode::Concurrent,
                },
            )
            .expect("owner")
        })
        .collect()
}

fn tokio_ct() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio")
}

/// Registers a `sleep` with the timer driver the way `.await` does (first poll).
fn armed_sleep(d: Duration) -> Pin<Box<tokio::time::Sleep>> {
    let mut s = Box::pin(tokio::time::sleep(d));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(s.as_mut().poll(&mut cx).is_pending());
    s
}

// ---------------------------------------------------------------- W1 churn

/// Arms `n` timers with random deadlines, then cancels all of them. Returns
/// (arm ns, cancel ns, allocations during arm, during cancel, process CPU ns of the round's
/// arm and cancel, every thread).
fn w1_once(
    system: &str,
    n: usize,
    seed: u64,
    random: bool,
    per_owner: usize,
) -> (f64, f64, u64, u64, f64) {
    let mut rng = Rng(seed | 1);
    let dl: Vec<Duration> = (0..n).map(|_| rng.deadline()).collect();
    // The order of the cancels: registration order, or a permutation (the same for every
    // system: it depends on `n` and the seed only).
    let order: Vec<u32> = if random {
        permutation(n, seed ^ 0x5EED)
    } else {
        (0..n as u32).collect()
    };
    match system {
        // Timers kept by id (16 bytes, no reference count): the form a host holding many
        // timers uses. `-steady`: the figures of a second round in the same runtime, whose
        // slots, tables and queue the first round already grew (no first touch of memory).
        "spot" | "spot-steady" => {
            let rt = spot_runtime();
            let owners = spot_owners_of(&rt, n, 1, per_owner);
            rt.sync().unwrap();
            let mut ids: Vec<TimerId> = Vec::with_capacity(n);
            let rounds = if system == "spot" { 1 } else { 2 };
            let mut out = (0.0, 0.0, 0, 0, 0.0);
            for _ in 0..rounds {
                ids.clear();
                let a0 = allocs();
                let c0 = cpu_s();
                let t0 = Instant::now();
                for (i, d) in dl.iter().enumerate() {
                    let o = &owners[i / per_owner];
                    ids.push(
                        o.register_id(i as u64, TimerSpec::after(*d), 0, None)
                            .unwrap(),
                    );
                }
                rt.sync().unwrap(); // whatever the scheduler does for them, counted too
                let arm = t0.elapsed();
                let a1 = allocs();
                let t1 = Instant::now();
                // Each cancel's result is looked at as a host looks at it (a match), and
                // the count checked after the clock stops: not handed whole to
                // `black_box`, which makes the compiler store and reload the 32-byte
                // `Result` (a store-forwarding stall no matching host pays).
                let mut cancelled = 0usize;
                for &i in &order {
                    cancelled += usize::from(matches!(
                        rt.cancel_timer_nowait(ids[i as usize]),
                        Ok(Some(Ok(EndReason::Cancelled)))
                    ));
                }
                // The scheduler's share: its turn drops the cancelled entries from the queue.
                rt.sync().unwrap();
                let cancel = t1.elapsed();
                assert_eq!(cancelled, n, "every cancel ends its timer as Cancelled");
                let cpu = (cpu_s() - c0) * 1e9 / n as f64;
                let a2 = allocs();
                out = (ns(arm, n), ns(cancel, n), a1 - a0, a2 - a1, cpu);
            }
            rt.close();
            out
        }
        // The same through `TimerHandle`s (each holds a reference to the runtime).
        "spot-handles" => {
            let rt = spot_runtime();
            let owners = spot_owners(&rt, n, 1);
            rt.sync().unwrap();
            let mut hs: Vec<TimerHandle<u32>> = Vec::with_capacity(n);
            let a0 = allocs();
            let c0 = cpu_s();
            let t0 = Instant::now();
            for (i, d) in dl.iter().enumerate() {
                let o = &owners[i / PER_OWNER];
                hs.push(o.register(i as u64, TimerSpec::after(*d), 0, None).unwrap());
            }
            rt.sync().unwrap();
            let arm = t0.elapsed();
            let a1 = allocs();
            let t1 = Instant::now();
            for h in &hs {
                drop(h.cancel_nowait().unwrap());
            }
            rt.sync().unwrap();
            let cancel = t1.elapsed();
            let cpu = (cpu_s() - c0) * 1e9 / n as f64;
            let a2 = allocs();
            drop(hs);
            rt.close();
            (ns(arm, n), ns(cancel, n), a1 - a0, a2 - a1, cpu)
        }
        "tokio-delayqueue" | "tokio-delayqueue-steady" => {
            let trt = tokio_ct();
            let rounds = if system == "tokio-delayqueue" { 1 } else { 2 };
            trt.block_on(async {
                let mut dq: DelayQueue<u32> = DelayQueue::new();
                let mut keys = Vec::with_capacity(n);
                let mut out = (0.0, 0.0, 0, 0, 0.0);
                for _ in 0..rounds {
                    keys.clear();
                    let a0 = allocs();
                    let c0 = cpu_s();
                    let t0 = Instant::now();
                    for (i, d) in dl.iter().enumerate() {
                        keys.push(dq.insert(i as u32, *d));
                    }
                    let arm = t0.elapsed();
                    let a1 = allocs();
                    let t1 = Instant::now();
                    // As for spot-timer: each removal's result looked at, the count
                    // checked after the clock stops.
                    let mut removed = 0usize;
                    for &i in &order {
                        removed +=
                            usize::from((dq.remove(&keys[i as usize]).into_inner() as usize) < n);
                    }
                    let cancel = t1.elapsed();
                    assert_eq!(removed, n, "every key removes its entry");
                    let cpu = (cpu_s() - c0) * 1e9 / n as f64;
                    let a2 = allocs();
                    out = (ns(arm, n), ns(cancel, n), a1 - a0, a2 - a1, cpu);
                }
                out
            })
        }
        "tokio-sleep" => {
            let trt = tokio_ct();
            let _g = trt.enter();
            let mut ss = Vec::with_capacity(n);
            let a0 = allocs();
            let c0 = cpu_s();
            let t0 = Instant::now();
            for d in &dl {
                ss.push(armed_sleep(*d));
            }
            let arm = t0.elapsed();
            let a1 = allocs();
            let t1 = Instant::now();
            ss.clear(); // dropping a Sleep removes it from the timer wheel
            let cancel = t1.elapsed();
            let cpu = (cpu_s() - c0) * 1e9 / n as f64;
            let a2 = allocs();
            (ns(arm, n), ns(cancel, n), a1 - a0, a2 - a1, cpu)
        }
        s => panic!("w1: unknown system {s}"),
    }
}

// ---------------------------------------------------------------- W7 steady churn

/// A permutation of 0..n from `seed` (Fisher–Yates), the same for every system.
fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng(seed | 1);
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        p.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    p
}

/// W7: `n` live timers with random deadlines 1–60 s, then `m` pairs of "cancel a uniformly
/// random live timer and arm it again with a new random deadline". Returns (ns per pair,
/// process CPU ns per pair, allocations per pair).
fn w7_once(system: &str, n: usize, m: usize, seed: u64, shape: W7Shape) -> (f64, f64, f64) {
    let mut rng = Rng(seed | 1);
    let scale = shape.deadline_scale;
    let deadline = |r: &mut Rng| Duration::from_millis((1_000 + r.next() % 59_000) * scale);
    let per_owner = shape.per_owner;
    let initial: Vec<Duration> = (0..n).map(|_| deadline(&mut rng)).collect();
    let picks: Vec<(u32, Duration)> = (0..m)
        .map(|_| ((rng.next() % n as u64) as u32, deadline(&mut rng)))
        .collect();
    match system {
        // cancel + register: the host cancels by id, then arms the key again.
        // spot-supersede: the key registered again; spot-rearm: the same, naming the
        // generation it replaces (`Owner::rearm`, in place when it is idle).
        "spot" | "spot-supersede" | "spot-rearm" => {
            let rt = spot_runtime();
            let owners = spot_owners_of(&rt, n, 1, per_owner);
            let mut ids: Vec<TimerId> = initial
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    owners[i / per_owner]
                        .register_id(i as u64, TimerSpec::after(*d), 0, None)
                        .unwrap()
                })
                .collect();
            rt.sync().unwrap();
            let supersede = system != "spot";
            let rearm = system == "spot-rearm";
            let a0 = allocs();
            let c0 = cpu_s();
            let t0 = Instant::now();
            let mut ok = 0usize;
            for &(i, d) in &picks {
                let i = i as usize;
                if !supersede {
                    ok += usize::from(matches!(
                        rt.cancel_timer_nowait(ids[i]),
                        Ok(Some(Ok(EndReason::Cancelled)))
                    ));
                }
                let owner = &owners[i / per_owner];
                ids[i] = if rearm {
                    owner.rearm(ids[i], i as u64, TimerSpec::after(d), 0, None)
                } else {
                    owner.register_id(i as u64, TimerSpec::after(d), 0, None)
                }
                .unwrap();
            }
            rt.sync().unwrap();
            let t = t0.elapsed();
            let cpu = (cpu_s() - c0) * 1e9 / m as f64;
            let a = (allocs() - a0) as f64 / m as f64;
            assert!(supersede || ok == m, "every cancel ended its timer");
            rt.close();
            (ns(t, m), cpu, a)
        }
        "tokio-delayqueue" => {
            let trt = tokio_ct();
            trt.block_on(async {
                let mut dq: DelayQueue<u32> = DelayQueue::new();
                let mut keys: Vec<_> = initial
                    .iter()
                    .enumerate()
                    .map(|(i, d)| dq.insert(i as u32, *d))
                    .collect();
                let a0 = allocs();
                let c0 = cpu_s();
                let t0 = Instant::now();
                let mut removed = 0usize;
                for &(i, d) in &picks {
                    let i = i as usize;
                    removed += usize::from(dq.remove(&keys[i]).into_inner() as usize == i);
                    keys[i] = dq.insert(i as u32, d);
                }
                let t = t0.elapsed();
                let cpu = (cpu_s() - c0) * 1e9 / m as f64;
                let a = (allocs() - a0) as f64 / m as f64;
                assert_eq!(removed, m);
                (ns(t, m), cpu, a)
            })
        }
        // `reset`: DelayQueue's own way to move an entry's deadline.
        "tokio-delayqueue-reset" => {
            let trt = tokio_ct();
            trt.block_on(async {
                let mut dq: DelayQueue<u32> = DelayQueue::new();
                let keys: Vec<_> = initial
                    .iter()
                    .enumerate()
                    .map(|(i, d)| dq.insert(i as u32, *d))
                    .collect();
                let c0 = cpu_s();
                let a0 = allocs();
                let t0 = Instant::now();
                for &(i, d) in &picks {
                    dq.reset(&keys[i as usize], d);
                }
                let t = t0.elapsed();
                let cpu = (cpu_s() - c0) * 1e9 / m as f64;
                let a = (allocs() - a0) as f64 / m as f64;
                (ns(t, m), cpu, a)
            })
        }
        s => panic!("w7: unknown system {s}"),
    }
}

/// How W7's timers are spread: timers per owner, and a factor on the 1–60 s deadlines
/// (a run under callgrind, 50 times slower, must not see its timers fall due).
#[derive(Clone, Copy)]
struct W7Shape {
    per_owner: usize,
    deadline_scale: u64,
}

fn w7(system: &str, n: usize, m: usize, shape: W7Shape) {
    w7_once(system, n.min(20_000), m.min(20_000), 7, shape);
    let (pair, cpu, a) = w7_once(system, n, m, 12345, shape);
    println!("{{\"pair_ns\":{pair:.2},\"cpu_ns_per_pair\":{cpu:.2},\"allocs_per_pair\":{a:.4}}}");
}

/// A JSON number, or null when there is none (no lateness recorded).
fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".to_string()
    }
}

fn ns(d: Duration, n: usize) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn w1(system: &str, n: usize, random: bool, per_owner: usize) {
    // warm-up: a smaller round in the same process
    w1_once(system, n.min(20_000), 7, random, per_owner);
    let (arm, cancel, aa, ac, cpu) = w1_once(system, n, 12345, random, per_owner);
    println!(
        "{{\"arm_ns\":{arm:.2},\"cancel_ns\":{cancel:.2},\"arm_cancel_ns\":{:.2},\"cpu_ns_per_arm_cancel\":{cpu:.2},\"allocs_per_arm\":{:.4},\"allocs_per_cancel\":{:.4}}}",
        arm + cancel,
        aa as f64 / n as f64,
        ac as f64 / n as f64
    );
}

/// W1-tail: a first round of W1's arms, each timed on its own: how long the slowest
/// registrations take (a fault or a table's growth lands in one of them).
fn w1_tail(system: &str, n: usize) {
    let mut rng = Rng(12345);
    let dl: Vec<Duration> = (0..n).map(|_| rng.deadline()).collect();
    let mut lat: Vec<u64> = Vec::with_capacity(n);
    match system {
        "spot" => {
            let rt = spot_runtime();
            let owners = spot_owners(&rt, n, 1);
            rt.sync().unwrap();
            let mut ids: Vec<TimerId> = Vec::with_capacity(n);
            for (i, d) in dl.iter().enumerate() {
                let o = &owners[i / PER_OWNER];
                let t = Instant::now();
                ids.push(
                    o.register_id(i as u64, TimerSpec::after(*d), 0, None)
                        .unwrap(),
                );
                lat.push(t.elapsed().as_nanos() as u64);
            }
            rt.close();
        }
        "tokio-delayqueue" => {
            let trt = tokio_ct();
            trt.block_on(async {
                let mut dq: DelayQueue<u32> = DelayQueue::new();
                let mut keys = Vec::with_capacity(n);
                for (i, d) in dl.iter().enumerate() {
                    let t = Instant::now();
                    keys.push(dq.insert(i as u32, *d));
                    lat.push(t.elapsed().as_nanos() as u64);
                }
            });
        }
        s => panic!("w1tail: unknown system {s}"),
    }
    let stalled: u64 = lat.iter().filter(|&&x| x > 10_000).sum();
    let over_100us = lat.iter().filter(|&&x| x > 100_000).count();
    lat.sort_unstable();
    let q = |p: f64| lat[((n as f64 * p) as usize).min(n - 1)];
    println!(
        "{{\"arm_p50_ns\":{},\"arm_p99_ns\":{},\"arm_p9999_ns\":{},\"arm_max_us\":{:.1},\"arms_over_100us\":{over_100us},\"stalled_ns_per_arm\":{:.2}}}",
        q(0.5),
        q(0.99),
        q(0.9999),
        lat[n - 1] as f64 / 1e3,
        stalled as f64 / n as f64
    );
}

// ---------------------------------------------------------------- W2/W3 expiry

struct W2Out {
    records: u64,
    cpu: f64,
    hist: Arc<Hist>,
    crossings: Option<f64>,
}

/// W2's variants: timers due together (`same`) or with phases spread evenly over the
/// period (`spread`); a handler that records its lateness (`latency`, one clock read per
/// record) or does nothing but count (`noop`: the runtime's own cost per record).
#[derive(Clone, Copy)]
struct W2Opts {
    spread: bool,
    noop: bool,
}

impl W2Opts {
    /// Timer `i`'s offset from the common start.
    fn offset(self, i: usize, n: usize, period: Duration) -> Duration {
        if self.spread {
            period.mul_f64(i as f64 / n as f64)
        } else {
            Duration::ZERO
        }
    }
}

fn w2(system: &str, n: usize, seconds: f64, period_ms: u64, opts: W2Opts) {
    let period = Duration::from_millis(period_ms);
    let warm = Duration::from_millis(500);
    let measure = Duration::from_secs_f64(seconds);
    let hist = Arc::new(Hist::new());
    let out = match system {
        "spot" => {
            let rt = spot_runtime();
            let owners = spot_owners(&rt, n, 1);
            let start =
                Instant::now() + Duration::from_millis(200) + Duration::from_micros(5 * n as u64);
            let mut hs = Vec::with_capacity(n);
            for i in 0..n {
                let first =
                    (start + opts.offset(i, n, period)).saturating_duration_since(Instant::now());
                let spec = TimerSpec::every(period).first_due(first);
                hs.push(
                    owners[i / PER_OWNER]
                        .register(i as u64, spec, 0, None)
                        .unwrap(),
                );
            }
            let mut batch = Vec::with_capacity(1024);
            let mut done = Vec::with_capacity(1024);
            let t_begin = start + warm;
            let t_end = t_begin + measure;
            let (mut measuring, mut c0, mut s0, mut records) = (false, 0.0, rt.stats(), 0u64);
            loop {
                let now = Instant::now();
                if !measuring && now >= t_begin {
                    measuring = true;
                    c0 = cpu_s();
                    s0 = rt.stats();
                }
                if now >= t_end {
                    break;
                }
                rt.exchange(&done, &mut batch, 1024, Some(Duration::from_millis(5)))
                    .unwrap();
                done.clear();
                for rec in batch.drain(..) {
                    if let Record::Tick(t) = rec {
                        if rt.begin(&t) {
                            // the handler: count, lateness against the nominal due time
                            if measuring {
                                if !opts.noop {
                                    let due = start
                                        + opts.offset(t.key() as usize, n, period)
                                        + period * (t.tick().scheduled_index as u32 - 1);
                                    hist.add(late(Instant::now(), due));
                                }
                                records += 1;
                            }
                            done.push(t.complete(Outcome::Ok));
                        } else {
                            done.push(t.complete(Outcome::NotStarted));
                        }
                    }
                }
            }
            let cpu = cpu_s() - c0;
            let s1 = rt.stats();
            let rec = (s1.records_received - s0.records_received) as f64;
            let cross = (s1.host_crossings - s0.host_crossings) as f64;
            drop(hs);
            rt.close();
            W2Out {
                records,
                cpu,
                hist: hist.clone(),
                crossings: if rec > 0.0 { Some(cross / rec) } else { None },
            }
        }
        "tokio-interval" => {
            // #[tokio::main]'s default: the multi-thread runtime (one worker per core).
            let trt = tokio::runtime::Builder::new_multi_thread()
                .enable_time()
                .build()
                .unwrap();
            let count = Arc::new(AtomicU64::new(0));
            let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let start = tokio::time::Instant::now()
                + Duration::from_millis(200)
                + Duration::from_micros(5 * n as u64);
            for i in 0..n {
                let (h, c, m) = (hist.clone(), count.clone(), measuring.clone());
                let first = start + opts.offset(i, n, period);
                trt.spawn(async move {
                    let mut iv = tokio::time::interval_at(first, period);
                    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                    loop {
                        let due = iv.tick().await;
                        if m.load(Relaxed) {
                            if !opts.noop {
                                h.add(late(Instant::now(), due.into_std()));
                            }
                            c.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
            let start_std = start.into_std();
            std::thread::sleep((start_std + warm).saturating_duration_since(Instant::now()));
            let c0 = cpu_s();
            measuring.store(true, Relaxed);
            std::thread::sleep(measure);
            measuring.store(false, Relaxed);
            let cpu = cpu_s() - c0;
            let records = count.load(Relaxed);
            trt.shutdown_background();
            W2Out {
                records,
                cpu,
                hist: hist.clone(),
                crossings: None,
            }
        }
        "tokio-delayqueue" => {
            let trt = tokio_ct();
            let h = hist.clone();
            let (records, cpu) = trt.block_on(async move {
                let mut dq: DelayQueue<u32> = DelayQueue::with_capacity(n);
                let start = tokio::time::Instant::now()
                    + Duration::from_millis(200)
                    + Duration::from_micros(5 * n as u64);
                for i in 0..n {
                    dq.insert_at(i as u32, start + opts.offset(i, n, period));
                }
                let t_begin = start + warm;
                let t_end = t_begin + measure;
                let (mut measuring, mut c0, mut records) = (false, 0.0, 0u64);
                loop {
                    let e = tokio::select! {
                        e = poll_fn(|cx| dq.poll_expired(cx)) => e.expect("entry"),
                        _ = tokio::time::sleep_until(t_end) => break,
                    };
                    let now = tokio::time::Instant::now();
                    if !measuring && now >= t_begin {
                        measuring = true;
                        c0 = cpu_s();
                    }
                    let due = e.deadline();
                    if measuring {
                        if !opts.noop {
                            h.add(late(Instant::now(), due.into_std()));
                        }
                        records += 1;
                    }
                    let mut next = due + period;
                    while next <= now {
                        next += period; // skip late ticks (fixed rate)
                    }
                    dq.insert_at(e.into_inner(), next);
                }
                (records, cpu_s() - c0)
            });
            W2Out {
                records,
                cpu,
                hist: hist.clone(),
                crossings: None,
            }
        }
        s => panic!("w2: unknown system {s}"),
    };
    let rps = out.records as f64 / out.cpu.max(1e-9);
    println!(
        "{{\"records\":{},\"cpu_s\":{:.4},\"records_per_cpu_s\":{:.1},\"cpu_ns_per_record\":{:.1},\"lat_p50_us\":{},\"lat_p99_us\":{},\"lat_p999_us\":{},\"crossings_per_record\":{}}}",
        out.records,
        out.cpu,
        rps,
        1e9 / rps,
        json_num(out.hist.pct(50.0)),
        json_num(out.hist.pct(99.0)),
        json_num(out.hist.pct(99.9)),
        out.crossings.map_or("null".to_string(), |c| format!("{c:.6}"))
    );
}

// ---------------------------------------------------------------- W4 memory

fn w4(system: &str, n: usize) {
    let mut rng = Rng(99);
    let dl: Vec<Duration> = (0..n).map(|_| rng.deadline()).collect();
    let settle = || std::thread::sleep(Duration::from_millis(300));
    let before;
    let after;
    match system {
        "spot" => {
            before = rss_bytes();
            let rt = spot_runtime();
            let owners = spot_owners(&rt, n, 1);
            // kept by id, as a host holding a million timers would (16 bytes each)
            let mut hs = Vec::with_capacity(n);
            for (i, d) in dl.iter().enumerate() {
                hs.push(
                    owners[i / PER_OWNER]
                        .register_id(i as u64, TimerSpec::after(*d), 0, None)
                        .unwrap(),
                );
            }
            rt.sync().unwrap();
            settle();
            after = rss_bytes();
            assert_eq!(rt.stats().live_timers, n as u64);
            std::mem::forget(hs);
            std::mem::forget(rt);
        }
        "tokio-delayqueue" => {
            before = rss_bytes();
            let trt = tokio_ct();
            let (dq, keys) = trt.block_on(async {
                let mut dq: DelayQueue<u32> = DelayQueue::new();
                let keys: Vec<_> = dl
                    .iter()
                    .enumerate()
                    .map(|(i, d)| dq.insert(i as u32, *d))
                    .collect();
                (dq, keys)
            });
            settle();
            after = rss_bytes();
            std::mem::forget((dq, keys));
        }
        "tokio-sleep" => {
            before = rss_bytes();
            let trt = tokio_ct();
            let g = trt.enter();
            let ss: Vec<_> = dl.iter().map(|d| armed_sleep(*d)).collect();
            settle();
            after = rss_bytes();
            std::mem::forget((ss, g));
            std::mem::forget(trt);
        }
        s => panic!("w4: unknown system {s}"),
    }
    // What the host keeps per timer to cancel it later (included in bytes_per_timer).
    let handle = match system {
        "spot" => std::mem::size_of::<TimerId>(),
        "tokio-delayqueue" => std::mem::size_of::<tokio_util::time::delay_queue::Key>(),
        _ => std::mem::size_of::<usize>(), // a pinned box's pointer
    };
    println!(
        "{{\"rss_before\":{before},\"rss_after\":{after},\"bytes_per_timer\":{:.1},\"host_handle_bytes\":{handle},\"runtime_bytes_per_timer\":{:.1}}}",
        (after as f64 - before as f64) / n as f64,
        (after as f64 - before as f64) / n as f64 - handle as f64
    );
}

// ---------------------------------------------------------------- W6 registration

fn w6(system: &str, n: usize, threads: usize) {
    let per = n / threads;
    let dls: Vec<Vec<Duration>> = (0..threads)
        .map(|t| {
            let mut r = Rng(1000 + t as u64);
            (0..per).map(|_| r.deadline()).collect()
        })
        .collect();
    let barrier = std::sync::Barrier::new(threads + 1);
    let elapsed = match system {
        "spot" => {
            let rt = spot_runtime();
            let owners: Vec<Vec<Owner<u32>>> = (0..threads)
                .map(|t| spot_owners(&rt, per, 1 + (t * per) as u64))
                .collect();
            rt.sync().unwrap();
            let d = std::thread::scope(|s| {
                let mut js = Vec::new();
                for t in 0..threads {
                    let (os, dl, b) = (&owners[t], &dls[t], &barrier);
                    js.push(s.spawn(move || {
                        b.wait();
                        let t0 = Instant::now();
                        let hs: Vec<_> = dl
                            .iter()
                            .enumerate()
                            .map(|(i, d)| {
                                os[i / PER_OWNER]
                                    .register_id(i as u64, TimerSpec::after(*d), 0, None)
                                    .unwrap()
                            })
                            .collect();
                        (t0, hs)
                    }));
                }
                barrier.wait();
                let r: Vec<_> = js.into_iter().map(|j| j.join().unwrap()).collect();
                rt.sync().unwrap();
                let t0 = r.iter().map(|x| x.0).min().unwrap();
                let d = t0.elapsed();
                drop(r);
                d
            });
            rt.close();
            d
        }
        "tokio-delayqueue" => {
            // DelayQueue is !Sync: shared between threads behind a Mutex.
            let trt = tokio_ct();
            let dq: Mutex<DelayQueue<u32>> = Mutex::new(DelayQueue::new());
            let handle = trt.handle().clone();
            std::thread::scope(|s| {
                let mut js = Vec::new();
                for dl in dls.iter() {
                    let (b, dq, h) = (&barrier, &dq, handle.clone());
                    js.push(s.spawn(move || {
                        let _g = h.enter();
                        b.wait();
                        let t0 = Instant::now();
                        let ks: Vec<_> = dl
                            .iter()
                            .enumerate()
                            .map(|(i, d)| dq.lock().unwrap().insert(i as u32, *d))
                            .collect();
                        (t0, Instant::now(), ks)
                    }));
                }
                barrier.wait();
                let r: Vec<_> = js.into_iter().map(|j| j.join().unwrap()).collect();
                let t0 = r.iter().map(|x| x.0).min().unwrap();
                let t1 = r.iter().map(|x| x.1).max().unwrap();
                t1 - t0
            })
        }
        "tokio-sleep" => {
            let trt = tokio::runtime::Builder::new_multi_thread()
                .enable_time()
                .build()
                .unwrap();
            let handle = trt.handle().clone();
            std::thread::scope(|s| {
                let mut js = Vec::new();
                for dl in dls.iter() {
                    let (b, h) = (&barrier, handle.clone());
                    js.push(s.spawn(move || {
                        let _g = h.enter();
                        b.wait();
                        let t0 = Instant::now();
                        let ss: Vec<_> = dl.iter().map(|d| armed_sleep(*d)).collect();
                        (t0, Instant::now(), ss)
                    }));
                }
                barrier.wait();
                let r: Vec<_> = js.into_iter().map(|j| j.join().unwrap()).collect();
                let t0 = r.iter().map(|x| x.0).min().unwrap();
                let t1 = r.iter().map(|x| x.1).max().unwrap();
                t1 - t0
            })
        }
        s => panic!("w6: unknown system {s}"),
    };
    let total = per * threads;
    println!(
        "{{\"ns_per_register\":{:.2},\"registrations_per_s\":{:.0}}}",
        ns(elapsed, total),
        total as f64 / elapsed.as_secs_f64()
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let num = |i: usize| -> usize { a[i].parse().expect("number") };
    match a.get(1).map(String::as_str) {
        Some("w1") => w1(
            &a[2],
            num(3),
            a.get(4).is_some_and(|o| o == "random"),
            a.get(5).map_or(PER_OWNER, |_| num(5)).max(1),
        ),
        Some("w2") => {
            let opts = W2Opts {
                spread: a.get(6).is_some_and(|p| p == "spread"),
                noop: a.get(7).is_some_and(|h| h == "noop"),
            };
            w2(
                &a[2],
                num(3),
                a[4].parse().unwrap(),
                a[5].parse().unwrap(),
                opts,
            )
        }
        Some("w1tail") => w1_tail(&a[2], num(3)),
        Some("w7") => {
            let opt = |i: usize, default: usize| a.get(i).map_or(default, |_| num(i));
            let shape = W7Shape {
                per_owner: opt(5, PER_OWNER).max(1),
                deadline_scale: opt(6, 1).max(1) as u64,
            };
            w7(&a[2], num(3), num(4), shape)
        }
        Some("w4") => w4(&a[2], num(3)),
        Some("w6") => w6(&a[2], num(3), num(4)),
        _ => {
            eprintln!(
                "usage: spot-bench-rust w1|w1tail|w2|w4|w6|w7 <system> <n> [...]\n       \
                 w1 <system> <n> [in-order|random] [timers_per_owner=100]\n       \
                 w2 <system> <n> <seconds> <period_ms> [same|spread] [latency|noop]\n       \
                 w7 <system> <live> <pairs> [timers_per_owner=100] [deadline_scale=1]"
            );
            std::process::exit(2);
        }
    }
}
