//! Nodes reaching each other over TCP: nodes on one store that do not share a `Cluster`
//! (as nodes of different processes) forward messages and creations to the address each
//! registered with. The multi-process tests with etcd are in `lifecycle-etcd`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use spot_lifecycle::store::NodeAddress;
use spot_lifecycle::*;

/// Node `id` on the world's store, listening on a free loopback port, in no `Cluster`.
fn listening(w: &World, id: u64, cap: u64) -> Arc<Node> {
    let config = NodeConfig {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        active_cap: cap,
        ..w.config(id)
    };
    Node::start(config, w.store.clone(), None).expect("node")
}

#[test]
fn a_node_registers_the_address_it_listens_at() {
    let w = World::new();
    let a = listening(&w, 1, 100);
    let addr = a.address().expect("listening");
    assert_ne!(addr.port(), 0);
    assert_eq!(
        w.store.node_address(NodeId(1)),
        NodeAddress::Listening(addr)
    );
    let quiet = w.node(2);
    assert_eq!(quiet.address(), None);
    assert_eq!(w.store.node_address(NodeId(2)), NodeAddress::NotListening);
    assert_eq!(w.store.node_address(NodeId(9)), NodeAddress::Unknown);
}

#[test]
fn a_message_reaches_a_spot_owned_by_a_node_of_another_process() {
    let w = World::new();
    let (a, b) = (listening(&w, 1, 100), listening(&w, 2, 100));
    a.send_or_create(SpotId(10), b"created".to_vec()).unwrap();
    b.send(SpotId(10), b"hello".to_vec()).unwrap();
    // Over the 4 KiB of a one-segment frame.
    let big = vec![7u8; 100_000];
    b.send_or_create(SpotId(10), big.clone()).unwrap();
    let ran = run_ready(&a);
    assert_eq!(
        ran,
        vec![
            Ran::Message(SpotId(10), b"created".to_vec()),
            Ran::Message(SpotId(10), b"hello".to_vec()),
            Ran::Message(SpotId(10), big),
        ]
    );
    assert!(run_ready(&b).is_empty(), "nothing ran on the sender");
    assert_eq!(
        w.factory_runs() - 2,
        1,
        "created once (besides the entries)"
    );
}

