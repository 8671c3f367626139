//! A long run of a node that must keep itself alive (run by `make test-reliability`;
//! ignored by `cargo test`): owner lease 0.5 s, idle timeout 0.2 s, 10,000 Instance Spots,
//! senders for `KEEPALIVE_SECS` (default 60) and no call to `evict_idle` anywhere. Checks,
//! from what the public API shows:
//! - the Entry and the User Spot answer every send throughout (the node renews its own
//!   lease: nothing is given up);
//! - every Instance Spot is evicted within the idle timeout plus two sweeps of the catalog
//!   (a sweep: one scan per 64 places), counted in the node's own eviction passes (read by a
//!   sampler; the passes between the two samples around a Spot's idle moment are the
//!   measure's uncertainty, which the check allows for), not in
//!   seconds — so a slow machine is no failure, a node that stops scanning is;
//! - admitted == handled + dropped once quiet, and no message runs twice.
//!
//! Sizes: KEEPALIVE_SECS (60), KEEPALIVE_SPOTS (10000).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spot_lifecycle::*;
use spot_timer_core::ClockKind;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const ENTRY: SpotId = SpotId(1_000_000_001);
const USER: SpotId = SpotId(1_000_000_002);
const TIMEOUT: Duration = Duration::from_millis(200);

#[derive(Default)]
struct Log {
    /// Per Instance Spot: when its last message ran (node clock, ns).
    last_ran: HashMap<u64, u64>,
    /// (spot, the time it became evictable, eviction passes counted when it closed).
    evictions: Vec<(u64, u64, u64)>,
    /// Non-IdleEvicted closes of Instance Spots.
    other_closes: Vec<(u64, CloseReason)>,
    /// Every message's sequence number, to find one run twice.
    seen: std::collections::HashSet<u64>,
    twice: u64,
}

