//! The Spot lifecycle, live: an actor-style workload on one node (real clock). A sender
//! thread addresses `--spots` Instance Spots by id with `send_or_create`, so each is created
//! on its first message; the host loop handles messages and the Spots' reminder timers in
//! one exchange per batch; the node evicts idle Spots on its own. After `--seconds` of load
//! the demo drains: it keeps exchanging until every admitted message was handled (or
//! dropped with its Spot) and every Instance Spot was evicted — however long a busy machine
//! takes; only a stall (nothing handled or evicted for `--stall-s`) ends it early.
//!
//! ```text
//! cargo run --release -p spot-lifecycle --example lifecycle_demo -- \
//!     [--seconds N] [--spots N] [--rate MSGS_PER_S] [--idle-ms N] [--stall-s N]
//! ```
//!
//! Prints a progress line, then a closing table. It judges what it did, not how fast: it
//! exits non-zero when a message was lost (admitted but neither handled nor dropped with
//! its Spot), a successful send was not admitted, or the Spots were not evicted. Rates are
//! printed, never checked.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spot_lifecycle::*;

struct Args {
    seconds: u64,
    spots: u64,
    rate: u64,
    idle_ms: u64,
    stall_s: u64,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 6,
        spots: 100_000,
        rate: 200_000,
        idle_ms: 1_500,
        stall_s: 120,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i + 1 < v.len() {
        let n: u64 = v[i + 1].parse().expect("a number");
        match v[i].as_str() {
            "--seconds" => a.seconds = n,
            "--spots" => a.spots = n,
            "--rate" => a.rate = n,
            "--idle-ms" => a.idle_ms = n,
            "--stall-s" => a.stall_s = n,
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    a
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

fn cpu_seconds() -> f64 {
    // utime + stime of the whole process, in clock ticks (100 Hz on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Sends at `rate` messages per second until `stop`: the first pass addresses every id in
/// order (each is created by its first message), then ids at random.
fn sender(
    node: Arc<Node>,
    a: &Args,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let t0 = Instant::now();
    let mut n: u64 = 0;
    while !stop.load(Relaxed) {
        let due = (t0.elapsed().as_secs_f64() * a.rate as f64) as u64;
        if n >= due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let id = if n < a.spots {
            n
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % a.spots
        };
        match node.send_or_create(SpotId(id + 1), n.to_le_bytes()) {
            Ok(_) => sent.fetch_add(1, Relaxed),
            Err(_) => refused.fetch_add(1, Relaxed),
        };
        n += 1;
    }
}

fn main() -> ExitCode {
    let a = args();
    let rss0 = rss_kib();
    let cpu0 = cpu_seconds();
    let node = Node::start(
        NodeConfig {
            active_cap: a.spots + 1,
            instance_idle_timeout: Some(Duration::from_millis(a.idle_ms)),
            ..NodeConfig::default()
        },
        Arc::new(EmbeddedStore::new()),
        None,
    )
    .expect("node");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let load = {
        let (node, stop, sent, refused) =
            (node.clone(), stop.clone(), sent.clone(), refused.clone());
        let a = Args { ..a };
        std::thread::spawn(move || sender(node, &a, stop, sent, refused))
    };
    let load_for = Duration::from_secs(a.seconds);
    let stall = Duration::from_secs(a.stall_s);
    println!(
        "lifecycle demo: {} Instance Spots created on demand, {} msgs/s for {:.1} s, idle timeout {} ms; \
         then drained until every message ran and every idle Spot was evicted",
        a.spots,
        a.rate,
        load_for.as_secs_f64(),
        a.idle_ms
    );
    let t0 = Instant::now();
    let (mut batch, mut done) = (Vec::new(), Vec::new());
    let (mut messages, mut ticks, mut reminders) = (0u64, 0u64, 0u64);
    let mut peak_active = 0u64;
    let mut peak_rss = rss0;
    let mut next_progress = Duration::from_millis(250);
    let mut last = (Instant::now(), 0u64);
    let mut load_ended: Option<Duration> = None;
    // The last moment something was handled or evicted: a drain that makes no progress
    // for `stall` is a failure, a slow one is not.
    let mut progress = (Instant::now(), 0u64, 0u64);
    let mut stalled = false;
    loop {
        let now = t0.elapsed();
        if now >= load_for && !stop.load(Relaxed) {
            stop.store(true, Relaxed);
            load_ended = Some(now);
        }
        let s = node.stats();
        if load_ended.is_some()
            && s.messages_admitted == s.messages_completed + s.messages_dropped
            && s.active_spots == 1
            && done.is_empty()
        {
            break;
        }
        if (s.messages_completed, s.evicted) != (progress.1, progress.2) {
            progress = (Instant::now(), s.messages_completed, s.evicted);
        } else if progress.0.elapsed() >= stall {
            stalled = true;
            break;
        }
        node.exchange(&done, &mut batch, 8192, Some(Duration::from_millis(5)))
            .expect("exchange");
        done.clear();
        for rec in batch.drain(..) {
            if !node.begin(&rec) {
                done.push(rec.complete(Outcome::NotStarted));
                continue;
            }
            match &rec {
                SpotRecord::Message(m) => {
                    messages += 1;
                    // Every 16th message sets the Spot's reminder (a one-shot timer).
                    if messages.is_multiple_of(16) {
                        if let Ok(s) = node.instance(m.spot()) {
                            if node.after(&s, 1, Duration::from_millis(300), 0).is_ok() {
                                reminders += 1;
                            }
                        }
                    }
                }
                SpotRecord::Tick(_) => ticks += 1,
            }
            done.push(rec.complete(Outcome::Ok));
        }
        peak_active = peak_active.max(s.active_spots);
        if now >= next_progress {
            next_progress += Duration::from_millis(250);
            peak_rss = peak_rss.max(rss_kib());
            let rate = (messages - last.1) as f64 / last.0.elapsed().as_secs_f64();
            last = (Instant::now(), messages);
            let phase = if load_ended.is_some() {
                "drain"
            } else {
                "load "
            };
            print!(
                "\r  {phase} t={:6.2}s active {:>7} created {:>7} evicted {:>7} handled {:>9} ({:>8.0}/s) ticks {:>7}   ",
                now.as_secs_f64(),
                s.active_spots,
                s.created,
                s.evicted,
                messages,
                rate,
                ticks
            );
            let _ = std::io::stdout().flush();
        }
    }
    load.join().unwrap();
    // Hand back the last completions.
    node.complete(&done).expect("complete");
    let elapsed = t0.elapsed().as_secs_f64();
    let drain = elapsed - load_ended.map_or(elapsed, |l| l.as_secs_f64());
    let cpu = cpu_seconds() - cpu0;
    let s = node.stats();
    let t = node.timer_stats();
    println!();
    println!();
    println!("| what | value |");
    println!("|---|---|");
    println!(
        "| Instance Spots created (factory runs) | {} |",
        s.created - 1
    );
    println!("| evicted idle (closing callback first) | {} |", s.evicted);
    println!(
        "| active at the end (Entry Spot included) | {} |",
        s.active_spots
    );
    println!("| peak active Spots | {peak_active} |");
    println!(
        "| messages sent / handled / dropped with their Spot / refused | {} / {} / {} / {} |",
        sent.load(Relaxed),
        s.messages_completed,
        s.messages_dropped,
        refused.load(Relaxed)
    );
    println!("| reminder timers set / ticks handled | {reminders} / {ticks} |");
    println!(
        "| refusals: application lane / lifecycle lane / node inbound / activation | {} / {} / {} / {} |",
        s.rejected_application_lane,
        s.rejected_lifecycle_lane,
        s.rejected_node_inbound,
        s.rejected_activation
    );
    println!(
        "| messages handled per second (wall) / per CPU-second | {:.0} / {:.0} |",
        messages as f64 / elapsed,
        messages as f64 / cpu.max(1e-9)
    );
    println!(
        "| records per host crossing | {:.1} |",
        t.records_received as f64 / t.host_crossings.max(1) as f64
    );
    println!(
        "| eviction passes / Spots examined per pass | {} / {:.1} |",
        s.eviction_passes,
        s.eviction_examined as f64 / s.eviction_passes.max(1) as f64
    );
    println!(
        "| memory per active Spot at the peak (RSS growth / peak active) | {:.0} bytes |",
        (peak_rss.saturating_sub(rss0) * 1024) as f64 / peak_active.max(1) as f64
    );
    println!("| CPU | {cpu:.2} s in {elapsed:.2} s (the drain after the load: {drain:.2} s) |");
    let lost = s.messages_admitted != s.messages_completed + s.messages_dropped;
    let stuck = s.active_spots != 1;
    let unadmitted = sent.load(Relaxed) != s.messages_admitted;
    if stalled {
        eprintln!(
            "FAIL: nothing handled or evicted for {} s (a stall, not a slow machine)",
            a.stall_s
        );
    }
    if unadmitted {
        eprintln!(
            "FAIL: {} sends succeeded but {} messages were admitted",
            sent.load(Relaxed),
            s.messages_admitted
        );
    }
    if lost {
        eprintln!(
            "FAIL: admitted {} != handled {} + dropped {}",
            s.messages_admitted, s.messages_completed, s.messages_dropped
        );
    }
    if stuck {
        eprintln!(
            "FAIL: {} Spots still active after the idle period",
            s.active_spots
        );
    }
    node.shutdown();
    if lost || stuck || stalled || unadmitted {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
