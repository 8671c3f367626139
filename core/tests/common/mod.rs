//! A deterministic host for contract tests: a runtime on a manual clock, drained with
//! `exchange(timeout = 0)`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use spot_timer_core::*;

pub const MS: Duration = Duration::from_millis(1);

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The right side of the record identity: every record published ends in one of these
/// (`records_published == records_finished(&stats)` once every generation has ended).
pub fn records_finished(s: &Stats) -> u64 {
    s.completed_ok + s.completed_failed + s.completed_deferred + s.not_started + s.records_abandoned
}

/// How many times the runtime's payload release ran for each payload.
pub type Releases = Arc<Mutex<HashMap<u64, u32>>>;

/// A runtime on `clock` whose payload release counts each payload's releases.
pub fn counting_runtime(clock: ClockKind) -> (Runtime<u64>, Releases) {
    let released: Releases = Arc::default();
    let seen = released.clone();
    let rt = Runtime::<u64>::new(RuntimeConfig {
        clock,
        release: Some(Box::new(move |p: &u64, _why| {
            *seen.lock().unwrap().entry(*p).or_insert(0) += 1;
            Ok(())
        })),
        ..RuntimeConfig::default()
    })
    .unwrap();
    (rt, released)
}

/// A host thread that delivers `rt`'s ticks until `stop`: each record is claimed right
/// before its (empty) handler and completed OK, or not started when its claim fails.
pub fn delivering_host<P: Clone + Send + Sync + 'static>(
    rt: Arc<Runtime<P>>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut out, mut done) = (Vec::new(), Vec::new());
        while !stop.load(SeqCst) {
            out.clear();
            let _ = rt.exchange(&done, &mut out, 64, Some(Duration::from_millis(5)));
            done.clear();
            for r in &out {
                if let Record::Tick(t) = r {
                    let outcome = if rt.begin(t) {
                        Outcome::Ok
                    } else {
                        Outcome::NotStarted
                    };
                    done.push(t.complete(outcome));
                }
            }
        }
        let _ = rt.complete(&done);
    })
}

/// Exchanges `rt`'s records (within 30 s) until one of generation `id` arrives, and returns
/// it, received and not yet started or completed.
pub fn first_tick_of<P: Clone + Send + Sync + 'static>(
    rt: &Runtime<P>,
    id: TimerId,
) -> TickRecord<P> {
    let (mut out, done) = (Vec::new(), Vec::<Completion>::new());
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < until,
            "no tick of {id:?} in 30 s"
        );
        out.clear();
        rt.exchange(&done, &mut out, 8, Some(Duration::from_millis(20)))
            .unwrap();
        for r in &out {
            if let Record::Tick(t) = r {
                if t.timer_id() == id {
                    return t.clone();
                }
            }
        }
    }
}

/// Both accounting identities of a runtime whose generations all ended.
pub fn assert_accounted<P: Clone + Send + Sync + 'static>(rt: &Runtime<P>) {
    let s = rt.stats();
    assert_eq!(s.registered, s.ended, "every generation ended: {s:?}");
    assert_eq!(
        s.ticks_due,
        s.completed_ok
            + s.completed_failed
            + s.ticks_skipped
            + s.ticks_dropped_authority
            + s.ticks_discarded,
        "every due tick is accounted for: {s:?}"
    );
    assert_eq!(
        s.records_published,
        records_finished(&s),
        "every record is accounted for: {s:?}"
    );
}

/// Owner `id` of `rt` with a concurrent gate (its records do not wait for each other).
pub fn concurrent_owner<P: Clone + Send + Sync + 'static>(
    rt: &Runtime<P>,
    id: OwnerId,
) -> Owner<P> {
    rt.acquire_owner(
        id,
        OwnerOptions {
            gate: GateMode::Concurrent,
            ..OwnerOptions::default()
        },
    )
    .unwrap()
}

/// A manual runtime with one concurrent owner (id 1) and `n` timers every 10 ms (keys
/// 0..n, payload = key), all due at 10 ms.
pub fn concurrent_timers_every_10ms(n: u64) -> (Runtime<u32>, ManualClock, Vec<TimerId>) {
    let (rt, clock) = Runtime::<u32>::manual().unwrap();
    let owner = concurrent_owner(&rt, 1);
    let ids = (0..n)
        .map(|k| {
            owner
                .register_id(k, TimerSpec::every(ms(10)), k as u32, None)
                .unwrap()
        })
        .collect();
    (rt, clock, ids)
}

pub struct Host {
    pub rt: Runtime<u32>,
    pub clock: ManualClock,
}

impl Host {
    pub fn new() -> Self {
        let (rt, clock) = Runtime::manual().expect("runtime");
        Self { rt, clock }
    }

    pub fn owner(&self, id: u64) -> Owner<u32> {
        self.rt
            .acquire_owner(id, OwnerOptions::default())
            .expect("owner")
    }

    pub fn owner_with(&self, id: u64, options: OwnerOptions) -> Owner<u32> {
        self.rt.acquire_owner(id, options).expect("owner")
    }

    pub fn advance(&self, by: Duration) {
        self.rt.advance(by).expect("advance");
    }

    /// Submits `done` and returns the tick records that are ready now.
    pub fn exchange(&self, done: &[Completion]) -> Vec<TickRecord<u32>> {
        let mut out = Vec::new();
        self.rt
            .exchange(done, &mut out, 1 << 20, Some(Duration::ZERO))
            .expect("exchange");
        out.into_iter()
            .filter_map(|r| match r {
                Record::Tick(t) => Some(t),
                Record::CancelDone(_) => None,
            })
            .collect()
    }

    pub fn poll(&self) -> Vec<TickRecord<u32>> {
        self.exchange(&[])
    }

    /// Completes `rec` with `outcome` and returns what became ready.
    pub fn finish(&self, rec: &TickRecord<u32>, outcome: Outcome) -> Vec<TickRecord<u32>> {
        self.exchange(&[rec.complete(outcome)])
    }

    /// Runs every ready record to completion (Ok) until none is ready; returns the ticks.
    pub fn run_ready(&self) -> Vec<Tick> {
        let mut ticks = Vec::new();
        let mut ready = self.poll();
        while !ready.is_empty() {
            let mut done = Vec::new();
            for r in &ready {
                assert!(self.rt.begin(r), "fresh record must be startable");
                ticks.push(r.tick());
                done.push(r.complete(Outcome::Ok));
            }
            ready = self.exchange(&done);
        }
        ticks
    }
}

pub fn tick(delivery_index: u64, scheduled_index: u64, skipped_ticks: u64) -> Tick {
    Tick {
        delivery_index,
        scheduled_index,
        skipped_ticks,
    }
}