#[test]
#[ignore = "long: make test-reliability"]
fn a_node_keeps_its_lease_and_evicts_on_its_own_for_a_minute() {
    let secs = env("KEEPALIVE_SECS", 60);
    let spots = env("KEEPALIVE_SPOTS", 10_000);
    let store = Arc::new(EmbeddedStore::new());
    let log: Arc<Mutex<Log>> = Arc::default();
    let node_cell: Arc<Mutex<Option<std::sync::Weak<Node>>>> = Arc::default();
    // The node's eviction passes over time: (node clock, passes), sampled every ms.
    let timeline: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let on_close: ClosingCallback = {
        let (log, node_cell) = (log.clone(), node_cell.clone());
        Arc::new(move |spot, kind, reason| {
            let Some(node) = node_cell.lock().unwrap().as_ref().and_then(|w| w.upgrade()) else {
                return;
            };
            if kind != SpotKind::Instance {
                return;
            }
            let passes = node.stats().eviction_passes;
            let mut l = log.lock().unwrap();
            if reason == CloseReason::IdleEvicted {
                // (A Spot whose only message never started has no time of its own to measure.)
                if let Some(last) = l.last_ran.remove(&spot.0) {
                    let evictable = last + TIMEOUT.as_nanos() as u64;
                    l.evictions.push((spot.0, evictable, passes));
                }
            } else {
                l.other_closes.push((spot.0, reason));
            }
        })
    };
    let config = NodeConfig {
        node: NodeId(1),
        entry: ENTRY,
        clock: ClockKind::Real,
        owner_lease: Some(Duration::from_millis(500)),
        instance_idle_timeout: Some(TIMEOUT),
        on_close: Some(on_close),
        ..NodeConfig::default()
    };
    let node = Node::start(config, store, None).unwrap();
    *node_cell.lock().unwrap() = Some(Arc::downgrade(&node));
    node.create_user_spot(USER).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let dispatcher = {
        let (node, log, stop) = (node.clone(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut done, mut out) = (Vec::new(), Vec::new());
            while !stop.load(SeqCst) {
                out.clear();
                let _ = node.exchange(&done, &mut out, 1024, Some(Duration::from_millis(5)));
                done.clear();
                let now = node.now();
                for r in &out {
                    if node.begin(r) {
                        if let SpotRecord::Message(m) = r {
                            let seq = u64::from_le_bytes(m.payload()[..8].try_into().unwrap());
                            let mut l = log.lock().unwrap();
                            if !l.seen.insert(seq) {
                                l.twice += 1;
                            }
                            if m.spot().0 < spots {
                                l.last_ran.insert(m.spot().0, now);
                            }
                        }
                        done.push(r.complete(Outcome::Ok));
                    } else {
                        done.push(r.complete(Outcome::NotStarted));
                    }
                }
            }
            let _ = node.complete(&done);
        })
    };
    let sampler = {
        let (node, timeline, stop) = (node.clone(), timeline.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                let s = (node.now(), node.stats().eviction_passes);
                timeline.lock().unwrap().push(s);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };

    let seq = Arc::new(AtomicU64::new(0));
    let failed_entry_user = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let senders: Vec<_> = (0..2u64)
        .map(|t| {
            let (node, seq, failed) = (node.clone(), seq.clone(), failed_entry_user.clone());
            std::thread::spawn(move || {
                let mut k = 0u64;
                let mut sent = 0u64;
                while Instant::now() < until {
                    k += 1;
                    // A window of hot ids that moves on, so the ones behind go idle.
                    let window = (k / 2000 + t * 3) % (spots / 500).max(1);
                    let id = window * 500 + (k * 7919) % 500;
                    let n = seq.fetch_add(1, SeqCst).to_le_bytes();
                    match node.send_or_create(SpotId(id % spots), n) {
                        Ok(_) => sent += 1,
                        // A lane full behind a slow host is a true refusal.
                        Err(LifecycleError::CapacityExceeded { .. }) => {}
                        Err(e) => panic!("send_or_create({id}): {e}"),
                    }
                    if k.is_multiple_of(100) {
                        for target in [ENTRY, USER] {
                            let n = seq.fetch_add(1, SeqCst).to_le_bytes();
                            match node.send(target, n) {
                                Ok(()) | Err(LifecycleError::CapacityExceeded { .. }) => {}
                                Err(e) => {
                                    eprintln!("{target:?} refused: {e}");
                                    failed.fetch_add(1, SeqCst);
                                }
                            }
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                sent
            })
        })
        .collect();
    let sent: u64 = senders.into_iter().map(|s| s.join().unwrap()).sum();
    // Quiet: every Instance Spot goes on its own (bounded: only a stall reaches it).
    let quiet_until = Instant::now() + Duration::from_secs(120);
    while node.stats().active_spots > 2 && Instant::now() < quiet_until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = node.stats();
    stop.store(true, SeqCst);
    dispatcher.join().unwrap();
    sampler.join().unwrap();

    let l = log.lock().unwrap();
    let timeline = timeline.lock().unwrap();
    // Passes counted at the moment a Spot became evictable lie between the samples just
    // before and just after it (the sampler sleeps 1 ms, longer on a busy machine): the
    // wait measured from the sample before is at most the true wait plus the passes
    // between those two samples, which the check allows for.
    let bracket = |t: u64| {
        let i = timeline.partition_point(|&(at, _)| at <= t);
        let before = if i == 0 { 0 } else { timeline[i - 1].1 };
        let after = timeline.get(i).map_or(before, |s| s.1);
        (before, after)
    };
    let sweep = spots.div_ceil(SCAN_LIMIT as u64);
    let (mut worst, mut worst_excess, mut widest) = (0u64, 0i64, 0u64);
    for &(_, evictable, passes) in &l.evictions {
        let (before, after) = bracket(evictable);
        let waited = passes.saturating_sub(before);
        worst = worst.max(waited);
        widest = widest.max(after - before);
        worst_excess = worst_excess.max(waited as i64 - (after - before) as i64);
    }
    println!(
        "FIGURES keep-alive: {secs} s, {sent} sends, {} evictions, {} eviction passes, worst \
         eviction {worst} passes after its Spot became evictable (bound {} plus the passes \
         between two samples, at most {widest}), {} Entry/User refusals, {} authority lost, \
         admitted {} = completed {} + dropped {}",
        l.evictions.len(),
        s.eviction_passes,
        2 * sweep + 2,
        failed_entry_user.load(SeqCst),
        s.authority_lost,
        s.messages_admitted,
        s.messages_completed,
        s.messages_dropped
    );
    assert_eq!(
        s.active_spots, 2,
        "every Instance Spot evicted on its own: {s:?}"
    );
    assert_eq!(
        failed_entry_user.load(SeqCst),
        0,
        "Entry and User answered throughout"
    );
    assert_eq!(s.authority_lost, 0, "the lease was renewed throughout");
    assert!(
        l.other_closes.is_empty(),
        "{:?}",
        &l.other_closes[..5.min(l.other_closes.len())]
    );
    assert!(
        worst_excess <= (2 * sweep + 2) as i64,
        "an idle Spot waited more than two sweeps ({}) and two passes: {worst_excess} beyond \
         the sampling's uncertainty",
        2 * sweep
    );
    assert_eq!(l.twice, 0, "a message ran twice");
    assert_eq!(
        s.messages_admitted,
        s.messages_completed + s.messages_dropped,
        "admitted == handled + dropped"
    );
    assert!(sent > 0 && !l.evictions.is_empty());
    node.shutdown();
}
