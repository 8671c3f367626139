//! The delivery session (`Runtime::session`): one thread's loop over the runtime's records,
//! with the start check done before a record is handed out, completions collected and
//! sent with the next exchange, and help for a blocking cancel made on the session's
//! thread, which must never wait for a record only that thread would complete.

mod common;

use std::time::Duration;

use common::{concurrent_owner, concurrent_timers_every_10ms, ms, records_finished};
use spot_timer_core::*;

fn tick(r: Record<u32>) -> TickRecord<u32> {
    match r {
        Record::Tick(t) => t,
        Record::CancelDone(n) => panic!("expected a tick, got a notice {n:?}"),
    }
}

#[test]
fn hands_out_each_record_once_and_sends_completions_with_the_next_exchange() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut s = rt.session(16).unwrap();
    assert!(
        s.next(Some(Duration::ZERO)).unwrap().is_none(),
        "nothing due yet"
    );
    clock.advance(ms(10));
    rt.sync().unwrap();
    let mut seen = Vec::new();
    while let Some(r) = s.next(Some(Duration::ZERO)).unwrap() {
        seen.push(*tick(r).payload());
        s.done(Outcome::Ok).unwrap();
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2]);
    // The completions went back with the exchange that found nothing more.
    let st = rt.stats();
    assert_eq!(st.completed_ok, 3, "{st:?}");
    assert_eq!(st.records_published, records_finished(&st));
}

#[test]
fn next_before_done_and_done_without_a_tick_are_refused() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    assert!(matches!(
        s.done(Outcome::Ok),
        Err(Error::InvalidArgument(_))
    ));
    clock.advance(ms(10));
    rt.sync().unwrap();
    assert!(s.next(Some(Duration::ZERO)).unwrap().is_some());
    assert!(matches!(
        s.next(Some(Duration::ZERO)),
        Err(Error::InvalidArgument(_))
    ));
    s.done(Outcome::Ok).unwrap();
    assert!(s.next(Some(Duration::ZERO)).unwrap().is_some());
    s.done(Outcome::Ok).unwrap();
}

#[test]
fn a_zero_capacity_session_is_refused() {
    let (rt, _clock, _ids) = concurrent_timers_every_10ms(0);
    assert!(matches!(rt.session(0), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_record_that_went_stale_before_its_turn_is_completed_as_not_started() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let first = tick(s.next(Some(Duration::ZERO)).unwrap().unwrap());
    let other = ids
        .iter()
        .copied()
        .find(|i| *i != first.timer_id())
        .unwrap();
    // Cancelled while its record waits in the session: it must not be handed out.
    assert_eq!(
        rt.cancel_timer_nowait(other).unwrap(),
        None,
        "its record is held"
    );
    s.done(Outcome::Ok).unwrap();
    assert!(s.next(Some(Duration::ZERO)).unwrap().is_none());
    assert_eq!(
        rt.timer_result(other),
        Some(Ok(EndReason::Cancelled)),
        "ended once its record came back"
    );
    let st = rt.stats();
    assert_eq!(st.not_started, 1, "{st:?}");
    assert_eq!(st.records_published, records_finished(&st));
}

#[test]
fn a_blocking_cancel_from_a_handler_of_a_record_later_in_the_batch_does_not_wait() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let first = tick(s.next(Some(Duration::ZERO)).unwrap().unwrap());
    let other = ids
        .iter()
        .copied()
        .find(|i| *i != first.timer_id())
        .unwrap();
    // Inside the first handler. Without help this would wait (here: time out) for a
    // record that only this thread would complete.
    assert_eq!(
        rt.cancel_timer(other, Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    s.done(Outcome::Ok).unwrap();
    assert!(
        s.next(Some(Duration::ZERO)).unwrap().is_none(),
        "the cancelled timer's record is not handed out"
    );
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.not_started), (1, 1), "{st:?}");
    assert_eq!(st.records_published, records_finished(&st));
}

#[test]
fn a_blocking_cancel_after_done_does_not_wait_for_the_unsent_completion() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(1);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let t = tick(s.next(Some(Duration::ZERO)).unwrap().unwrap());
    s.done(Outcome::Ok).unwrap();
    // The completion is still with the session; the cancel sends it instead of waiting.
    assert_eq!(
        rt.cancel_timer(ids[0], Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    assert_eq!(t.timer_id(), ids[0]);
    assert_eq!(rt.stats().completed_ok, 1);
}

#[test]
fn a_blocking_cancel_of_the_running_handler_itself_would_deadlock() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(1);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let _t = tick(s.next(Some(Duration::ZERO)).unwrap().unwrap());
    assert_eq!(rt.cancel_timer(ids[0], None), Err(Error::WouldDeadlock));
    s.done(Outcome::Ok).unwrap();
    // The cancel went on: the generation ends once the completion is sent.
    assert!(s.next(Some(Duration::ZERO)).unwrap().is_none());
    assert_eq!(rt.timer_result(ids[0]), Some(Ok(EndReason::Cancelled)));
}

#[test]
fn dropping_a_session_completes_what_it_held() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let _running = s.next(Some(Duration::ZERO)).unwrap().unwrap();
    drop(s); // one handed out (reported as run), two unread
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.not_started), (1, 2), "{st:?}");
    // The timers go on: the next tick is delivered to a new session.
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let mut timers = std::collections::HashSet::new();
    while let Some(r) = s.next(Some(Duration::ZERO)).unwrap() {
        timers.insert(tick(r).timer_id());
        s.done(Outcome::Ok).unwrap();
    }
    assert_eq!(timers.len(), 3, "every timer is delivered again");
    drop(s);
    let st = rt.stats();
    assert_eq!(st.records_published, records_finished(&st), "{st:?}");
}

