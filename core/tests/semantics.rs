//! Behaviour beyond the contract's verification list: gates and deferral (T9), one-shots,
//! cancel forms (T2), batch delivery (T10), the wakeup fd and the real clock.

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use spot_timer_core::*;

#[test]
fn serial_gate_runs_one_callback_per_owner_at_a_time() {
    let h = Host::new();
    let o = h.owner(1);
    let _a = o.register(1, TimerSpec::every(ms(10)), 1, None).unwrap();
    let _b = o.register(2, TimerSpec::every(ms(10)), 2, None).unwrap();
    h.advance(ms(10));
    let first = h.poll();
    assert_eq!(
        first.len(),
        1,
        "the second timer waits for the owner's turn"
    );
    let second = h.finish(&first[0], Outcome::Ok);
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].key(), first[0].key());
    assert!(h.finish(&second[0], Outcome::Ok).is_empty());
    assert_eq!(h.rt.stats().gate_waits, 1);

    // A concurrent owner runs both at once.
    let c = h.owner_with(
        2,
        OwnerOptions {
            lease: None,
            gate: GateMode::Concurrent,
        },
    );
    let _c1 = c.register(1, TimerSpec::every(ms(10)), 3, None).unwrap();
    let _c2 = c.register(2, TimerSpec::every(ms(10)), 4, None).unwrap();
    h.advance(ms(10));
    let ready = h.poll();
    let keys: Vec<u32> = ready.iter().map(|r| *r.payload()).collect();
    assert!(keys.contains(&3) && keys.contains(&4), "{keys:?}");
}

#[test]
fn host_held_gate_keeps_ticks_until_released() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    assert!(o.enter_gate(Some(ms(100))));
    assert!(!o.try_enter_gate());
    h.advance(ms(35));
    assert!(
        h.poll().is_empty(),
        "no callback while the host holds the gate"
    );
    assert_eq!(t.stats().delivered, 0);
    o.leave_gate().unwrap();
    h.rt.sync().unwrap();
    // Kept, not lost; the overrun policy applies to what came due meanwhile.
    assert_eq!(h.run_ready(), vec![tick(1, 3, 2)]);
}

#[test]
fn deferred_completion_keeps_the_tick_and_retries_it() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    assert!(h.finish(&rec, Outcome::Deferred).is_empty());
    assert_eq!(t.stats().delivered, 0, "a deferred tick is not delivered");
    o.retry_deferred().unwrap();
    h.rt.sync().unwrap();
    let again = h.poll().pop().expect("retried when the gate is free again");
    assert_eq!(again.tick(), tick(1, 1, 0));
    // Deferred again; with no gate release it is retried at the next nominal tick.
    assert!(h.finish(&again, Outcome::Deferred).is_empty());
    h.advance(ms(10));
    assert_eq!(h.run_ready(), vec![tick(1, 2, 1)]);
    assert_eq!(h.rt.stats().completed_deferred, 2);
}

#[test]
fn one_shot_delivers_once_and_completes() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::after(ms(25)), 0, None).unwrap();
    h.advance(ms(24));
    assert!(h.poll().is_empty());
    h.advance(ms(1));
    assert_eq!(h.run_ready(), vec![tick(1, 1, 0)]);
    h.advance(ms(100));
    assert!(h.run_ready().is_empty());
    assert_eq!(t.cancel(None), Ok(EndReason::Completed));
    assert_eq!(h.rt.stats().live_timers, 0);
}

#[test]
fn failed_callbacks_count_as_delivered() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    for i in 1..=3 {
        h.advance(ms(10));
        let r = h.poll().pop().unwrap();
        assert_eq!(r.tick().delivery_index, i);
        h.finish(&r, Outcome::Failed);
    }
    assert_eq!(t.stats().failed, 3);
    assert_eq!(t.stats().delivered, 3);
}

#[test]
fn self_cancel_blocking_reports_would_deadlock_and_still_cancels() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    assert!(h.rt.begin(&rec));
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Err(Error::WouldDeadlock)
    );
    let ticket = t.cancel_nowait().unwrap();
    assert_eq!(ticket.try_result(), None);
    h.finish(&rec, Outcome::Ok);
    assert_eq!(
        ticket.wait(Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
}

#[test]
fn blocking_cancel_times_out_and_cancel_still_completes_later() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    assert_eq!(t.cancel(Some(ms(20))), Err(Error::Timeout));
    h.finish(&rec, Outcome::Ok);
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
}

