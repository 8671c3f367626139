//! A node keeps itself alive and answers truthfully, seen from the public API only: it
//! renews its own owner lease and runs its own idle scans; a node whose term in the store
//! ended admits nothing of it and gives its Spots up; an intent meeting a closing Spot
//! waits for the close and creates again; every refusal names what really refused and is
//! counted once; an oversized first message creates nothing; a node reported down is not
//! sent to over an old route. Real clocks (the keeper and the scans run on their own).

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use common::*;
use spot_lifecycle::*;
use spot_timer_core::ClockKind;

fn real(mut c: NodeConfig) -> NodeConfig {
    c.clock = ClockKind::Real;
    c
}

fn closes_of(w: &World, spot: SpotId) -> Vec<CloseReason> {
    w.closes
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.0 == spot)
        .map(|c| c.2)
        .collect()
}

#[test]
fn a_node_renews_its_own_owner_lease() {
    let w = World::new();
    let mut cfg = real(w.config(1));
    cfg.owner_lease = Some(Duration::from_millis(300));
    let a = w.node_with(cfg);
    let d = Dispatcher::start(a.clone());
    let user = a.create_user_spot(SpotId(2)).unwrap();
    a.send_or_create(SpotId(3), *b"first").unwrap();
    // Several lease lengths later, every kind still answers.
    for round in 0..4u8 {
        std::thread::sleep(Duration::from_millis(200));
        a.send(a.entry().id(), [round]).unwrap();
        a.send(user.id(), [round]).unwrap();
        a.send_or_create(SpotId(3), [round]).unwrap();
    }
    assert!(eventually(Duration::from_secs(10), || {
        d.ran().len() == 1 + 3 * 4
    }));
    let s = a.stats();
    assert_eq!(s.authority_lost, 0, "nothing given up: {s:?}");
    assert_eq!(
        s.factory_runs, 3,
        "Entry, User and Instance created once each"
    );
}

#[test]
fn a_node_runs_its_own_idle_scans() {
    let w = World::new();
    let mut cfg = real(w.config(1));
    cfg.instance_idle_timeout = Some(Duration::from_millis(200));
    let a = w.node_with(cfg);
    let d = Dispatcher::start(a.clone());
    for i in 0..50 {
        a.send_or_create(SpotId(100 + i), *b"x").unwrap();
    }
    let user = a.create_user_spot(SpotId(7)).unwrap();
    assert!(
        eventually(Duration::from_secs(10), || a.stats().evicted == 50),
        "evicted {} of 50 without a call to evict_idle: {:?}",
        a.stats().evicted,
        a.stats()
    );
    let s = a.stats();
    assert!(s.eviction_passes > 0);
    assert_eq!(s.active_spots, 2, "the Entry and the User Spot stay");
    assert!(a.user(user.id()).is_ok());
    assert!(w
        .closes
        .lock()
        .unwrap()
        .iter()
        .all(|c| c.2 == CloseReason::IdleEvicted && c.3));
    drop(d);
    // Nothing to scan: the node arms no scan (its passes stop).
    std::thread::sleep(Duration::from_millis(100));
    let passes = a.stats().eviction_passes;
    let d = Dispatcher::start(a.clone());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        a.stats().eviction_passes,
        passes,
        "no scans with nothing to evict"
    );
    drop(d);
}

