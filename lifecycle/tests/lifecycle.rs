//! The lifecycle contract's verification items L01–L16, through the public Rust API.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::*;
use spot_lifecycle::*;

const S: SpotId = SpotId(7);

// ---- Kinds and creation -----------------------------------------------------------

#[test]
fn lifecycle_l01_the_entry_spot_is_not_relocated_its_actors_are() {
    let w = World::new();
    let node = w.node(1);
    node.add_entry_actor(501);
    node.add_entry_actor(502);
    let user = node.create_user_spot(SpotId(20)).unwrap();
    let inst = node.send_or_create(SpotId(30), *b"hi").unwrap();
    let targets = node.relocation_targets();
    let entry = node.entry();
    assert!(
        !targets.contains(&RelocationTarget::Spot(entry.id(), SpotKind::Entry)),
        "{targets:?}"
    );
    for t in [
        RelocationTarget::EntryActor(501),
        RelocationTarget::EntryActor(502),
        RelocationTarget::Spot(user.id(), SpotKind::User),
        RelocationTarget::Spot(inst.id(), SpotKind::Instance),
    ] {
        assert!(targets.contains(&t), "{t:?} missing from {targets:?}");
    }
    assert_eq!(targets.len(), 4);
    // The kinds are distinct types: an Entry handle cannot be closed, and an id of one
    // kind is refused where another is asked for.
    assert!(matches!(
        node.user(inst.id()),
        Err(LifecycleError::WrongKind {
            expected: SpotKind::User,
            actual: SpotKind::Instance,
            ..
        })
    ));
    assert!(matches!(
        SpotKind::from_u32(0).map_err(LifecycleError::from),
        Err(LifecycleError::InvalidKind(0))
    ));
    assert!(matches!(
        SpotKind::from_u32(4).map_err(LifecycleError::from),
        Err(LifecycleError::InvalidKind(4))
    ));
    assert_eq!(SpotKind::from_u32(3).unwrap(), SpotKind::Instance);
}

#[test]
fn lifecycle_l01_a_drained_node_hands_its_spots_over_after_their_closing_callbacks() {
    let w = World::new();
    let a = w.node(1);
    a.add_entry_actor(77);
    a.create_user_spot(SpotId(20)).unwrap();
    a.send_or_create(SpotId(30), *b"hi").unwrap();
    let entry = a.entry().id();
    let mut targets = a.drain();
    targets.sort_by_key(|t| format!("{t:?}"));
    assert_eq!(
        targets,
        vec![
            RelocationTarget::EntryActor(77),
            RelocationTarget::Spot(SpotId(20), SpotKind::User),
            RelocationTarget::Spot(SpotId(30), SpotKind::Instance),
        ]
    );
    let closes = w.closes.lock().unwrap().clone();
    for id in [SpotId(20), SpotId(30), entry] {
        assert!(
            closes
                .iter()
                .any(|c| c.0 == id && c.2 == CloseReason::NodeShutdown && c.3),
            "{id}: its closing callback ran before its release: {closes:?}"
        );
        assert!(w.store.read(id).unwrap().record.is_none(), "{id} released");
    }
    assert!(a.drain().is_empty(), "a second drain lists nothing");
    // The next explicit intent re-creates them on another node.
    let b = w.node(2);
    let before = w.factory_runs();
    b.create_user_spot(SpotId(20)).unwrap();
    b.send_or_create(SpotId(30), *b"again").unwrap();
    assert_eq!(w.factory_runs() - before, 2);
    assert!(b.user(SpotId(20)).is_ok() && b.instance(SpotId(30)).is_ok());
}

#[test]
fn lifecycle_l02_an_ordinary_message_to_a_missing_id_creates_nothing() {
    let w = World::new();
    let node = w.node(1);
    let runs_at_start = w.factory_runs(); // the Entry Spot's
    assert!(matches!(
        node.send(S, *b"x"),
        Err(LifecycleError::NotFound(S))
    ));
    assert!(matches!(node.instance(S), Err(LifecycleError::NotFound(S))));
    assert_eq!(w.factory_runs(), runs_at_start, "no factory ran");
    assert!(
        w.store.read(S).unwrap().record.is_none(),
        "nothing in the store"
    );
    assert_eq!(node.stats().active_spots, 1, "only the Entry Spot");
    // The explicit intent creates.
    let spot = node.send_or_create(S, *b"hello").unwrap();
    assert_eq!(w.factory_runs(), runs_at_start + 1);
    assert_eq!(spot.kind(), SpotKind::Instance);
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"hello".to_vec())]);
    // And an ordinary message now reaches it.
    node.send(S, *b"again").unwrap();
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"again".to_vec())]);
}

// ---- Concurrent creation ------------------------------------------------------------

