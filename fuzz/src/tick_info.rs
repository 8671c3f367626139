//! Tick-info invariants on the manual clock: random timers (all three overrun policies,
//! random periods, first-due delays and `max_catch_up_ticks`, one-shots), random handler
//! durations (a record is held across clock advances before it completes), re-registration
//! and cancel. Checked against an independent model of contract T3/T4/T5:
//!
//! - T3: never a second record of a timer while the host holds one;
//! - T4: `delivery_index` +1 per callback, `skipped_ticks = scheduled - previous - 1`;
//! - T5: `SkipLateTicks` delivers L (the newest due nominal tick), `CatchUpBounded(n)`
//!   delivers `max(p+1, L-n+1)`, `DelayNextTick` delivers tick `delivery_index` no earlier
//!   than one period after the previous completion; one-shots deliver (1, 1, 0) once;
//! - liveness: after every drain, a timer the host does not hold has nothing due left;
//! - T1: a held record of a superseded or cancelled generation is refused by `begin`.

use std::time::Duration;

use spot_timer_core::*;

use crate::bytes::Bytes;

const MAX_TIMERS: usize = 6;
const MAX_STEPS: usize = 300;

struct Model {
    handle: TimerHandle<u32>,
    policy: OverrunPolicy,
    one_shot: bool,
    period: u64,
    n: u64,
    t0: u64,
    delivered: u64,
    scheduled: u64,
    /// DelayNextTick: the due time of the next tick.
    next_due: u64,
    held: Option<TickRecord<u32>>,
}

impl Model {
    /// Newest due nominal tick at `now` (0 when none).
    fn newest_due(&self, now: u64) -> u64 {
        if now < self.t0 {
            0
        } else if self.one_shot {
            1
        } else {
            (now - self.t0) / self.period + 1
        }
    }

    fn expect(&self, now: u64) -> Option<u64> {
        if self.one_shot {
            return (self.delivered == 0 && now >= self.t0).then_some(1);
        }
        match self.policy {
            OverrunPolicy::DelayNextTick => (now >= self.next_due).then_some(self.delivered + 1),
            OverrunPolicy::SkipLateTicks => {
                let l = self.newest_due(now);
                (l > self.scheduled).then_some(l)
            }
            OverrunPolicy::CatchUpBounded => {
                let l = self.newest_due(now);
                (l > self.scheduled).then_some((self.scheduled + 1).max(l + 1 - self.n.min(l)))
            }
        }
    }
}

struct World {
    rt: Runtime<u32>,
    clock: ManualClock,
    owner: Owner<u32>,
    timers: Vec<Option<Model>>,
    /// Held records of generations that ended: must be refused by `begin`. Until the
    /// host completes one, no record of a newer generation of the same key may come (T3:
    /// the old callback may still be running).
    zombies: Vec<TickRecord<u32>>,
}

impl World {
    fn now(&self) -> u64 {
        self.rt.now()
    }

    fn register(&mut self, b: &mut Bytes, slot: usize) {
        let period_ms = 1 + b.below(20);
        let period = period_ms * 1_000_000;
        let one_shot = b.one_in(8);
        let policy = match b.u8() % 3 {
            0 => OverrunPolicy::SkipLateTicks,
            1 => OverrunPolicy::CatchUpBounded,
            _ => OverrunPolicy::DelayNextTick,
        };
        let n = 1 + b.below(6);
        let first_due = match b.u8() % 3 {
            0 => Some(b.below(30) * 1_000_000),
            _ => None,
        };
        let mut spec = if one_shot {
            TimerSpec::after(Duration::from_nanos(first_due.unwrap_or(period)))
        } else {
            TimerSpec::every(Duration::from_nanos(period))
                .policy(policy)
                .max_catch_up_ticks(n)
        };
        if let (Some(d), false) = (first_due, one_shot) {
            spec = spec.first_due(Duration::from_nanos(d));
        }
        let now = self.now();
        let handle = self
            .owner
            .register(slot as u64, spec, slot as u32, None)
            .expect("register");
        let t0 = now + first_due.unwrap_or(period);
        trace(|| {
            format!(
                "register slot {slot} {spec:?} at {now}: t0 {t0} id {:?}",
                handle.id()
            )
        });
        if let Some(old) = self.timers[slot].take() {
            if let Some(r) = old.held {
                self.zombies.push(r);
            }
        }
        self.timers[slot] = Some(Model {
            handle,
            policy: if one_shot {
                OverrunPolicy::SkipLateTicks
            } else {
                policy
            },
            one_shot,
            period,
            n: if policy == OverrunPolicy::CatchUpBounded {
                n
            } else {
                1
            },
            t0,
            delivered: 0,
            scheduled: 0,
            next_due: t0,
            held: None,
        });
    }