#[test]
fn a_callback_runtime_has_no_session() {
    let rt = Runtime::<u32>::new(RuntimeConfig {
        clock: ClockKind::Manual(ManualClock::new()),
        sink: Sink::Callback(Box::new(|_b: &[Record<u32>], _c: &mut Vec<Completion>| {})),
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert!(matches!(rt.session(8), Err(Error::InvalidArgument(_))));
}

// ---- The batch form: a whole exchange handed out, outcomes written in cells.

fn write(b: &Batch<'_, u32>, i: usize, o: Outcome) {
    b.outcomes[i].set(o as u32);
}

#[test]
fn a_batch_hands_out_every_record_and_its_outcomes_are_sent_with_the_next_batch() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut s = rt.session(16).unwrap();
    assert!(s.batch(Some(Duration::ZERO)).unwrap().records.is_empty());
    clock.advance(ms(10));
    rt.sync().unwrap();
    let b = s.batch(Some(Duration::ZERO)).unwrap();
    assert_eq!(b.records.len(), 3);
    assert!(b.outcomes.iter().all(|c| c.get() == BATCH_PENDING));
    assert_eq!(b.position.get(), usize::MAX);
    for (i, r) in b.records.iter().enumerate() {
        let Record::Tick(t) = r else { panic!("a tick") };
        b.position.set(i);
        if i < 2 {
            assert!(rt.begin(t));
            write(&b, i, if i == 0 { Outcome::Ok } else { Outcome::Failed });
        } // the third stays pending: completed as not started
    }
    assert_eq!(
        rt.stats().completed_ok,
        0,
        "nothing sent before the next batch"
    );
    // The tick that did not start is still due: it comes back at once.
    let again = s.batch(Some(Duration::ZERO)).unwrap();
    assert_eq!(again.records.len(), 1);
    again.outcomes[0].set(Outcome::Ok as u32);
    drop(s);
    let st = rt.stats();
    assert_eq!(
        (st.completed_ok, st.completed_failed, st.not_started),
        (2, 1, 1),
        "{st:?}"
    );
    assert_eq!(st.records_published, records_finished(&st));
}

#[test]
fn a_blocking_cancel_from_a_batch_handler_completes_a_later_record_and_sends_earlier_ones() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(3);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let b = s.batch(Some(Duration::ZERO)).unwrap();
    let timer = |i: usize| match &b.records[i] {
        Record::Tick(t) => t.timer_id(),
        Record::CancelDone(_) => panic!("a tick"),
    };
    // Record 0 ran; record 1's handler runs now and cancels the timers of records 0 and 2.
    b.position.set(0);
    write(&b, 0, Outcome::Ok);
    b.position.set(1);
    let Record::Tick(running) = &b.records[1] else {
        panic!()
    };
    assert!(rt.begin(running));
    assert_eq!(
        rt.cancel_timer(timer(2), Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled),
        "a pending record after the position is completed, not waited for"
    );
    assert_eq!(b.outcomes[2].get(), Outcome::NotStarted as u32);
    assert_eq!(
        rt.cancel_timer(timer(0), Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled),
        "an outcome written before is sent, not waited for"
    );
    assert_eq!(
        rt.cancel_timer(timer(1), None),
        Err(Error::WouldDeadlock),
        "the running handler's own timer"
    );
    write(&b, 1, Outcome::Ok);
    let running = timer(1);
    assert!(ids.contains(&running));
    assert!(s.batch(Some(Duration::ZERO)).unwrap().records.is_empty());
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.not_started), (2, 1), "{st:?}");
    assert_eq!(
        st.records_published,
        records_finished(&st),
        "nothing completed twice"
    );
    assert_eq!(rt.stats().invalid_completions, 0);
    assert_eq!(rt.timer_result(running), Some(Ok(EndReason::Cancelled)));
}

#[test]
fn a_batch_cell_with_no_outcome_in_it_completes_as_not_started() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let b = s.batch(Some(Duration::ZERO)).unwrap();
    b.outcomes[0].set(77);
    b.outcomes[1].set(Outcome::Deferred as u32);
    drop(s); // dropping settles the batch too
    let st = rt.stats();
    assert_eq!((st.not_started, st.completed_deferred), (1, 1), "{st:?}");
}

