//! One test per item of the verification list of docs/contract.md (13 is in
//! `contract_13_memory.rs`, which needs its own counting allocator). Public API only,
//! manual clock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;
use spot_timer_core::*;

#[test]
fn contract_01_reregistered_key_never_runs_pending_ticks_of_old_generation() {
    let h = Host::new();
    let o = h.owner(1);
    let old = o.register(7, TimerSpec::every(ms(10)), 1, None).unwrap();

    // (a) A tick of the old generation waiting in the ready queue.
    h.advance(ms(10));
    assert_eq!(h.rt.pending_records(), 1);
    let new = o.register(7, TimerSpec::every(ms(10)), 2, None).unwrap();
    assert_ne!(new.id().generation(), old.id().generation());
    assert!(new.id().generation() > old.id().generation());
    assert!(
        h.poll().is_empty(),
        "old generation's queued tick must not be handed out"
    );

    // (b) A tick of the new generation already handed to the host, then re-registered.
    h.advance(ms(10));
    let ready = h.poll();
    assert_eq!(ready.len(), 1);
    assert_eq!(*ready[0].payload(), 2);
    assert_eq!(ready[0].tick(), tick(1, 1, 0));
    let newer = o.register(7, TimerSpec::every(ms(10)), 3, None).unwrap();
    assert!(
        !h.rt.begin(&ready[0]),
        "handed-out record of an old generation must not start"
    );
    assert!(h.finish(&ready[0], Outcome::NotStarted).is_empty());

    // (c) Only the newest generation runs from now on, counting from 1.
    h.advance(ms(10));
    let ticks: Vec<(u32, Tick)> = {
        let r = h.poll();
        r.iter().map(|r| (*r.payload(), r.tick())).collect()
    };
    assert_eq!(ticks, vec![(3, tick(1, 1, 0))]);
    assert_eq!(old.cancel(Some(ms(1000))), Ok(EndReason::Superseded));
    assert_eq!(new.cancel(Some(ms(1000))), Ok(EndReason::Superseded));
    assert!(newer.is_live());
}

#[test]
fn contract_02_cancel_stops_new_starts_but_running_callback_finishes() {
    let h = Arc::new(Host::new());
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let running = h.poll().pop().unwrap();
    assert!(h.rt.begin(&running));

    let canceller = {
        let t = t.clone();
        std::thread::spawn(move || t.cancel(Some(Duration::from_secs(10))))
    };
    // The cancel takes effect at once: no new start...
    while t.is_live() {
        std::thread::yield_now();
    }
    h.advance(ms(100));
    assert!(h.poll().is_empty(), "no tick may start after cancel");
    // ...but it cannot complete while the callback runs.
    h.rt.sync().unwrap();
    assert_eq!(t.result(), None);
    assert!(!canceller.is_finished());

    assert!(h.finish(&running, Outcome::Ok).is_empty());
    assert_eq!(canceller.join().unwrap(), Ok(EndReason::Cancelled));
    assert_eq!(
        t.stats().delivered,
        1,
        "the running callback counted as delivered"
    );
    h.advance(ms(100));
    assert!(h.poll().is_empty());
}

#[test]
fn contract_03_concurrent_cancels_share_one_terminal_result() {
    for hook_fails in [false, true] {
        let h = Arc::new(Host::new());
        let o = h.owner(1);
        let released = Arc::new(AtomicUsize::new(0));
        let hook: ReleaseHook = {
            let released = released.clone();
            Box::new(move || {
                released.fetch_add(1, Ordering::SeqCst);
                if hook_fails {
                    Err("user data still referenced".to_string())
                } else {
                    Ok(())
                }
            })
        };
        let t = o
            .register(1, TimerSpec::every(ms(5)), 0, Some(hook))
            .unwrap();
        h.advance(ms(5));
        let running = h.poll().pop().unwrap();
        assert!(h.rt.begin(&running));

        let n = 6;
        let barrier = Arc::new(Barrier::new(n + 1));
        let cancellers: Vec<_> = (0..n)
            .map(|i| {
                let t = t.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    if i % 2 == 0 {
                        t.cancel(Some(Duration::from_secs(10)))
                    } else {
                        t.cancel_nowait()
                            .unwrap()
                            .wait(Some(Duration::from_secs(10)))
                    }
                })
            })
            .collect();
        barrier.wait();
        h.rt.sync().unwrap();
        std::thread::sleep(ms(20));
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "cleanup waits for the callback"
        );
        assert!(cancellers.iter().all(|c| !c.is_finished()));

        h.finish(&running, Outcome::Ok);
        let results: Vec<EndResult> = cancellers.into_iter().map(|c| c.join().unwrap()).collect();
        let expected = if hook_fails {
            Err(Error::CleanupFailed("user data still referenced".into()))
        } else {
            Ok(EndReason::Cancelled)
        };
        assert!(results.iter().all(|r| *r == expected), "{results:?}");
        assert_eq!(
            released.load(Ordering::SeqCst),
            1,
            "cleanup runs exactly once"
        );
        // A later cancel sees the recorded result too.
        assert_eq!(t.cancel(Some(ms(10))), expected);
        assert_eq!(h.rt.stats().cleanup_failures, u64::from(hook_fails));
    }
}