#[test]
fn cancel_notice_arrives_as_a_record() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    assert_eq!(t.cancel_with_notice(99).unwrap(), None);
    let mut out = Vec::new();
    h.rt.exchange(
        &[rec.complete(Outcome::Ok)],
        &mut out,
        8,
        Some(Duration::ZERO),
    )
    .unwrap();
    match out.as_slice() {
        [Record::CancelDone(n)] => {
            assert_eq!(n.tag, 99);
            assert_eq!(n.result, Ok(EndReason::Cancelled));
            assert_eq!(n.timer, t.id());
        }
        other => panic!("expected one cancel notice, got {other:?}"),
    }
    // Already terminal: the result comes back directly.
    assert_eq!(
        t.cancel_with_notice(100).unwrap(),
        Some(Ok(EndReason::Cancelled))
    );
}

#[test]
fn cancel_ticket_is_a_future() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    let ticket = t.cancel_nowait().unwrap();
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut fut = std::pin::pin!(ticket);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            assert_eq!(r, Ok(EndReason::Cancelled));
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        std::thread::yield_now();
    }
}

#[test]
fn batch_callback_gets_one_call_per_wakeup_and_completes_inline() {
    let clock = ManualClock::new();
    let calls = Arc::new(Mutex::new(Vec::<usize>::new()));
    let sink_calls = calls.clone();
    let rt: Runtime<()> = Runtime::new(RuntimeConfig {
        clock: ClockKind::Manual(clock),
        sink: Sink::Callback(Box::new(
            move |batch: &[Record<()>], done: &mut Vec<Completion>| {
                sink_calls.lock().unwrap().push(batch.len());
                for r in batch {
                    if let Record::Tick(t) = r {
                        done.push(t.complete(Outcome::Ok));
                    }
                }
            },
        )),
        ..RuntimeConfig::default()
    })
    .unwrap();
    let mut timers = Vec::new();
    for id in 0..1000u64 {
        let o = rt.acquire_owner(id, OwnerOptions::default()).unwrap();
        timers.push(o.register(0, TimerSpec::every(ms(10)), (), None).unwrap());
    }
    for _ in 0..5 {
        rt.advance(ms(10)).unwrap();
    }
    assert_eq!(*calls.lock().unwrap(), vec![1000; 5]);
    let s = rt.stats();
    assert_eq!(s.host_crossings, 5);
    assert_eq!(s.records_received, 5000);
    assert_eq!(s.completed_ok, 5000);
    assert!(timers.iter().all(|t| t.stats().delivered == 5));
    // Exchange is not the delivery path of a callback runtime.
    let mut out = Vec::new();
    assert!(matches!(
        rt.exchange(&[], &mut out, 1, Some(Duration::ZERO)),
        Err(Error::InvalidArgument(_))
    ));
}

/// A payload through which a callback can reach its own timer's handle.
struct SelfRef(Mutex<Option<TimerHandle<Arc<SelfRef>>>>);

#[test]
fn blocking_cancel_on_the_scheduler_thread_reports_would_deadlock() {
    let clock = ManualClock::new();
    let seen = Arc::new(Mutex::new(None));
    let seen2 = seen.clone();
    let rt: Runtime<Arc<SelfRef>> = Runtime::new(RuntimeConfig {
        clock: ClockKind::Manual(clock),
        sink: Sink::Callback(Box::new(
            move |batch: &[Record<Arc<SelfRef>>], done: &mut Vec<Completion>| {
                for r in batch {
                    if let Record::Tick(t) = r {
                        let me = t.payload().0.lock().unwrap().clone().unwrap();
                        *seen2.lock().unwrap() = Some(me.cancel(Some(ms(100))));
                        done.push(t.complete(Outcome::Ok));
                    }
                }
            },
        )),
        ..RuntimeConfig::default()
    })
    .unwrap();
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let slot = Arc::new(SelfRef(Mutex::new(None)));
    let t = o
        .register(1, TimerSpec::every(ms(10)), slot.clone(), None)
        .unwrap();
    *slot.0.lock().unwrap() = Some(t.clone());
    rt.advance(ms(10)).unwrap();
    assert_eq!(*seen.lock().unwrap(), Some(Err(Error::WouldDeadlock)));
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    slot.0.lock().unwrap().take();
}

