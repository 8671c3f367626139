//! Contract T3: "the pending record's tick info is computed when it is delivered". A record
//! published at a scheduler wakeup can wait in the ready queue while the host is busy or
//! stalled; when the host finally receives it, it must carry the tick info of that
//! moment (the backlog rule applied to everything due by then), not of the wakeup.

mod common;

use common::*;
use spot_timer_core::*;

fn accounted(s: &Stats) -> u64 {
    s.completed_ok
        + s.completed_failed
        + s.ticks_skipped
        + s.ticks_dropped_authority
        + s.ticks_discarded
}

#[test]
fn skip_late_ticks_hands_over_the_newest_tick_due_at_hand_over() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(MS), 0, None).unwrap();
    h.advance(MS); // tick 1 is published to the ready queue
    assert_eq!(h.rt.stats().records_published, 1);
    h.advance(ms(29)); // the host does not drain for 29 ms
    let rec = h.poll();
    assert_eq!(rec.len(), 1, "still one pending record (T3)");
    assert_eq!(rec[0].tick(), tick(1, 30, 29));
    // The scheduler goes on from what the host received.
    let next = h.finish(&rec[0], Outcome::Ok);
    assert!(next.is_empty(), "tick 30 was delivered; 31 is not due yet");
    assert_eq!(t.stats().last_scheduled_index, 30);
    assert_eq!(t.stats().skipped_ticks, 29);
    h.advance(MS);
    assert_eq!(h.run_ready(), vec![tick(2, 31, 0)]);
}

#[test]
fn catch_up_bounded_hands_over_the_oldest_of_the_newest_n() {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec::every(MS)
        .policy(OverrunPolicy::CatchUpBounded)
        .max_catch_up_ticks(3);
    let _t = o.register(1, spec, 0, None).unwrap();
    h.advance(MS);
    h.advance(ms(29));
    let rec = h.poll();
    // Due: 1..=30 with nothing delivered: the newest 3 are 28, 29, 30.
    assert_eq!(rec[0].tick(), tick(1, 28, 27));
    let second = h.finish(&rec[0], Outcome::Ok);
    assert_eq!(second[0].tick(), tick(2, 29, 0));
    let third = h.finish(&second[0], Outcome::Ok);
    assert_eq!(third[0].tick(), tick(3, 30, 0));
    assert!(h.finish(&third[0], Outcome::Ok).is_empty());
}

#[test]
fn delay_next_tick_has_no_backlog_to_relabel() {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec::every(MS).policy(OverrunPolicy::DelayNextTick);
    let t = o.register(1, spec, 0, None).unwrap();
    h.advance(MS);
    h.advance(ms(29));
    let rec = h.poll();
    assert_eq!(rec[0].tick(), tick(1, 1, 0));
    assert!(h.finish(&rec[0], Outcome::Ok).is_empty());
    // Next tick one period after the completion, not caught up.
    h.advance(MS);
    assert_eq!(h.run_ready(), vec![tick(2, 2, 0)]);
    assert_eq!(t.stats().skipped_ticks, 0);
}

#[test]
fn a_record_received_in_time_is_not_relabelled() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll();
    assert_eq!(rec[0].tick(), tick(1, 1, 0));
    // Time passing while the host runs the handler is the ordinary overrun case: the
    // record it already has keeps its label, the next one carries the skip.
    h.advance(ms(35));
    let next = h.finish(&rec[0], Outcome::Ok);
    assert_eq!(next[0].tick(), tick(2, 4, 2));
}

#[test]
fn deferred_after_relabel_then_retried_keeps_t4() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(MS), 0, None).unwrap();
    h.advance(MS);
    h.advance(ms(9));
    let rec = h.poll();
    assert_eq!(rec[0].tick(), tick(1, 10, 9));
    assert!(h.finish(&rec[0], Outcome::Deferred).is_empty());
    assert_eq!(t.stats().delivered, 0, "a deferred tick is not delivered");
    o.retry_deferred().unwrap();
    h.rt.sync().unwrap();
    let again = h.poll().pop().expect("retried");
    // Still the first delivery; the newest due tick, skipped counted from nothing.
    assert_eq!(again.tick(), tick(1, 10, 9));
    assert!(h.finish(&again, Outcome::Ok).is_empty());
    assert_eq!(t.stats().last_scheduled_index, 10);
}

#[test]
fn relabelled_ticks_keep_the_accounting_identity_through_cancel_and_close() {
    let h = Host::new();
    let o = h.owner(1);
    let skip = o.register(1, TimerSpec::every(MS), 0, None).unwrap();
    let catch_up = o
        .register(
            2,
            TimerSpec::every(MS)
                .policy(OverrunPolicy::CatchUpBounded)
                .max_catch_up_ticks(4),
            0,
            None,
        )
        .unwrap();
    let other = h.owner_with(
        2,
        OwnerOptions {
            lease: None,
            gate: GateMode::Concurrent,
        },
    );
    let _open = other.register(1, TimerSpec::every(MS), 0, None).unwrap();
    h.advance(MS);
    h.advance(ms(19));
    // Owner 1 is serial: one of its two timers is handed over, relabelled to now.
    let ready = h.poll();
    assert_eq!(ready.len(), 2, "{ready:?}");
    for r in &ready {
        assert!(r.tick().scheduled_index >= 17, "{:?}", r.tick());
    }
    // Cancel owner 1's running timer while the host holds the relabelled record.
    let running = ready.iter().find(|r| r.owner_id() == o.id()).unwrap();
    let running_handle = if Some(running.key()) == skip.key() {
        &skip
    } else {
        &catch_up
    };
    let ticket = running_handle.cancel_nowait().unwrap();
    h.advance(ms(5));
    let mut done: Vec<Completion> = ready.iter().map(|r| r.complete(Outcome::Ok)).collect();
    // Drain everything else for a while, then close with ticks still due.
    for _ in 0..5 {
        let next = h.exchange(&done);
        done = next.iter().map(|r| r.complete(Outcome::Failed)).collect();
        h.advance(ms(3));
    }
    h.exchange(&done);
    ticket
        .wait(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    h.rt.close();
    let s = h.rt.stats();
    assert_eq!(s.live_timers, 0);
    assert!(s.ticks_skipped > 0 && s.ticks_discarded > 0, "{s:?}");
    assert_eq!(s.ticks_due, accounted(&s), "{s:?}");
}
