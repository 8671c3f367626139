//! The main job of spot-timer, live: one runtime on the real clock, 10,000 owners x 2
//! timers (mixed periods and overrun policies), one host loop on the main thread that
//! exchanges completions for batches of records.
//!
//! ```text
//! cargo run --release -p spot-timer-core --example demo -- \
//!     [--seconds N] [--owners N] [--periods-ms 100,200,500,1000] \
//!     [--policy mixed|skip|catch-up|delay] [--gate serial|concurrent]
//! ```
//!
//! While it runs it shows a progress line; at the end it prints what a user wants to know
//! (timers, threads, records, batches, lateness, CPU, memory) and exits non-zero when the
//! runtime used other than one scheduler thread or any OS timer.
//!
//! The default periods ask for 90,000 ticks per second from 20,000 timers;
//! `--periods-ms 10,20,50,100` is a stress load for two cores (900,000 per second).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use spot_timer_core::{
    Completion, GateMode, OverrunPolicy, OwnerOptions, Record, Runtime, RuntimeConfig, TimerSpec,
};

/// Default timer periods; owner i's two timers take different ones.
const DEFAULT_PERIODS_MS: [u64; 4] = [100, 200, 500, 1000];
const TIMERS_PER_OWNER: usize = 2;
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
const BATCH_MAX: usize = 8192;
const USAGE: &str = "usage: demo [--seconds N] [--owners N] [--periods-ms 10,20,50,100] \
                     [--policy mixed|skip|catch-up|delay] [--gate serial|concurrent]";

struct Args {
    seconds: f64,
    owners: usize,
    periods_ms: Vec<u64>,
    /// Restrict every timer to one policy (default: mixed).
    policy: Option<OverrunPolicy>,
    gate: GateMode,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 5.0,
        owners: 10_000,
        periods_ms: DEFAULT_PERIODS_MS.to_vec(),
        policy: None,
        gate: GateMode::Serial,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seconds" => {
                let v = value("--seconds")?;
                args.seconds = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or(format!("--seconds: not a positive number: {v}"))?;
            }
            "--owners" => {
                let v = value("--owners")?;
                args.owners = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(format!("--owners: not a positive integer: {v}"))?;
            }
            "--periods-ms" => {
                let v = value("--periods-ms")?;
                args.periods_ms = v
                    .split(',')
                    .map(|p| p.trim().parse::<u64>().ok().filter(|p| *p > 0))
                    .collect::<Option<Vec<_>>>()
                    .filter(|v| !v.is_empty())
                    .ok_or(format!(
                        "--periods-ms: not a list of positive integers: {v}"
                    ))?;
            }
            "--policy" => {
                args.policy = match value("--policy")?.as_str() {
                    "mixed" => None,
                    "skip" => Some(OverrunPolicy::SkipLateTicks),
                    "catch-up" => Some(OverrunPolicy::CatchUpBounded),
                    "delay" => Some(OverrunPolicy::DelayNextTick),
                    other => {
                        return Err(format!("--policy: mixed|skip|catch-up|delay, not {other}"))
                    }
                }
            }
            "--gate" => {
                args.gate = match value("--gate")?.as_str() {
                    "serial" => GateMode::Serial,
                    "concurrent" => GateMode::Concurrent,
                    other => return Err(format!("--gate: serial|concurrent, not {other}")),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

/// What the host knows of one timer, indexed by the payload: its period (for the
/// demand figure). Lateness comes from the runtime's own histogram.
struct TimerInfo {
    period: u64,
}

fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let head = (s.len() - 1) % 3 + 1;
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    out.push_str(&s[..head]);
    for group in s.as_bytes()[head..].chunks(3) {
        out.push(',');
        out.extend(group.iter().map(|&b| b as char));
    }
    out
}

fn fmt_ns(ns: u64) -> String {
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 10_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}

/// A field of /proc/self/status, e.g. "VmRSS" -> "12345 kB".
fn proc_status(field: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        l.strip_prefix(field)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    })
}

/// CPU time (user + system) of each thread of this process, by thread name.
fn thread_cpu() -> Vec<(String, Duration)> {
    let tick = 100.0; // USER_HZ: clock ticks per second in /proc on Linux
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ... field 14 utime, 15 stime; comm may hold spaces.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let ticks: f64 = fields
            .get(11..13)
            .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
            .unwrap_or(0.0);
        out.push((name, Duration::from_secs_f64(ticks / tick)));
    }
    out
}

/// Open file descriptors of this process that are OS timers (timerfd), from /proc.
fn open_timerfds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| {
        dir.flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().contains("timerfd"))
            })
            .count()
    })
}

