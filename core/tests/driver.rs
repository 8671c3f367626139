//! The delivery driver (`spot_timer_core::driver`) from the outside: a Rust host that
//! says how each record went, and the runtime's accounting read back from its stats.
//! Every test checks the identity "every record published was completed once"
//! (`records_published == finished`) after its runtime closed.

mod common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{concurrent_owner, concurrent_timers_every_10ms, ms, records_finished};
use spot_timer_core::driver::{Budget, Driver, Host, Pass, Ticket, TimerSource, Verdict};
use spot_timer_core::*;

type Src = TimerSource<u32>;

fn assert_accounted(rt: &Runtime<u32>) {
    let st = rt.stats();
    assert_eq!(st.records_published, records_finished(&st), "{st:?}");
    assert_eq!(st.invalid_completions, 0, "{st:?}");
}

fn due(rt: &Runtime<u32>, clock: &ManualClock) {
    clock.advance(ms(10));
    rt.sync().unwrap();
}

fn payload(r: &Record<u32>) -> u32 {
    *r.as_tick().expect("a tick").payload()
}

/// A host written as a closure: `run` decides the verdict by payload; kept tickets and
/// notices are collected.
struct Scripted<F: FnMut(&Record<u32>) -> Verdict> {
    run: F,
    kept: Vec<(u32, Ticket<Src>)>,
    notices: Vec<CancelNotice>,
}

impl<F: FnMut(&Record<u32>) -> Verdict> Scripted<F> {
    fn new(run: F) -> Self {
        Self {
            run,
            kept: Vec::new(),
            notices: Vec::new(),
        }
    }
}

impl<F: FnMut(&Record<u32>) -> Verdict> Host<Src> for Scripted<F> {
    fn run(&mut self, record: &Record<u32>) -> Verdict {
        (self.run)(record)
    }
    fn keep(&mut self, record: &Record<u32>, ticket: Ticket<Src>) {
        self.kept.push((payload(record), ticket));
    }
    fn notice(&mut self, record: &Record<u32>) {
        match record {
            Record::CancelDone(n) => self.notices.push(n.clone()),
            Record::Tick(_) => panic!("a tick handed out as a notice"),
        }
    }
}

fn driver(rt: &Runtime<u32>, capacity: usize) -> Driver<Src> {
    Driver::new(TimerSource::new(rt, capacity).unwrap())
}

#[test]
fn every_outcome_the_host_reports_is_the_one_the_runtime_counts() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(4);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|r| match payload(r) {
        0 => Verdict::Done(Outcome::Ok),
        1 => Verdict::Done(Outcome::Failed),
        2 => Verdict::Done(Outcome::Deferred),
        _ => Verdict::Done(Outcome::NotStarted),
    });
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert_eq!(pass.ran, 4);
    // The outcomes travel with the next exchange.
    assert_eq!(rt.stats().completed_ok, 0);
    d.flush().unwrap();
    let st = rt.stats();
    assert_eq!(
        (
            st.completed_ok,
            st.completed_failed,
            st.completed_deferred,
            st.not_started
        ),
        (1, 1, 1, 1),
        "{st:?}"
    );
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn nothing_due_is_an_empty_pass_and_a_closed_runtime_is_the_closed_error() {
    let (rt, _clock, _ids) = concurrent_timers_every_10ms(1);
    let mut d = driver(&rt, 16);
    let mut host = Scripted::new(|_| panic!("nothing is due"));
    assert_eq!(
        d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap(),
        Pass::default()
    );
    rt.close();
    assert_eq!(
        d.deliver(&mut host, Some(Duration::ZERO), 16),
        Err(Error::Closed)
    );
}