#[test]
fn lifecycle_l03_concurrent_creation_runs_the_factory_once() {
    let w = World::new();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let factory: Factory = Arc::new(move |id, _| {
        if id == S {
            r.fetch_add(1, SeqCst);
            std::thread::sleep(Duration::from_millis(30)); // let the others pile up
        }
        Ok(())
    });
    let mut cfg = w.config(1);
    cfg.factory = Some(factory.clone());
    let node = w.node_with(cfg);
    // A second node racing too: the store's reservation decides across nodes.
    let mut cfg = w.config(2);
    cfg.factory = Some(factory);
    let other = w.node_with(cfg);
    let barrier = Arc::new(Barrier::new(16));
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let n = if i % 2 == 0 {
                node.clone()
            } else {
                other.clone()
            };
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                n.send_or_create(S, vec![i as u8]).map(|s| s.generation())
            })
        })
        .collect();
    let gens: Vec<u64> = threads
        .into_iter()
        .map(|t| t.join().unwrap().expect("every caller reaches the Spot"))
        .collect();
    assert_eq!(runs.load(SeqCst), 1, "the factory ran once");
    assert!(gens.iter().all(|g| *g == gens[0]), "one Spot: {gens:?}");
    let owner = w.store.read(S).unwrap().record.unwrap().authority.node;
    let owner_node = if owner == node.id() { &node } else { &other };
    let ran = run_ready(owner_node);
    assert_eq!(
        messages_for(&ran, S),
        16,
        "every caller's message ran on the one Spot"
    );
}

#[test]
fn lifecycle_l04_a_message_right_after_creation_is_processed_at_once() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.factory = Some(Arc::new(|_, _| {
        std::thread::sleep(Duration::from_millis(100));
        Ok(())
    }));
    let a = w.node_with(cfg);
    let b = w.node(2);
    let creator = {
        let a = a.clone();
        std::thread::spawn(move || a.send_or_create(S, *b"first").unwrap())
    };
    // Node B sends while the Spot is Creating: it waits for that creation (Creating is
    // never cached as a route) and is admitted as soon as Ready is committed.
    while w.store.read(S).unwrap().record.is_none() {
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    b.send(S, *b"second").unwrap();
    let waited = t0.elapsed();
    creator.join().unwrap();
    assert!(
        waited < Duration::from_secs(2),
        "no cache lifetime: {waited:?}"
    );
    let ran = run_ready(&a);
    assert_eq!(
        ran,
        vec![
            Ran::Message(S, b"first".to_vec()),
            Ran::Message(S, b"second".to_vec())
        ]
    );
}

#[test]
fn lifecycle_l05_unavailable_starts_no_creation() {
    let w = World::new();
    let a = w.node(1);
    let b = w.node(2);
    b.send_or_create(S, *b"on b").unwrap();
    let runs = w.runs_of(S);
    w.store.mark_down(b.id());
    // The authority exists, its owner is down: the request ends, nothing is created.
    let r = a.send_or_create(S, *b"x");
    assert!(
        matches!(r, Err(LifecycleError::Unavailable { spot: S, .. })),
        "{r:?}"
    );
    assert!(matches!(
        a.send(S, *b"x"),
        Err(LifecycleError::Unavailable { .. })
    ));
    assert_eq!(w.runs_of(S), runs, "no creation started");
    // Once the owner's lease is over its authority is released: now the intent creates.
    w.store.expire_node(b.id());
    a.send_or_create(S, *b"on a").unwrap();
    assert_eq!(run_ready(&a), vec![Ran::Message(S, b"on a".to_vec())]);
    // (B, its term over, takes a new one and creates its Entry Spot again: the runs of S's
    // factory are counted.)
    assert_eq!(w.runs_of(S), runs + 1);
}

// ---- Stale owners -----------------------------------------------------------------------

#[test]
fn lifecycle_l06_messages_are_not_rejected_for_a_new_object_generation() {
    let w = World::new();
    let a = w.node(1);
    let b = w.node(2);
    let first = a.send_or_create(S, *b"1").unwrap();
    b.send(S, *b"2").unwrap(); // B caches a route to A
    assert_eq!(messages_for(&run_ready(&a), S), 2);
    assert!(a.close_instance(first).unwrap());
    let second = a.send_or_create(S, *b"3").unwrap();
    assert!(second.generation() > first.generation(), "re-created");
    // Right after the re-creation: ordinary messages, also over B's older route, run.
    a.send(S, *b"4").unwrap();
    b.send(S, *b"5").unwrap();
    let ran = run_ready(&a);
    assert_eq!(messages_for(&ran, S), 3, "{ran:?}");
}

#[test]
fn lifecycle_l07_a_stale_route_ends_with_stale_route_and_is_not_retried() {
    let w = World::new();
    let a = w.node(1);
    let b = w.node(2);
    let c = w.node(3);
    let on_b = b.send_or_create(S, *b"b").unwrap();
    a.send(S, *b"cache").unwrap(); // A caches the route to B
    assert_eq!(messages_for(&run_ready(&b), S), 2);
    // S moves: closed on B, created again on C.
    b.close_instance(on_b).unwrap();
    c.send_or_create(S, *b"c").unwrap();
    let stale_before = a.stats().stale_routes;
    let r = a.send(S, *b"stale");
    assert!(
        matches!(
            r,
            Err(LifecycleError::StaleRoute {
                spot: S,
                reason: StaleReason::NotOwner
            })
        ),
        "{r:?}"
    );
    assert_eq!(a.stats().stale_routes, stale_before + 1);
    // The handler ran zero times for it, anywhere: no automatic retry.
    assert!(run_ready(&b).is_empty());
    assert_eq!(run_ready(&c), vec![Ran::Message(S, b"c".to_vec())]);
    // A new call by the application finds the current owner.
    a.send(S, *b"new call").unwrap();
    assert_eq!(run_ready(&c), vec![Ran::Message(S, b"new call".to_vec())]);
}