#[test]
fn contract_04_slow_handler_never_overlaps_itself() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let mut running = h.poll();
    assert_eq!(running.len(), 1);
    for round in 0..20 {
        // The handler takes 35 ms against a 10 ms period: three more ticks come due.
        for _ in 0..7 {
            h.advance(ms(5));
            assert!(
                h.poll().is_empty(),
                "round {round}: second callback while one runs"
            );
        }
        let next = h.finish(&running[0], Outcome::Ok);
        assert_eq!(
            next.len(),
            1,
            "expirations coalesce into one pending record"
        );
        running = next;
    }
}

/// Drives one timer through irregular handler durations and returns its ticks.
fn irregular_run(policy: OverrunPolicy, max_catch_up: u64) -> Vec<Tick> {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec::every(ms(10))
        .policy(policy)
        .max_catch_up_ticks(max_catch_up);
    let _t = o.register(1, spec, 0, None).unwrap();
    let durations = [0u64, 3, 25, 0, 47, 9, 10, 0, 120, 1, 0, 0, 33, 5];
    let mut ticks = Vec::new();
    let mut i = 0;
    h.advance(ms(10));
    let mut ready = h.poll();
    while ticks.len() < 40 {
        if ready.is_empty() {
            h.advance(ms(1));
            ready = h.poll();
            continue;
        }
        assert_eq!(ready.len(), 1);
        ticks.push(ready[0].tick());
        h.advance(ms(durations[i % durations.len()]));
        i += 1;
        ready = h.finish(&ready[0], Outcome::Ok);
    }
    ticks
}

const POLICIES: [(OverrunPolicy, u64); 4] = [
    (OverrunPolicy::SkipLateTicks, 1),
    (OverrunPolicy::CatchUpBounded, 1),
    (OverrunPolicy::CatchUpBounded, 4),
    (OverrunPolicy::DelayNextTick, 1),
];

#[test]
fn contract_05_delivery_index_increases_by_exactly_one() {
    for (policy, n) in POLICIES {
        let ticks = irregular_run(policy, n);
        for (i, t) in ticks.iter().enumerate() {
            assert_eq!(t.delivery_index, i as u64 + 1, "{policy:?}: {ticks:?}");
        }
    }
}

#[test]
fn contract_06_scheduled_index_increases_and_bounds_delivery_index() {
    for (policy, n) in POLICIES {
        let ticks = irregular_run(policy, n);
        for w in ticks.windows(2) {
            assert!(
                w[1].scheduled_index > w[0].scheduled_index,
                "{policy:?}: {ticks:?}"
            );
        }
        assert!(ticks.iter().all(|t| t.scheduled_index >= t.delivery_index));
        if policy != OverrunPolicy::DelayNextTick {
            assert!(
                ticks.iter().any(|t| t.scheduled_index > t.delivery_index),
                "{policy:?}: the run must include late handlers"
            );
        }
    }
}

#[test]
fn contract_07_skipped_ticks_is_the_gap_between_scheduled_indices() {
    for (policy, n) in POLICIES {
        let ticks = irregular_run(policy, n);
        assert_eq!(ticks[0].skipped_ticks, ticks[0].scheduled_index - 1);
        for w in ticks.windows(2) {
            assert_eq!(
                w[1].skipped_ticks,
                w[1].scheduled_index - w[0].scheduled_index - 1,
                "{policy:?}"
            );
        }
    }
}

#[test]
fn contract_08_skip_late_ticks_delivers_only_the_newest_due_tick() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let first = h.poll().pop().unwrap();
    assert_eq!(first.tick(), tick(1, 1, 0));
    // Handler finishes at t = 55: ticks 2..=5 came due (due at 20, 30, 40, 50).
    h.advance(ms(45));
    let next = h.finish(&first, Outcome::Ok);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].tick(), tick(2, 5, 3));
    // Back on rate: tick 6 at 60.
    h.advance(ms(4));
    assert!(h.finish(&next[0], Outcome::Ok).is_empty());
    h.advance(ms(1));
    assert_eq!(h.run_ready(), vec![tick(3, 6, 0)]);
    assert_eq!(t.stats().skipped_ticks, 3);
}

#[test]
fn contract_09_catch_up_bounded_delivers_at_most_n_in_order() {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec::every(ms(10))
        .policy(OverrunPolicy::CatchUpBounded)
        .max_catch_up_ticks(3);
    let _t = o.register(1, spec, 0, None).unwrap();
    h.advance(ms(10));
    let first = h.poll().pop().unwrap();
    // Stall until t = 105: ticks 2..=10 are due; only the newest 3 are delivered.
    h.advance(ms(95));
    let mut ticks = Vec::new();
    let mut ready = h.finish(&first, Outcome::Ok);
    while let Some(r) = ready.pop() {
        ticks.push(r.tick());
        ready = h.finish(&r, Outcome::Ok);
    }
    assert_eq!(ticks, vec![tick(2, 8, 6), tick(3, 9, 0), tick(4, 10, 0)]);
    // Nothing more until tick 11 at 110.
    h.advance(ms(4));
    assert!(h.poll().is_empty());
    h.advance(ms(1));
    assert_eq!(h.run_ready(), vec![tick(5, 11, 0)]);
}