#[test]
fn a_record_cancelled_by_an_earlier_handler_of_the_batch_never_reaches_the_host() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(2);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut ran = Vec::new();
    let mut host = Scripted::new(|r| {
        let p = payload(r);
        ran.push(p);
        // The first handler cancels the other timer without waiting.
        let other = ids[(1 - p) as usize];
        let _ = rt.cancel_timer_nowait(other);
        Verdict::Done(Outcome::Ok)
    });
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert_eq!((pass.ran, pass.not_started), (1, 1), "{pass:?}");
    assert_eq!(ran.len(), 1);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_blocking_cancel_inside_a_handler_of_a_later_record_does_not_wait_for_this_thread() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(3);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut ran = Vec::new();
    let mut results = Vec::new();
    let mut host = Scripted::new(|r| {
        let p = payload(r);
        ran.push(p);
        if ran.len() == 1 {
            // Cancel every other timer, blocking: their records are later in this batch,
            // so only this thread could complete them.
            for (k, id) in ids.iter().enumerate() {
                if k as u32 != p {
                    results.push(rt.cancel_timer(*id, Some(Duration::from_secs(10))));
                }
            }
        }
        Verdict::Done(Outcome::Ok)
    });
    let t0 = Instant::now();
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "the cancels waited");
    assert_eq!(results, vec![Ok(EndReason::Cancelled); 2]);
    assert_eq!(pass.ran, 1, "{pass:?}");
    assert_eq!(ran.len(), 1);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_blocking_cancel_of_the_running_handler_itself_reports_would_deadlock_and_still_cancels() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(1);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut got = None;
    let mut host = Scripted::new(|_| {
        got = Some(rt.cancel_timer(ids[0], None));
        Verdict::Done(Outcome::Ok)
    });
    d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert_eq!(got, Some(Err(Error::WouldDeadlock)));
    d.flush().unwrap();
    assert_eq!(rt.timer_result(ids[0]), Some(Ok(EndReason::Cancelled)));
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_kept_record_is_completed_by_its_ticket_from_another_thread_and_a_cancel_waits_for_it() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(1);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|_| Verdict::Held);
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert_eq!((pass.ran, pass.held), (1, 1));
    let (_, ticket) = host.kept.pop().unwrap();
    d.flush().unwrap();
    assert_eq!(rt.stats().completed_ok, 0, "a kept record is in flight");
    // T2: a cancel waits for the handler that is still running.
    let released = Arc::new(AtomicBool::new(false));
    let cancelled_at = std::thread::scope(|s| {
        let canceller = s.spawn(|| {
            let r = rt.cancel_timer(ids[0], Some(Duration::from_secs(30)));
            (r, released.load(Ordering::SeqCst))
        });
        std::thread::sleep(ms(100));
        released.store(true, Ordering::SeqCst);
        s.spawn(move || ticket.complete(Outcome::Ok).unwrap())
            .join()
            .unwrap();
        canceller.join().unwrap()
    });
    assert_eq!(cancelled_at, (Ok(EndReason::Cancelled), true));
    assert_eq!(rt.stats().completed_ok, 1);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_ticket_dropped_without_an_outcome_completes_its_record_failed() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(1);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|_| Verdict::Held);
    d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    host.kept.clear();
    assert_eq!(rt.stats().completed_failed, 1);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_ticket_completed_after_the_close_answers_closed_and_its_record_is_accounted() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(2);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|_| Verdict::Held);
    d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    let (_, late) = host.kept.pop().unwrap();
    let (_, early) = host.kept.pop().unwrap();
    early.complete(Outcome::Ok).unwrap();
    // Close from another thread while one handler is still out: the close does not wait
    // for it, and the record ends with the close.
    std::thread::scope(|s| s.spawn(|| rt.close()).join().unwrap());
    assert_eq!(late.complete(Outcome::Ok), Err(Error::Closed));
    assert_eq!(
        d.deliver(&mut host, Some(Duration::ZERO), 16),
        Err(Error::Closed)
    );
    drop(d);
    let st = rt.stats();
    assert_eq!(st.completed_ok, 1, "{st:?}");
    assert_accounted(&rt);
}

