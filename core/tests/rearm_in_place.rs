//! `Owner::rearm` from the outside: a re-registration naming the key's current generation
//! gives the same outcome as `register_id` (T1: a new generation, the old one's one result
//! `Superseded`), whether it took the slot in place or not; and racing cancels, notices,
//! blocking waits and a delivering host never see another result, never start a
//! superseded generation's callback, and leave the accounting identities exact.
//!
//! `REARM_RACE_ROUNDS` sets the race's rounds (default 20,000).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use spot_timer_core::*;

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn superseded(r: Option<EndResult>) -> bool {
    matches!(r, Some(Ok(EndReason::Superseded)))
}

/// Closes `rt` and checks both accounting identities.
fn closed_and_accounted<P: Clone + Send + Sync + 'static>(rt: &Runtime<P>) {
    rt.close();
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
}

#[test]
fn a_rearm_takes_the_slot_and_the_old_generation_stays_superseded() {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let first = owner
        .register_id(7, TimerSpec::after(Duration::from_secs(60)), 0, None)
        .unwrap();
    let mut ids = vec![first];
    // Past the end of one slot's run of in-place generations (255), so the chain also
    // crosses to a new slot once.
    for i in 1..600u32 {
        let prev = *ids.last().unwrap();
        let id = owner
            .rearm(prev, 7, TimerSpec::after(Duration::from_secs(60)), i, None)
            .unwrap();
        assert_ne!(id, prev);
        ids.push(id);
    }
    let slots: HashSet<u32> = ids.iter().map(|id| id.slot()).collect();
    assert!(
        slots.len() <= 4,
        "600 re-arms kept their slot but for a move per 255: {} slots",
        slots.len()
    );
    let (current, old) = ids.split_last().unwrap();
    for (n, id) in old.iter().enumerate() {
        assert!(
            superseded(rt.timer_result(*id)),
            "generation {n}: {:?}",
            rt.timer_result(*id)
        );
        assert_eq!(
            rt.cancel_timer_nowait(*id).unwrap(),
            Some(Ok(EndReason::Superseded)),
            "a cancel of generation {n} gets the same one result"
        );
        assert_eq!(
            rt.cancel_timer_with_notice(*id, n as u64).unwrap(),
            Some(Ok(EndReason::Superseded))
        );
        assert_eq!(
            rt.cancel_timer(*id, Some(Duration::from_secs(5))),
            Ok(EndReason::Superseded)
        );
        let handle = rt.timer(*id).expect("a handle of a superseded generation");
        assert!(superseded(handle.result()));
    }
    assert_eq!(rt.timer_result(*current), None, "the current one is live");
    let s = rt.stats();
    assert_eq!((s.registered, s.ended), (600, 599));
    assert_eq!(
        rt.cancel_timer_nowait(*current).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );

    // A stale `previous`: an ordinary registration, the same outcome.
    let again = owner
        .rearm(
            *current,
            7,
            TimerSpec::after(Duration::from_secs(60)),
            1,
            None,
        )
        .unwrap();
    assert_eq!(rt.timer_result(again), None);
    assert_eq!(
        rt.timer_result(*current),
        Some(Ok(EndReason::Cancelled)),
        "its result stays"
    );

    // A `previous` of another key supersedes nothing of that key.
    let other = owner
        .register_id(8, TimerSpec::after(Duration::from_secs(60)), 0, None)
        .unwrap();
    let nine = owner
        .rearm(other, 9, TimerSpec::after(Duration::from_secs(60)), 0, None)
        .unwrap();
    assert_ne!(nine.slot(), other.slot());
    assert_eq!(rt.timer_result(other), None, "key 8 is untouched");

    // A release hook on the new generation: registered elsewhere, the old one superseded.
    let hooked = owner
        .rearm(
            nine,
            9,
            TimerSpec::after(Duration::from_secs(60)),
            0,
            Some(Box::new(|| Ok(()))),
        )
        .unwrap();
    assert_ne!(hooked.slot(), nine.slot());
    assert!(superseded(rt.timer_result(nine)));
    // A generation with a hook is not taken in place: its hook runs at its end.
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let with_hook = owner
        .register_id(
            10,
            TimerSpec::after(Duration::from_secs(60)),
            0,
            Some(Box::new(move || {
                flag.store(true, SeqCst);
                Err("hook said no".into())
            })),
        )
        .unwrap();
    let after_hook = owner
        .rearm(
            with_hook,
            10,
            TimerSpec::after(Duration::from_secs(60)),
            0,
            None,
        )
        .unwrap();
    assert_ne!(after_hook.slot(), with_hook.slot());
    assert!(ran.load(SeqCst), "the superseded generation's hook ran");
    assert!(
        matches!(
            rt.timer_result(with_hook),
            Some(Err(Error::CleanupFailed(_)))
        ),
        "its failure is its result"
    );
    // Bad input is refused as register refuses it.
    assert!(matches!(
        owner.rearm(again, 7, TimerSpec::every(Duration::ZERO), 0, None),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(
        rt.timer_result(again),
        None,
        "a refused re-arm supersedes nothing"
    );
    closed_and_accounted(&rt);
}

#[test]
fn a_rearmed_timer_ticks_from_its_new_schedule() {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let old = owner
        .register_id(1, TimerSpec::after(Duration::from_secs(60)), 5, None)
        .unwrap();
    let id = owner
        .rearm(old, 1, TimerSpec::every(Duration::from_millis(2)), 6, None)
        .unwrap();
    assert_eq!(id.slot(), old.slot(), "taken in place");
    let mut seen = Vec::new();
    let mut done = Vec::new();
    let mut out = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while seen.len() < 3 {
        assert!(Instant::now() < until, "no ticks of the re-armed timer");
        out.clear();
        rt.exchange(&done, &mut out, 16, Some(Duration::from_millis(50)))
            .unwrap();
        done.clear();
        for r in &out {
            if let Record::Tick(t) = r {
                assert_eq!(t.timer_id(), id, "only the new generation ticks");
                assert_eq!(*t.payload(), 6, "with the new payload");
                assert!(rt.begin(t));
                seen.push(t.tick().delivery_index);
                done.push(t.complete(Outcome::Ok));
            }
        }
    }
    assert_eq!(
        &seen[..3],
        &[1, 2, 3],
        "T4: its own delivery indexes from 1"
    );
    rt.complete(&done).unwrap();
    assert!(superseded(rt.timer_result(old)));
    closed_and_accounted(&rt);
}

/// One rearming thread, a blocking canceller, a noticing canceller and a delivering host,
/// over a few keys whose timers fall due within 0–2 ms, so every pair meets: rearm ×
/// delivery, rearm × cancel, rearm × notice, rearm × wait.
#[test]
fn rearm_races_cancels_notices_waits_and_delivery() {
    let rounds: u64 = std::env::var("REARM_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    const KEYS: u64 = 8;
    let rt = Arc::new(Runtime::<u64>::new(RuntimeConfig::default()).unwrap());
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    // Generations a rearm has superseded (inserted once the rearm returned).
    let superseded_ids = Arc::new(Mutex::new(HashSet::<TimerId>::new()));
    let violations = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (notice_tx, notice_rx) = mpsc::channel::<(u64, EndResult)>();
    let host = {
        let (rt, stop, sup, violations) = (
            rt.clone(),
            stop.clone(),
            superseded_ids.clone(),
            violations.clone(),
        );
        std::thread::spawn(move || {
            let (mut out, mut done) = (Vec::new(), Vec::new());
            while !stop.load(SeqCst) {
                out.clear();
                let _ = rt.exchange(&done, &mut out, 64, Some(Duration::from_millis(5)));
                done.clear();
                for r in &out {
                    match r {
                        Record::Tick(t) => {
                            // Looked up before the start: a generation already superseded
                            // then must not start (T1).
                            let was_superseded = sup.lock().unwrap().contains(&t.timer_id());
                            let started = rt.begin(t);
                            if started && was_superseded {
                                violations.fetch_add(1, SeqCst);
                            }
                            let outcome = if started {
                                Outcome::Ok
                            } else {
                                Outcome::NotStarted
                            };
                            done.push(t.complete(outcome));
                        }
                        Record::CancelDone(n) => {
                            let _ = notice_tx.send((n.tag, n.result.clone()));
                        }
                    }
                }
            }
            let _ = rt.complete(&done);
        })
    };
    let (job_tx, job_rx) = mpsc::channel::<Option<(TimerId, u64)>>();
    let (res_tx, res_rx) = mpsc::channel::<(u64, EndResult)>();
    let canceller = {
        let (rt, res_tx) = (rt.clone(), res_tx.clone());
        std::thread::spawn(move || {
            while let Ok(Some((id, round))) = job_rx.recv() {
                let spin_until = Instant::now() + Duration::from_nanos(mix(round) % 20_000);
                while Instant::now() < spin_until {
                    std::hint::spin_loop();
                }
                let r = if round % 2 == 0 {
                    rt.cancel_timer(id, Some(Duration::from_secs(20)))
                } else {
                    match rt.cancel_timer_with_notice(id, round) {
                        Ok(Some(r)) => r,
                        Ok(None) => continue, // answered by a CancelDone record
                        Err(e) => Err(e),
                    }
                };
                res_tx.send((round, r)).unwrap();
            }
        })
    };

    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    let mut ids: Vec<TimerId> = (0..KEYS)
        .map(|k| {
            owner
                .register_id(k, TimerSpec::after(Duration::from_millis(1)), k, None)
                .unwrap()
        })
        .collect();
    let mut in_place = 0u64;
    let mut asked = 0u64;
    for round in 0..rounds {
        assert!(
            Instant::now() < deadline,
            "round {round}: no progress in 120 s"
        );
        let r = mix(round ^ 0x5EED);
        let k = (r % KEYS) as usize;
        let due = Duration::from_nanos((r >> 8) % 40_000);
        let spec = if r >> 40 & 3 == 0 {
            TimerSpec::every(Duration::from_micros(500 + (r >> 44) % 1_000))
        } else {
            TimerSpec::after(due)
        };
        let prev = ids[k];
        // Every other round the canceller goes for the generation being replaced, at a
        // varying few microseconds: before, during or after the rearm.
        if round % 2 == 0 {
            job_tx.send(Some((prev, round))).unwrap();
            asked += 1;
        }
        // The rearm waits a varying few microseconds too, so the two windows cross.
        let spin_until = Instant::now() + Duration::from_nanos(mix(round ^ 1) % 20_000);
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let id = owner.rearm(prev, k as u64, spec, round, None).unwrap();
        in_place += u64::from(id.slot() == prev.slot());
        superseded_ids.lock().unwrap().insert(prev);
        ids[k] = id;
    }
    job_tx.send(None).unwrap();
    canceller.join().unwrap();
    drop(res_tx);

    // Every answer about a replaced generation is one of its possible ends: cancelled
    // (the cancel came first), superseded, or completed (a one-shot that ran first).
    let mut answers = 0u64;
    let kinds = std::cell::RefCell::new(std::collections::BTreeMap::<String, u64>::new());
    let check = |round: u64, r: &EndResult| {
        *kinds.borrow_mut().entry(format!("{r:?}")).or_default() += 1;
        assert!(
            matches!(
                r,
                Ok(EndReason::Superseded | EndReason::Cancelled | EndReason::Completed)
            ),
            "round {round}: a cancel of a replaced generation got {r:?}"
        );
    };
    for (round, r) in res_rx.iter() {
        check(round, &r);
        answers += 1;
    }
    let until = Instant::now() + Duration::from_secs(30);
    while answers < asked {
        let left = until.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "{} of {asked} cancels never answered",
            asked - answers
        );
        if let Ok((round, r)) = notice_rx.recv_timeout(left) {
            check(round, &r);
            answers += 1;
        }
    }
    stop.store(true, SeqCst);
    host.join().unwrap();
    assert_eq!(
        violations.load(SeqCst),
        0,
        "a superseded generation started (T1)"
    );
    assert!(in_place > 0, "some rearms took their slot in place");
    let kinds = kinds.into_inner();
    let starts = rt.stats().completed_ok;
    println!(
        "FIGURES rearm race: {rounds} rounds, {in_place} in place, {answers} cancels answered \
         {kinds:?}, {starts} callbacks started, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if rounds >= 10_000 {
        // Evidence that the windows moved: each side won some rounds, and timers ran.
        assert!(kinds.contains_key("Ok(Superseded)") && kinds.contains_key("Ok(Cancelled)"));
        assert!(
            starts > 0,
            "no timer ran: the delivery side was never raced"
        );
    }
    closed_and_accounted(&rt);
}

/// The in-place path on a manual clock, small enough for Miri (the payload write into a
/// slot another generation used, the old payload's cell, the ENDING hand-over).
#[test]
fn rearm_in_place_on_a_manual_clock() {
    let (rt, _clock) = Runtime::<u64>::manual().unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let mut id = owner
        .register_id(3, TimerSpec::after(Duration::from_millis(5)), 1, None)
        .unwrap();
    let first = id;
    for payload in 2..6u64 {
        id = owner
            .rearm(
                id,
                3,
                TimerSpec::after(Duration::from_millis(5)),
                payload,
                None,
            )
            .unwrap();
    }
    assert_eq!(id.slot(), first.slot());
    assert_eq!(
        rt.cancel_timer_nowait(first).unwrap(),
        Some(Ok(EndReason::Superseded))
    );
    rt.advance(Duration::from_millis(5)).unwrap();
    let mut out = Vec::new();
    rt.exchange(&[], &mut out, 8, Some(Duration::ZERO)).unwrap();
    let ticks: Vec<_> = out.iter().filter_map(Record::as_tick).collect();
    assert_eq!(ticks.len(), 1, "one tick: the last generation's");
    assert_eq!((ticks[0].timer_id(), *ticks[0].payload()), (id, 5));
    assert!(rt.begin(ticks[0]));
    let done = [ticks[0].complete(Outcome::Ok)];
    rt.complete(&done).unwrap();
    assert_eq!(rt.timer_result(id), Some(Ok(EndReason::Completed)));
    closed_and_accounted(&rt);
}