#[test]
fn one_at_a_time_and_batches_mix_on_one_session() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let first = tick(s.next(Some(Duration::ZERO)).unwrap().unwrap());
    assert!(matches!(
        s.batch(Some(Duration::ZERO)),
        Err(Error::InvalidArgument(_))
    ));
    let _ = first;
    s.done(Outcome::Ok).unwrap();
    // The two records received and not handed out yet come in the batch.
    let b = s.batch(Some(Duration::ZERO)).unwrap();
    assert_eq!(b.records.len(), 2);
    write(&b, 0, Outcome::Ok);
    write(&b, 1, Outcome::Ok);
    // `next` settles the batch first.
    assert!(s.next(Some(Duration::ZERO)).unwrap().is_none());
    let st = rt.stats();
    assert_eq!(st.completed_ok, 3, "{st:?}");
}

#[test]
fn a_batch_record_the_host_keeps_is_completed_by_the_host_not_the_session() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let b = s.batch(Some(Duration::ZERO)).unwrap();
    let Record::Tick(kept) = &b.records[0] else {
        panic!()
    };
    let kept = kept.clone();
    b.position.set(0);
    assert!(rt.begin(&kept));
    b.outcomes[0].set(BATCH_KEPT);
    b.position.set(1);
    b.outcomes[1].set(Outcome::Ok as u32);
    let other = ids.iter().copied().find(|i| *i != kept.timer_id()).unwrap();
    // A blocking cancel sends what was written and leaves the kept record alone.
    assert_eq!(
        rt.cancel_timer(other, Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    assert!(s.batch(Some(Duration::ZERO)).unwrap().records.is_empty());
    assert_eq!(
        rt.stats().completed_ok,
        1,
        "the kept one is still in flight"
    );
    rt.complete(&[kept.complete(Outcome::Ok)]).unwrap();
    let st = rt.stats();
    assert_eq!(st.completed_ok, 2, "{st:?}");
    assert_eq!(st.invalid_completions, 0);
}

#[test]
fn batch_max_takes_at_most_max_records_and_leaves_the_rest_ready() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(5);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let b = s.batch_max(Some(Duration::ZERO), 2).unwrap();
    assert_eq!(b.records.len(), 2);
    write(&b, 0, Outcome::Ok);
    write(&b, 1, Outcome::Ok);
    // A zero maximum is taken as one; one larger than the capacity as the capacity.
    let b = s.batch_max(Some(Duration::ZERO), 0).unwrap();
    assert_eq!(b.records.len(), 1);
    write(&b, 0, Outcome::Ok);
    let b = s.batch_max(Some(Duration::ZERO), 1000).unwrap();
    assert_eq!(b.records.len(), 2, "the rest");
    write(&b, 0, Outcome::Ok);
    write(&b, 1, Outcome::Ok);
    assert!(s.batch(Some(Duration::ZERO)).unwrap().records.is_empty());
    let st = rt.stats();
    assert_eq!(st.completed_ok, 5, "{st:?}");
    assert_eq!(st.records_published, records_finished(&st));
}

#[test]
fn batch_window_adds_records_that_came_due_within_the_window() {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owner = concurrent_owner(&rt, 1);
    owner
        .register_id(1, TimerSpec::after(ms(5)), 1, None)
        .unwrap();
    owner
        .register_id(2, TimerSpec::after(ms(25)), 2, None)
        .unwrap();
    let mut s = rt.session(16).unwrap();
    let b = s
        .batch_window(Some(Duration::from_secs(5)), 16, ms(200))
        .unwrap();
    assert_eq!(b.records.len(), 2, "the second came due within the window");
    write(&b, 0, Outcome::Ok);
    write(&b, 1, Outcome::Ok);
    drop(s);
    assert_eq!(rt.stats().completed_ok, 2);
    rt.close();
}

#[test]
fn flush_sends_the_outcomes_of_the_batch_without_receiving() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(2);
    let mut s = rt.session(16).unwrap();
    clock.advance(ms(10));
    rt.sync().unwrap();
    let n = s.batch(Some(Duration::ZERO)).unwrap().records.len();
    assert_eq!(n, 2);
    // The same batch, read again.
    let b = s.last_batch();
    assert_eq!(b.records.len(), 2);
    let Record::Tick(kept) = &b.records[1] else {
        panic!()
    };
    let kept = kept.clone();
    write(&b, 0, Outcome::Ok);
    b.outcomes[1].set(BATCH_KEPT);
    s.flush().unwrap();
    let st = rt.stats();
    assert_eq!(st.completed_ok, 1, "sent at once: {st:?}");
    rt.complete(&[kept.complete(Outcome::Ok)]).unwrap();
    s.flush().unwrap();
    assert!(s.batch(Some(Duration::ZERO)).unwrap().records.is_empty());
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.invalid_completions), (2, 0), "{st:?}");
}