#[test]
fn a_stop_keeps_the_rest_of_the_batch_and_the_next_receive_hands_it_out_without_an_exchange() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(4);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut seen = Vec::new();
    let mut host = Scripted::new(|r| {
        seen.push(payload(r));
        if seen.len() == 2 {
            Verdict::Stop(Outcome::Failed)
        } else {
            Verdict::Done(Outcome::Ok)
        }
    });
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert!(pass.stopped);
    assert_eq!(pass.ran, 2);
    assert_eq!(d.waiting(), 2);
    // More becomes due meanwhile: the rest of the stopped batch still comes first, alone.
    due(&rt, &clock);
    assert_eq!(d.receive(Some(Duration::ZERO), 16).unwrap(), 2);
    let pass = d.run(&mut host);
    assert_eq!((pass.ran, pass.stopped), (2, false));
    drop(host);
    assert_eq!(seen.len(), 4);
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2, 3], "each record once");
    d.flush().unwrap();
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.completed_failed), (3, 1), "{st:?}");
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_panicking_handler_fails_its_record_keeps_the_rest_and_the_driver_goes_on() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let calls = AtomicUsize::new(0);
    let mut host = Scripted::new(|_| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the first handler panics");
        }
        Verdict::Done(Outcome::Ok)
    });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        d.deliver(&mut host, Some(Duration::ZERO), 16)
    }));
    assert!(r.is_err(), "the panic reaches the caller");
    assert_eq!(d.waiting(), 2);
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    assert_eq!(pass.ran, 2);
    d.flush().unwrap();
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.completed_failed), (2, 1), "{st:?}");
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn dropping_a_driver_with_a_stopped_batch_completes_the_rest_as_not_started() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(3);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|_| Verdict::Stop(Outcome::Ok));
    d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    drop(d);
    let st = rt.stats();
    assert_eq!((st.completed_ok, st.not_started), (1, 2), "{st:?}");
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_cancel_notice_reaches_the_host_as_a_notice_and_is_never_run() {
    let (rt, clock, ids) = concurrent_timers_every_10ms(1);
    let mut d = driver(&rt, 16);
    due(&rt, &clock);
    let mut host = Scripted::new(|_| Verdict::Held);
    d.deliver(&mut host, Some(Duration::ZERO), 16).unwrap();
    let (_, ticket) = host.kept.pop().unwrap();
    // The handler is still out: the result is not known yet, a notice will carry it.
    assert_eq!(rt.cancel_timer_with_notice(ids[0], 77), Ok(None));
    ticket.complete(Outcome::Ok).unwrap();
    let mut host = Scripted::new(|_| panic!("a notice is not run"));
    let pass = d
        .deliver(&mut host, Some(Duration::from_secs(30)), 16)
        .unwrap();
    assert_eq!((pass.notices, pass.ran), (1, 0));
    assert_eq!(host.notices.len(), 1);
    assert_eq!(host.notices[0].tag, 77);
    assert_eq!(host.notices[0].timer, ids[0]);
    assert_eq!(host.notices[0].result, Ok(EndReason::Cancelled));
    // A second run of the same batch hands nothing out again.
    assert_eq!(d.run(&mut host), Pass::default());
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_budget_takes_fewer_records_once_handlers_are_measured_slow() {
    let (rt, clock, _ids) = concurrent_timers_every_10ms(40);
    let budget = Arc::new(Budget::new(ms(20)));
    let mut d = driver(&rt, 64).with_budget(budget.clone());
    due(&rt, &clock);
    // Assumed 1 µs per record: the first exchange takes all 40.
    let mut host = Scripted::new(|_| {
        std::thread::sleep(ms(2));
        Verdict::Done(Outcome::Ok)
    });
    assert_eq!(d.receive(Some(Duration::ZERO), 64).unwrap(), 40);
    d.run(&mut host);
    assert!(budget.per_record() >= ms(2), "{:?}", budget.per_record());
    due(&rt, &clock);
    let n = d.receive(Some(Duration::ZERO), 64).unwrap();
    assert!(
        (1..=10).contains(&n),
        "took {n} records of 2 ms into a 20 ms budget"
    );
    d.run(&mut host);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

#[test]
fn a_window_lets_records_due_meanwhile_join_the_batch() {
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    // (Concurrent: a serial owner's second record would wait for the first's completion.)
    let owner = concurrent_owner(&rt, 1);
    let mut d = driver(&rt, 16).with_window(ms(1_000));
    owner
        .register_id(1, TimerSpec::after(ms(50)), 1, None)
        .unwrap();
    owner
        .register_id(2, TimerSpec::after(ms(150)), 2, None)
        .unwrap();
    let n = d.receive(Some(Duration::from_secs(30)), 16).unwrap();
    assert_eq!(n, 2, "the second one-shot joined the first's batch");
    let mut host = Scripted::new(|_| Verdict::Done(Outcome::Ok));
    assert_eq!(d.run(&mut host).ran, 2);
    drop(d);
    rt.close();
    assert_accounted(&rt);
}

/// Delivery on one thread, blocking and non-blocking cancels and re-registrations on
/// another, kept records completed on a third, with the windows moved by short varying
/// delays: every round ends (a deadline), every cancel gets one result, and every record
/// published is completed exactly once.
#[test]
fn cancels_and_kept_completions_race_delivery_without_loss_or_hang() {
    let rounds = 2_000;
    let deadline = Instant::now() + Duration::from_secs(120);
    let rt = Runtime::<u32>::new(RuntimeConfig::default()).unwrap();
    let owner = concurrent_owner(&rt, 1);
    let stop = AtomicBool::new(false);
    let start = Barrier::new(3);
    let (tx, rx) = std::sync::mpsc::channel::<Ticket<Src>>();
    let ran = AtomicUsize::new(0);
    std::thread::scope(|s| {
        // The delivering thread: every third record is kept and sent to the completer.
        let (rt_ref, ran_ref, stop_ref, start_ref) = (&rt, &ran, &stop, &start);
        s.spawn(move || {
            struct Racing<'a> {
                tx: std::sync::mpsc::Sender<Ticket<Src>>,
                ran: &'a AtomicUsize,
                n: RefCell<u64>,
            }
            impl Host<Src> for Racing<'_> {
                fn run(&mut self, _r: &Record<u32>) -> Verdict {
                    self.ran.fetch_add(1, Ordering::Relaxed);
                    let mut n = self.n.borrow_mut();
                    *n += 1;
                    if n.is_multiple_of(3) {
                        Verdict::Held
                    } else {
                        Verdict::Done(Outcome::Ok)
                    }
                }
                fn keep(&mut self, _r: &Record<u32>, ticket: Ticket<Src>) {
                    let _ = self.tx.send(ticket);
                }
            }
            let mut d = driver(rt_ref, 64);
            let mut host = Racing {
                tx,
                ran: ran_ref,
                n: RefCell::new(0),
            };
            start_ref.wait();
            while !stop_ref.load(Ordering::Relaxed) {
                match d.deliver(&mut host, Some(ms(5)), 64) {
                    Ok(_) => {}
                    Err(Error::Closed) => break,
                    Err(e) => panic!("{e}"),
                }
            }
        });
        // The completer of kept records, with a small varying delay.
        s.spawn(move || {
            start_ref.wait();
            let mut k = 0u64;
            for t in rx.iter() {
                k += 1;
                if k.is_multiple_of(4) {
                    std::thread::sleep(Duration::from_micros(k % 300));
                }
                let _ = t.complete(Outcome::Ok);
            }
        });
        start.wait();
        let mut results: HashMap<&'static str, usize> = HashMap::new();
        for round in 0..rounds {
            assert!(Instant::now() < deadline, "no progress by round {round}");
            let key = round % 8;
            let id = owner
                .register_id(
                    key,
                    TimerSpec::every(Duration::from_micros(200 + (round * 37) % 900)),
                    round as u32,
                    None,
                )
                .unwrap();
            std::thread::sleep(Duration::from_micros((round * 53) % 1_500));
            let r = if round % 2 == 0 {
                rt.cancel_timer(id, Some(Duration::from_secs(30)))
            } else {
                match rt.timer(id).map(|h| h.cancel_nowait()) {
                    Ok(Ok(ticket)) => ticket.wait(Some(Duration::from_secs(30))),
                    Ok(Err(e)) | Err(e) => Err(e),
                }
            };
            let name = match r {
                Ok(EndReason::Cancelled) => "cancelled",
                Ok(EndReason::Superseded) => "superseded",
                other => panic!("round {round}: {other:?}"),
            };
            *results.entry(name).or_default() += 1;
        }
        stop.store(true, Ordering::Relaxed);
        assert_eq!(results.values().sum::<usize>(), rounds as usize);
    });
    assert!(ran.load(Ordering::Relaxed) > 0, "nothing was delivered");
    rt.close();
    assert_accounted(&rt);
}
