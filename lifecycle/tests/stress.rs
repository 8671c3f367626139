//! Stress of the lifecycle (run by `make test-reliability`; ignored by `cargo test`):
//! sender threads address up to `LIFECYCLE_STRESS_SPOTS` Instance Spots with
//! `send_or_create` while the host loop handles messages and evicts idle Spots, in rounds
//! separated by an idle period that evicts everything. Checks, per round and at the end:
//! no message runs twice, every admitted message was handled or dropped with its Spot
//! (counted), every successful send was admitted, the live heap stays flat over rounds (no
//! leak) and RSS stays flat (no leak outside the allocator: the timer slots are mapped
//! directly).
//!
//! Sizes: LIFECYCLE_STRESS_THREADS (8), LIFECYCLE_STRESS_SPOTS (100000),
//! LIFECYCLE_STRESS_SECS (total seconds of load, 60), LIFECYCLE_STRESS_ROUNDS (6).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spot_lifecycle::*;

/// Counts live heap bytes: the leak check is on these (RSS also shows the allocator's own
/// retention across threads).
struct Counting;
static LIVE: AtomicU64 = AtomicU64::new(0);

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as u64, Relaxed);
        std::alloc::System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size() as u64, Relaxed);
        std::alloc::System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as u64, Relaxed);
        LIVE.fetch_sub(l.size() as u64, Relaxed);
        std::alloc::System.realloc(p, l, n)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

extern "C" {
    fn malloc_trim(pad: usize) -> i32;
    fn mallopt(param: i32, value: i32) -> i32;
}

fn trim() {
    // SAFETY: glibc's malloc_trim has no preconditions.
    unsafe { malloc_trim(0) };
}

/// Keeps glibc from retaining freed memory in ways that grow RSS over rounds while the
/// live heap stays flat, so that RSS shows what the runtime maps itself (timer slots).
/// Each round's new sender threads would spread the heap over up to 8 arenas per core
/// whose partly used pages add megabytes per round before they level off (measured: 41
/// to 66 MB over 10 rounds with the live heap at 19 MB); and freeing a large block raises
/// the thresholds below which glibc keeps freed memory at an arena's top (up to 64 MB),
/// which a non-main arena then never gives back (measured: one arena at 35 MB).
fn allocator_gives_memory_back() {
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_MMAP_THRESHOLD: i32 = -3;
    const M_ARENA_MAX: i32 = -8;
    for (param, value) in [
        (M_ARENA_MAX, 1),
        // Setting either threshold fixes both (no dynamic raise).
        (M_MMAP_THRESHOLD, 128 << 10),
        (M_TRIM_THRESHOLD, 128 << 10),
    ] {
        // SAFETY: glibc's mallopt has no preconditions; it returns 0 when it refuses.
        assert_eq!(unsafe { mallopt(param, value) }, 1, "mallopt({param})");
    }
}

