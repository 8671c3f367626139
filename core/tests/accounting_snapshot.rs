//! A stats snapshot never counts a record as finished (completed, not started, abandoned)
//! before it counts it as published — also while the scheduler is in the middle of the
//! turn that published it. A host checking the record identity right after its last
//! generation ended used to see `not_started` ahead of `records_published` when a record
//! was taken back before the scheduler had added its counts.
//!
//! The scheduler runs host code inside a turn in one place: the release hook of a timer
//! whose owner's lease ran out. That hook is where this test looks at the counters.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spot_timer_core::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn finished(s: &Stats) -> u64 {
    s.completed_ok + s.completed_failed + s.completed_deferred + s.not_started + s.records_abandoned
}

#[test]
fn a_record_taken_back_mid_turn_is_already_counted_as_published() {
    let (rt, clock) = Runtime::<u32>::manual().unwrap();
    let rt = Arc::new(rt);
    // Timer X (no lease) is due at 10 ms; owner A's lease runs out at 15 ms. One turn at
    // 20 ms publishes X's record, then ends A's timer, whose release hook takes X's record
    // back (cancelling X) and reads the counters before the turn has finished.
    let b = rt.acquire_owner(2, OwnerOptions::default()).unwrap();
    let x = b.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    let a = rt.acquire_owner(1, OwnerOptions::lease(ms(15))).unwrap();
    type Seen = Option<(Stats, Option<EndResult>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let hook = {
        let rt = Arc::downgrade(&rt);
        let x = x.clone();
        let seen = seen.clone();
        Box::new(move || {
            let cancelled = x.cancel_nowait().ok().and_then(|t| t.try_result());
            if let Some(rt) = rt.upgrade() {
                *seen.lock().unwrap() = Some((rt.stats(), cancelled));
            }
            Ok(())
        })
    };
    a.register(1, TimerSpec::every(ms(1000)), 0, Some(hook))
        .unwrap();
    clock.advance(ms(20));
    rt.sync().unwrap();

    let (mid_turn, cancelled) = seen.lock().unwrap().take().expect("the release hook ran");
    assert_eq!(
        cancelled,
        Some(Ok(EndReason::Cancelled)),
        "X ended in the hook"
    );
    assert_eq!(
        mid_turn.records_taken_back, 1,
        "the hook took X's queued record back: {mid_turn:?}"
    );
    assert!(
        mid_turn.records_published >= finished(&mid_turn),
        "published {} < finished {} mid-turn: {mid_turn:?}",
        mid_turn.records_published,
        finished(&mid_turn)
    );

    // And once everything has ended, the identity holds exactly.
    let s = rt.stats();
    assert_eq!(s.live_timers, 0, "{s:?}");
    assert_eq!(s.records_published, finished(&s), "{s:?}");
    assert_eq!(
        s.ticks_due,
        s.completed_ok
            + s.completed_failed
            + s.ticks_skipped
            + s.ticks_dropped_authority
            + s.ticks_discarded,
        "{s:?}"
    );
}