#[test]
fn wakeup_fd_is_readable_exactly_while_records_wait() {
    let h = Host::new();
    let fd = h.rt.wakeup_fd().unwrap();
    let readable = || {
        let mut p = libc_pollfd(fd);
        // SAFETY: one valid pollfd, zero timeout.
        unsafe { poll(&mut p, 1, 0) > 0 && p.revents & 1 != 0 }
    };
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    assert!(!readable());
    h.advance(ms(10));
    assert!(readable());
    let r = h.poll();
    assert!(!readable());
    h.finish(&r[0], Outcome::Ok);
    assert_eq!(h.rt.stats().wakeup_primitives, 2);
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
fn libc_pollfd(fd: i32) -> PollFd {
    PollFd {
        fd,
        events: 1,
        revents: 0,
    }
}
extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
}

#[test]
fn real_clock_delivers_in_batches_from_one_thread() {
    let rt: Runtime<()> = Runtime::new(RuntimeConfig::default()).unwrap();
    let mut timers = Vec::new();
    for id in 0..2000u64 {
        let o = rt.acquire_owner(id, OwnerOptions::default()).unwrap();
        timers.push(o.register(0, TimerSpec::every(ms(20)), (), None).unwrap());
    }
    let delivered = AtomicU64::new(0);
    let mut out = Vec::new();
    let mut done = Vec::new();
    let end = std::time::Instant::now() + Duration::from_millis(300);
    while std::time::Instant::now() < end {
        rt.exchange(&done, &mut out, 4096, Some(ms(50))).unwrap();
        done.clear();
        for r in out.drain(..) {
            if let Record::Tick(t) = r {
                delivered.fetch_add(1, Ordering::Relaxed);
                done.push(t.complete(Outcome::Ok));
            }
        }
    }
    let s = rt.stats();
    assert_eq!(s.scheduler_threads, 1);
    assert!(delivered.load(Ordering::Relaxed) >= 2000, "{s:?}");
    // Timers sharing a period arrive together: far fewer crossings than records.
    assert!(s.host_crossings * 20 < s.records_received, "{s:?}");
}

#[test]
fn blocking_cancel_does_not_wait_for_a_record_the_host_never_received() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    assert_eq!(h.rt.pending_records(), 1);
    // The only host thread cancels before draining: the queued record is taken back.
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    assert!(h.poll().is_empty());
    assert_eq!(h.rt.stats().not_started, 1);
    assert_eq!(t.stats().delivered, 0);
}

#[test]
fn lease_expiry_takes_back_records_waiting_in_the_ready_queue() {
    let h = Host::new();
    let o = h.owner_with(1, OwnerOptions::lease(ms(15)));
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    assert_eq!(h.rt.pending_records(), 1);
    h.advance(ms(10)); // lease over at 15: the undelivered record must not run
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Ok(EndReason::LeaseExpired)
    );
    assert!(h.poll().is_empty());
}

#[test]
fn every_due_tick_is_accounted_for_once_all_generations_end() {
    let h = Host::new();
    let plain = h.owner(1);
    let leased = h.owner_with(2, OwnerOptions::lease(ms(45)));
    let _skip = plain
        .register(1, TimerSpec::every(ms(10)), 0, None)
        .unwrap();
    let catch_up = TimerSpec::every(ms(7))
        .policy(OverrunPolicy::CatchUpBounded)
        .max_catch_up_ticks(2);
    let _c = plain.register(2, catch_up, 0, None).unwrap();
    let delay = TimerSpec::every(ms(5)).policy(OverrunPolicy::DelayNextTick);
    let cancelled = plain.register(3, delay, 0, None).unwrap();
    let _l = leased
        .register(1, TimerSpec::every(ms(10)), 0, None)
        .unwrap();
    let _once = leased
        .register(2, TimerSpec::after(ms(12)), 0, None)
        .unwrap();
    let mut started = 0;
    let mut ready = Vec::new();
    for step in 0..60u64 {
        h.advance(ms(3 + step % 11));
        ready.extend(h.poll());
        let mut done = Vec::new();
        for r in ready.drain(..) {
            let outcome = match step % 5 {
                0 => Outcome::Deferred,
                _ if !h.rt.begin(&r) => Outcome::NotStarted,
                1 => Outcome::Failed,
                _ => Outcome::Ok,
            };
            if matches!(outcome, Outcome::Ok | Outcome::Failed) {
                started += 1;
            }
            done.push(r.complete(outcome));
        }
        ready = h.exchange(&done);
        if step == 30 {
            cancelled.cancel_nowait().unwrap();
            plain.register(1, TimerSpec::every(ms(4)), 1, None).unwrap();
        }
        if step % 7 == 0 {
            plain.retry_deferred().unwrap();
        }
    }
    h.rt.close();
    let s = h.rt.stats();
    assert_eq!(s.live_timers, 0);
    assert_eq!(s.completed_ok + s.completed_failed, started, "{s:?}");
    assert_eq!(
        s.ticks_due,
        s.completed_ok
            + s.completed_failed
            + s.ticks_skipped
            + s.ticks_dropped_authority
            + s.ticks_discarded,
        "{s:?}"
    );
    assert!(
        s.ticks_skipped > 0 && s.ticks_dropped_authority > 0 && s.ticks_discarded > 0,
        "{s:?}"
    );
}

