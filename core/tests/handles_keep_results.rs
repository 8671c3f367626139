//! A handle keeps its generation's result as long as it lives, from the outside: timers end
//! every way there is (cancelled, completed, superseded by a registration and by a reset
//! in place, revoked, the runtime closed), then 100,000 registrations and cancels on the
//! same and on another thread reuse every slot that is free, and each handle still reads
//! its original end. Ids registered without a hold, ended the same way, read
//! `StaleHandle` after the same churn: the churn does reuse slots. And holds given back
//! in any order, racing the ends on other threads, leave none behind.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use spot_timer_core::*;

const FAR: Duration = Duration::from_secs(3600);

/// 100,000 registrations and cancels, half on this thread and half on another, through
/// holding handles (dropped at once) and ids.
fn churn(rt: &Arc<Runtime<u64>>, base: OwnerId) {
    let run = |rt: &Runtime<u64>, owner: OwnerId| {
        let o = rt.acquire_owner(owner, OwnerOptions::default()).unwrap();
        for i in 0..50_000u64 {
            if i % 2 == 0 {
                let h = o.register(i, TimerSpec::after(FAR), i, None).unwrap();
                assert_eq!(h.cancel(None), Ok(EndReason::Cancelled));
            } else {
                let id = o.register_id(i, TimerSpec::after(FAR), i, None).unwrap();
                assert_eq!(
                    rt.cancel_timer_nowait(id).unwrap(),
                    Some(Ok(EndReason::Cancelled))
                );
            }
        }
        o.release().unwrap();
    };
    let other = rt.clone();
    let t = thread::spawn(move || run(&other, base + 1));
    run(rt, base);
    t.join().unwrap();
}

/// Delivers and completes the first tick of `id` (a one-shot: it ends `Completed`).
fn run_once(rt: &Runtime<u64>, id: TimerId) {
    rt.advance(Duration::from_millis(2)).unwrap();
    let tick = common::first_tick_of(rt, id);
    assert!(rt.begin(&tick));
    rt.exchange(
        &[tick.complete(Outcome::Ok)],
        &mut Vec::new(),
        8,
        Some(Duration::ZERO),
    )
    .unwrap();
}

/// The end of `h`'s generation, within 30 s (its record may still be with the host).
fn end_of(h: &TimerHandle<u64>) -> EndResult {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(r) = h.result() {
            return r;
        }
        assert!(Instant::now() < until, "{:?} did not end in 30 s", h.id());
        thread::sleep(Duration::from_micros(100));
    }
}