#[test]
fn lifecycle_l07_an_owner_whose_lease_ran_out_refuses_with_stale_route() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.owner_lease = Some(Duration::from_millis(50));
    let a = w.node_with(cfg);
    a.send_or_create(S, *b"x").unwrap();
    assert_eq!(messages_for(&run_ready(&a), S), 1);
    a.advance(Duration::from_millis(100)).unwrap();
    // Refused as a stale route, or — once the node's lease keeper has given the Spot up,
    // which it does on its own thread at any moment after the advance — not found.
    let r = a.send(S, *b"late");
    assert!(
        matches!(
            r,
            Err(LifecycleError::StaleRoute {
                reason: StaleReason::LeaseExpired,
                ..
            }) | Err(LifecycleError::NotFound(_))
        ),
        "{r:?}"
    );
    assert!(run_ready(&a).is_empty(), "nothing ran");
}

// ---- Active cap and idle eviction -------------------------------------------------------

#[test]
fn lifecycle_l08_at_the_active_cap_a_new_activation_is_rejected() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.active_cap = 3; // the Entry Spot and two more
    let a = w.node_with(cfg);
    a.send_or_create(SpotId(1), *b"").unwrap();
    a.create_user_spot(SpotId(2)).unwrap();
    let r = a.send_or_create(SpotId(3), *b"");
    assert!(
        matches!(
            r,
            Err(LifecycleError::CapacityExceeded {
                queue: Queue::Activation
            })
        ),
        "{r:?}"
    );
    assert_eq!(a.stats().rejected_activation, 1);
    assert!(
        w.store.read(SpotId(3)).unwrap().record.is_none(),
        "nothing reserved"
    );
    // Placement: with another node below its cap, the new Spot is placed there.
    let b = w.node(2);
    a.send_or_create(SpotId(3), *b"placed").unwrap();
    assert_eq!(
        w.store
            .read(SpotId(3))
            .unwrap()
            .record
            .unwrap()
            .authority
            .node,
        b.id()
    );
    assert_eq!(
        run_ready(&b),
        vec![Ran::Message(SpotId(3), b"placed".to_vec())]
    );
}

fn idle_node(w: &World, timeout_secs: u64) -> Arc<Node> {
    let mut cfg = w.config(1);
    cfg.instance_idle_timeout = Some(Duration::from_secs(timeout_secs));
    w.node_with(cfg)
}

#[test]
fn lifecycle_l09_only_instance_spots_are_evicted() {
    let w = World::new();
    let node = idle_node(&w, 10);
    let user = node.create_user_spot(SpotId(20)).unwrap();
    let inst = node.send_or_create(SpotId(30), *b"x").unwrap();
    run_ready(&node);
    node.advance(Duration::from_secs(20)).unwrap();
    assert_eq!(node.evict_idle(), 1);
    assert!(matches!(
        node.instance(inst.id()),
        Err(LifecycleError::NotFound(_))
    ));
    assert!(node.user(user.id()).is_ok(), "User Spots are never evicted");
    assert_eq!(node.entry().kind(), SpotKind::Entry, "the Entry Spot stays");
    assert_eq!(node.stats().evicted, 1);
    assert_eq!(node.stats().active_spots, 2);
}

#[test]
fn lifecycle_l10_a_spot_with_work_in_progress_is_not_evicted() {
    let w = World::new();
    let node = idle_node(&w, 10);
    node.send_or_create(S, *b"running").unwrap();
    let held = take_ready(&node);
    assert_eq!(held.len(), 1);
    assert!(node.begin(&held[0]));
    node.send(S, *b"queued").unwrap();
    node.advance(Duration::from_secs(30)).unwrap();
    assert_eq!(node.evict_idle(), 0, "running and queued work");
    // The handler finishes; the queued message runs; the Spot is idle only from then on.
    node.complete(&[held[0].complete(Outcome::Ok)]).unwrap();
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"queued".to_vec())]);
    assert_eq!(node.evict_idle(), 0, "its last work finished just now");
    node.advance(Duration::from_secs(11)).unwrap();
    assert_eq!(node.evict_idle(), 1);
}

#[test]
fn lifecycle_l11_eviction_calls_the_closing_callback_before_releasing_the_location() {
    let w = World::new();
    let node = idle_node(&w, 10);
    node.send_or_create(S, *b"x").unwrap();
    run_ready(&node);
    node.advance(Duration::from_secs(10)).unwrap();
    assert_eq!(node.evict_idle(), 1);
    let closes = w.closes.lock().unwrap().clone();
    assert_eq!(
        closes,
        vec![(S, SpotKind::Instance, CloseReason::IdleEvicted, true)],
        "called once, while the location was still recorded"
    );
    assert!(
        w.store.read(S).unwrap().record.is_none(),
        "released afterwards"
    );
    // Missing again: only an explicit intent creates it again.
    assert!(matches!(
        node.send(S, *b"y"),
        Err(LifecycleError::NotFound(S))
    ));
}

