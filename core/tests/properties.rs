//! Property tests: random handler durations, policies, deferrals and cancels on the
//! manual clock; T3 and T4 (and T5's backlog rule) are asserted on every record.

mod common;

use proptest::prelude::*;

use common::*;
use spot_timer_core::*;

#[derive(Debug, Clone)]
enum Step {
    /// Let time pass with nothing running.
    Idle(u64),
    /// Run the ready callback for this long, then complete it with this outcome.
    Run(u64, u8),
    Cancel,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0u64..40).prop_map(Step::Idle),
        10 => (0u64..60, 0u8..10).prop_map(|(d, o)| Step::Run(d, o)),
        1 => Just(Step::Cancel),
    ]
}

fn policy() -> impl Strategy<Value = (OverrunPolicy, u64)> {
    prop_oneof![
        Just((OverrunPolicy::SkipLateTicks, 1)),
        (1u64..6).prop_map(|n| (OverrunPolicy::CatchUpBounded, n)),
        Just((OverrunPolicy::DelayNextTick, 1)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn every_record_keeps_t3_t4_t5(
        (policy, n) in policy(),
        period in 1u64..25,
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let h = Host::new();
        let o = h.owner(1);
        let spec = TimerSpec::every(ms(period)).policy(policy).max_catch_up_ticks(n);
        let t = o.register(1, spec, 0, None).unwrap();
        let t0 = period; // first nominal due, in ms since registration at 0
        let mut now = 0u64;
        let mut last: Option<Tick> = None;
        let mut last_end = 0u64;
        let mut cancelled = false;
        let mut ready: Vec<(TickRecord<u32>, u64)> = Vec::new();
        for s in steps {
            match s {
                Step::Idle(d) => {
                    h.advance(ms(d));
                    now += d;
                    ready.extend(h.poll().into_iter().map(|r| (r, now)));
                }
                Step::Cancel => {
                    t.cancel_nowait().unwrap();
                    cancelled = true;
                }
                Step::Run(d, pick) => {
                    let Some((rec, made_at)) = ready.pop() else { continue };
                    prop_assert!(ready.is_empty(), "T3: two records of one timer outstanding");
                    let started = h.rt.begin(&rec);
                    prop_assert_eq!(started, !cancelled, "T2: start after cancel");
                    let tk = rec.tick();
                    // T4 on every delivered record.
                    let prev = last.map_or(0, |p| p.scheduled_index);
                    prop_assert_eq!(tk.delivery_index, last.map_or(1, |p| p.delivery_index + 1));
                    prop_assert!(tk.scheduled_index > prev);
                    prop_assert!(tk.scheduled_index >= tk.delivery_index);
                    prop_assert_eq!(tk.skipped_ticks, tk.scheduled_index - prev - 1);
                    // T5: the backlog rule at the moment the record was made.
                    match policy {
                        OverrunPolicy::DelayNextTick => {
                            prop_assert_eq!(tk.scheduled_index, tk.delivery_index);
                            prop_assert!(last.is_none() || made_at >= last_end + period);
                        }
                        _ => {
                            let newest = (made_at - t0) / period + 1;
                            prop_assert!(tk.scheduled_index <= newest);
                            let expected = if policy == OverrunPolicy::SkipLateTicks {
                                newest
                            } else {
                                (newest + 1).saturating_sub(n).max(prev + 1)
                            };
                            prop_assert_eq!(tk.scheduled_index, expected);
                        }
                    }
                    h.advance(ms(d));
                    now += d;
                    let outcome = match (started, pick) {
                        (false, _) => Outcome::NotStarted,
                        (true, 0) => Outcome::Failed,
                        (true, 1) => Outcome::Deferred,
                        _ => Outcome::Ok,
                    };
                    if matches!(outcome, Outcome::Ok | Outcome::Failed) {
                        last = Some(tk);
                        last_end = now;
                    }
                    ready.extend(h.finish(&rec, outcome).into_iter().map(|r| (r, now)));
                    if outcome == Outcome::Deferred {
                        o.retry_deferred().unwrap();
                        h.rt.sync().unwrap();
                        ready.extend(h.poll().into_iter().map(|r| (r, now)));
                    }
                }
            }
            prop_assert!(ready.len() <= 1, "T3: at most one pending record");
        }
        prop_assert_eq!(t.stats().delivered, last.map_or(0, |p| p.delivery_index));
    }
}
