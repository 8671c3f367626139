//! `Runtime::reset_timer` from the outside: a reset moves a live generation to a new one of
//! the same key, period and policy (T1: the old one's one result `Superseded`), keeping the
//! payload in place when it can and releasing nothing then; every payload that a generation
//! carried is released exactly once whichever way each reset went; and resets racing
//! cancels and a delivering host leave the accounting identities exact.
//!
//! `RESET_RACE_ROUNDS` sets the race's rounds (default 20,000).

mod common;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Releases;
use spot_timer_core::*;

fn counting_runtime(clock: ClockKind) -> (Runtime<u64>, Releases) {
    common::counting_runtime(clock)
}

fn accounted(rt: &Runtime<u64>) {
    common::assert_accounted(rt);
}

#[test]
fn an_idle_timer_is_reset_in_place_and_its_payload_is_released_once() {
    let (rt, released) = counting_runtime(ClockKind::Real);
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let mut id = owner
        .register_id(7, TimerSpec::after(Duration::from_secs(60)), 42, None)
        .unwrap();
    let first = id;
    let (mut in_place, mut registered) = (0, 0);
    // Past a slot's run of in-place generations (255): some resets register anew.
    for i in 0..600u64 {
        match rt.reset_timer(id, Duration::from_secs(30 + i), 42).unwrap() {
            Reset::InPlace(next) => {
                assert_eq!(next.slot(), id.slot());
                in_place += 1;
                id = next;
            }
            Reset::Registered(next) => {
                registered += 1;
                id = next;
            }
        }
    }
    assert!(
        in_place >= 590,
        "in place {in_place}, registered {registered}"
    );
    assert!(registered >= 1, "the chain crossed to another slot once");
    assert_eq!(
        rt.timer_result(first),
        Some(Ok(EndReason::Superseded)),
        "the first generation's one result"
    );
    assert_eq!(rt.timer_result(id), None, "the last one is live");
    // Every `Registered` reset superseded a generation that then released its payload.
    assert_eq!(released.lock().unwrap().get(&42).copied(), Some(registered));
    assert_eq!(
        rt.cancel_timer_nowait(id).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_eq!(
        released.lock().unwrap().get(&42).copied(),
        Some(registered + 1),
        "once more, at the chain's end"
    );
    rt.close();
    accounted(&rt);
    let s = rt.stats();
    assert_eq!((s.registered, s.ended), (601, 601));
}

#[test]
fn a_reset_keeps_the_period_and_policy_and_moves_the_first_due_time() {
    let clock = ManualClock::new();
    let (rt, _) = counting_runtime(ClockKind::Manual(clock.clone()));
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let spec = TimerSpec::every(Duration::from_millis(10))
        .policy(OverrunPolicy::CatchUpBounded)
        .max_catch_up_ticks(3);
    let old = owner.register_id(1, spec, 5, None).unwrap();
    let id = rt.reset_timer(old, Duration::from_secs(3600), 6).unwrap();
    assert!(matches!(id, Reset::InPlace(_)));
    let id = id.id();
    let mut ticks = Vec::new();
    let pump = |rt: &Runtime<u64>, ticks: &mut Vec<(u64, u64, u64)>| {
        rt.sync().unwrap();
        let (mut out, mut done) = (Vec::new(), Vec::new());
        loop {
            out.clear();
            rt.exchange(&done, &mut out, 64, Some(Duration::ZERO))
                .unwrap();
            done.clear();
            if out.is_empty() {
                break;
            }
            for r in &out {
                if let Record::Tick(t) = r {
                    assert_eq!(t.timer_id(), id, "only the new generation ticks");
                    assert_eq!(*t.payload(), 5, "with the payload it kept");
                    assert!(rt.begin(t));
                    let tick = t.tick();
                    ticks.push((
                        tick.delivery_index,
                        tick.scheduled_index,
                        tick.skipped_ticks,
                    ));
                    done.push(t.complete(Outcome::Ok));
                }
            }
            rt.complete(&done).unwrap();
            done.clear();
            rt.sync().unwrap();
        }
    };
    clock.advance(Duration::from_millis(50));
    pump(&rt, &mut ticks);
    assert!(
        ticks.is_empty(),
        "nothing due before the reset's delay: {ticks:?}"
    );
    clock.advance(Duration::from_secs(3600) - Duration::from_millis(50));
    pump(&rt, &mut ticks);
    assert_eq!(ticks, vec![(1, 1, 0)], "T4: its own indexes from 1");
    // Five periods late: CatchUpBounded(3) delivers the newest three, in order.
    clock.advance(Duration::from_millis(50));
    pump(&rt, &mut ticks);
    assert_eq!(
        ticks[1..].iter().map(|t| t.1).collect::<Vec<_>>(),
        vec![4, 5, 6],
        "the period and the policy were kept: {ticks:?}"
    );
    assert_eq!(rt.timer_result(old), Some(Ok(EndReason::Superseded)));
    rt.close();
    accounted(&rt);
}

#[test]
fn a_timer_whose_record_is_with_the_host_is_reset_by_a_registration() {
    let (rt, released) = counting_runtime(ClockKind::Real);
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let old = owner
        .register_id(3, TimerSpec::every(Duration::from_millis(1)), 10, None)
        .unwrap();
    let tick = common::first_tick_of(&rt, old);
    assert!(rt.begin(&tick), "its handler runs");
    let reset = rt.reset_timer(old, Duration::from_secs(60), 11).unwrap();
    let Reset::Registered(new) = reset else {
        panic!("a running generation cannot be replaced in place: {reset:?}");
    };
    assert_ne!(new.slot(), old.slot());
    assert_eq!(
        released.lock().unwrap().get(&10),
        None,
        "not released while its handler runs"
    );
    rt.complete(&[tick.complete(Outcome::Ok)]).unwrap();
    assert_eq!(rt.timer_result(old), Some(Ok(EndReason::Superseded)));
    assert_eq!(released.lock().unwrap().get(&10).copied(), Some(1));
    // A reset of a generation that ended is refused and changes nothing.
    assert!(matches!(
        rt.reset_timer(old, Duration::from_secs(1), 12),
        Err(Error::StaleHandle)
    ));
    assert_eq!(rt.timer_result(new), None);
    rt.close();
    assert_eq!(released.lock().unwrap().get(&11).copied(), Some(1));
    assert_eq!(
        released.lock().unwrap().get(&12),
        None,
        "a refused reset's payload was dropped, never carried"
    );
    accounted(&rt);
}

/// `reset_timer_swapping` (the C ABI's `spot_timer_reset`): an idle generation moves in
/// place with the payload given and hands its own back, neither released nor dropped; one
/// whose record is with the host does not move, nothing changes and the payload given comes
/// back — so each payload is released once, by the one generation that carried it last.
#[test]
fn a_swapping_reset_moves_idle_timers_only_and_hands_the_other_payload_back() {
    let (rt, released) = counting_runtime(ClockKind::Real);
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let first = owner
        .register_id(3, TimerSpec::every(Duration::from_millis(1)), 10, None)
        .unwrap();
    let Swap::Moved {
        id: moved,
        previous,
    } = rt
        .reset_timer_swapping(first, Duration::from_millis(1), 11)
        .unwrap()
    else {
        panic!("idle: moved in place");
    };
    assert_eq!(previous, 10, "the old payload comes back");
    assert_eq!(moved.slot(), first.slot());
    assert_eq!(rt.timer_result(first), Some(Ok(EndReason::Superseded)));
    assert_eq!(released.lock().unwrap().get(&10), None, "nothing released");
    let tick = common::first_tick_of(&rt, moved);
    assert_eq!(
        *tick.payload(),
        11,
        "the new generation carries the payload given"
    );
    assert!(rt.begin(&tick), "its handler runs");
    let refused = rt
        .reset_timer_swapping(moved, Duration::from_secs(60), 12)
        .unwrap();
    assert!(
        matches!(refused, Swap::Refused(12)),
        "its record is with the host: it cannot move ({refused:?})"
    );
    assert_eq!(rt.timer_result(moved), None, "still live");
    rt.complete(&[tick.complete(Outcome::Ok)]).unwrap();
    assert_eq!(
        rt.cancel_timer_nowait(moved).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    let r = released.lock().unwrap().clone();
    assert_eq!(
        (r.get(&10), r.get(&11), r.get(&12)),
        (None, Some(&1), None),
        "only the last carrier's payload is released, once"
    );
    assert!(matches!(
        rt.reset_timer_swapping(moved, Duration::from_secs(1), 13),
        Err(Error::StaleHandle)
    ));
    let other = owner
        .register_id(4, TimerSpec::after(Duration::from_secs(60)), 20, None)
        .unwrap();
    rt.close();
    assert!(matches!(
        rt.reset_timer_swapping(other, Duration::from_secs(1), 21),
        Err(Error::StaleHandle) | Ok(Swap::Refused(21))
    ));
    accounted(&rt);
}

#[test]
fn a_reset_checks_the_owner_as_a_registration_does() {
    let clock = ManualClock::new();
    let (rt, _) = counting_runtime(ClockKind::Manual(clock.clone()));
    let leased = rt
        .acquire_owner(
            1,
            OwnerOptions {
                lease: Some(Duration::from_secs(1)),
                ..OwnerOptions::default()
            },
        )
        .unwrap();
    let id = leased
        .register_id(1, TimerSpec::after(Duration::from_secs(60)), 1, None)
        .unwrap();
    clock.advance(Duration::from_secs(2));
    assert!(matches!(
        rt.reset_timer(id, Duration::from_secs(1), 1),
        Err(Error::LeaseExpired) | Err(Error::StaleHandle)
    ));
    let owner = rt.acquire_owner(2, OwnerOptions::default()).unwrap();
    let id = owner
        .register_id(1, TimerSpec::after(Duration::from_secs(60)), 2, None)
        .unwrap();
    owner.revoke().unwrap();
    assert!(matches!(
        rt.reset_timer(id, Duration::from_secs(1), 2),
        Err(Error::StaleHandle)
    ));
    // Made-up ids are refused, never a panic: a slot never used, a generation never handed
    // out in a used slot.
    for made_up in [
        TimerId::from_parts(100_000, 12345).unwrap(),
        TimerId::from_parts(id.slot(), id.generation() + 1000).unwrap(),
    ] {
        assert!(matches!(
            rt.reset_timer(made_up, Duration::from_secs(1), 3),
            Err(Error::StaleHandle)
        ));
    }
    rt.close();
    accounted(&rt);
}

/// One resetting thread, a canceller and a delivering host over a few keys whose timers
/// fall due within 0–2 ms, so reset × delivery and reset × cancel meet; every payload a
/// generation carried (each `Registered` reset's own) is released exactly once.
#[test]
fn resets_race_cancels_and_delivery_and_release_every_payload_once() {
    let rounds: u64 = std::env::var("RESET_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    const KEYS: u64 = 8;
    let (rt, released) = counting_runtime(ClockKind::Real);
    let rt = Arc::new(rt);
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let host = common::delivering_host(rt.clone(), stop.clone());
    let current = Arc::new(Mutex::new(Vec::<TimerId>::new()));
    let canceller = {
        let (rt, current, stop) = (rt.clone(), current.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(SeqCst) {
                n += 1;
                let id = {
                    let c = current.lock().unwrap();
                    if c.is_empty() {
                        continue;
                    }
                    c[(n % c.len() as u64) as usize]
                };
                let _ = rt.cancel_timer_nowait(id);
                std::thread::sleep(Duration::from_micros(n % 200));
            }
        })
    };
    // Payloads are unique per carrier: the initial registrations and each reset's own.
    let mut next_payload = 1u64;
    let mut carriers = 0u64;
    let mut ids = Vec::new();
    for k in 0..KEYS {
        ids.push(
            owner
                .register_id(
                    k,
                    TimerSpec::after(Duration::from_millis(1)),
                    next_payload,
                    None,
                )
                .unwrap(),
        );
        next_payload += 1;
        carriers += 1;
    }
    *current.lock().unwrap() = ids.clone();
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut in_place, mut registered, mut stale) = (0u64, 0u64, 0u64);
    for round in 0..rounds {
        assert!(
            Instant::now() < deadline,
            "round {round}: no progress in 120 s"
        );
        let k = (round % KEYS) as usize;
        let delay = Duration::from_nanos((round * 7919) % 2_000_000);
        // A varying few microseconds between resets move the window against the host's
        // deliveries and the canceller.
        let spin_until = Instant::now() + Duration::from_nanos((round * 104_729) % 20_000);
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let payload = next_payload;
        next_payload += 1;
        match rt.reset_timer(ids[k], delay, payload) {
            Ok(Reset::InPlace(id)) => {
                in_place += 1;
                ids[k] = id;
            }
            Ok(Reset::Registered(id)) => {
                registered += 1;
                carriers += 1;
                ids[k] = id;
            }
            Err(Error::StaleHandle) => {
                // Cancelled or fired: registered again, a new carrier.
                stale += 1;
                ids[k] = owner
                    .register_id(
                        k as u64,
                        TimerSpec::every(Duration::from_micros(700)),
                        payload,
                        None,
                    )
                    .unwrap();
                carriers += 1;
            }
            Err(e) => panic!("round {round}: {e:?}"),
        }
        current.lock().unwrap()[k] = ids[k];
    }
    stop.store(true, SeqCst);
    host.join().unwrap();
    canceller.join().unwrap();
    rt.close();
    accounted(&rt);
    let released = released.lock().unwrap();
    assert!(
        released.values().all(|&n| n == 1),
        "a payload released twice: {:?}",
        released
            .iter()
            .filter(|(_, &n)| n != 1)
            .take(5)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        released.len() as u64,
        carriers,
        "every carried payload released (in place {in_place}, registered {registered}, stale {stale})"
    );
    eprintln!("in place {in_place}, registered {registered}, stale {stale}");
    assert!(
        in_place > 0 && registered > 0 && stale > 0,
        "every way was taken: {in_place} {registered} {stale}"
    );
}