#[test]
fn lifecycle_eviction_examines_at_most_64_spots_per_pass() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.instance_idle_timeout = Some(Duration::from_secs(1));
    let node = w.node_with(cfg);
    for i in 0..200 {
        node.send_or_create(SpotId(10_000 + i), *b"").unwrap();
    }
    run_ready(&node);
    node.advance(Duration::from_secs(2)).unwrap();
    let mut passes = 0;
    while node.stats().evicted < 200 {
        let before = node.stats().eviction_examined;
        let n = node.evict_idle();
        assert!(n <= SCAN_LIMIT);
        assert!(node.stats().eviction_examined - before <= SCAN_LIMIT as u64);
        passes += 1;
        assert!(passes < 10, "the cursor covers every Spot");
    }
    assert_eq!(passes, 4, "200 Spots, 64 per pass");
}

// ---- Execution lanes ----------------------------------------------------------------------

fn lane_node(w: &World, items: u64, bytes: u64) -> (Arc<Node>, Spot<User>) {
    let mut cfg = w.config(1);
    cfg.application_lane = LaneLimits { items, bytes };
    let node = w.node_with(cfg);
    let spot = node.create_user_spot(S).unwrap();
    (node, spot)
}

fn app_full(r: Result<()>) -> bool {
    matches!(
        r,
        Err(LifecycleError::CapacityExceeded {
            queue: Queue::ApplicationLane
        })
    )
}

#[test]
fn lifecycle_l12_a_lane_is_limited_by_count_and_bytes_whichever_comes_first() {
    let w = World::new();
    let (node, spot) = lane_node(&w, 4, 2000);
    // Count first: four 10-byte messages (4 x 266 = 1064 bytes).
    for _ in 0..4 {
        node.send(S, vec![0u8; 10]).unwrap();
    }
    assert!(app_full(node.send(S, vec![0u8; 10])));
    assert_eq!(
        node.lane_use(&spot, LaneKind::Application).unwrap(),
        LaneUse {
            items: 4,
            bytes: 1064
        }
    );
    // Completing returns the reservation.
    assert_eq!(messages_for(&run_ready(&node), S), 4);
    assert_eq!(
        node.lane_use(&spot, LaneKind::Application).unwrap(),
        LaneUse::default()
    );
    // Bytes first: 1,000 + 256 fits once, not twice.
    node.send(S, vec![0u8; 1000]).unwrap();
    assert!(app_full(node.send(S, vec![0u8; 1000])));
    assert_eq!(node.stats().rejected_application_lane, 2);
}

#[test]
fn lifecycle_l13_large_payloads_hit_the_byte_limit_first() {
    let w = World::new();
    let (node, spot) = lane_node(&w, 1024, 64 << 10);
    for _ in 0..3 {
        node.send(S, vec![0u8; 16 << 10]).unwrap();
    }
    assert!(app_full(node.send(S, vec![0u8; 16 << 10])));
    let used = node.lane_use(&spot, LaneKind::Application).unwrap();
    assert_eq!(used.items, 3, "far below the count limit");
}

#[test]
fn lifecycle_l14_empty_payloads_hit_the_count_limit_first() {
    let w = World::new();
    let (node, spot) = lane_node(&w, 8, 64 << 20);
    for _ in 0..8 {
        node.send(S, Vec::new()).unwrap();
    }
    assert!(app_full(node.send(S, Vec::new())));
    let used = node.lane_use(&spot, LaneKind::Application).unwrap();
    assert_eq!(
        used,
        LaneUse {
            items: 8,
            bytes: 8 * ITEM_OVERHEAD_BYTES
        }
    );
}

#[test]
fn lifecycle_l15_the_fixed_cost_per_item_is_counted() {
    let w = World::new();
    let (node, spot) = lane_node(&w, 100, 1024);
    for _ in 0..4 {
        node.send(S, Vec::new()).unwrap();
    }
    // Four empty messages have used the 1,024-byte budget.
    assert!(app_full(node.send(S, Vec::new())));
    assert_eq!(
        node.lane_use(&spot, LaneKind::Application).unwrap().bytes,
        1024
    );
}

