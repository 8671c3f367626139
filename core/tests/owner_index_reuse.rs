//! Owner indexes are reused once an owner is forgotten. Nothing a forgotten owner left in
//! the deadline queue (a lease entry) may touch the owner that reuses its index, and a
//! release or revocation always ends timers as `Revoked`. Manual clock, deterministic,
//! but for one race on the real clock with a delivering host (its own deadline).

mod common;

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use proptest::prelude::*;
use spot_timer_core::*;

#[test]
fn a_forgotten_owners_lease_entry_never_ends_the_next_owner_of_its_index() {
    let h = Host::new();
    // Owner 1 with a 50 ms lease: its lease entry waits in the queue for t = 50 ms.
    let leased = h.owner_with(1, OwnerOptions::lease(ms(50)));
    let t1 = leased
        .register(0, TimerSpec::every(ms(10)), 1, None)
        .unwrap();
    leased.release().unwrap();
    h.rt.sync().unwrap();
    assert_eq!(t1.result(), Some(Ok(EndReason::Revoked)));
    assert_eq!(
        h.rt.stats().owners,
        0,
        "forgotten at once: no timer was running"
    );
    // Owner 2, no lease, takes the freed index.
    let plain = h.owner(2);
    let t2 = plain
        .register(0, TimerSpec::every(ms(10)), 2, None)
        .unwrap();
    // Past owner 1's old deadline: its lease entry surfaces and must be recognised stale.
    for _ in 0..10 {
        h.advance(ms(10));
        h.run_ready();
    }
    assert!(t2.is_live(), "{:?}", t2.result());
    assert_eq!(t2.stats().delivered, 10);
    assert!(plain.check().is_ok());
    // Ending owner 2 now, with owner 1's entry long gone or not: Revoked.
    plain.release().unwrap();
    h.rt.sync().unwrap();
    assert_eq!(t2.result(), Some(Ok(EndReason::Revoked)));
}