#[test]
fn a_creation_placed_on_another_process_runs_there_with_its_first_message() {
    let w = World::new();
    let a = listening(&w, 1, 100);
    // B holds its Entry Spot only: placement picks A.
    let b = listening(&w, 2, 1);
    let spot = b.send_or_create(SpotId(20), b"first".to_vec()).unwrap();
    assert_eq!(
        spot.generation(),
        w.store
            .read(SpotId(20))
            .unwrap()
            .record
            .unwrap()
            .object_generation
    );
    assert_eq!(a.spot_kind(SpotId(20)).unwrap(), SpotKind::Instance);
    assert!(b.spot_kind(SpotId(20)).is_err());
    assert_eq!(
        run_ready(&a),
        vec![Ran::Message(SpotId(20), b"first".to_vec())]
    );
    // A User Spot placed there too.
    let u = b.create_user_spot(SpotId(21)).unwrap();
    assert_eq!(a.spot_kind(u.id()).unwrap(), SpotKind::User);
    // The wrong kind is refused by the owner, with the kinds named.
    match b.send_or_create(SpotId(21), vec![1]) {
        Err(LifecycleError::WrongKind {
            expected: SpotKind::Instance,
            actual: SpotKind::User,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn many_threads_reach_the_other_node_and_every_message_runs_once() {
    let w = World::new();
    let (a, b) = (listening(&w, 1, 10_000), listening(&w, 2, 10_000));
    for id in 0..50 {
        a.send_or_create(SpotId(id), vec![0]).unwrap();
    }
    run_ready(&a);
    let per_thread = 400u64;
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let b = b.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    let n = t * per_thread + i;
                    b.send(SpotId(n % 50), n.to_le_bytes().to_vec()).unwrap();
                    if i % 100 == 99 {
                        // Keep the lanes (1,024 items) from filling while nobody runs them.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
        }
        // A runs what arrives meanwhile.
        let mut seen = std::collections::HashSet::new();
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while seen.len() < (8 * per_thread) as usize {
            assert!(
                std::time::Instant::now() < until,
                "only {} arrived",
                seen.len()
            );
            for r in run_ready(&a) {
                let Ran::Message(_, p) = r else { continue };
                let n = u64::from_le_bytes(p.try_into().unwrap());
                assert!(seen.insert(n), "message {n} ran twice");
            }
        }
    });
}

#[test]
fn a_spot_that_moved_away_is_a_stale_route_and_a_shut_down_owner_is_not_found() {
    let w = World::new();
    let (a, b) = (listening(&w, 1, 100), listening(&w, 2, 100));
    a.send_or_create(SpotId(30), vec![0]).unwrap();
    b.send(SpotId(30), vec![1]).unwrap(); // B caches the route to A
    a.shutdown();
    // A released Spot 30 at shutdown: B's cached route is stale, the next send finds no
    // Spot, and nothing is created by an ordinary send.
    let mut errors = Vec::new();
    for _ in 0..2 {
        errors.push(b.send(SpotId(30), vec![2]).unwrap_err());
    }
    assert!(
        matches!(errors[0], LifecycleError::StaleRoute { .. })
            || matches!(errors[0], LifecycleError::NotFound(_)),
        "{:?}",
        errors[0]
    );
    assert!(
        matches!(errors[1], LifecycleError::NotFound(_)),
        "{:?}",
        errors[1]
    );
    // The instance intent re-creates it, here (A is gone).
    b.send_or_create(SpotId(30), vec![3]).unwrap();
    assert_eq!(b.spot_kind(SpotId(30)).unwrap(), SpotKind::Instance);
}

#[test]
fn an_owner_that_stops_answering_gives_unavailable_not_a_hang() {
    let w = World::new();
    // A "node" registered at an address where nothing answers requests: a listener that
    // accepts and never speaks.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    w.store.register_node(NodeId(9), 100, Some(addr)).unwrap();
    let config = NodeConfig {
        active_cap: 1,
        creation_wait: Duration::from_millis(100),
        ..w.config(2)
    };
    let b = Node::start(config, w.store.clone(), None).unwrap();
    // B is full: the creation is placed on node 9, whose greeting never comes.
    let started = std::time::Instant::now();
    let e = b.send_or_create(SpotId(40), vec![1]).unwrap_err();
    assert!(
        matches!(&e, LifecycleError::Unavailable { evidence, may_have_run: false, .. }
            if evidence.contains("timed out")),
        "{e:?}"
    );
    assert!(e.to_string().contains("did not run"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(
        w.store.read(SpotId(40)).unwrap().record,
        None,
        "nothing created"
    );
    drop(silent);
    // Nothing listens there any more: refused at once.
    let e = b.send_or_create(SpotId(41), vec![1]).unwrap_err();
    assert!(matches!(e, LifecycleError::Unavailable { .. }), "{e:?}");
}

#[test]
fn a_peer_that_speaks_garbage_is_cut_off_and_the_node_keeps_serving() {
    let w = World::new();
    let (a, b) = (listening(&w, 1, 100), listening(&w, 2, 100));
    a.send_or_create(SpotId(50), vec![0]).unwrap();
    let addr = a.address().unwrap();
    for garbage in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        &b"SPOTNODE\x09\x00"[..],
        &[b"SPOTNODE\x01\x00".as_slice(), &[255, 255, 255, 255]].concat(),
        &[b"SPOTNODE\x01\x00".as_slice(), &[3, 0, 0, 0, 9, 9, 9]].concat(),
    ] {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(garbage).unwrap();
        let mut rest = Vec::new();
        // The server closes the connection (after its greeting, for a good hello).
        let _ = c.read_to_end(&mut rest);
        assert!(rest.len() <= 18, "no answer to garbage: {rest:?}");
    }
    b.send(SpotId(50), b"still".to_vec()).unwrap();
    assert_eq!(
        run_ready(&a),
        vec![
            Ran::Message(SpotId(50), vec![0]),
            Ran::Message(SpotId(50), b"still".to_vec())
        ]
    );
}

#[test]
fn listening_on_an_address_in_use_is_a_readable_error() {
    let w = World::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = NodeConfig {
        listen: Some(taken.local_addr().unwrap()),
        ..w.config(1)
    };
    match Node::start(config, w.store.clone(), None) {
        Err(LifecycleError::InvalidArgument(text)) => {
            assert!(text.contains("cannot listen on"), "{text}")
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("started on an address in use"),
    }
    // The failed start registered nothing: the id can start elsewhere.
    let n = listening(&w, 1, 100);
    assert_ne!(n.address(), Some(taken.local_addr().unwrap()));
}

#[test]
fn a_listen_address_as_text_is_ip_and_port_or_nothing() {
    assert_eq!(NodeConfig::parse_listen("", "listen").unwrap(), None);
    assert_eq!(
        NodeConfig::parse_listen("127.0.0.1:0", "listen").unwrap(),
        Some("127.0.0.1:0".parse().unwrap())
    );
    assert_eq!(
        NodeConfig::parse_listen("[::1]:7000", "listen").unwrap(),
        Some("[::1]:7000".parse().unwrap())
    );
    for bad in [
        "localhost:0",
        "127.0.0.1",
        "127.0.0.1:70000",
        "not an address",
        " 127.0.0.1:0",
    ] {
        match NodeConfig::parse_listen(bad, "cfg->listen") {
            Err(LifecycleError::InvalidArgument(text)) => {
                assert!(text.contains("cfg->listen"), "{text}");
                assert!(text.contains(&format!("{bad:?}")), "{text}");
                assert!(text.contains("IP:PORT"), "{text}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}