#[test]
fn lifecycle_l16_every_lane_has_both_limits() {
    let w = World::new();
    for (app, life) in [
        (
            LaneLimits {
                items: 0,
                bytes: 1 << 20,
            },
            LaneLimits::LIFECYCLE,
        ),
        (
            LaneLimits {
                items: 10,
                bytes: 0,
            },
            LaneLimits::LIFECYCLE,
        ),
        (
            LaneLimits::APPLICATION,
            LaneLimits {
                items: 0,
                bytes: 1 << 20,
            },
        ),
        (
            LaneLimits::APPLICATION,
            LaneLimits {
                items: 10,
                bytes: 255,
            },
        ),
    ] {
        let mut cfg = w.config(9);
        cfg.application_lane = app;
        cfg.lifecycle_lane = life;
        let r = Node::start(cfg, w.store.clone(), None);
        assert!(
            matches!(r, Err(LifecycleError::InvalidArgument(_))),
            "unbounded lane accepted"
        );
    }
    assert_eq!(
        LaneLimits::APPLICATION,
        LaneLimits {
            items: 1024,
            bytes: 64 << 20
        }
    );
    assert_eq!(
        LaneLimits::LIFECYCLE,
        LaneLimits {
            items: 128,
            bytes: 4 << 20
        }
    );
    // The lifecycle lane enforces its own limits and says so.
    let mut cfg = w.config(1);
    cfg.lifecycle_lane = LaneLimits {
        items: 2,
        bytes: 1 << 20,
    };
    let node = w.node_with(cfg);
    node.create_user_spot(S).unwrap();
    node.send_lifecycle(S, *b"a").unwrap();
    node.send_lifecycle(S, *b"b").unwrap();
    assert!(matches!(
        node.send_lifecycle(S, *b"c"),
        Err(LifecycleError::CapacityExceeded {
            queue: Queue::LifecycleLane
        })
    ));
    node.send(S, *b"app").unwrap(); // the application lane is separate
                                    // Lifecycle work is served first.
    assert_eq!(
        run_ready(&node),
        vec![
            Ran::Message(S, b"a".to_vec()),
            Ran::Message(S, b"b".to_vec()),
            Ran::Message(S, b"app".to_vec())
        ]
    );
}

#[test]
fn the_node_inbound_budget_is_its_own_queue() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.node_inbound_bytes = 1000;
    let node = w.node_with(cfg);
    node.create_user_spot(SpotId(1)).unwrap();
    node.create_user_spot(SpotId(2)).unwrap();
    node.send(SpotId(1), vec![0u8; 600]).unwrap();
    let r = node.send(SpotId(2), vec![0u8; 600]);
    assert!(
        matches!(
            r,
            Err(LifecycleError::CapacityExceeded {
                queue: Queue::NodeInbound
            })
        ),
        "{r:?}"
    );
    assert_eq!(node.stats().rejected_node_inbound, 1);
    run_ready(&node);
    node.send(SpotId(2), vec![0u8; 600]).unwrap();
}

// ---- Work: messages and ticks together ------------------------------------------------------

#[test]
fn messages_and_ticks_share_one_exchange_and_messages_keep_their_order() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(S).unwrap();
    node.every(&spot, 1, Duration::from_millis(10), 77).unwrap();
    for i in 0..100u8 {
        node.send(S, vec![i]).unwrap();
    }
    node.advance(Duration::from_millis(10)).unwrap();
    let ran = run_ready(&node);
    let msgs: Vec<u8> = ran
        .iter()
        .filter_map(|r| match r {
            Ran::Message(_, p) => Some(p[0]),
            _ => None,
        })
        .collect();
    assert_eq!(msgs, (0..100).collect::<Vec<_>>(), "FIFO per Spot");
    assert_eq!(
        ran.iter().filter(|r| matches!(r, Ran::Tick(S, 1))).count(),
        1
    );
    let s = node.stats();
    assert_eq!(s.messages_admitted, 100);
    assert_eq!(s.messages_completed, 100);
    // One Spot runs one piece of work at a time; across Spots, a crossing carries many.
    let before = node.timer_stats();
    for i in 0..50 {
        node.create_user_spot(SpotId(100 + i)).unwrap();
        node.send(SpotId(100 + i), *b"m").unwrap();
    }
    assert_eq!(run_ready(&node).len(), 50);
    let t = node.timer_stats();
    assert_eq!(t.records_received - before.records_received, 50);
    assert!(t.host_crossings - before.host_crossings <= 2, "{t:?}");
    assert!(matches!(
        node.every(&spot, 1 << 63, Duration::from_millis(10), 0),
        Err(LifecycleError::InvalidArgument(_))
    ));
}

#[test]
fn a_spot_runs_one_piece_of_work_at_a_time() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(S).unwrap();
    node.every(&spot, 1, Duration::from_millis(10), 0).unwrap();
    node.send(S, *b"m1").unwrap();
    node.send(S, *b"m2").unwrap();
    node.advance(Duration::from_millis(10)).unwrap();
    // The queued messages come as one burst, in admission order; the tick waits until the
    // burst's last message completed (serial gate, T9).
    let first = take_ready(&node);
    let payloads: Vec<&[u8]> = first
        .iter()
        .map(|r| match r {
            SpotRecord::Message(m) => m.payload(),
            SpotRecord::Tick(_) => b"tick",
        })
        .collect();
    assert_eq!(payloads, vec![&b"m1"[..], &b"m2"[..]]);
    assert_ne!(first[0].token(), first[1].token());
    assert!(take_ready(&node).is_empty());
    assert!(node.begin(&first[0]));
    let mut out = Vec::new();
    node.exchange(
        &[first[0].complete(Outcome::Ok)],
        &mut out,
        16,
        Some(Duration::ZERO),
    )
    .unwrap();
    assert!(out.is_empty(), "m2 of the burst still holds the gate");
    assert!(node.begin(&first[1]));
    node.exchange(
        &[first[1].complete(Outcome::Ok)],
        &mut out,
        16,
        Some(Duration::ZERO),
    )
    .unwrap();
    node.advance(Duration::ZERO).unwrap();
    node.exchange(&[], &mut out, 16, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(out.len(), 1, "the tick, after the burst completed");
    assert!(matches!(out[0], SpotRecord::Tick(_)));
}