#[test]
fn an_expired_node_admits_nothing_and_its_spot_runs_on_one_node_only() {
    let w = World::new();
    let (n5, n6, n7) = (
        w.node_with(real(w.config(5))),
        w.node_with(real(w.config(6))),
        w.node_with(real(w.config(7))),
    );
    let (d5, d6, _d7) = (
        Dispatcher::start(n5.clone()),
        Dispatcher::start(n6.clone()),
        Dispatcher::start(n7.clone()),
    );
    let y = SpotId(42);
    n6.send_or_create(y, *b"on 6").unwrap();
    // Node 7 caches its route to node 6.
    n7.send(y, *b"via 7").unwrap();
    assert!(eventually(Duration::from_secs(5), || d6.ran().len() == 2));
    w.store.expire_node(NodeId(6));
    // Node 5 creates Y anew.
    n5.send_or_create(y, *b"on 5").unwrap();
    // Over node 7's old route, and on node 6 itself: never admitted on 6.
    for r in [n7.send(y, *b"old route"), n6.send(y, *b"on 6 again")] {
        match r {
            Ok(())
            | Err(LifecycleError::StaleRoute { .. })
            | Err(LifecycleError::Unavailable { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(eventually(Duration::from_secs(5), || n6
        .stats()
        .terms_renewed
        == 1));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        d6.ran().len(),
        2,
        "nothing more ran on the expired node: {:?}",
        d6.ran()
    );
    assert!(d5.ran().contains(&Ran::Message(y, b"on 5".to_vec())));
    assert_eq!(closes_of(&w, y), vec![CloseReason::AuthorityLost]);
    // Node 6 serves again in its new term: a send there reaches Y on node 5.
    n6.send(y, *b"after").unwrap();
    assert!(eventually(Duration::from_secs(5), || d5
        .ran()
        .contains(&Ran::Message(y, b"after".to_vec()))));
    assert_eq!(
        w.store.read(y).unwrap().record.unwrap().authority.node,
        NodeId(5)
    );
}

#[test]
fn an_intent_during_a_closing_callback_waits_and_creates_again() {
    let w = World::new();
    let entered = Arc::new(Barrier::new(2));
    let mut cfg = real(w.config(1));
    cfg.instance_idle_timeout = Some(Duration::from_millis(50));
    let inner_answer: Arc<Mutex<Option<String>>> = Arc::default();
    let node_cell: Arc<Mutex<Option<Arc<Node>>>> = Arc::default();
    {
        let (entered, closes, inner_answer, node_cell) = (
            entered.clone(),
            w.closes.clone(),
            inner_answer.clone(),
            node_cell.clone(),
        );
        let first_close = Arc::new(AtomicU64::new(0));
        cfg.on_close = Some(Arc::new(move |spot, kind, reason| {
            closes.lock().unwrap().push((spot, kind, reason, true));
            if spot == SpotId(7) && first_close.fetch_add(1, SeqCst) == 0 {
                // The same thread's intent for this Spot is refused at once (no wait for
                // its own close).
                let n = node_cell.lock().unwrap().clone().unwrap();
                let t = Instant::now();
                let r = n.send_or_create(SpotId(7), *b"inside");
                *inner_answer.lock().unwrap() = Some(format!("{r:?} after {:?}", t.elapsed()));
                entered.wait();
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    let a = w.node_with(cfg);
    *node_cell.lock().unwrap() = Some(a.clone());
    let d = Dispatcher::start(a.clone());
    a.send_or_create(SpotId(7), *b"one").unwrap();
    entered.wait(); // its IdleEvicted callback runs now, for 100 ms more
    let t = Instant::now();
    a.send_or_create(SpotId(7), *b"two").unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(50),
        "waited for the close"
    );
    assert!(eventually(Duration::from_secs(5), || d
        .ran()
        .contains(&Ran::Message(SpotId(7), b"two".to_vec()))));
    assert_eq!(w.factory_runs(), 3, "Entry, then Spot 7 twice");
    let inner = inner_answer.lock().unwrap().clone().unwrap();
    assert!(inner.contains("Closing"), "{inner}");
    // A plain send keeps its refusal: seen below with a closing Spot of another node.
}

#[test]
fn refusals_while_sends_race_evictions_say_closing_and_are_counted() {
    let w = World::new();
    let mut cfg = real(w.config(1));
    cfg.instance_idle_timeout = Some(Duration::from_millis(1));
    let a = w.node_with(cfg);
    let d = Dispatcher::start(a.clone());
    let ids = 256u64;
    for i in 0..ids {
        a.send_or_create(SpotId(i), *b"x").unwrap();
    }
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let until = Instant::now() + Duration::from_secs(60);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (a, seen) = (a.clone(), seen.clone());
            std::thread::spawn(move || {
                let mut k = 0u64;
                // Until evictions and sends have met often enough (or the deadline).
                while (k < 3000 || a.stats().evicted < 300) && Instant::now() < until {
                    k += 1;
                    let id = SpotId((k * 7 + t * 61) % ids);
                    let r = if k.is_multiple_of(3) {
                        a.send_or_create(id, *b"i").map(drop)
                    } else {
                        a.send(id, *b"s")
                    };
                    match r {
                        // True refusals (a full lane: the senders outran the host).
                        Ok(()) | Err(LifecycleError::NotFound(_)) => {}
                        Err(LifecycleError::CapacityExceeded { .. }) => {}
                        Err(LifecycleError::StaleRoute {
                            reason: StaleReason::Closing,
                            ..
                        }) => {}
                        Err(e) => seen.lock().unwrap().push(format!("{e:?}")),
                    }
                    if k.is_multiple_of(64) {
                        a.evict_idle();
                    }
                    // A varying short pause moves the window across the evictions.
                    if k.is_multiple_of(5) {
                        std::thread::sleep(Duration::from_micros(k % 200));
                    }
                }
                k
            })
        })
        .collect();
    let ops: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(
        Instant::now() < until,
        "no progress: {ops} sends, {} evictions in 60 s",
        a.stats().evicted
    );
    drop(d);
    let wrong = seen.lock().unwrap().clone();
    assert!(wrong.is_empty(), "refusals that are not Closing: {wrong:?}");
    // Accounting holds once quiet.
    let d = Dispatcher::start(a.clone());
    assert!(eventually(Duration::from_secs(10), || {
        let s = a.stats();
        s.messages_admitted == s.messages_completed + s.messages_dropped
    }));
    drop(d);
    assert!(a.stats().evicted >= 300);
}

#[test]
fn every_activation_refusal_a_caller_sees_is_counted() {
    let w = World::new();
    let mut cfg = real(w.config(1));
    cfg.active_cap = 1; // the Entry Spot only
    let a = w.node_with(cfg);
    let refused = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (a, refused, barrier) = (a.clone(), refused.clone(), barrier.clone());
            std::thread::spawn(move || {
                for round in 0..200u64 {
                    if round.is_multiple_of(20) {
                        barrier.wait();
                    }
                    if let Err(LifecycleError::CapacityExceeded {
                        queue: Queue::Activation,
                    }) = a.send_or_create(SpotId(round % 3), *b"")
                    {
                        refused.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(refused.load(SeqCst), 8 * 200);
    assert_eq!(a.stats().rejected_activation, refused.load(SeqCst));
}

#[test]
fn an_oversized_first_message_creates_nothing() {
    let w = World::new();
    let a = w.node_with(real(w.config(1)));
    let before = w.factory_runs();
    let big = vec![0u8; (64 << 20) - 255]; // + 256 B is one byte over the lane
    let r = a.send_or_create(SpotId(9), big);
    assert!(
        matches!(
            r,
            Err(LifecycleError::CapacityExceeded {
                queue: Queue::ApplicationLane
            })
        ),
        "{r:?}"
    );
    assert_eq!(w.factory_runs(), before, "the factory did not run");
    assert!(w.store.read(SpotId(9)).unwrap().record.is_none());
    assert!(a.instance(SpotId(9)).is_err());
    assert_eq!(a.stats().rejected_application_lane, 1);
    // The largest that fits still creates.
    a.send_or_create(SpotId(9), vec![0u8; (64 << 20) - 256])
        .unwrap();
}

#[test]
fn a_node_reported_down_is_not_sent_to_over_an_old_route() {
    let w = World::new();
    let (a, b) = (
        w.node_with(real(w.config(1))),
        w.node_with(real(w.config(2))),
    );
    let db = Dispatcher::start(b.clone());
    b.send_or_create(SpotId(5), *b"on b").unwrap();
    a.send(SpotId(5), *b"cached").unwrap(); // a caches its route to b
    assert!(eventually(Duration::from_secs(5), || db.ran().len() == 2));
    w.store.mark_down(NodeId(2));
    let admitted = b.stats().messages_admitted;
    for payload in [&b"plain"[..], b"intent"] {
        let r = if payload == b"plain" {
            a.send(SpotId(5), payload)
        } else {
            a.send_or_create(SpotId(5), payload).map(drop)
        };
        match r {
            Err(
                e @ LifecycleError::Unavailable {
                    may_have_run: false,
                    ..
                },
            ) => assert!(e.to_string().contains("did not run"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        b.stats().messages_admitted,
        admitted,
        "nothing admitted on the down node"
    );
    assert_eq!(w.factory_runs(), 3, "no creation for an Unavailable Spot");
    // A node with no route cached: the store's answer (owner down) ends the intent at once
    // — it does not wait out the creation wait for a change.
    let mut cfg = real(w.config(3));
    cfg.creation_wait = Duration::from_secs(60);
    let c = w.node_with(cfg);
    let t = Instant::now();
    let r = c.send_or_create(SpotId(5), *b"fresh");
    assert!(
        matches!(
            r,
            Err(LifecycleError::Unavailable {
                may_have_run: false,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "waited {:?}",
        t.elapsed()
    );
    assert_eq!(
        w.factory_runs(),
        4,
        "no creation for an Unavailable Spot (c's Entry only)"
    );
}

#[test]
fn a_closing_callback_that_sends_while_its_node_takes_a_new_term_does_not_hang() {
    let w = World::new();
    let node_cell: Arc<Mutex<Option<std::sync::Weak<Node>>>> = Arc::default();
    let answers: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut cfg = real(w.config(1));
    {
        let (node_cell, answers) = (node_cell.clone(), answers.clone());
        cfg.on_close = Some(Arc::new(move |spot, _, reason| {
            if reason != CloseReason::AuthorityLost || spot != SpotId(3) {
                return;
            }
            let n = node_cell.lock().unwrap().as_ref().and_then(|w| w.upgrade());
            if let Some(n) = n {
                // An intent from inside the callback (the keeper runs it): answered, not hung.
                let r = n.send_or_create(SpotId(4), *b"from the callback");
                answers.lock().unwrap().push(format!("{r:?}"));
            }
        }));
    }
    let a = w.node_with(cfg);
    *node_cell.lock().unwrap() = Some(Arc::downgrade(&a));
    a.send_or_create(SpotId(3), *b"x").unwrap();
    w.store.expire_node(NodeId(1));
    assert!(
        eventually(Duration::from_secs(30), || a.stats().terms_renewed == 1),
        "the node took a new term"
    );
    assert!(eventually(Duration::from_secs(30), || !answers
        .lock()
        .unwrap()
        .is_empty()));
    // The node serves in its new term.
    a.send_or_create(SpotId(5), *b"after").unwrap();
}
