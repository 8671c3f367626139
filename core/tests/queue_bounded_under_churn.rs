//! Register/cancel churn with far deadlines keeps the deadline queue bounded (T8) even while
//! the scheduler sleeps: deletion is lazy, so every cancelled timer leaves an entry behind,
//! and without a scheduler turn nothing used to drop them — a host cancelling 30 s request
//! timeouts at a million per second grew the queue by 16 MB a second until the first
//! deadline came. The arming thread now compacts its shard as it grows.

use std::time::Duration;

use spot_timer_core::*;

#[test]
fn churn_with_far_deadlines_keeps_the_queue_small_without_a_scheduler_turn() {
    // A manual clock: the scheduler takes no turn unless time is advanced.
    let (rt, _clock) = Runtime::<u32>::manual().unwrap();
    let owner = rt
        .acquire_owner(
            1,
            OwnerOptions {
                gate: GateMode::Concurrent,
                ..OwnerOptions::default()
            },
        )
        .unwrap();
    let mut live = Vec::new();
    for i in 0..200_000u64 {
        let id = owner
            .register_id(i % 100, TimerSpec::after(Duration::from_secs(60)), 0, None)
            .unwrap();
        // Every 1,000th timer stays armed until its key is registered again (superseded):
        // compactions must keep the entries of armed timers.
        if i % 1000 == 0 {
            live.push(id);
        } else {
            rt.cancel_timer_nowait(id).unwrap();
        }
    }
    let s = rt.stats();
    assert!(s.compactions >= 1, "{s:?}");
    // A shard is compacted once it holds twice what its last compaction kept, at least
    // 4,096 entries: here at most a few thousand entries, against 200,000 armed.
    assert!(
        s.queue_len <= 2 * 4096 + 100,
        "queue_len {} ({s:?})",
        s.queue_len
    );
    assert_eq!(s.stale_entries_dropped + s.queue_len, 200_000, "{s:?}");
    // The timers left armed are the ones still live: (owner, key) is re-registered by the
    // churn, so only keys never reused after their last registration remain.
    assert!(s.live_timers <= 100, "{s:?}");
}

/// Compaction drops the entries of cancelled timers on their slot's mark alone (a slot
/// returned for reuse names no current entry). It must never drop a live timer's entry:
/// after churn that compacted the queue many times — slots returned, rested and taken
/// again by later registrations — every timer left armed fires, and no other.
#[test]
fn compaction_keeps_every_armed_timer() {
    let (rt, _clock) = Runtime::<u64>::manual().unwrap();
    let owners: Vec<_> = (0..10u64)
        .map(|o| {
            rt.acquire_owner(
                o,
                OwnerOptions {
                    gate: GateMode::Concurrent,
                    ..OwnerOptions::default()
                },
            )
            .unwrap()
        })
        .collect();
    let mut armed = std::collections::BTreeSet::new();
    for i in 0..100_000u64 {
        let owner = &owners[(i % 10) as usize];
        // Deadlines spread over 10..20 s, so live entries sit in many buckets and levels.
        let due = Duration::from_millis(10_000 + (i * 7919) % 10_000);
        let id = owner
            .register_id(i, TimerSpec::after(due), i, None)
            .unwrap();
        if i % 97 == 0 {
            armed.insert(i);
        } else {
            rt.cancel_timer_nowait(id).unwrap();
        }
    }
    let s = rt.stats();
    assert!(s.compactions >= 5, "{s:?}");
    assert_eq!(s.live_timers, armed.len() as u64, "{s:?}");
    rt.advance(Duration::from_secs(21)).unwrap();
    let mut fired = std::collections::BTreeSet::new();
    let (mut batch, mut done) = (Vec::new(), Vec::new());
    loop {
        rt.exchange(&done, &mut batch, 4096, Some(Duration::ZERO))
            .unwrap();
        done.clear();
        if batch.is_empty() {
            break;
        }
        for rec in batch.drain(..) {
            if let Record::Tick(t) = rec {
                assert!(rt.begin(&t));
                assert!(fired.insert(*t.payload()), "fired twice: {}", t.payload());
                done.push(t.complete(Outcome::Ok));
            }
        }
    }
    assert_eq!(fired, armed, "exactly the armed timers fire");
}