#[test]
fn a_burst_starts_in_order_and_never_beside_itself() {
    let w = World::new();
    let node = w.node(1);
    node.create_user_spot(S).unwrap();
    for m in [b"a", b"b", b"c", b"d"] {
        node.send(S, *m).unwrap();
    }
    let burst = take_ready(&node);
    assert_eq!(burst.len(), 4);
    // Out of order: refused (and that message never starts).
    assert!(!node.begin(&burst[1]));
    assert!(node.begin(&burst[0]));
    // On another thread while `a` runs here: refused.
    std::thread::scope(|t| {
        t.spawn(|| assert!(!node.begin(&burst[2])));
    });
    // `a` ended: the next one may start on any thread.
    let done_a = burst[0].complete(Outcome::Ok);
    std::thread::scope(|t| {
        t.spawn(|| assert!(node.begin(&burst[3])));
    });
    assert!(!node.begin(&burst[3]), "a record starts once");
    let done: Vec<_> = vec![
        done_a,
        burst[1].complete(Outcome::NotStarted),
        burst[2].complete(Outcome::NotStarted),
        burst[3].complete(Outcome::Ok),
    ];
    node.complete(&done).unwrap();
    let s = node.stats();
    assert_eq!(
        (
            s.messages_admitted,
            s.messages_completed,
            s.messages_dropped
        ),
        (4, 2, 2)
    );
    assert_eq!(
        node.lane_use_of(S, LaneKind::Application).unwrap(),
        LaneUse::default()
    );
    // The gate is free again: a new message comes at once.
    node.send(S, *b"e").unwrap();
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"e".to_vec())]);
}

#[test]
fn a_burst_is_bounded_and_what_stays_queued_follows_it() {
    let w = World::new();
    let node = w.node(1);
    node.create_user_spot(S).unwrap();
    for i in 0..150u32 {
        node.send(S, i.to_le_bytes()).unwrap();
    }
    node.send_lifecycle(S, *b"lc").unwrap();
    let mut out = Vec::new();
    node.advance(Duration::ZERO).unwrap();
    node.exchange(&[], &mut out, 4096, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(out.len(), 64, "one burst is at most 64 messages");
    match &out[0] {
        SpotRecord::Message(m) => assert_eq!(m.lane(), LaneKind::Lifecycle, "served first"),
        SpotRecord::Tick(_) => panic!("a tick"),
    }
    // An exchange's `max` bounds its records, bursts included.
    let done: Vec<_> = out
        .iter()
        .map(|r| {
            assert!(node.begin(r));
            r.complete(Outcome::Ok)
        })
        .collect();
    let mut next = Vec::new();
    node.advance(Duration::ZERO).unwrap();
    node.exchange(&done, &mut next, 10, Some(Duration::ZERO))
        .unwrap();
    node.advance(Duration::ZERO).unwrap();
    node.exchange(&[], &mut next, 10, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(next.len(), 10);
    let ran = {
        let done: Vec<_> = next
            .iter()
            .map(|r| {
                assert!(node.begin(r));
                r.complete(Outcome::Ok)
            })
            .collect();
        node.complete(&done).unwrap();
        run_ready(&node)
    };
    assert_eq!(ran.len(), 151 - 64 - 10);
    let s = node.stats();
    assert_eq!((s.messages_admitted, s.messages_completed), (151, 151));
}

#[test]
fn closing_drops_queued_messages_and_counts_them() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(S).unwrap();
    for _ in 0..5 {
        node.send(S, *b"m").unwrap();
    }
    assert!(node.close_user_spot(spot).unwrap());
    assert!(run_ready(&node).is_empty());
    let s = node.stats();
    assert_eq!(
        (
            s.messages_admitted,
            s.messages_completed,
            s.messages_dropped
        ),
        (5, 0, 5)
    );
    assert_eq!(
        w.closes.lock().unwrap().last().copied(),
        Some((S, SpotKind::User, CloseReason::Closed, true))
    );
    assert!(matches!(
        node.send(S, *b"m"),
        Err(LifecycleError::NotFound(S))
    ));
}

#[test]
fn a_failing_factory_releases_the_reservation() {
    let w = World::new();
    let fail = Arc::new(AtomicU64::new(1));
    let mut cfg = w.config(1);
    let f = fail.clone();
    cfg.factory = Some(Arc::new(move |id, _| {
        if id == S && f.load(SeqCst) == 1 {
            return Err("no room".into());
        }
        Ok(())
    }));
    let node = w.node_with(cfg);
    let r = node.send_or_create(S, *b"x");
    assert!(
        matches!(&r, Err(LifecycleError::CreationFailed { spot: S, message }) if &**message == "no room"),
        "{r:?}"
    );
    assert!(
        w.store.read(S).unwrap().record.is_none(),
        "the reservation is released"
    );
    fail.store(0, SeqCst);
    node.send_or_create(S, *b"y").unwrap();
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"y".to_vec())]);
}