#[test]
fn closing_the_runtime_releases_hosts_waiting_for_a_gate() {
    let h = Arc::new(Host::new());
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let running = h.poll().pop().unwrap(); // the timer holds the gate
    let waiter = {
        let o = o.clone();
        std::thread::spawn(move || o.enter_gate(None))
    };
    std::thread::sleep(ms(20));
    assert!(!waiter.is_finished());
    h.rt.close();
    assert!(
        !waiter.join().unwrap(),
        "close wakes the waiter without the gate"
    );
    assert!(!h.rt.begin(&running), "its record never starts after close");
}

#[test]
fn a_blocking_cancel_of_a_timer_that_is_not_running_never_wakes_the_scheduler() {
    let rt: Runtime<()> = Runtime::new(RuntimeConfig::default()).unwrap();
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    // Due in an hour: the scheduler sleeps until then unless someone wakes it.
    let timers: Vec<_> = (0..1000u64)
        .map(|k| {
            o.register(k, TimerSpec::after(Duration::from_secs(3600)), (), None)
                .unwrap()
        })
        .collect();
    rt.sync().unwrap();
    let before = rt.stats();
    for t in &timers {
        assert_eq!(
            t.cancel(Some(Duration::from_secs(10))),
            Ok(EndReason::Cancelled)
        );
    }
    let after = rt.stats();
    assert_eq!(after.ended - before.ended, 1000);
    assert_eq!(after.live_timers, 0);
    // Each cancel ended its timer on the calling thread: no scheduler turn, no wake-up.
    assert_eq!(after.wakeups, before.wakeups, "{after:?}");
    assert_eq!(
        after.scheduler_wakes_by_hosts, before.scheduler_wakes_by_hosts,
        "{after:?}"
    );
}

#[test]
fn periods_below_the_wakeup_resolution_skip_no_tick_that_was_not_late() {
    let rt: Runtime<()> = Runtime::new(RuntimeConfig::default()).unwrap();
    let period = rt.resolution() / 2; // the scheduler's tick is twice the period
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let t = o
        .register(
            1,
            TimerSpec::every(period).policy(OverrunPolicy::SkipLateTicks),
            (),
            None,
        )
        .unwrap();
    let (mut out, mut done) = (Vec::new(), Vec::new());
    let (mut deliveries, mut skipped_deliveries) = (0u64, 0u64);
    let end = std::time::Instant::now() + Duration::from_millis(400);
    while std::time::Instant::now() < end {
        rt.exchange(&done, &mut out, 64, Some(ms(20))).unwrap();
        done.clear();
        for r in out.drain(..) {
            if let Record::Tick(tick) = r {
                assert!(rt.begin(&tick));
                // a short handler (25 µs), well inside the period
                let spin = std::time::Instant::now();
                while spin.elapsed() < Duration::from_micros(25) {}
                deliveries += 1;
                skipped_deliveries += u64::from(tick.tick().skipped_ticks > 0);
                done.push(tick.complete(Outcome::Ok));
            }
        }
    }
    rt.complete(&done).unwrap();
    assert_eq!(
        t.cancel(Some(Duration::from_secs(5))),
        Ok(EndReason::Cancelled)
    );
    // Ticks were due every `period`; a wakeup granularity coarser than that must not turn
    // on-time ticks into skipped ones. (A loaded machine may make a few late for real.)
    let expected = Duration::from_millis(400).as_nanos() as u64 / period.as_nanos() as u64;
    assert!(
        deliveries * 2 > expected,
        "{deliveries} deliveries of {expected} due"
    );
    assert!(
        skipped_deliveries * 10 < deliveries,
        "{skipped_deliveries} of {deliveries} deliveries skipped ticks"
    );
}
