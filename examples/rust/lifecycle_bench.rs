//! Lifecycle benchmark rows: activations per second, send→handler records per CPU-second,
//! the cost of one idle-eviction pass at 10,000 and 1,000,000 Spots, and heap bytes per
//! idle Spot. Prints one JSON object per row; medians of `--repeats` runs with min–max.
//!
//! ```text
//! cargo run --release -p spot-lifecycle --example lifecycle_bench -- [--repeats N] [--big N]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spot_lifecycle::*;
use spot_timer_core::{ClockKind, ManualClock};

/// Counts live heap bytes, to measure what an idle Spot costs.
struct Counting;
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as i64 - l.size() as i64, Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn cpu_seconds() -> f64 {
    let mut ts = libc_timespec::default();
    // SAFETY: a valid pointer to a timespec; CLOCK_PROCESS_CPUTIME_ID is 2 on Linux.
    unsafe { clock_gettime(2, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[repr(C)]
#[derive(Default)]
struct libc_timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut libc_timespec) -> i32;
}

fn manual_node(idle: Option<Duration>, cap: u64) -> Arc<Node> {
    Node::start(
        NodeConfig {
            clock: ClockKind::Manual(ManualClock::new()),
            instance_idle_timeout: idle,
            active_cap: cap,
            ..NodeConfig::default()
        },
        Arc::new(EmbeddedStore::new()),
        None,
    )
    .unwrap()
}

fn drain(node: &Node) -> u64 {
    let (mut batch, mut done) = (Vec::new(), Vec::new());
    let mut n = 0;
    loop {
        node.advance(Duration::ZERO).unwrap();
        node.exchange(&done, &mut batch, 8192, Some(Duration::ZERO))
            .unwrap();
        done.clear();
        if batch.is_empty() {
            return n;
        }
        for r in batch.drain(..) {
            if node.begin(&r) {
                n += 1;
            }
            done.push(r.complete(Outcome::Ok));
        }
    }
}

/// Activations per second: `send_or_create` of new ids (store reservation, factory,
/// owner, publication, first message).
fn activations(n: u64) -> f64 {
    let node = manual_node(None, n + 1);
    let t0 = Instant::now();
    for i in 0..n {
        node.send_or_create(SpotId(i), *b"x").unwrap();
    }
    let dt = t0.elapsed().as_secs_f64();
    drain(&node);
    n as f64 / dt
}

/// A node on the real clock with User Spots `0..spots` (never evicted).
fn user_spots_node(spots: u64) -> Arc<Node> {
    let node = Node::start(
        NodeConfig {
            instance_idle_timeout: None,
            ..NodeConfig::default()
        },
        Arc::new(EmbeddedStore::new()),
        None,
    )
    .unwrap();
    for i in 0..spots {
        node.create_user_spot(SpotId(i)).unwrap();
    }
    node
}

/// A host whose handler only counts: its batch buffer and the completions it hands back
/// with its next exchange.
#[derive(Default)]
struct Host {
    batch: Vec<SpotRecord>,
    done: Vec<SpotCompletion>,
}

impl Host {
    /// One exchange (waiting up to `timeout`) and its batch; returns how many ran.
    fn handle_ready(&mut self, node: &Node, timeout: Duration) -> u64 {
        node.exchange(&self.done, &mut self.batch, 8192, Some(timeout))
            .unwrap();
        self.done.clear();
        let mut ran = 0;
        for r in self.batch.drain(..) {
            if node.begin(&r) {
                ran += 1;
            }
            self.done.push(r.complete(Outcome::Ok));
        }
        ran
    }
}

/// Records per CPU-second from `send` to the handler's completion, on the real clock: a
/// sender thread and the host thread, `spots` Spots.
fn send_to_handler(spots: u64, messages: u64) -> f64 {
    let node = user_spots_node(spots);
    let cpu0 = cpu_seconds();
    let sender = {
        let node = node.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while i < messages {
                match node.send(SpotId(i % spots), *b"payload!") {
                    Ok(()) => i += 1,
                    Err(LifecycleError::CapacityExceeded { .. }) => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let mut host = Host::default();
    let mut handled = 0;
    while handled < messages {
        handled += host.handle_ready(&node, Duration::from_millis(10));
    }
    sender.join().unwrap();
    node.complete(&host.done).unwrap();
    let cpu = cpu_seconds() - cpu0;
    node.shutdown();
    messages as f64 / cpu
}

/// Nanoseconds per eviction pass among `spots` Instance Spots none of which is idle yet
/// (each pass examines 64), and per pass that evicts.
fn eviction_pass(spots: u64) -> (f64, f64, f64) {
    let node = manual_node(Some(Duration::from_secs(10)), spots + 1);
    for i in 0..spots {
        node.send_or_create(SpotId(i), *b"").unwrap();
    }
    drain(&node);
    let live0 = LIVE.load(Relaxed);
    let passes = 20_000u64;
    let t0 = Instant::now();
    for _ in 0..passes {
        assert_eq!(node.evict_idle(), 0);
    }
    let examine = t0.elapsed().as_nanos() as f64 / passes as f64;
    node.advance(Duration::from_secs(11)).unwrap();
    let t0 = Instant::now();
    let mut evicting = 0u64;
    let mut evicted = 0;
    while evicted < 64 * 100 && evicted < spots as usize {
        evicted += node.evict_idle();
        evicting += 1;
    }
    let evict = t0.elapsed().as_nanos() as f64 / evicting as f64;
    let _ = live0;
    (
        examine,
        evict,
        node.stats().eviction_examined as f64 / node.stats().eviction_passes as f64,
    )
}

/// Send→handler on one thread, in the shape of the C and Python rows: a window of
/// messages sent round-robin to `spots` User Spots, then handled until none is left.
fn send_then_handle(spots: u64, messages: u64) -> f64 {
    let node = user_spots_node(spots);
    let cpu0 = cpu_seconds();
    let mut host = Host::default();
    let (mut sent, mut handled) = (0, 0);
    while sent < messages {
        let window = (messages - sent).min(100_000);
        for k in sent..sent + window {
            node.send(SpotId(k % spots), *b"payload!").unwrap();
        }
        sent += window;
        while handled < sent {
            handled += host.handle_ready(&node, Duration::from_millis(50));
        }
    }
    node.complete(&host.done).unwrap();
    let cpu = cpu_seconds() - cpu0;
    node.shutdown();
    messages as f64 / cpu
}

/// Heap bytes per idle Instance Spot (lifecycle layer and the timer core's owner state).
fn bytes_per_idle_spot(spots: u64) -> f64 {
    let node = manual_node(None, spots + 2);
    node.send_or_create(SpotId(u64::MAX - 1), *b"").unwrap();
    drain(&node);
    let before = LIVE.load(Relaxed);
    for i in 0..spots {
        node.send_or_create(SpotId(i), *b"").unwrap();
    }
    drain(&node);
    let after = LIVE.load(Relaxed);
    (after - before) as f64 / spots as f64
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn row(name: &str, unit: &str, v: Vec<f64>) {
    let (m, lo, hi) = median(v);
    println!("{{\"row\":\"{name}\",\"unit\":\"{unit}\",\"median\":{m:.1},\"min\":{lo:.1},\"max\":{hi:.1}}}");
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let opt = |name: &str, d: u64| {
        a.iter()
            .position(|x| x == name)
            .and_then(|i| a.get(i + 1))
            .map_or(d, |v| v.parse().unwrap())
    };
    let repeats = opt("--repeats", 5);
    let big = opt("--big", 1_000_000);
    row(
        "activations per second (send_or_create of a new id)",
        "per s",
        (0..repeats).map(|_| activations(100_000)).collect(),
    );
    row(
        "send→handler records per CPU-second, 1,000 Spots, a sending thread beside the handling one (Rust)",
        "per CPU-s",
        (0..repeats)
            .map(|_| send_to_handler(1_000, 500_000))
            .collect(),
    );
    row(
        "send→handler records per CPU-second, 1,000 Spots, one thread: a window sent, then handled (Rust)",
        "per CPU-s",
        (0..repeats)
            .map(|_| send_then_handle(1_000, 500_000))
            .collect(),
    );
    for spots in [10_000, big] {
        let runs: Vec<(f64, f64, f64)> =
            (0..repeats.min(3)).map(|_| eviction_pass(spots)).collect();
        row(
            &format!("eviction pass, nothing idle, {spots} Spots"),
            "ns per pass",
            runs.iter().map(|r| r.0).collect(),
        );
        row(
            &format!("eviction pass that evicts, {spots} Spots"),
            "ns per pass",
            runs.iter().map(|r| r.1).collect(),
        );
        row(
            &format!("Spots examined per pass, {spots} Spots"),
            "Spots",
            runs.iter().map(|r| r.2).collect(),
        );
    }
    row(
        "heap bytes per idle Instance Spot (100,000)",
        "bytes",
        (0..repeats.min(3))
            .map(|_| bytes_per_idle_spot(100_000))
            .collect(),
    );
}