#[test]
fn calls_after_shutdown_are_refused() {
    let w = World::new();
    let node = w.node(1);
    node.create_user_spot(S).unwrap();
    node.shutdown();
    assert!(matches!(node.send(S, *b"x"), Err(LifecycleError::Closed)));
    assert!(matches!(
        node.send_or_create(SpotId(9), *b"x"),
        Err(LifecycleError::Closed)
    ));
    assert!(matches!(
        node.create_user_spot(SpotId(10)),
        Err(LifecycleError::Closed)
    ));
    let closes = w.closes.lock().unwrap().clone();
    assert!(closes
        .iter()
        .any(|c| c.0 == S && c.2 == CloseReason::NodeShutdown));
}

#[test]
fn a_node_that_shut_down_is_never_chosen_and_its_id_is_free_again() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.active_cap = 1; // only its Entry Spot
    let a = w.node_with(cfg);
    let b = w.node(2);
    b.shutdown();
    let r = a.send_or_create(S, *b"x");
    assert!(
        matches!(
            r,
            Err(LifecycleError::CapacityExceeded {
                queue: Queue::Activation
            })
        ),
        "{r:?}"
    );
    // A live node below its cap is chosen, never the one that left.
    let c = w.node(3);
    a.send_or_create(S, *b"x").unwrap();
    assert_eq!(
        w.store.read(S).unwrap().record.unwrap().authority.node,
        c.id()
    );
    // A live node id cannot be registered twice; a node that left can come back.
    assert!(matches!(
        Node::start(w.config(3), w.store.clone(), Some(w.cluster.clone())),
        Err(LifecycleError::Store(_))
    ));
    let b_again = w.node(2);
    assert_eq!(b_again.id(), NodeId(2));
}