    fn receive(&mut self, records: Vec<Record<u32>>) {
        let now = self.now();
        for r in records {
            let Record::Tick(t) = r else { continue };
            let slot = *t.payload() as usize;
            let m = self.timers[slot]
                .as_mut()
                .unwrap_or_else(|| panic!("record of a cancelled timer was delivered: {t:?}"));
            assert_eq!(
                t.timer_id(),
                m.handle.id(),
                "record of an older generation delivered"
            );
            assert!(
                m.held.is_none(),
                "T3: second record while one is held: {t:?}"
            );
            assert!(
                !self.zombies.iter().any(|z| *z.payload() as usize == slot),
                "T3: a record of a new generation while the old one's is held: {t:?}"
            );
            let tick = t.tick();
            let want = m.expect(now);
            assert_eq!(
                Some(tick.scheduled_index),
                want,
                "T5: policy {:?} n {} period {} t0 {} now {now} prev ({}, {}): got {tick:?}",
                m.policy,
                m.n,
                m.period,
                m.t0,
                m.delivered,
                m.scheduled
            );
            assert_eq!(
                tick.delivery_index,
                m.delivered + 1,
                "T4 delivery_index {tick:?}"
            );
            assert_eq!(
                tick.skipped_ticks,
                tick.scheduled_index - m.scheduled - 1,
                "T4 skipped_ticks {tick:?}"
            );
            if m.policy == OverrunPolicy::DelayNextTick {
                assert_eq!(tick.skipped_ticks, 0);
            }
            trace(|| format!("receive slot {slot} {tick:?} at {now}"));
            m.held = Some(t);
        }
    }

    fn check_liveness(&self) {
        let now = self.now();
        for (slot, m) in self.timers.iter().enumerate() {
            let Some(m) = m else { continue };
            trace(|| {
                format!(
                    "  live-check slot {slot} held {} expect {:?}",
                    m.held.is_some(),
                    m.expect(now)
                )
            });
            let zombie = self.zombies.iter().any(|z| *z.payload() as usize == slot);
            if m.held.is_none() && !zombie {
                assert_eq!(
                    m.expect(now),
                    None,
                    "a due tick was not delivered: policy {:?} period {} t0 {} now {now} prev ({}, {})",
                    m.policy,
                    m.period,
                    m.t0,
                    m.delivered,
                    m.scheduled
                );
            }
        }
    }

    fn exchange(&mut self, done: &[Completion]) {
        let mut out = Vec::new();
        self.rt
            .exchange(done, &mut out, 1 << 12, Some(Duration::ZERO))
            .expect("exchange");
        self.receive(out);
        // Everything ready at this time is in one exchange; poll once more to be sure.
        let mut more = Vec::new();
        self.rt
            .exchange(&[], &mut more, 1 << 12, Some(Duration::ZERO))
            .expect("exchange");
        self.receive(more);
        self.check_liveness();
    }

    fn complete_some(&mut self, b: &mut Bytes) {
        let now = self.now();
        let mut done = Vec::new();
        for z in self.zombies.drain(..) {
            assert!(
                !self.rt.begin(&z),
                "T1: a record of an ended generation may start"
            );
            done.push(z.complete(Outcome::NotStarted));
        }
        for m in self.timers.iter_mut().flatten() {
            if m.held.is_none() || b.one_in(3) {
                continue;
            }
            let r = m.held.take().unwrap();
            assert!(self.rt.begin(&r), "a current record must be startable");
            let tick = r.tick();
            m.delivered = tick.delivery_index;
            m.scheduled = tick.scheduled_index;
            m.next_due = now + m.period;
            trace(|| format!("complete slot {} {tick:?} at {now}", r.payload()));
            done.push(r.complete(if b.one_in(5) {
                Outcome::Failed
            } else {
                Outcome::Ok
            }));
        }
        self.exchange(&done);
    }
}

fn trace(f: impl FnOnce() -> String) {
    if std::env::var_os("SPOT_FUZZ_TRACE").is_some() {
        eprintln!("{}", f());
    }
}

/// Interprets `data` as timers and a schedule of clock advances and completions.
pub fn run(data: &[u8]) {
    let mut b = Bytes::new(data);
    let (rt, clock) = Runtime::<u32>::manual().expect("runtime");
    let owner = rt
        .acquire_owner(
            1,
            OwnerOptions {
                lease: None,
                gate: GateMode::Concurrent,
            },
        )
        .expect("owner");
    let count = 1 + b.below(MAX_TIMERS as u64) as usize;
    let mut w = World {
        rt,
        clock,
        owner,
        timers: (0..count).map(|_| None).collect(),
        zombies: Vec::new(),
    };
    for slot in 0..count {
        w.register(&mut b, slot);
    }
    w.rt.sync().expect("sync");
    w.exchange(&[]);
    let mut steps = 0;
    while !b.is_empty() && steps < MAX_STEPS {
        steps += 1;
        match b.u8() % 10 {
            // A handler takes time: the clock moves while records are held.
            0..=4 => {
                let ns = match b.u8() % 4 {
                    0 => b.below(100) * 1_000_000,
                    1 => b.below(1_000_000),
                    _ => b.below(10) * 1_000_000,
                };
                w.rt.advance(Duration::from_nanos(ns)).expect("advance");
                trace(|| format!("advance {ns} -> now {}", w.now()));
                let _ = &w.clock;
                w.exchange(&[]);
            }
            5..=7 => w.complete_some(&mut b),
            8 => {
                let slot = b.below(count as u64) as usize;
                w.register(&mut b, slot);
                // Registration is applied by the scheduler asynchronously.
                w.rt.sync().expect("sync");
                w.exchange(&[]);
            }
            _ => {
                let slot = b.below(count as u64) as usize;
                if let Some(m) = w.timers[slot].take() {
                    if let Some(r) = m.held {
                        w.zombies.push(r);
                    }
                    drop(m.handle.cancel_nowait().expect("cancel"));
                    w.rt.sync().expect("sync");
                }
            }
        }
    }
    // Finish: complete everything held, then close.
    w.complete_some(&mut Bytes::new(&[1; 64]));
    w.rt.close();
}