#[test]
fn contract_10_delay_next_tick_is_due_one_period_after_handler_end() {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec::every(ms(10)).policy(OverrunPolicy::DelayNextTick);
    let _t = o.register(1, spec, 0, None).unwrap();
    h.advance(ms(10));
    let first = h.poll().pop().unwrap();
    h.advance(ms(15)); // handler ends at t = 25
    assert!(h.finish(&first, Outcome::Ok).is_empty());
    h.advance(ms(9)); // t = 34
    assert!(h.poll().is_empty());
    h.advance(ms(1)); // t = 35 = end + period
    let second = h.poll().pop().unwrap();
    assert_eq!(second.tick(), tick(2, 2, 0));
    h.advance(ms(47)); // long handler: still no catch-up
    assert!(h.finish(&second, Outcome::Ok).is_empty());
    h.advance(ms(10));
    assert_eq!(h.run_ready(), vec![tick(3, 3, 0)]);
}

#[test]
fn contract_11_no_start_after_lease_expiry_and_no_backlog_on_resume() {
    let h = Host::new();
    let o = h.owner_with(1, OwnerOptions::lease(ms(100)));
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    let mut delivered = 0;
    for _ in 0..9 {
        h.advance(ms(10));
        delivered += h.run_ready().len();
    }
    assert_eq!(delivered, 9);
    // The process "pauses" for 2 s, far past the lease (deadline at 100 ms), and resumes.
    h.advance(Duration::from_secs(2));
    assert!(h.run_ready().is_empty(), "no backlog burst after the pause");
    assert_eq!(t.cancel(Some(ms(100))), Ok(EndReason::LeaseExpired));
    assert_eq!(o.renew(Some(ms(100))), Err(Error::LeaseExpired));
    assert_eq!(
        o.register(2, TimerSpec::every(ms(10)), 0, None)
            .unwrap_err(),
        Error::LeaseExpired
    );
    // The backlog of the pause was dropped, not delivered: 9 delivered, ~200 dropped.
    let s = h.rt.stats();
    assert_eq!(s.completed_ok, 9);
    assert!(s.ticks_dropped_authority >= 190, "{s:?}");

    // A record handed out before the deadline does not start after it.
    let o2 = h.owner_with(2, OwnerOptions::lease(ms(50)));
    let _t2 = o2.register(1, TimerSpec::every(ms(40)), 0, None).unwrap();
    h.advance(ms(40));
    let rec = h.poll().pop().unwrap();
    h.advance(ms(20));
    assert!(
        !h.rt.begin(&rec),
        "lease over: the handed-out record must not start"
    );

    // Renewal before the deadline extends the lease; a new authority re-registers.
    let o3 = h.owner_with(3, OwnerOptions::lease(ms(50)));
    let _t3 = o3.register(1, TimerSpec::every(ms(20)), 0, None).unwrap();
    let mut n = 0;
    for _ in 0..10 {
        h.advance(ms(20));
        o3.renew(Some(ms(50))).unwrap();
        n += h.run_ready().len();
    }
    assert_eq!(n, 10);
    let again = h.owner_with(1, OwnerOptions::lease(ms(100)));
    let _t4 = again
        .register(2, TimerSpec::every(ms(10)), 0, None)
        .unwrap();
    h.advance(ms(10));
    assert_eq!(h.run_ready().len(), 1);
}

fn os_threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn contract_12_threads_and_os_timers_do_not_grow_with_timers() {
    let rt: Runtime<()> = Runtime::new(RuntimeConfig::default()).unwrap();
    let few_owner = rt.acquire_owner(0, OwnerOptions::default()).unwrap();
    for k in 0..10 {
        few_owner
            .register(k, TimerSpec::every(Duration::from_secs(3600)), (), None)
            .unwrap();
    }
    rt.sync().unwrap();
    let few = rt.stats();
    let threads_few = os_threads();
    for id in 1..=10_000u64 {
        let o = rt.acquire_owner(id, OwnerOptions::default()).unwrap();
        for k in 0..2 {
            o.register(k, TimerSpec::every(Duration::from_secs(3600)), (), None)
                .unwrap();
        }
    }
    rt.sync().unwrap();
    let many = rt.stats();
    assert_eq!(many.live_timers, 20_010);
    assert_eq!((few.scheduler_threads, many.scheduler_threads), (1, 1));
    assert_eq!((few.os_timers, many.os_timers), (0, 0));
    assert_eq!(few.wakeup_primitives, many.wakeup_primitives);
    // Other tests of this binary may start their own runtimes meanwhile; this one adds none.
    assert!(os_threads() <= threads_few + 8, "threads grew with timers");
    assert!(many.queue_len >= 20_010, "one queue holds every timer");
}