#[test]
fn concurrent_creations_cannot_pass_the_active_cap_together() {
    let w = World::new();
    let mut cfg = w.config(1);
    cfg.active_cap = 3; // the Entry Spot and two more
    cfg.factory = Some(Arc::new(|_, _| {
        std::thread::sleep(Duration::from_millis(20));
        Ok(())
    }));
    let node = w.node_with(cfg);
    let barrier = Arc::new(Barrier::new(8));
    let results: Vec<_> = (0..8)
        .map(|i| {
            let (n, b) = (node.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                n.send_or_create(SpotId(100 + i), *b"x").is_ok()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(results.iter().filter(|ok| **ok).count(), 2, "{results:?}");
    assert_eq!(node.stats().active_spots, 3);
    assert_eq!(node.stats().rejected_activation, 6);
}

#[test]
fn callers_waiting_for_a_failing_creation_get_its_failure_and_do_not_run_the_factory() {
    let w = World::new();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let mut cfg = w.config(1);
    cfg.factory = Some(Arc::new(move |id, _| {
        if id == S {
            r.fetch_add(1, SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            return Err("no room".into());
        }
        Ok(())
    }));
    let node = w.node_with(cfg);
    let barrier = Arc::new(Barrier::new(6));
    let results: Vec<_> = (0..6)
        .map(|_| {
            let (n, b) = (node.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                n.send_or_create(S, *b"x")
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(runs.load(SeqCst), 1, "the factory ran once");
    for r in &results {
        assert!(
            matches!(r, Err(LifecycleError::CreationFailed { .. })),
            "{r:?}"
        );
    }
    // The entry Spot is still there after shutdown (its handle is kept).
    node.shutdown();
    assert_eq!(node.entry().kind(), SpotKind::Entry);
}

#[test]
fn an_explicit_close_waits_for_the_running_handler_and_drops_what_is_queued() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(S).unwrap();
    node.send(S, *b"running").unwrap();
    node.send(S, *b"queued").unwrap();
    node.advance(Duration::ZERO).unwrap();
    let mut held = Vec::new();
    node.exchange(&[], &mut held, 1, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(held.len(), 1);
    assert!(node.begin(&held[0]));
    // Queued behind the running burst.
    node.send(S, *b"queued 2").unwrap();
    // Closed from inside (or beside) the running handler: accepted, not finished yet.
    assert!(node.close_user_spot(spot).unwrap());
    assert!(
        w.closes.lock().unwrap().iter().all(|c| c.0 != S),
        "no callback beside the handler"
    );
    assert!(matches!(
        node.send(S, *b"late"),
        Err(LifecycleError::StaleRoute {
            reason: StaleReason::Closing,
            ..
        })
    ));
    // The handler completes; the host's next exchange finds nothing of the Spot to run (its
    // dropped message's doorbell ends not started) and the close finishes: callback while
    // still located, then the release.
    node.complete(&[held[0].complete(Outcome::Ok)]).unwrap();
    assert!(run_ready(&node).is_empty(), "the queued message never runs");
    assert_eq!(
        w.closes.lock().unwrap().last().copied(),
        Some((S, SpotKind::User, CloseReason::Closed, true))
    );
    assert!(w.store.read(S).unwrap().record.is_none());
    let s = node.stats();
    assert_eq!(
        (
            s.messages_admitted,
            s.messages_completed,
            s.messages_dropped
        ),
        (3, 1, 2)
    );
    assert!(matches!(
        node.send(S, *b"x"),
        Err(LifecycleError::NotFound(S))
    ));
}

#[test]
fn a_record_whose_spot_closed_since_the_hand_over_does_not_start() {
    let w = World::new();
    let node = w.node(1);
    let a = node.create_user_spot(SpotId(1)).unwrap();
    let b = node.create_user_spot(SpotId(2)).unwrap();
    node.send(a.id(), *b"a").unwrap();
    node.send(b.id(), *b"b").unwrap();
    let batch = take_ready(&node);
    assert_eq!(batch.len(), 2, "one batch holds both");
    // The handler of A's message closes B; B's record, already in the batch, must not start.
    let (first, second) = if batch[0].spot() == a.id() {
        (&batch[0], &batch[1])
    } else {
        (&batch[1], &batch[0])
    };
    assert!(node.begin(first));
    assert!(node.close_user_spot(b).unwrap());
    assert!(!node.begin(second));
    node.complete(&[
        first.complete(Outcome::Ok),
        second.complete(Outcome::NotStarted),
    ])
    .unwrap();
    run_ready(&node);
    let s = node.stats();
    assert_eq!((s.messages_completed, s.messages_dropped), (1, 1));
    assert_eq!(
        w.closes.lock().unwrap().last().copied(),
        Some((b.id(), SpotKind::User, CloseReason::Closed, true))
    );
}

#[test]
fn send_here_reaches_only_a_spot_of_this_node_and_gives_the_payload_back_otherwise() {
    let w = World::new();
    let a = w.node(1);
    let b = w.node(2);
    a.create_user_spot(S).unwrap();
    assert!(matches!(
        a.send_here(S, b"here".to_vec().into()),
        Ok(Ok(()))
    ));
    // On another node, or nowhere: the payload comes back, nothing was admitted or read.
    match b.send_here(S, b"there".to_vec().into()) {
        Err(p) => assert_eq!(&*p, b"there"),
        Ok(r) => panic!("{r:?}"),
    }
    assert!(b.send_here(SpotId(999), Box::from(&b""[..])).is_err());
    assert_eq!(b.stats().messages_admitted, 0);
    assert_eq!(run_ready(&a), vec![Ran::Message(S, b"here".to_vec())]);
    b.shutdown();
    assert!(matches!(
        b.send_here(S, Box::from(&b""[..])),
        Ok(Err(LifecycleError::Closed))
    ));
}

// ---- Bad completions --------------------------------------------------------------

#[test]
fn a_message_completed_twice_is_refused_and_the_spot_goes_on() {
    let w = World::new();
    let node = w.node(1);
    node.create_user_spot(S).unwrap();
    node.send(S, *b"one").unwrap();
    node.send(S, *b"two").unwrap();
    let held = take_ready(&node);
    assert_eq!(held.len(), 2, "one burst of two messages");
    assert!(node.begin(&held[0]));
    let first = held[0].complete(Outcome::Ok);
    // The same completion twice in one call: the first applies, the second is refused.
    assert!(matches!(
        node.complete(&[first, first]),
        Err(LifecycleError::InvalidArgument(_))
    ));
    assert_eq!(node.stats().messages_completed, 1);
    // And again later, alone.
    assert!(matches!(
        node.complete(&[first]),
        Err(LifecycleError::InvalidArgument(_))
    ));
    assert!(node.begin(&held[1]));
    node.complete(&[held[1].complete(Outcome::Ok)]).unwrap();
    let s = node.stats();
    assert_eq!(
        (
            s.messages_admitted,
            s.messages_completed,
            s.messages_dropped
        ),
        (2, 2, 0)
    );
    let lane = node.lane_use_of(S, LaneKind::Application).unwrap();
    assert_eq!(
        (lane.items, lane.bytes),
        (0, 0),
        "each reservation returned once"
    );
    // The Spot's gate is free: the next message runs.
    node.send(S, *b"three").unwrap();
    assert_eq!(run_ready(&node), vec![Ran::Message(S, b"three".to_vec())]);
}

#[test]
fn a_tick_completed_twice_is_refused_and_the_next_tick_runs() {
    let w = World::new();
    let node = w.node(1);
    let spot = node.create_user_spot(S).unwrap();
    node.every(&spot, 1, Duration::from_millis(10), 5).unwrap();
    node.advance(Duration::from_millis(10)).unwrap();
    let held = take_ready(&node);
    assert_eq!(held.len(), 1);
    assert!(node.begin(&held[0]));
    let done = held[0].complete(Outcome::Ok);
    node.complete(&[done]).unwrap();
    assert!(matches!(
        node.complete(&[done]),
        Err(LifecycleError::InvalidArgument(_))
    ));
    let lane = node.lane_use_of(S, LaneKind::Application).unwrap();
    assert_eq!(lane.items, 0, "the reservation came back once");
    node.advance(Duration::from_millis(10)).unwrap();
    let next = take_ready(&node);
    assert_eq!(next.len(), 1, "the next tick is delivered");
    assert!(node.begin(&next[0]));
    node.complete(&[next[0].complete(Outcome::Ok)]).unwrap();
}
