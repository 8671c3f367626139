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
