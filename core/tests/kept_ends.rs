//! Cancelling an idle timer of an owner's first two keys does not touch the owner: the
//! owner's key table keeps naming the ended generation's slot until the key is registered
//! again, the owner is released or its authority ends. Seen from outside, nothing of that
//! shows: results, accounting, keys registered again, releases and re-acquisitions behave
//! as when every end updated the owner at once. Public API only.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{assert_accounted, delivering_host};
use spot_timer_core::*;

const FAR: Duration = Duration::from_secs(600);

fn runtime() -> Runtime<u32> {
    Runtime::new(RuntimeConfig::default()).unwrap()
}

/// Waits (up to 20 s) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "{what}: not within 20 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_cancelled_key_registered_again_is_a_fresh_generation() {
    let rt = runtime();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let a = owner
        .register_id(0, TimerSpec::after(FAR), 0, None)
        .unwrap();
    let b = owner
        .register_id(1, TimerSpec::after(FAR), 0, None)
        .unwrap();
    assert_eq!(
        rt.cancel_timer_nowait(a).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_eq!(
        rt.cancel_timer_nowait(b).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    // The ended generations keep their results; cancelling again gives the same.
    assert_eq!(rt.timer_result(a), Some(Ok(EndReason::Cancelled)));
    assert_eq!(
        rt.cancel_timer_nowait(b).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_eq!(rt.stats().live_timers, 0);

    let a2 = owner
        .register_id(0, TimerSpec::after(FAR), 0, None)
        .unwrap();
    assert_ne!(a2, a);
    assert_eq!(rt.stats().live_timers, 1);
    // The old generation is not superseded by the new one: it had ended, cancelled.
    assert_eq!(rt.timer_result(a), Some(Ok(EndReason::Cancelled)));
    // Registering the key a third time supersedes the second generation, as always.
    let a3 = owner
        .register_id(0, TimerSpec::after(FAR), 0, None)
        .unwrap();
    assert_eq!(rt.timer_result(a2), Some(Ok(EndReason::Superseded)));
    assert_eq!(
        rt.cancel_timer_nowait(a3).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_accounted(&rt);
}

#[test]
fn an_owner_whose_timers_were_cancelled_is_forgotten_when_released() {
    let rt = runtime();
    for round in 0..3u32 {
        let owner = rt.acquire_owner(7, OwnerOptions::default()).unwrap();
        let ids: Vec<_> = (0..2)
            .map(|k| {
                owner
                    .register_id(k, TimerSpec::after(FAR), round, None)
                    .unwrap()
            })
            .collect();
        for id in &ids {
            assert_eq!(
                rt.cancel_timer_nowait(*id).unwrap(),
                Some(Ok(EndReason::Cancelled))
            );
        }
        assert_eq!(rt.stats().owners, 1);
        owner.release().unwrap();
        assert_eq!(
            rt.stats().owners,
            0,
            "round {round}: released and nothing live"
        );
        // Its results stay what they were.
        for id in &ids {
            let r = rt.timer_result(*id);
            assert!(
                matches!(
                    r,
                    Some(Ok(EndReason::Cancelled)) | Some(Err(Error::StaleHandle))
                ),
                "{r:?}"
            );
        }
    }
    assert_accounted(&rt);
}

#[test]
fn revoking_an_owner_with_cancelled_and_live_timers_ends_the_live_ones() {
    let rt = runtime();
    let owner = rt.acquire_owner(3, OwnerOptions::default()).unwrap();
    let cancelled = owner
        .register_id(0, TimerSpec::after(FAR), 0, None)
        .unwrap();
    let live = owner
        .register_id(1, TimerSpec::after(FAR), 0, None)
        .unwrap();
    rt.cancel_timer_nowait(cancelled).unwrap();
    owner.revoke().unwrap();
    assert_eq!(rt.timer_result(live), Some(Ok(EndReason::Revoked)));
    assert_eq!(rt.timer_result(cancelled), Some(Ok(EndReason::Cancelled)));
    // A new authority registers both keys again.
    let again = rt.acquire_owner(3, OwnerOptions::default()).unwrap();
    let ids: Vec<_> = (0..2)
        .map(|k| {
            again
                .register_id(k, TimerSpec::after(FAR), 0, None)
                .unwrap()
        })
        .collect();
    assert_eq!(rt.stats().live_timers, 2);
    again.release().unwrap();
    for id in ids {
        assert_eq!(rt.timer_result(id), Some(Ok(EndReason::Revoked)));
    }
    assert_eq!(rt.stats().owners, 0);
    assert_accounted(&rt);
}

#[test]
fn an_owner_whose_keys_come_and_go_keeps_registering() {
    // A new key each time (a request id), at most two live: every registration after the
    // first two finds the owner's inline keys held by cancelled generations.
    let rt = runtime();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let mut prev: Option<TimerId> = None;
    for key in 0..20_000u64 {
        let id = owner
            .register_id(key, TimerSpec::after(FAR), 0, None)
            .unwrap();
        if let Some(p) = prev.take() {
            assert_eq!(
                rt.cancel_timer_nowait(p).unwrap(),
                Some(Ok(EndReason::Cancelled))
            );
        }
        prev = Some(id);
    }
    assert_eq!(rt.stats().live_timers, 1);
    owner.release().unwrap();
    assert_eq!(rt.stats().owners, 0);
    assert_accounted(&rt);
}

/// Cancels, registrations of the same keys, deliveries and releases with re-acquisition
/// of the owners race on a real clock, with short random pauses to move the windows.
/// Afterwards every owner is released: each must be forgotten (nothing of it held), and
/// both accounting identities must hold.
#[test]
fn cancels_registrations_deliveries_and_releases_race() {
    race(Duration::from_secs(3));
}

fn race(length: Duration) {
    const OWNERS: usize = 24;
    let rt = Arc::new(runtime());
    let owners: Arc<Vec<Mutex<Owner<u32>>>> = Arc::new(
        (0..OWNERS)
            .map(|i| {
                Mutex::new(
                    rt.acquire_owner(i as u64 + 1, OwnerOptions::default())
                        .unwrap(),
                )
            })
            .collect(),
    );
    // The latest id of each (owner, key), 0 for none.
    let ids: Arc<Vec<AtomicU64>> = Arc::new((0..OWNERS * 2).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let host = delivering_host(rt.clone(), stop.clone());
    let done = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));

    let worker = |seed: u64, role: u8| {
        let (rt, owners, ids, done, ops) = (
            rt.clone(),
            owners.clone(),
            ids.clone(),
            done.clone(),
            ops.clone(),
        );
        std::thread::spawn(move || {
            let mut x = seed | 1;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            while !done.load(SeqCst) {
                let slot = (next() % (OWNERS as u64 * 2)) as usize;
                let (o, key) = (slot / 2, (slot % 2) as u64);
                match role {
                    // Cancel the latest generation of a random key.
                    0 => {
                        let raw = ids[slot].load(SeqCst);
                        if raw != 0 {
                            let id = TimerId::from_parts(raw as u32, raw >> 32).unwrap();
                            match rt.cancel_timer_nowait(id) {
                                Ok(_) | Err(Error::StaleHandle) => {}
                                Err(e) => panic!("cancel: {e:?}"),
                            }
                        }
                    }
                    // Register a random key again: far away, or due within 2 ms.
                    1 => {
                        let delay = if next() % 4 == 0 {
                            Duration::from_micros(next() % 2_000)
                        } else {
                            FAR
                        };
                        let owner = owners[o].lock().unwrap();
                        match owner.register_id(key, TimerSpec::after(delay), 0, None) {
                            Ok(id) => ids[slot]
                                .store(u64::from(id.slot()) | id.generation() << 32, SeqCst),
                            Err(Error::Revoked | Error::UnknownOwner(_)) => {}
                            Err(e) => panic!("register: {e:?}"),
                        }
                    }
                    // Release an owner and acquire it again.
                    _ => {
                        let mut owner = owners[o].lock().unwrap();
                        owner.release().unwrap();
                        *owner = rt
                            .acquire_owner(o as u64 + 1, OwnerOptions::default())
                            .unwrap();
                        std::thread::sleep(Duration::from_micros(next() % 300));
                    }
                }
                ops.fetch_add(1, SeqCst);
                if next() % 16 == 0 {
                    std::thread::sleep(Duration::from_micros(next() % 50));
                }
            }
        })
    };
    let threads = vec![
        worker(1, 0),
        worker(2, 0),
        worker(3, 1),
        worker(4, 1),
        worker(5, 2),
    ];
    let start = Instant::now();
    std::thread::sleep(length);
    done.store(true, SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        ops.load(SeqCst) > 10_000,
        "too little progress: {} operations in {:?}",
        ops.load(SeqCst),
        start.elapsed()
    );
    for o in owners.iter() {
        o.lock().unwrap().release().unwrap();
    }
    // Records the host still holds end when it completes them.
    eventually("every generation ended", || rt.stats().live_timers == 0);
    eventually("every released owner forgotten", || rt.stats().owners == 0);
    stop.store(true, SeqCst);
    host.join().unwrap();
    assert_accounted(&rt);
    rt.close();
}
