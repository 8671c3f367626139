//! A blocking cancel, a cancel asking for a notice and an exchanging host racing the end of
//! one-shot timers whose release hook fails after a short busy wait (public API only, real
//! clock). Every round must finish before its deadline (a call that never returns is the
//! defect this hunts), and every asker must see the one terminal result: the hook's failure.
//!
//! `CANCEL_RACE_ROUNDS` sets the number of rounds (default 20,000).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use spot_timer_core::*;

/// A tiny deterministic generator, so a failing round can be replayed.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn spin_for(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn failure_of(round: u64) -> String {
    format!("hook of round {round} failed")
}

fn is_failure_of(r: &EndResult, round: u64) -> bool {
    matches!(r, Err(Error::CleanupFailed(m)) if **m == *failure_of(round))
}

#[test]
fn blocking_cancel_notice_and_exchange_race_a_failing_hook() {
    let rounds: u64 = std::env::var("CANCEL_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let rt = Arc::new(Runtime::<u64>::new(RuntimeConfig::default()).unwrap());
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();

    // The host: exchanges for ever, completes every tick it gets, and reports every
    // cancel notice (tag = round) it receives.
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicU64::new(0));
    let (notice_tx, notice_rx) = mpsc::channel::<(u64, EndResult)>();
    let host = {
        let (rt, stop, started) = (rt.clone(), stop.clone(), started.clone());
        std::thread::spawn(move || {
            let mut batch = Vec::new();
            let mut done = Vec::new();
            while !stop.load(SeqCst) {
                batch.clear();
                let _ = rt.exchange(&done, &mut batch, 64, Some(Duration::from_millis(5)));
                done.clear();
                for r in &batch {
                    match r {
                        Record::Tick(t) => {
                            let outcome = if rt.begin(t) {
                                started.fetch_add(1, SeqCst);
                                Outcome::Ok
                            } else {
                                Outcome::NotStarted
                            };
                            done.push(t.complete(outcome));
                        }
                        Record::CancelDone(n) => notice_tx.send((n.tag, n.result.clone())).unwrap(),
                    }
                }
            }
            let _ = rt.complete(&done);
        })
    };

    // Two cancellers, released together each round by a barrier; each waits a varying
    // few microseconds first to move the window across the end.
    let barrier = Arc::new(Barrier::new(3));
    let (job_tx, job_rx) = mpsc::channel::<Option<(TimerHandle<u64>, u64)>>();
    let (job2_tx, job2_rx) = mpsc::channel::<Option<(TimerHandle<u64>, u64)>>();
    let (res_tx, res_rx) = mpsc::channel::<(&'static str, u64, EndResult)>();
    let blocking = {
        let (barrier, res_tx) = (barrier.clone(), res_tx.clone());
        std::thread::spawn(move || {
            while let Ok(Some((t, round))) = job_rx.recv() {
                barrier.wait();
                spin_for(Duration::from_nanos(mix(round) % 15_000));
                let r = t.cancel(Some(Duration::from_secs(30)));
                res_tx.send(("blocking", round, r)).unwrap();
            }
        })
    };
    let noticing = {
        let (barrier, res_tx) = (barrier.clone(), res_tx.clone());
        std::thread::spawn(move || {
            while let Ok(Some((t, round))) = job2_rx.recv() {
                barrier.wait();
                spin_for(Duration::from_nanos(mix(round ^ 0xABCD) % 15_000));
                match t.cancel_with_notice(round) {
                    Ok(Some(r)) => res_tx.send(("notice-now", round, r)).unwrap(),
                    Ok(None) => {}
                    Err(e) => res_tx.send(("notice-error", round, Err(e))).unwrap(),
                }
            }
        })
    };

    let deadline_per_round = Duration::from_secs(30);
    let mut immediate_notices = 0u64;
    for round in 0..rounds {
        let r = mix(round);
        let hook_wait = Duration::from_nanos(r % 20_000);
        let due = Duration::from_nanos((r >> 20) % 60_000);
        let msg = failure_of(round);
        let hook: ReleaseHook = Box::new(move || {
            spin_for(hook_wait);
            Err(msg)
        });
        let t = owner
            .register(round, TimerSpec::after(due), round, Some(hook))
            .unwrap();
        job_tx.send(Some((t.clone(), round))).unwrap();
        job2_tx.send(Some((t.clone(), round))).unwrap();
        barrier.wait();

        // The blocking cancel's result, and the notice's (now or as a record).
        let until = Instant::now() + deadline_per_round;
        let (mut blocking_seen, mut notice_seen) = (false, false);
        while !(blocking_seen && notice_seen) {
            let left = until.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "round {round} made no progress in {deadline_per_round:?} (blocking answered: \
                 {blocking_seen}, notice answered: {notice_seen}): a cancel never returned"
            );
            if !notice_seen {
                if let Ok((tag, res)) = notice_rx.try_recv() {
                    assert_eq!(tag, round, "a notice of another round");
                    assert!(is_failure_of(&res, round), "round {round}: notice {res:?}");
                    notice_seen = true;
                    continue;
                }
            }
            match res_rx.recv_timeout(left.min(Duration::from_millis(2))) {
                Ok((who, rr, res)) => {
                    assert_eq!(rr, round);
                    assert!(
                        is_failure_of(&res, round),
                        "round {round}: {who} saw {res:?}"
                    );
                    match who {
                        "blocking" => blocking_seen = true,
                        "notice-now" => {
                            assert!(!notice_seen, "round {round}: notice answered twice");
                            notice_seen = true;
                            immediate_notices += 1;
                        }
                        other => panic!("round {round}: {other}: {res:?}"),
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(e) => panic!("{e}"),
            }
        }
        // The handle keeps answering with the same result.
        assert!(is_failure_of(
            &t.cancel(Some(Duration::from_secs(5))),
            round
        ));
    }
    job_tx.send(None).unwrap();
    job2_tx.send(None).unwrap();
    blocking.join().unwrap();
    noticing.join().unwrap();
    // No notice answered twice: nothing more arrives.
    std::thread::sleep(Duration::from_millis(20));
    assert!(notice_rx.try_recv().is_err(), "a notice arrived twice");
    stop.store(true, SeqCst);
    host.join().unwrap();
    let s = rt.stats();
    assert_eq!(s.cleanup_failures, rounds, "every hook failed once");
    eprintln!(
        "{rounds} rounds: {} callbacks started, {immediate_notices} notices answered at once, \
         {} by record",
        started.load(SeqCst),
        rounds - immediate_notices
    );
}
