//! A node delivered through the core's driver (`NodeSource`): messages and ticks in one
//! batch, run by a Rust host, read back from the node's stats. Nothing here calls the
//! node's exchange, begin or complete: the driver does.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use spot_lifecycle::*;
use spot_timer_core::driver::{Driver, Host, Ticket, Verdict};

type D = Driver<NodeSource>;

/// What a handler saw, and how it answers.
struct Recording<F: FnMut(&SpotRecord) -> Verdict> {
    verdict: F,
    ran: Vec<Ran>,
    kept: Vec<Ticket<NodeSource>>,
}

impl<F: FnMut(&SpotRecord) -> Verdict> Recording<F> {
    fn new(verdict: F) -> Self {
        Self {
            verdict,
            ran: Vec::new(),
            kept: Vec::new(),
        }
    }
}

impl<F: FnMut(&SpotRecord) -> Verdict> Host<NodeSource> for Recording<F> {
    fn run(&mut self, r: &SpotRecord) -> Verdict {
        self.ran.push(match r {
            SpotRecord::Message(m) => Ran::Message(m.spot(), m.payload().to_vec()),
            SpotRecord::Tick(t) => Ran::Tick(t.spot(), t.key()),
        });
        (self.verdict)(r)
    }
    fn keep(&mut self, _r: &SpotRecord, ticket: Ticket<NodeSource>) {
        self.kept.push(ticket);
    }
}

fn messages(n: u8) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![b'm', i]).collect()
}

fn sent(ran: &[Ran], spot: SpotId) -> Vec<Vec<u8>> {
    ran.iter()
        .filter_map(|r| match r {
            Ran::Message(s, p) if *s == spot => Some(p.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_burst_of_one_spot_runs_whole_and_in_order_in_one_batch() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.send_or_create(SpotId(30), *b"first").unwrap();
    for m in messages(5) {
        node.send(spot.id(), m).unwrap();
    }
    let mut d = D::new(NodeSource::new(node.clone()));
    let mut host = Recording::new(|_| Verdict::Done(Outcome::Ok));
    let mut passes = 0;
    while d
        .deliver(&mut host, Some(Duration::ZERO), 4096)
        .unwrap()
        .ran
        > 0
    {
        passes += 1;
        assert!(passes < 100, "no end to the deliveries");
    }
    let mut want = vec![b"first".to_vec()];
    want.extend(messages(5));
    assert_eq!(sent(&host.ran, spot.id()), want);
    d.flush().unwrap();
    let st = node.stats();
    assert_eq!(
        (
            st.messages_admitted,
            st.messages_completed,
            st.messages_dropped
        ),
        (6, 6, 0),
        "{st:?}"
    );
}

#[test]
fn a_stop_keeps_the_rest_for_the_next_receive_and_nothing_is_dropped() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(SpotId(20)).unwrap();
    for m in messages(6) {
        node.send(spot.id(), m).unwrap();
    }
    let mut d = D::new(NodeSource::new(node.clone()));
    let calls = AtomicUsize::new(0);
    let mut host = Recording::new(|_| {
        if calls.fetch_add(1, Ordering::SeqCst) == 1 {
            Verdict::Stop(Outcome::Failed)
        } else {
            Verdict::Done(Outcome::Ok)
        }
    });
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 4096).unwrap();
    assert!(pass.stopped);
    assert_eq!(pass.ran, 2);
    let rest = d.waiting();
    assert!(rest > 0, "the rest of the burst waits in the driver");
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 4096).unwrap();
    assert_eq!(pass.ran, rest);
    while d
        .deliver(&mut host, Some(Duration::ZERO), 4096)
        .unwrap()
        .ran
        > 0
    {}
    d.flush().unwrap();
    assert_eq!(
        sent(&host.ran, spot.id()),
        messages(6),
        "each once, in order"
    );
    let st = node.stats();
    assert_eq!(
        (st.messages_completed, st.messages_dropped),
        (6, 0),
        "{st:?}"
    );
}

#[test]
fn dropping_the_driver_after_a_stop_drops_the_rest_and_counts_it() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(SpotId(20)).unwrap();
    for m in messages(4) {
        node.send(spot.id(), m).unwrap();
    }
    let mut d = D::new(NodeSource::new(node.clone()));
    let mut host = Recording::new(|_| Verdict::Stop(Outcome::Ok));
    d.deliver(&mut host, Some(Duration::ZERO), 4096).unwrap();
    let rest = d.waiting() as u64;
    assert!(rest > 0);
    drop(d);
    let st = node.stats();
    assert_eq!(st.messages_completed + st.messages_dropped, 4, "{st:?}");
    assert_eq!(st.messages_dropped, rest, "{st:?}");
}

#[test]
fn a_spot_tick_comes_through_the_driver_and_a_kept_one_is_completed_by_its_ticket() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(SpotId(20)).unwrap();
    node.every(&spot, 9, Duration::from_millis(10), 5).unwrap();
    let mut d = D::new(NodeSource::new(node.clone()));
    let mut host = Recording::new(|_| Verdict::Held);
    node.advance(Duration::from_millis(10)).unwrap();
    let pass = d.deliver(&mut host, Some(Duration::ZERO), 4096).unwrap();
    assert_eq!((pass.ran, pass.held), (1, 1));
    assert_eq!(host.ran, vec![Ran::Tick(spot.id(), 9)]);
    let ticket = host.kept.pop().unwrap();
    std::thread::spawn(move || ticket.complete(Outcome::Ok).unwrap())
        .join()
        .unwrap();
    d.flush().unwrap();
    let t = node.timer_stats();
    assert!(t.completed_ok >= 1, "{t:?}");
    // The next tick is delivered after the kept one completed.
    node.advance(Duration::from_millis(10)).unwrap();
    let mut again = Recording::new(|_| Verdict::Done(Outcome::Ok));
    assert_eq!(
        d.deliver(&mut again, Some(Duration::ZERO), 4096)
            .unwrap()
            .ran,
        1
    );
}

#[test]
fn a_panicking_handler_fails_its_message_and_the_next_receive_goes_on() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(SpotId(20)).unwrap();
    for m in messages(3) {
        node.send(spot.id(), m).unwrap();
    }
    let mut d = D::new(NodeSource::new(node.clone()));
    let calls = AtomicUsize::new(0);
    let mut host = Recording::new(|_| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the first handler panics");
        }
        Verdict::Done(Outcome::Ok)
    });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        d.deliver(&mut host, Some(Duration::ZERO), 4096)
    }));
    assert!(r.is_err());
    while d
        .deliver(&mut host, Some(Duration::ZERO), 4096)
        .unwrap()
        .ran
        > 0
    {}
    d.flush().unwrap();
    assert_eq!(sent(&host.ran, spot.id()), messages(3));
    let st = node.stats();
    assert_eq!(
        (st.messages_completed, st.messages_dropped),
        (3, 0),
        "{st:?}"
    );
}

#[test]
fn a_closed_node_is_the_closed_error() {
    let w = World::new();
    let node = w.node(1);
    let mut d = D::new(NodeSource::new(node.clone()));
    node.shutdown();
    let mut host = Recording::new(|_| Verdict::Done(Outcome::Ok));
    let r = d.deliver(&mut host, Some(Duration::ZERO), 16);
    assert!(
        matches!(
            r,
            Err(LifecycleError::Closed)
                | Err(LifecycleError::Timer(spot_timer_core::Error::Closed))
        ),
        "{r:?}"
    );
}