fn rss_bytes() -> Option<u64> {
    let v = proc_status("VmRSS")?;
    let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

fn policy_of(i: usize, only: Option<OverrunPolicy>) -> (OverrunPolicy, u64) {
    if let Some(p) = only {
        return (
            p,
            if p == OverrunPolicy::CatchUpBounded {
                3
            } else {
                1
            },
        );
    }
    match i % 3 {
        0 => (OverrunPolicy::SkipLateTicks, 1),
        1 => (OverrunPolicy::CatchUpBounded, 3),
        _ => (OverrunPolicy::DelayNextTick, 1),
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, spot_timer_core::Error> {
    let rt: Runtime<u32> = Runtime::new(RuntimeConfig::default())?;
    let n_timers = args.owners * TIMERS_PER_OWNER;
    println!(
        "spot-timer demo: {} owners x {TIMERS_PER_OWNER} timers (periods {:?} ms; SkipLateTicks / \
         CatchUpBounded(3) / DelayNextTick), {:.1} s on the real clock",
        fmt_int(args.owners as u64),
        args.periods_ms,
        args.seconds
    );

    // Register everything. The first due time of each timer is spread over one period so
    // the load is steady rather than one burst per period.
    let setup = Instant::now();
    let mut infos: Vec<TimerInfo> = Vec::with_capacity(n_timers);
    let mut handles = Vec::with_capacity(n_timers);
    for o in 0..args.owners {
        let options = OwnerOptions {
            lease: None,
            gate: args.gate,
        };
        let owner = rt.acquire_owner(o as u64 + 1, options)?;
        for k in 0..TIMERS_PER_OWNER {
            let i = infos.len();
            let np = args.periods_ms.len();
            let period_ms = args.periods_ms[(o + k * (np / 2).max(1)) % np];
            let period = Duration::from_millis(period_ms);
            // Deterministic spread of the first due time over (0, period].
            let spread = (i as u64).wrapping_mul(2_654_435_761) % 1000 + 1;
            let first = period * spread as u32 / 1000;
            let (policy, catch_up) = policy_of(i, args.policy);
            let spec = TimerSpec::every(period)
                .first_due(first)
                .policy(policy)
                .max_catch_up_ticks(catch_up);
            handles.push(owner.register(k as u64, spec, i as u32, None)?);
            infos.push(TimerInfo {
                period: period.as_nanos() as u64,
            });
        }
    }
    rt.sync()?;
    let setup_time = setup.elapsed();
    // Ticks per second the timers ask for (what the runtime must sustain to keep up).
    let demand: f64 = infos.iter().map(|t| 1e9 / t.period as f64).sum();

    let mut out: Vec<Record<u32>> = Vec::with_capacity(BATCH_MAX);
    let mut done: Vec<Completion> = Vec::with_capacity(BATCH_MAX);
    let mut delivered: u64 = 0;
    let mut not_started: u64 = 0;
    let mut handler_work: u64 = 0;
    let start = Instant::now();
    let base = rt.stats();
    // What came due while the host was still registering is not the steady state.
    let lateness_at_start = rt.lateness();
    let end = start + Duration::from_secs_f64(args.seconds);
    let mut next_progress = start + PROGRESS_EVERY;
    let mut stdout = std::io::stdout();

    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let wait = (end - now).min(PROGRESS_EVERY);
        out.clear();
        rt.exchange(&done, &mut out, BATCH_MAX, Some(wait))?;
        done.clear();
        for rec in &out {
            let Record::Tick(t) = rec else { continue };
            // Re-check the generation right before the handler starts (contract T1).
            if !rt.begin(t) {
                not_started += 1;
                done.push(t.complete(spot_timer_core::Outcome::NotStarted));
                continue;
            }
            // The "handler": a little work on the timer's own data.
            handler_work = handler_work.wrapping_add(t.tick().delivery_index);
            delivered += 1;
            done.push(t.complete(spot_timer_core::Outcome::Ok));
        }
        let now = Instant::now();
        if now >= next_progress {
            next_progress = now + PROGRESS_EVERY;
            let s = rt.stats();
            let batches = s.batches - base.batches;
            let _ = write!(
                stdout,
                "\r  {:5.2} s   records {:>11}   batches {:>9}   records/batch {:8.1}   ",
                (now - start).as_secs_f64(),
                fmt_int(delivered),
                fmt_int(batches),
                delivered as f64 / batches.max(1) as f64
            );
            let _ = stdout.flush();
        }
    }
    // Hand back the last completions.
    rt.complete(&done)?;
    let elapsed = start.elapsed();
    let s = rt.stats();
    let rss = rss_bytes();
    let threads = proc_status("Threads").unwrap_or_else(|| "?".into());
    let cpu = thread_cpu();
    let cpu_of = |scheduler: bool| {
        let t: Duration = cpu
            .iter()
            .filter(|(name, _)| (name == "spot-timer") == scheduler)
            .map(|(_, d)| *d)
            .sum();
        format!(
            "{:.2} s ({:.0} %)",
            t.as_secs_f64(),
            100.0 * t.as_secs_f64() / (elapsed + setup_time).as_secs_f64()
        )
    };
    println!();

    let batches = s.batches - base.batches;
    let published = s.records_published - base.records_published;
    let crossings = s.host_crossings - base.host_crossings;
    let received = s.records_received - base.records_received;
    let lateness = rt.lateness().since(&lateness_at_start);
    let q = |x: f64| {
        lateness.quantile(x).map_or("-".to_string(), |d| {
            format!("< {}", fmt_ns(d.as_nanos() as u64))
        })
    };
    let rows: Vec<(&str, String)> = vec![
        ("live timers", fmt_int(s.live_timers)),
        ("owners", fmt_int(s.owners)),
        ("scheduler threads", s.scheduler_threads.to_string()),
        ("OS timers", s.os_timers.to_string()),
        ("timerfds open (/proc)", open_timerfds().to_string()),
        ("OS wakeup primitives", s.wakeup_primitives.to_string()),
        ("process threads", threads),
        ("deadline queue length", fmt_int(s.queue_len)),
        ("run time", format!("{:.2} s", elapsed.as_secs_f64())),
        ("nominal ticks per second", fmt_int(demand as u64)),
        ("records delivered", fmt_int(delivered)),
        (
            "records per second",
            fmt_int((delivered as f64 / elapsed.as_secs_f64()) as u64),
        ),
        ("batches", fmt_int(batches)),
        (
            "records per batch",
            format!("{:.1}", published as f64 / batches.max(1) as f64),
        ),
        (
            "host crossings per record",
            format!("{:.4}", crossings as f64 / received.max(1) as f64),
        ),
        ("CPU, scheduler thread", cpu_of(true)),
        ("CPU, host thread (main)", cpu_of(false)),
        ("lateness p50 (runtime's histogram)", q(0.50)),
        ("lateness p99", q(0.99)),
        ("lateness max", q(1.0)),
        ("ticks skipped (policy)", fmt_int(s.ticks_skipped)),
        ("gate waits (serial owners)", fmt_int(s.gate_waits)),
        ("not started (stale)", fmt_int(not_started)),
        (
            "resident memory (VmRSS)",
            rss.map_or("?".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0)),
        ),
        (
            "setup (register all)",
            format!("{:.1} ms", setup_time.as_secs_f64() * 1e3),
        ),
    ];
    println!();
    println!("  {:<32} {:>18}", "", "value");
    println!("  {:-<32} {:->18}", "", "");
    for (k, v) in &rows {
        println!("  {k:<32} {v:>18}");
    }
    println!("  lateness = hand-over to this loop - nominal due time of the tick, from the");
    println!("  runtime's histogram (bucket bounds, 4 per power of two); setup not counted");
    std::hint::black_box(handler_work);

    let resources_ok = s.scheduler_threads == 1 && s.os_timers == 0 && open_timerfds() == 0;
    drop(handles);
    rt.close();
    // What it did, not how fast: once every generation has ended, every tick that came due
    // was delivered, skipped by its policy, or discarded with its generation — and every
    // callback this loop started is one the runtime counted.
    let e = rt.stats();
    let accounted = e.completed_ok
        + e.completed_failed
        + e.ticks_skipped
        + e.ticks_dropped_authority
        + e.ticks_discarded;
    let identity_ok = e.live_timers == 0 && e.ticks_due == accounted && e.completed_ok == delivered;
    println!(
        "  accounting: {} ticks due = {} delivered + {} skipped + {} discarded at the close",
        fmt_int(e.ticks_due),
        fmt_int(e.completed_ok),
        fmt_int(e.ticks_skipped),
        fmt_int(e.ticks_discarded + e.ticks_dropped_authority)
    );
    if !resources_ok {
        eprintln!(
            "FAIL: expected 1 scheduler thread and 0 OS timers, got {} and {}",
            s.scheduler_threads, s.os_timers
        );
    }
    if !identity_ok {
        eprintln!(
            "FAIL: accounting: due {} vs accounted {accounted}; this loop ran {delivered}, the \
             runtime counted {} ({} generations live)",
            e.ticks_due, e.completed_ok, e.live_timers
        );
    }
    Ok(if resources_ok && identity_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