/// The sequence of the original defect, made deterministic: a forgotten owner's lease
/// entry is due in the same scheduler turn in which the owner now holding its index is
/// released (here by another timer's release hook, which runs during that turn).
#[test]
fn a_stale_lease_entry_due_while_the_index_owner_is_released_leaves_it_revoked() {
    let h = Host::new();
    // Owner 1: a lease due at t = 50 ms + 1 ns; released and forgotten at once.
    let gone = h.owner_with(1, OwnerOptions::lease(ms(50) + Duration::from_nanos(1)));
    h.rt.sync().unwrap(); // its lease entry is in the queue
    gone.release().unwrap();
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 0);
    // Owner 2 (no lease) reuses owner 1's index.
    let victim = h.owner(2);
    let victim_timer = victim
        .register(0, TimerSpec::after(Duration::from_secs(10)), 0, None)
        .unwrap();
    // Owner 3's lease ends at t = 50 ms; its timer's release hook releases owner 2.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(victim.clone())));
    let hook: ReleaseHook = {
        let slot = slot.clone();
        Box::new(move || {
            if let Some(v) = slot.lock().unwrap().take() {
                v.release().map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    };
    let trigger = h.owner_with(3, OwnerOptions::lease(ms(50)));
    trigger
        .register(0, TimerSpec::after(Duration::from_secs(10)), 0, Some(hook))
        .unwrap();
    // One turn sees both: owner 3's expiry (its hook releases owner 2), then owner 1's
    // stale lease entry.
    h.advance(ms(60));
    h.rt.sync().unwrap();
    assert_eq!(
        victim_timer.result(),
        Some(Ok(EndReason::Revoked)),
        "a released owner's timers end as revoked, whatever entry of its index is due"
    );
}

#[test]
fn release_and_revoke_end_timers_as_revoked_when_a_lease_entry_is_due_at_that_instant() {
    let h = Host::new();
    for round in 0..20u64 {
        let id = 100 + round;
        // A leased owner whose lease entry is due exactly when it is released.
        let leased = h.owner_with(id, OwnerOptions::lease(ms(10)));
        let a = leased
            .register(0, TimerSpec::every(ms(3)), 0, None)
            .unwrap();
        h.advance(ms(9));
        h.run_ready();
        h.clock.advance(ms(1)); // the lease deadline is now, the scheduler has not looked
        if round % 2 == 0 {
            leased.release().unwrap();
        } else {
            leased.revoke().unwrap();
        }
        h.rt.sync().unwrap();
        assert_eq!(a.result(), Some(Ok(EndReason::Revoked)), "round {round}");
        // A lease-free owner reusing the index is untouched by the stale entry.
        let next = h.owner(1000 + round);
        let b = next.register(0, TimerSpec::every(ms(3)), 0, None).unwrap();
        h.advance(ms(20));
        h.run_ready();
        assert!(b.is_live(), "round {round}: {:?}", b.result());
        next.release().unwrap();
        h.rt.sync().unwrap();
        assert_eq!(b.result(), Some(Ok(EndReason::Revoked)));
        if round % 2 == 1 {
            leased.release().unwrap_err(); // revoked: its authority is gone
        }
    }
}

/// What happened to an authority, as the test sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Live,
    /// Revoked, released or replaced by a new acquisition.
    Revoked,
}

#[derive(Debug, Clone)]
enum Op {
    Acquire { id: u64, lease_ms: Option<u64> },
    Register { id: u64, key: u64 },
    Release { id: u64 },
    Revoke { id: u64 },
    Renew { id: u64, lease_ms: u64 },
    Advance { ms: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u64..4;
    prop_oneof![
        (id.clone(), proptest::option::of(1u64..40))
            .prop_map(|(id, lease_ms)| Op::Acquire { id, lease_ms }),
        (id.clone(), 0u64..3).prop_map(|(id, key)| Op::Register { id, key }),
        id.clone().prop_map(|id| Op::Release { id }),
        id.clone().prop_map(|id| Op::Revoke { id }),
        (id.clone(), 1u64..40).prop_map(|(id, lease_ms)| Op::Renew { id, lease_ms }),
        (0u64..25).prop_map(|ms| Op::Advance { ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Owners come and go (indexes reused) while their lease entries wait in the queue.
    /// Every timer ends with the reason of what happened to its own authority: `Revoked`
    /// if the host ended it (release, revoke, a new acquisition), `LeaseExpired` only if
    /// its own lease ran out before that, `Superseded` if its key was registered again —
    /// never the fate of another owner that shares its index.
    #[test]
    fn every_timer_ends_with_its_own_authoritys_fate(ops in proptest::collection::vec(op(), 1..60)) {
        let h = Host::new();
        // authority (id, epoch) -> (deadline in ns on the manual clock or None, fate)
        let mut authorities: HashMap<(u64, u64), (Option<u64>, Fate)> = HashMap::new();
        let mut current: HashMap<u64, Owner<u32>> = HashMap::new();
        // timer -> its authority, and whether a later registration of its key superseded it
        let mut timers: Vec<(TimerHandle<u32>, (u64, u64), bool)> = Vec::new();
        let now_ns = |h: &Host| h.rt.now();
        for op in ops {
            match op {
                Op::Acquire { id, lease_ms } => {
                    if let Some(old) = current.get(&id) {
                        if let Some(a) = authorities.get_mut(&(id, old.epoch())) {
                            if a.1 == Fate::Live { a.1 = Fate::Revoked; }
                        }
                    }
                    let opts = OwnerOptions { lease: lease_ms.map(ms), gate: GateMode::Serial };
                    let o = h.rt.acquire_owner(id, opts).unwrap();
                    let deadline = lease_ms.map(|l| now_ns(&h) + l * 1_000_000);
                    authorities.insert((id, o.epoch()), (deadline, Fate::Live));
                    current.insert(id, o);
                }
                Op::Register { id, key } => {
                    let Some(o) = current.get(&id) else { continue };
                    let live_before: Vec<usize> = timers
                        .iter()
                        .enumerate()
                        .filter(|(_, (t, auth, _))| {
                            *auth == (id, o.epoch()) && t.key() == Some(key) && t.is_live()
                        })
                        .map(|(i, _)| i)
                        .collect();
                    if let Ok(t) = o.register(key, TimerSpec::every(ms(4)), 0, None) {
                        for i in live_before {
                            timers[i].2 = true;
                        }
                        timers.push((t, (id, o.epoch()), false));
                    }
                }
                Op::Release { id } | Op::Revoke { id } => {
                    let Some(o) = current.get(&id) else { continue };
                    let r = if matches!(op, Op::Release { .. }) { o.release() } else { o.revoke() };
                    if r.is_ok() {
                        if let Some(a) = authorities.get_mut(&(id, o.epoch())) {
                            if a.1 == Fate::Live { a.1 = Fate::Revoked; }
                        }
                    }
                    if matches!(op, Op::Release { .. }) { current.remove(&id); }
                }
                Op::Renew { id, lease_ms } => {
                    let Some(o) = current.get(&id) else { continue };
                    if o.renew(Some(ms(lease_ms))).is_ok() {
                        let a = authorities.get_mut(&(id, o.epoch())).unwrap();
                        a.0 = Some(now_ns(&h) + lease_ms * 1_000_000);
                    }
                }
                Op::Advance { ms: m } => {
                    h.advance(ms(m));
                    h.run_ready();
                }
            }
        }
        h.advance(Duration::from_millis(100));
        h.run_ready();
        for (t, auth, superseded) in &timers {
            let (deadline, fate) = authorities[auth];
            match t.result() {
                None => {
                    prop_assert_eq!(fate, Fate::Live, "a revoked authority's timer is live");
                    prop_assert!(deadline.is_none_or(|d| d > h.rt.now()), "live past its lease");
                }
                Some(Ok(EndReason::Revoked)) => prop_assert_eq!(fate, Fate::Revoked),
                Some(Ok(EndReason::LeaseExpired)) => {
                    prop_assert!(deadline.is_some(), "LeaseExpired for an owner without a lease");
                    prop_assert!(deadline.unwrap() <= h.rt.now());
                }
                Some(Ok(EndReason::Superseded)) => prop_assert!(*superseded),
                other => prop_assert!(false, "unexpected end {other:?}"),
            }
        }
    }
}

/// A key registered again while the thread ending its previous generation is still
/// running that generation's release hook (a lease expiry on the scheduler thread): the
/// new generation keeps the key — a third registration supersedes it, and an unrelated
/// registration never takes its slot.
#[test]
fn a_key_registered_again_while_its_previous_generation_is_ending_keeps_it() {
    let h = Host::new();
    let (hook_started_tx, hook_started) = mpsc::channel();
    let (let_hook_finish, hook_may_finish) = mpsc::channel::<()>();
    let leased = h.owner_with(1, OwnerOptions::lease(ms(200)));
    let hook: ReleaseHook = Box::new(move || {
        hook_started_tx.send(()).unwrap();
        hook_may_finish.recv().unwrap();
        Ok(())
    });
    let a = leased
        .register(0, TimerSpec::every(ms(500)), 1, Some(hook))
        .unwrap();
    // The lease runs out; the scheduler ends A and blocks in its release hook.
    h.clock.advance(ms(250));
    let rt_sync = std::thread::spawn({
        let scheduler_wake = h.rt.acquire_owner(99, OwnerOptions::default()).unwrap();
        move || {
            // Any registration earlier than the scheduler's sleep wakes it on a real
            // clock; on the manual clock `sync` does (called by the main thread below).
            drop(scheduler_wake);
        }
    });
    rt_sync.join().unwrap();
    let syncer = {
        // sync() from another thread: the scheduler's turn runs A's end and its hook.
        let rt = &h.rt;
        std::thread::scope(|s| {
            let t = s.spawn(|| rt.sync());
            hook_started.recv().unwrap();
            // While A's hook runs: the owner again, and key 0 again (B).
            let again = h.owner_with(1, OwnerOptions::default());
            let b = again
                .register(0, TimerSpec::every(ms(10)), 2, None)
                .unwrap();
            let_hook_finish.send(()).unwrap();
            t.join().unwrap().unwrap();
            (again, b)
        })
    };
    let (again, b) = syncer;
    assert_eq!(a.result(), Some(Ok(EndReason::LeaseExpired)));
    assert!(b.is_live());
    // Unrelated registrations never take B's slot.
    let other = h.owner(2);
    let others: Vec<_> = (0..2000)
        .map(|k| {
            other
                .register(k, TimerSpec::every(ms(10)), 3, None)
                .unwrap()
        })
        .collect();
    assert!(others.iter().all(|o| o.id().slot() != b.id().slot()));
    assert!(b.is_live());
    // A third registration of key 0 supersedes B: one live generation per key.
    let c = again
        .register(0, TimerSpec::every(ms(10)), 4, None)
        .unwrap();
    assert_eq!(b.result(), Some(Ok(EndReason::Superseded)));
    h.advance(ms(10));
    let ran: Vec<u32> = h
        .poll()
        .iter()
        .filter(|r| r.owner_id() == 1)
        .map(|r| *r.payload())
        .collect();
    assert_eq!(ran, vec![4], "only C runs for key 0");
    assert!(c.is_live());
}

/// The original defect's race on the real clock: lease entries of forgotten owners come
/// due while the owners now holding their indexes (no lease) are being released from
/// another thread. Every one of those timers must end as revoked.
#[test]
fn released_owners_reusing_indexes_with_due_lease_entries_end_revoked() {
    let rt: Runtime<u32> = Runtime::new(RuntimeConfig::default()).unwrap();
    let n = 2000u64;
    for round in 0..5u64 {
        let base = round * 10 * n;
        // Leased owners whose lease entries go into the queue, then are forgotten.
        let leased: Vec<_> = (0..n)
            .map(|i| {
                rt.acquire_owner(base + i, OwnerOptions::lease(ms(30)))
                    .unwrap()
            })
            .collect();
        rt.sync().unwrap();
        for o in &leased {
            o.release().unwrap();
        }
        rt.sync().unwrap();
        // Lease-free owners take their indexes.
        let fresh: Vec<_> = (0..n)
            .map(|i| {
                rt.acquire_owner(base + n + i, OwnerOptions::default())
                    .unwrap()
            })
            .collect();
        let timers: Vec<_> = fresh
            .iter()
            .map(|o| {
                o.register(0, TimerSpec::after(Duration::from_secs(60)), 0, None)
                    .unwrap()
            })
            .collect();
        // Release them around the old lease deadlines, while those entries surface.
        std::thread::sleep(ms(28));
        for o in &fresh {
            o.release().unwrap();
            let spin = std::time::Instant::now();
            while spin.elapsed() < Duration::from_micros(2) {
                std::hint::spin_loop();
            }
        }
        rt.sync().unwrap();
        let wrong: Vec<_> = timers
            .iter()
            .filter_map(|t| t.result())
            .filter(|r| *r != Ok(EndReason::Revoked))
            .collect();
        assert!(
            wrong.is_empty(),
            "round {round}: {} ended otherwise: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(3)]
        );
        assert!(timers.iter().all(|t| t.result().is_some()));
    }
}

/// A record of an owner that was released (its index given to the next owner) may reach a
/// host after the next owner took the index: the host's look at the released authority's
/// deadline (expired at its release) must not end the next owner's timers. Real clock and
/// a delivering host thread; the window moves with the number of records in flight.
#[test]
fn a_record_of_a_released_owner_never_expires_the_next_owner_of_its_index() {
    let rounds: u64 = std::env::var("INDEX_REUSE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rt = std::sync::Arc::new(Runtime::<u64>::new(RuntimeConfig::default()).unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let host = delivering_host(rt.clone(), stop.clone());
    let until = std::time::Instant::now() + Duration::from_secs(120);
    let mut next = Vec::new();
    for round in 0..rounds {
        assert!(
            std::time::Instant::now() < until,
            "no progress: round {round}"
        );
        // Records due at once, in flight while the owner is released.
        let gone = rt
            .acquire_owner(2 * round + 1, OwnerOptions::default())
            .unwrap();
        for k in 0..(round % 8 + 1) {
            let _ = gone.register_id(k, TimerSpec::after(Duration::ZERO), round, None);
        }
        let _ = gone.release();
        // The next owner, no lease: whatever index it gets, nothing may expire it.
        let o = rt
            .acquire_owner(2 * round + 2, OwnerOptions::default())
            .unwrap();
        let t = o
            .register(0, TimerSpec::after(Duration::from_secs(3600)), round, None)
            .unwrap();
        next.push((round, t, o));
        if next.len() > 64 {
            let (r, t, o) = next.remove(0);
            assert_eq!(
                t.result(),
                None,
                "round {r}: a timer of an owner without a lease ended"
            );
            drop(t);
            o.release().unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    host.join().unwrap();
    for (r, t, _) in &next {
        assert_eq!(
            t.result(),
            None,
            "round {r}: a timer of an owner without a lease ended"
        );
    }
}