#[test]
fn every_handle_reads_its_original_end_after_a_hundred_thousand_registrations() {
    let (rt, _clock) = Runtime::<u64>::manual().unwrap();
    let rt = Arc::new(rt);
    let mut expected: Vec<(&str, TimerHandle<u64>, EndReason)> = Vec::new();
    let mut unheld: Vec<(&str, TimerId)> = Vec::new();

    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    // Cancelled.
    let h = o.register(1, TimerSpec::after(FAR), 1, None).unwrap();
    assert_eq!(h.cancel(None), Ok(EndReason::Cancelled));
    expected.push(("cancelled", h, EndReason::Cancelled));
    let id = o.register_id(2, TimerSpec::after(FAR), 2, None).unwrap();
    rt.cancel_timer_nowait(id).unwrap();
    unheld.push(("cancelled", id));
    // Completed: a one-shot that ran.
    let h = o
        .register(3, TimerSpec::after(Duration::from_millis(1)), 3, None)
        .unwrap();
    run_once(&rt, h.id());
    assert_eq!(h.result(), Some(Ok(EndReason::Completed)));
    expected.push(("completed", h, EndReason::Completed));
    let id = o
        .register_id(4, TimerSpec::after(Duration::from_millis(1)), 4, None)
        .unwrap();
    run_once(&rt, id);
    unheld.push(("completed", id));
    // Superseded by a registration of the same key.
    let h = o.register(5, TimerSpec::after(FAR), 5, None).unwrap();
    let next = o.register(5, TimerSpec::after(FAR), 5, None).unwrap();
    expected.push(("superseded by a registration", h, EndReason::Superseded));
    assert_eq!(next.cancel(None), Ok(EndReason::Cancelled));
    expected.push((
        "the registration that superseded it, cancelled",
        next,
        EndReason::Cancelled,
    ));
    // Superseded by a reset in place, whose new generation is held too.
    let first = o.register_held(6, TimerSpec::after(FAR), 6, None).unwrap();
    let (reset, second) = rt.reset_timer_held(first.id(), FAR, 6).unwrap();
    assert!(
        matches!(reset, Reset::InPlace(_)),
        "an idle timer moves in place"
    );
    let h = rt.timer(first.id()).unwrap();
    expected.push(("superseded in place", h, EndReason::Superseded));
    assert_eq!(
        rt.cancel_timer_nowait(second.id()).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    let second_handle = rt.timer(second.id()).unwrap();
    expected.push((
        "its successor, cancelled",
        second_handle,
        EndReason::Cancelled,
    ));
    // Revoked: the owner's authority ends.
    let revoked = rt.acquire_owner(2, OwnerOptions::default()).unwrap();
    let h = revoked.register(1, TimerSpec::after(FAR), 7, None).unwrap();
    let id = revoked
        .register_id(2, TimerSpec::after(FAR), 8, None)
        .unwrap();
    revoked.revoke().unwrap();
    expected.push(("revoked", h, EndReason::Revoked));
    unheld.push(("revoked", id));
    let held = [first, second];

    churn(&rt, 100);

    for (how, h, reason) in &expected {
        assert_eq!(h.result(), Some(Ok(*reason)), "{how}: the original end");
        assert_eq!(h.clone().result(), Some(Ok(*reason)), "{how}: a clone too");
    }
    for h in &held {
        let r = rt.timer_result(h.id());
        assert!(matches!(r, Some(Ok(_))), "a held id reads its end: {r:?}");
    }
    for (how, id) in &unheld {
        assert_eq!(
            rt.timer_result(*id),
            Some(Err(Error::StaleHandle)),
            "{how} without a hold: the churn reused its slot"
        );
    }
    // Holds given back: the churn reuses those slots too.
    let ids: Vec<TimerId> = held.iter().map(|h| h.id()).collect();
    for h in held {
        rt.release_hold(h).unwrap();
    }
    let handle_ids: Vec<(&str, TimerId)> =
        expected.iter().map(|(how, h, _)| (*how, h.id())).collect();
    drop(expected);
    // (An owner's key table may still name a slot whose generation ended: its release
    // gives those back.)
    o.release().unwrap();
    churn(&rt, 200);
    for (how, id) in handle_ids {
        assert_eq!(
            rt.timer_result(id),
            Some(Err(Error::StaleHandle)),
            "{how}: its handles are gone, its slot served again"
        );
    }
    for id in ids {
        assert_eq!(rt.timer_result(id), Some(Err(Error::StaleHandle)));
    }
}

#[test]
fn a_handle_reads_runtime_closed_after_the_close() {
    let rt = Arc::new(Runtime::<u64>::new(RuntimeConfig::default()).unwrap());
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let h = o.register(1, TimerSpec::after(FAR), 1, None).unwrap();
    let held = o.register_held(2, TimerSpec::after(FAR), 2, None).unwrap();
    rt.close();
    assert_eq!(h.result(), Some(Ok(EndReason::RuntimeClosed)));
    assert_eq!(
        rt.timer_result(held.id()),
        Some(Ok(EndReason::RuntimeClosed))
    );
    rt.release_hold(held).unwrap();
}

#[test]
fn a_hold_given_back_by_id_twice_or_never_taken_is_refused() {
    let rt = Runtime::<u64>::new(RuntimeConfig::default()).unwrap();
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let unheld = o.register_id(1, TimerSpec::after(FAR), 1, None).unwrap();
    assert_eq!(rt.release_hold_of(unheld), Err(Error::StaleHandle));
    let id = o
        .register_held(2, TimerSpec::after(FAR), 2, None)
        .unwrap()
        .into_id();
    assert_eq!(
        rt.cancel_timer_nowait(id).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_eq!(rt.release_hold_of(id), Ok(()));
    assert_eq!(
        rt.release_hold_of(id),
        Err(Error::StaleHandle),
        "the second time there is no hold"
    );
    let never = TimerId::from_parts(12_345, 1).unwrap();
    assert_eq!(rt.release_hold_of(never), Err(Error::StaleHandle));
    // The slot went back once: registrations keep working and read their own results.
    for k in 0..5_000 {
        let h = o.register(100 + k, TimerSpec::after(FAR), k, None).unwrap();
        assert_eq!(h.cancel(None), Ok(EndReason::Cancelled));
    }
}

#[test]
fn a_hold_of_another_runtime_is_refused() {
    let a = Runtime::<u64>::new(RuntimeConfig::default()).unwrap();
    let b = Runtime::<u64>::new(RuntimeConfig::default()).unwrap();
    let o = a.acquire_owner(1, OwnerOptions::default()).unwrap();
    let held = o.register_held(1, TimerSpec::after(FAR), 1, None).unwrap();
    let held_id = held.id();
    assert_eq!(
        b.release_hold(held),
        Err(Error::StaleHandle),
        "a hold given to the wrong runtime changes nothing"
    );
    // (That hold is lost: its slot stays held, memory and never a wrong result.)
    assert_eq!(
        a.timer_result(held_id),
        None,
        "the timer itself is untouched"
    );
}

/// Handles and their clones dropped on several threads while other threads end, reset
/// and supersede their generations: each clone reads the one end its generation had, and
/// once all are gone no hold is left on any of their slots.
#[test]
fn holds_given_back_in_any_order_racing_the_ends_leak_no_slot() {
    let rounds: u64 = std::env::var("HOLD_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let rt = Arc::new(Runtime::<u64>::new(RuntimeConfig::default()).unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let host = common::delivering_host(rt.clone(), stop.clone());
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut ids = Vec::new();
    for round in 0..rounds {
        assert!(Instant::now() < deadline, "no progress: round {round}");
        let o = Arc::new(
            rt.acquire_owner(1000 + round, OwnerOptions::default())
                .unwrap(),
        );
        // Some fire at once, some are cancelled, reset or superseded while clones drop.
        let due = Duration::from_micros(round % 3 * 50);
        let h = o.register(1, TimerSpec::after(due), round, None).unwrap();
        ids.push(h.id());
        let barrier = Arc::new(Barrier::new(3));
        let (c1, c2) = (h.clone(), h.clone());
        let spin = (round % 7) as u32 * 20;
        let ender = {
            let (rt, o, b) = (rt.clone(), o.clone(), barrier.clone());
            thread::spawn(move || {
                b.wait();
                for _ in 0..spin {
                    std::hint::spin_loop();
                }
                match round % 4 {
                    0 => {
                        let _ = c1.cancel(Some(Duration::from_secs(30)));
                    }
                    1 => {
                        if let Ok(next) = rt.reset_timer(c1.id(), FAR, round) {
                            let _ = rt.cancel_timer(next.id(), Some(Duration::from_secs(30)));
                        }
                    }
                    2 => {
                        let next = o.register(1, TimerSpec::after(FAR), round, None).unwrap();
                        let _ = next.cancel(Some(Duration::from_secs(30)));
                    }
                    _ => o.revoke().unwrap(),
                }
                let r = end_of(&c1);
                (r, c1)
            })
        };
        let dropper = {
            let b = barrier.clone();
            thread::spawn(move || {
                b.wait();
                for _ in 0..(spin / 2) {
                    std::hint::spin_loop();
                }
                drop(c2);
            })
        };
        barrier.wait();
        let (r, c1) = ender.join().unwrap();
        dropper.join().unwrap();
        let r = r.unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        // The one-shot may have run before the ender came.
        let ended_by_ender = [
            EndReason::Cancelled,
            EndReason::Superseded,
            EndReason::Superseded,
            EndReason::Revoked,
        ][(round % 4) as usize];
        assert!(
            r == ended_by_ender || r == EndReason::Completed,
            "round {round}: ended {r:?}"
        );
        assert_eq!(c1.result(), Some(Ok(r)), "round {round}: a clone keeps it");
        assert_eq!(
            h.result(),
            Some(Ok(r)),
            "round {round}: every clone reads the same end"
        );
        if round % 2 == 0 {
            drop(h);
            drop(c1);
        } else {
            drop(c1);
            drop(h);
        }
        let _ = o.release();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    host.join().unwrap();
    // Every hold was given back: none is left to give back again. (Whether each slot was
    // reused yet is not the question: a thread that ended generations may keep a few free
    // slots in its own cache for the next thread given its number.)
    let still_held = ids
        .iter()
        .filter(|id| rt.release_hold_of(**id).is_ok())
        .count();
    assert_eq!(still_held, 0, "holds left after every handle was dropped");
    // And the slots serve again: a churn on two threads reads its own results.
    churn(&rt, 1);
}