#[test]
#[ignore = "stress: run by make test-reliability"]
fn lifecycle_stress_no_message_lost_or_run_twice_and_memory_flat() {
    let threads = env("LIFECYCLE_STRESS_THREADS", 8);
    let spots = env("LIFECYCLE_STRESS_SPOTS", 100_000);
    let secs = env("LIFECYCLE_STRESS_SECS", 60);
    let rounds = env("LIFECYCLE_STRESS_ROUNDS", 6).max(2);
    allocator_gives_memory_back();
    let idle = Duration::from_millis(300);
    let node = Node::start(
        NodeConfig {
            active_cap: spots + 1,
            instance_idle_timeout: Some(idle),
            // Small lanes keep the work outstanding at once (and so the timer table's high
            // water mark) bounded, so RSS over rounds shows leaks, not load.
            application_lane: LaneLimits {
                items: 8,
                bytes: 8 << 10,
            },
            ..NodeConfig::default()
        },
        Arc::new(EmbeddedStore::new()),
        None,
    )
    .unwrap();
    let ok_sends = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    // Tags of the messages handled this round (a tag names its round, so a message can
    // run twice only within one).
    let mut seen: HashSet<u64> = HashSet::new();
    let mut handled_before = 0;
    let mut rss_after_round = Vec::new();
    let mut heap_after_round = Vec::new();
    let per_round = Duration::from_secs(secs) / rounds as u32;
    for round in 0..rounds {
        let stop = Arc::new(AtomicBool::new(false));
        let senders: Vec<_> = (0..threads)
            .map(|t| {
                let (node, stop, ok, refused) = (
                    node.clone(),
                    stop.clone(),
                    ok_sends.clone(),
                    refused.clone(),
                );
                std::thread::spawn(move || {
                    let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ (t + 1) ^ (round << 32);
                    let mut seq = 0u64;
                    while !stop.load(Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let id = 1 + x % spots;
                        // A message names itself: round, thread and sequence number.
                        let tag = (round << 56) | (t << 48) | seq;
                        match node.send_or_create(SpotId(id), tag.to_le_bytes()) {
                            Ok(_) => {
                                ok.fetch_add(1, Relaxed);
                                seq += 1;
                            }
                            Err(
                                LifecycleError::CapacityExceeded { .. }
                                | LifecycleError::StaleRoute { .. },
                            ) => {
                                refused.fetch_add(1, Relaxed);
                                std::thread::yield_now();
                            }
                            Err(e) => panic!("unexpected: {e}"),
                        }
                    }
                })
            })
            .collect();
        let t0 = Instant::now();
        let (mut batch, mut done) = (Vec::new(), Vec::new());
        // Load, then an idle period long enough for every Spot to be evicted.
        while t0.elapsed() < per_round + idle * 4 || node.stats().active_spots > 1 {
            if t0.elapsed() >= per_round && !stop.load(Relaxed) {
                stop.store(true, Relaxed);
            }
            assert!(
                t0.elapsed() < per_round + Duration::from_secs(60),
                "eviction stalled"
            );
            node.exchange(&done, &mut batch, 8192, Some(Duration::from_millis(2)))
                .unwrap();
            done.clear();
            for r in batch.drain(..) {
                if node.begin(&r) {
                    if let SpotRecord::Message(m) = &r {
                        let tag = u64::from_le_bytes(m.payload().try_into().unwrap());
                        assert!(seen.insert(tag), "message {tag:#x} ran twice");
                    }
                    done.push(r.complete(Outcome::Ok));
                } else {
                    done.push(r.complete(Outcome::NotStarted));
                }
            }
            for _ in 0..64 {
                if node.evict_idle() == 0 {
                    break;
                }
            }
        }
        for s in senders {
            s.join().unwrap();
        }
        node.complete(&done).unwrap();
        let s = node.stats();
        assert_eq!(
            s.messages_admitted,
            ok_sends.load(Relaxed),
            "every Ok send was admitted"
        );
        assert_eq!(
            s.messages_admitted,
            s.messages_completed + s.messages_dropped,
            "admitted = handled + dropped: {s:?}"
        );
        assert_eq!(
            s.messages_completed - handled_before,
            seen.len() as u64,
            "each handled once"
        );
        handled_before = s.messages_completed;
        seen = HashSet::new();
        trim();
        rss_after_round.push(rss_kib());
        heap_after_round.push(LIVE.load(Relaxed) / 1024);
        println!(
            "FIGURES round {round}: admitted {} handled {} dropped {} refused {} created {} evicted {} heap_kib {} rss_kib {}",
            s.messages_admitted,
            s.messages_completed,
            s.messages_dropped,
            refused.load(Relaxed),
            s.created,
            s.evicted,
            heap_after_round.last().unwrap(),
            rss_after_round.last().unwrap()
        );
    }
    // No leak: the live heap and RSS after a round (everything evicted) stay within 2% and
    // 10% of round 1's (round 0 grows the tables to their working size; RSS also follows
    // the round's peak of live timers, whose slots stay mapped, in steps of 2 MiB pages).
    within_of_round_1("live heap", &heap_after_round, 0.02);
    within_of_round_1("RSS", &rss_after_round, 0.10);
    node.shutdown();
}

/// Every figure from round 2 on stays below round 1's plus `limit` (a fraction of it).
fn within_of_round_1(what: &str, per_round: &[u64], limit: f64) {
    let base = per_round[1] as f64;
    for (i, v) in per_round.iter().enumerate().skip(2) {
        let growth = (*v as f64 - base) / base;
        assert!(
            growth < limit,
            "{what} grew {:.2}% by round {i}: {per_round:?}",
            growth * 100.0
        );
    }
}
