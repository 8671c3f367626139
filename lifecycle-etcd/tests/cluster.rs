//! The etcd Location Store against a real etcd (`make test-cluster` starts one and sets
//! `SPOT_ETCD_ENDPOINT`). The tests are `#[ignore]`d in a plain `cargo test`, which has no
//! etcd; `make test-cluster` runs them with `--ignored`. Node processes are the
//! `spot-cluster-node` binary of this crate, spawned several times.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spot_lifecycle::store::StoreView;
use spot_lifecycle::{
    LifecycleError, LocationState, LocationStore, Node, NodeConfig, NodeId, NodeStatus, SpotId,
    SpotKind,
};
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

fn endpoint() -> String {
    std::env::var("SPOT_ETCD_ENDPOINT")
        .expect("SPOT_ETCD_ENDPOINT is not set: run these tests with `make test-cluster`")
}

/// A key prefix of its own for each test (and each run).
fn prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("/spot-test/{test}-{nanos}/")
}

fn store(prefix: &str, ttl_s: u64) -> Arc<EtcdLocationStore> {
    let mut c = EtcdConfig::with_endpoints([endpoint()]);
    c.prefix = prefix.to_string();
    c.lease_ttl = Duration::from_secs(ttl_s);
    Arc::new(EtcdLocationStore::connect(c).expect("etcd reachable"))
}

fn node_process(args: &[&str], ttl_s: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_spot-cluster-node"))
        .args(args)
        .env("SPOT_LEASE_TTL", ttl_s.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn spot-cluster-node")
}

/// Kills a child whatever happens to the test.
struct Reap(Child);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn read_line(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> String {
    lines
        .next()
        .expect("the node process ended early")
        .expect("read")
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} failed");
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn factory_runs_once_cluster_wide_three_processes() {
    let p = prefix("race");
    let ids = 10_000u64;
    let dir = std::env::temp_dir().join(format!("spot-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    let go_s = go.to_str().unwrap().to_string();
    let end = dir.join("go.end");
    let ep = endpoint();
    let mut children: Vec<Reap> = (1..=3)
        .map(|n| {
            let n = n.to_string();
            let ids = ids.to_string();
            Reap(node_process(&["race", &ep, &p, &n, &ids, "8", &go_s], 10))
        })
        .collect();
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|c| BufReader::new(c.0.stdout.take().unwrap()).lines())
        .collect();
    for lines in &mut outputs {
        assert_eq!(read_line(lines), "ready");
    }
    let started = Instant::now();
    std::fs::write(&go, b"go").unwrap();
    let mut created: HashMap<u64, usize> = HashMap::new();
    let mut totals = HashMap::<String, u64>::new();
    for lines in &mut outputs {
        loop {
            let line = read_line(lines);
            if line == "done" {
                break;
            }
            let (k, v) = line.split_once(' ').unwrap();
            let v: u64 = v.parse().unwrap();
            if k == "created" {
                if v < ids {
                    *created.entry(v).or_default() += 1;
                }
            } else {
                *totals.entry(k.to_string()).or_default() += v;
            }
        }
    }
    let took = started.elapsed();
    // Every process has finished sending: each waits for its admitted messages to run,
    // then lists them.
    std::fs::write(&end, b"end").unwrap();
    let mut ran: HashMap<u64, usize> = HashMap::new();
    let mut dropped = 0u64;
    for lines in &mut outputs {
        loop {
            let line = read_line(lines);
            if line == "end" {
                break;
            }
            let (k, v) = line.split_once(' ').unwrap();
            let v: u64 = v.parse().unwrap();
            match k {
                "ran" => *ran.entry(v).or_default() += 1,
                "dropped" => dropped += v,
                _ => panic!("unexpected line {line:?}"),
            }
        }
    }
    for c in &mut children {
        assert!(c.0.wait().unwrap().success(), "a node process failed");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let twice: Vec<_> = created.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "factories that ran more than once: {twice:?}"
    );
    assert_eq!(
        created.len() as u64,
        ids,
        "every id was created exactly once"
    );
    let calls = 3 * 8 * ids;
    assert_eq!(
        (totals["ok"], totals["stale"], totals["other"]),
        (calls, 0, 0),
        "every caller reached its Spot (ok, stale, other)"
    );
    let ran_twice = ran.values().filter(|n| **n > 1).count();
    assert_eq!(ran_twice, 0, "messages that ran more than once");
    assert_eq!(dropped, 0, "admitted messages that never ran");
    assert_eq!(
        ran.len() as u64,
        calls,
        "every message ran, on its Spot's node"
    );
    eprintln!(
        "factory race: 3 processes x 8 threads x {ids} ids in {took:.2?}, every message \
         delivered once; {} etcd requests in all ({:.2} per send_or_create)",
        totals["requests"],
        totals["requests"] as f64 / calls as f64
    );
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn reservation_race_between_stores_has_one_winner_per_id() {
    let p = prefix("reserve");
    let stores: Vec<_> = (0..3).map(|_| store(&p, 10)).collect();
    for (i, s) in stores.iter().enumerate() {
        s.register_node(NodeId(i as u64 + 1), 1_000, None).unwrap();
    }
    let wins = AtomicU64::new(0);
    let per_id: Vec<AtomicU64> = (0..200).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|sc| {
        for (i, s) in stores.iter().enumerate() {
            for _ in 0..3 {
                let (s, wins, per_id) = (s.clone(), &wins, &per_id);
                sc.spawn(move || {
                    for id in 0..200u64 {
                        if let Some(r) = s
                            .reserve(SpotId(id), SpotKind::Instance, NodeId(i as u64 + 1))
                            .unwrap()
                        {
                            assert_eq!(r.authority.node, NodeId(i as u64 + 1));
                            wins.fetch_add(1, Relaxed);
                            per_id[id as usize].fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        }
    });
    assert_eq!(wins.load(Relaxed), 200);
    assert!(per_id.iter().all(|n| n.load(Relaxed) == 1));
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn commit_is_fenced_release_frees_the_id_and_generations_grow() {
    let p = prefix("fence");
    let (a, b) = (store(&p, 10), store(&p, 10));
    a.register_node(NodeId(1), 10, None).unwrap();
    b.register_node(NodeId(2), 10, None).unwrap();
    let id = SpotId(7);
    let r = a.reserve(id, SpotKind::User, NodeId(1)).unwrap().unwrap();
    assert!(b.reserve(id, SpotKind::User, NodeId(2)).unwrap().is_none());
    let view = b.read(id).unwrap();
    assert_eq!(view.record.unwrap().state, LocationState::Creating);
    // A release of another authority is refused.
    let mut other = r.authority;
    other.epoch += 1;
    assert!(a.release(id, other).is_err());
    let rec = a.commit_ready(&r).unwrap();
    assert_eq!(rec.state, LocationState::Ready);
    // A second commit of the same reservation is fenced off (the record moved on).
    assert!(a.commit_ready(&r).is_err());
    assert_eq!(
        b.read(id).unwrap().record.unwrap().state,
        LocationState::Ready
    );
    a.release(id, r.authority).unwrap();
    wait_for(
        "the release to reach the other store",
        Duration::from_secs(5),
        || b.read(id).unwrap().record.is_none(),
    );
    let again = b.reserve(id, SpotKind::User, NodeId(2)).unwrap().unwrap();
    assert!(again.generation > r.generation);
    // The old reservation can no longer commit over the new one.
    assert!(a.commit_ready(&r).is_err());
    b.abort(&again).unwrap();
    assert!(a.read(id).unwrap().record.is_none());
    // A node id that is live already is refused, also from another process's store.
    assert!(b.register_node(NodeId(1), 10, None).is_err());
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn steady_state_reads_make_no_etcd_request_and_the_watch_invalidates() {
    let p = prefix("cache");
    let (a, b) = (store(&p, 10), store(&p, 10));
    a.register_node(NodeId(1), 10, None).unwrap();
    b.register_node(NodeId(2), 10, None).unwrap();
    let id = SpotId(1);
    let r = a
        .reserve(id, SpotKind::Instance, NodeId(1))
        .unwrap()
        .unwrap();
    a.commit_ready(&r).unwrap();
    let first = b.read(id).unwrap();
    assert_eq!(first.owner_status, Some(NodeStatus::Alive));
    let before = b.requests();
    for _ in 0..10_000 {
        let v: StoreView = b.read(id).unwrap();
        assert_eq!(v.record.unwrap().authority, r.authority);
    }
    assert_eq!(
        b.requests() - before,
        0,
        "cached routes make no etcd request"
    );
    a.release(id, r.authority).unwrap();
    wait_for(
        "the watch to drop the route",
        Duration::from_secs(5),
        || b.read(id).unwrap().record.is_none(),
    );
    // A node's activation costs two requests (the reservation txn, which would have read
    // an existing record in its "else" branch, and the Ready txn); its send path to a Spot
    // it owns makes none.
    let ns = store(&p, 10);
    let node = Node::start(
        NodeConfig {
            node: NodeId(3),
            entry: SpotId(u64::MAX - 3),
            ..NodeConfig::default()
        },
        ns.clone() as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    let before = ns.requests();
    for i in 100..150 {
        node.send_or_create(SpotId(i), vec![0u8]).unwrap();
    }
    assert_eq!(
        ns.requests() - before,
        2 * 50,
        "2 etcd requests per activation"
    );
    let before = ns.requests();
    for i in 0..5_000 {
        node.send(SpotId(100 + i % 50), vec![1u8]).unwrap();
        node.send_or_create(SpotId(100 + i % 50), vec![1u8])
            .unwrap();
    }
    assert_eq!(
        ns.requests() - before,
        0,
        "the steady-state send path makes no request"
    );
    node.send_or_create(SpotId(2), vec![0u8]).unwrap();
    let c = store(&p, 10);
    let before = c.requests();
    let r = c.read(SpotId(2)).unwrap();
    assert_eq!(r.record.unwrap().authority.node, NodeId(3));
    assert_eq!(c.requests() - before, 1, "one read, then cached");
    for _ in 0..1_000 {
        c.read(SpotId(2)).unwrap();
    }
    assert_eq!(c.requests() - before, 1);
    node.shutdown();
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn placement_picks_a_live_node_below_its_cap() {
    let p = prefix("place");
    let (a, b) = (store(&p, 10), store(&p, 10));
    a.register_node(NodeId(1), 2, None).unwrap();
    let b_term = b.register_node(NodeId(2), 5, None).unwrap();
    wait_for("both nodes known to both", Duration::from_secs(5), || {
        a.node_status(NodeId(2)) == NodeStatus::Alive
            && b.node_status(NodeId(1)) == NodeStatus::Alive
    });
    assert_eq!(a.place(NodeId(1)), Some(NodeId(1)));
    a.set_active(NodeId(1), 2);
    assert_eq!(
        a.place(NodeId(1)),
        Some(NodeId(2)),
        "a full node is not chosen"
    );
    // The count reaches the other process through etcd (written in the background).
    wait_for(
        "node 1's count to reach store b",
        Duration::from_secs(5),
        || b.place(NodeId(1)) == Some(NodeId(2)),
    );
    b.set_active(NodeId(2), 5);
    assert_eq!(b.place(NodeId(2)), None, "every node full");
    // A node that leaves is never chosen again.
    a.set_active(NodeId(1), 0);
    b.remove_node(NodeId(2), b_term.number());
    wait_for("node 2 gone for a", Duration::from_secs(5), || {
        a.node_status(NodeId(2)) == NodeStatus::Gone
    });
    assert_eq!(a.place(NodeId(2)), Some(NodeId(1)));
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn killed_node_spots_are_unavailable_until_its_lease_ends_then_recreated() {
    let p = prefix("kill");
    let ep = endpoint();
    let mut holder = Reap(node_process(&["hold", &ep, &p, "1", "0", "20"], 4));
    let mut lines = BufReader::new(holder.0.stdout.take().unwrap()).lines();
    assert_eq!(read_line(&mut lines), "ready");
    let s = store(&p, 10);
    assert_eq!(
        s.read(SpotId(5)).unwrap().owner_status,
        Some(NodeStatus::Alive)
    );
    let killed = Instant::now();
    signal(&holder.0, "-KILL");
    let _ = holder.0.wait();
    // The record stays while the lease runs; once keep-alives are missed the owner is
    // Down (Unavailable, no creation); once the lease is over the id is Missing.
    let ran = Arc::new(AtomicU64::new(0));
    let counted = ran.clone();
    let node = Node::start(
        NodeConfig {
            node: NodeId(2),
            entry: SpotId(u64::MAX - 2),
            factory: Some(Arc::new(move |_, _| {
                counted.fetch_add(1, Relaxed);
                Ok(())
            })),
            ..NodeConfig::default()
        },
        store(&p, 10) as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    let entry_runs = ran.load(Relaxed);
    let mut saw_unavailable = false;
    let mut id = 0u64;
    loop {
        assert!(
            killed.elapsed() < Duration::from_secs(15),
            "the lease never ended"
        );
        match node.send_or_create(SpotId(id % 20), vec![1u8]) {
            Err(LifecycleError::Unavailable { .. }) => saw_unavailable = true,
            Err(LifecycleError::StaleRoute { .. }) => {}
            Ok(_) => break,
            Err(e) => panic!("unexpected: {e}"),
        }
        id += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone_after = killed.elapsed();
    assert!(
        saw_unavailable,
        "the dead owner's Spots were Unavailable first"
    );
    assert!(
        gone_after >= Duration::from_secs(2),
        "not before the lease could end"
    );
    for i in 0..20 {
        node.send_or_create(SpotId(i), vec![1u8]).unwrap();
    }
    assert_eq!(
        ran.load(Relaxed) - entry_runs,
        20,
        "each re-created once, here"
    );
    eprintln!("kill -9: re-creatable {gone_after:.2?} after the kill (lease TTL 4 s)");
    node.shutdown();
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn a_killed_node_runs_no_message_twice_and_every_send_to_it_ends() {
    let p = prefix("kill-msg");
    let ep = endpoint();
    let spots = 20u64;
    let mut holder = Reap(node_process(
        &["hold", &ep, &p, "1", "0", &spots.to_string()],
        4,
    ));
    let mut lines = BufReader::new(holder.0.stdout.take().unwrap()).lines();
    assert_eq!(read_line(&mut lines), "ready");
    // What ran on the node that is killed, as it printed it.
    let ran_there = std::thread::spawn(move || {
        let mut ran = Vec::new();
        for line in lines.map_while(|l| l.ok()) {
            if let Some(v) = line.strip_prefix("ran ") {
                ran.push(v.parse::<u64>().unwrap());
            }
        }
        ran
    });
    // This process's node sends (over TCP to the holder while it lives) and runs what
    // is re-created here after the holder's lease ended.
    let factory_runs = Arc::new(AtomicU64::new(0));
    let counted = factory_runs.clone();
    let node = Node::start(
        NodeConfig {
            node: NodeId(2),
            entry: SpotId(u64::MAX - 2),
            listen: Some("127.0.0.1:0".parse().unwrap()),
            factory: Some(Arc::new(move |_, _| {
                counted.fetch_add(1, Relaxed);
                Ok(())
            })),
            ..NodeConfig::default()
        },
        store(&p, 10) as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    let entry_runs = factory_runs.load(Relaxed);
    let ran_here = Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let stop_delivery = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let delivery = {
        let (node, ran, stop) = (node.clone(), ran_here.clone(), stop_delivery.clone());
        std::thread::spawn(move || {
            let (mut done, mut batch) = (Vec::new(), Vec::new());
            while !stop.load(Relaxed) {
                batch.clear();
                node.exchange(&done, &mut batch, 256, Some(Duration::from_millis(5)))
                    .unwrap();
                done.clear();
                for rec in batch.drain(..) {
                    assert!(node.begin(&rec));
                    if let spot_lifecycle::SpotRecord::Message(m) = &rec {
                        let p = <[u8; 8]>::try_from(m.payload()).unwrap();
                        ran.lock().unwrap().push(u64::from_le_bytes(p));
                    }
                    done.push(rec.complete(spot_lifecycle::Outcome::Ok));
                }
            }
        })
    };
    // Phase 0: the holder lives; 1: killed; 2: every Spot re-created here.
    let phase = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    // (message, phase when sent, result)
    type Sent = Vec<(u64, u64, Result<(), String>)>;
    let sent: Arc<std::sync::Mutex<Sent>> = Arc::default();
    let slowest = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..4)
        .map(|_| {
            let (node, phase, next, sent, slowest) = (
                node.clone(),
                phase.clone(),
                next.clone(),
                sent.clone(),
                slowest.clone(),
            );
            std::thread::spawn(move || loop {
                let ph = phase.load(Relaxed);
                if ph == 3 {
                    return;
                }
                let n = next.fetch_add(1, Relaxed);
                let t = Instant::now();
                let r = node.send_or_create(SpotId(n % spots), n.to_le_bytes().to_vec());
                slowest.fetch_max(t.elapsed().as_millis() as u64, Relaxed);
                let r = r.map(|_| ()).map_err(|e| match e {
                    LifecycleError::Unavailable { .. } => "unavailable".to_string(),
                    LifecycleError::StaleRoute { .. } => "stale".to_string(),
                    e => e.to_string(),
                });
                sent.lock().unwrap().push((n, ph, r));
                std::thread::sleep(Duration::from_millis(1));
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    phase.store(1, Relaxed);
    let killed = Instant::now();
    signal(&holder.0, "-KILL");
    let _ = holder.0.wait();
    // Until the holder's lease ends its Spots are Unavailable; then the next intent
    // re-creates each here.
    wait_for(
        "every Spot re-created here after the lease",
        Duration::from_secs(20),
        || (0..spots).all(|i| node.spot_kind(SpotId(i)).is_ok()),
    );
    let recreated_after = killed.elapsed();
    phase.store(2, Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    phase.store(3, Relaxed);
    for s in senders {
        s.join().unwrap();
    }
    wait_for(
        "every message admitted here ran",
        Duration::from_secs(10),
        || {
            let s = node.stats();
            s.messages_admitted == s.messages_completed + s.messages_dropped
        },
    );
    stop_delivery.store(true, Relaxed);
    delivery.join().unwrap();
    drop(holder); // the reader thread sees the end of the holder's output
    let ran_there = ran_there.join().unwrap();
    let ran_here = ran_here.lock().unwrap().clone();
    let sent = sent.lock().unwrap().clone();

    let mut ran: HashMap<u64, usize> = HashMap::new();
    for n in ran_there.iter().chain(&ran_here) {
        *ran.entry(*n).or_default() += 1;
    }
    let twice: Vec<_> = ran.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "messages that ran twice: {twice:?}");
    // Nothing ran that was not admitted, and every send ended with a terminal result.
    let ok: std::collections::HashSet<u64> = sent
        .iter()
        .filter(|(_, _, r)| r.is_ok())
        .map(|(n, _, _)| *n)
        .collect();
    assert!(ran.keys().all(|n| ok.contains(n)), "a refused message ran");
    let unexpected: Vec<_> = sent
        .iter()
        .filter(|(_, _, r)| matches!(r, Err(e) if e != "unavailable" && e != "stale"))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    let slowest = Duration::from_millis(slowest.load(Relaxed));
    assert!(slowest < Duration::from_secs(10), "a send took {slowest:?}");
    // Before the kill every send reached the holder; after the re-creation every send
    // ran here.
    let before: Vec<_> = sent.iter().filter(|(_, ph, _)| *ph == 0).collect();
    assert!(!before.is_empty() && before.iter().all(|(_, _, r)| r.is_ok()));
    let after: Vec<_> = sent.iter().filter(|(_, ph, _)| *ph == 2).collect();
    assert!(!after.is_empty());
    for (n, _, r) in &after {
        assert!(r.is_ok(), "message {n} after the re-creation: {r:?}");
        assert!(
            ran_here.contains(n),
            "message {n} after the re-creation did not run here"
        );
    }
    let refused = sent
        .iter()
        .filter(|(_, ph, r)| *ph == 1 && r.is_err())
        .count();
    assert!(refused > 0, "the dead owner's Spots were refused meanwhile");
    assert_eq!(
        factory_runs.load(Relaxed) - entry_runs,
        spots,
        "each Spot re-created once, after the lease"
    );
    let lost = ok.len() - ran.len();
    eprintln!(
        "kill -9 with messages in flight: {} sends, {} ran on the killed node, {} here, \
         {lost} admitted there and lost with the process, none twice; {refused} refused \
         while the owner was dead; re-created {recreated_after:.2?} after the kill; the \
         slowest send took {slowest:?}",
        sent.len(),
        ran_there.len(),
        ran_here.len()
    );
    node.shutdown();
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn a_node_stopped_past_its_lease_cannot_commit_after_resume() {
    let p = prefix("sigstop");
    let ep = endpoint();
    let mut child = Reap(node_process(&["fence", &ep, &p, "1", "9"], 2));
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert_eq!(read_line(&mut lines), "reserved");
    signal(&child.0, "-STOP");
    let s = store(&p, 10);
    s.register_node(NodeId(2), 10, None).unwrap();
    wait_for(
        "the stopped node's lease to end",
        Duration::from_secs(10),
        || s.read(SpotId(9)).unwrap().record.is_none(),
    );
    let mine = s
        .reserve(SpotId(9), SpotKind::Instance, NodeId(2))
        .unwrap()
        .unwrap();
    signal(&child.0, "-CONT");
    writeln!(child.0.stdin.as_mut().unwrap(), "go").unwrap();
    assert_eq!(read_line(&mut lines), "lease_valid false");
    assert_eq!(read_line(&mut lines), "commit refused");
    s.commit_ready(&mine).unwrap();
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn a_node_stopped_past_its_lease_starts_nothing_of_its_old_authority_after_resume() {
    let p = prefix("sigstop-node");
    let ep = endpoint();
    let mut child = Reap(node_process(&["ticks", &ep, &p, "1", "5"], 2));
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert_eq!(read_line(&mut lines), "ready");
    // A node of this process routes messages to that Spot over TCP (and caches the
    // route).
    let s = store(&p, 10);
    let sender = Node::start(
        NodeConfig {
            node: NodeId(2),
            entry: SpotId(u64::MAX - 2),
            ..NodeConfig::default()
        },
        s.clone() as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    sender.send(SpotId(5), vec![1u8]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child.0, "-STOP");
    wait_for(
        "the stopped node's lease to end",
        Duration::from_secs(10),
        || s.read(SpotId(5)).unwrap().record.is_none(),
    );
    let resumed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    signal(&child.0, "-CONT");
    // The message routed to it after the resume (by the cached route) ends with
    // StaleRoute: the store no longer lists that node (or, had its registration been
    // seen still, the node itself refuses: its lease is over). It does not start there
    // (`last_start` below).
    match sender.send(SpotId(5), vec![2u8]) {
        Err(LifecycleError::StaleRoute { .. }) => {}
        other => panic!("a message routed to the resumed node: {other:?}"),
    }
    // The route is dropped: the next send asks the store, which has no Spot 5 any more.
    assert!(matches!(
        sender.send(SpotId(5), vec![3u8]),
        Err(LifecycleError::NotFound(_))
    ));
    sender.shutdown();
    writeln!(child.0.stdin.as_mut().unwrap(), "go").unwrap();
    let fact = |lines: &mut _, key: &str| -> String {
        let line = read_line(lines);
        line.strip_prefix(&format!("{key} "))
            .unwrap_or_else(|| panic!("expected {key}, got {line:?}"))
            .to_string()
    };
    // Refused while its old term is known over, or not found once it has given the Spot up
    // and taken a new term: never admitted.
    let send = fact(&mut lines, "send");
    assert!(
        send == "stale_lease" || send == "not_found",
        "a message to it after the resume: {send}"
    );
    let starts: u64 = fact(&mut lines, "starts").parse().unwrap();
    let last: u128 = fact(&mut lines, "last_start").parse().unwrap();
    assert!(starts > 0, "its timer ran while its lease ran");
    assert!(
        last < resumed,
        "a tick of the old authority started {} ms after the resume",
        (last - resumed) / 1_000_000
    );
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn a_lost_lease_ends_the_authority() {
    let p = prefix("lease");
    let a = store(&p, 2);
    a.register_node(NodeId(1), 10, None).unwrap();
    let r = a
        .reserve(SpotId(3), SpotKind::Instance, NodeId(1))
        .unwrap()
        .unwrap();
    a.halt_keep_alive();
    wait_for("the lease to be known lost", Duration::from_secs(5), || {
        !a.lease_valid()
    });
    assert!(a.commit_ready(&r).is_err());
    // Nothing ran: the caller may try again once the node has a new term.
    assert!(matches!(
        a.reserve(SpotId(4), SpotKind::Instance, NodeId(1)),
        Err(LifecycleError::Unavailable {
            may_have_run: false,
            ..
        })
    ));
    let b = store(&p, 10);
    wait_for("etcd to drop the record", Duration::from_secs(10), || {
        b.read(SpotId(3)).unwrap().record.is_none()
    });
}

#[test]
fn an_unreachable_store_or_a_bad_configuration_is_a_readable_error() {
    let mut c = EtcdConfig::with_endpoints(["http://127.0.0.1:1"]);
    c.connect_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let e = EtcdLocationStore::connect(c)
        .err()
        .expect("nothing listens there");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(e.to_string().contains("cannot be reached"), "{e}");
    for bad in [
        EtcdConfig::with_endpoints(Vec::<String>::new()),
        EtcdConfig::with_endpoints(["not an endpoint"]),
        EtcdConfig {
            lease_ttl: Duration::from_millis(1500),
            ..EtcdConfig::default()
        },
        EtcdConfig {
            prefix: "no-slash".into(),
            ..EtcdConfig::default()
        },
    ] {
        let e = EtcdLocationStore::connect(bad).err().expect("refused");
        assert!(matches!(e, LifecycleError::InvalidArgument(_)), "{e}");
    }
}

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn the_cluster_keeps_creating_and_delivering_when_one_etcd_member_of_three_dies() {
    let endpoints: Vec<String> = std::env::var("SPOT_ETCD_CLUSTER")
        .expect("SPOT_ETCD_CLUSTER is not set: run these tests with `make test-cluster`")
        .split(',')
        .map(String::from)
        .collect();
    let pids: Vec<String> = std::env::var("SPOT_ETCD_MEMBER_PIDS")
        .expect("SPOT_ETCD_MEMBER_PIDS is not set")
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!(endpoints.len(), 3);
    let p = prefix("member");
    let connect = || {
        let mut c = EtcdConfig::with_endpoints(endpoints.clone());
        c.prefix = p.clone();
        Arc::new(EtcdLocationStore::connect(c).expect("the 3-member etcd is reachable"))
    };
    let factory_runs = Arc::new(AtomicU64::new(0));
    let counted = factory_runs.clone();
    let node = Node::start(
        NodeConfig {
            node: NodeId(1),
            entry: SpotId(u64::MAX - 1),
            factory: Some(Arc::new(move |_, _| {
                counted.fetch_add(1, Relaxed);
                Ok(())
            })),
            ..NodeConfig::default()
        },
        connect() as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    let other = connect();
    let base = factory_runs.load(Relaxed);
    for i in 0..100 {
        node.send_or_create(SpotId(i), vec![0u8]).unwrap();
    }
    // One member dies (the first, which may be the leader).
    let killed = Command::new("kill")
        .args(["-9", &pids[0]])
        .status()
        .unwrap()
        .success();
    assert!(killed, "could not kill etcd member {}", pids[0]);
    let started = Instant::now();
    for i in 100..200 {
        // A request in flight while the cluster elects a leader may fail (Unavailable,
        // never a creation); the next one goes through.
        wait_for(
            "a creation after the member failure",
            Duration::from_secs(30),
            || match node.send_or_create(SpotId(i), vec![0u8]) {
                Ok(_) => true,
                Err(LifecycleError::Unavailable { .. }) | Err(LifecycleError::Store(_)) => false,
                Err(e) => panic!("unexpected: {e}"),
            },
        );
    }
    eprintln!(
        "member failure: 100 creations on the 2 remaining members in {:.2?}",
        started.elapsed()
    );
    for i in 0..200 {
        node.send(SpotId(i), vec![1u8]).unwrap();
    }
    assert_eq!(
        factory_runs.load(Relaxed) - base,
        200,
        "each id created once"
    );
    // Another process's store still sees the records, and the watch still invalidates.
    let v = other.read(SpotId(150)).unwrap();
    assert_eq!(v.record.unwrap().authority.node, NodeId(1));
    assert_eq!(node.stats().messages_admitted, 400);
    node.shutdown();
    wait_for(
        "releases seen through the watch",
        Duration::from_secs(10),
        || other.read(SpotId(150)).unwrap().record.is_none(),
    );
}

/// A free loopback port (bound, then released for the etcd this test starts).
// An etcd outage longer than the lease: tests/failover.rs.

#[test]
#[ignore = "needs etcd: make test-cluster"]
fn a_drained_node_hands_its_spots_over_through_etcd() {
    let p = prefix("drain");
    let watcher = store(&p, 10);
    let held_at_close = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (seen, w) = (held_at_close.clone(), watcher.clone());
    let a = Node::start(
        NodeConfig {
            node: NodeId(1),
            entry: SpotId(u64::MAX - 1),
            on_close: Some(Arc::new(move |id, _, _| {
                // Read straight from etcd (another process's view) during the callback.
                seen.lock().push((id, w.read(id).unwrap().record.is_some()));
            })),
            ..NodeConfig::default()
        },
        store(&p, 10) as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    a.add_entry_actor(77);
    a.create_user_spot(SpotId(20)).unwrap();
    a.send_or_create(SpotId(30), vec![0u8]).unwrap();
    let mut targets = a.drain();
    targets.sort_by_key(|t| format!("{t:?}"));
    assert_eq!(
        targets,
        vec![
            spot_lifecycle::RelocationTarget::EntryActor(77),
            spot_lifecycle::RelocationTarget::Spot(SpotId(20), SpotKind::User),
            spot_lifecycle::RelocationTarget::Spot(SpotId(30), SpotKind::Instance),
        ]
    );
    let held = held_at_close.lock().clone();
    for id in [SpotId(20), SpotId(30)] {
        assert!(
            held.contains(&(id, true)),
            "{id} still located at its callback: {held:?}"
        );
        wait_for("the release to reach etcd", Duration::from_secs(5), || {
            watcher.read(id).unwrap().record.is_none()
        });
    }
    let runs = Arc::new(AtomicU64::new(0));
    let counted = runs.clone();
    let b = Node::start(
        NodeConfig {
            node: NodeId(2),
            entry: SpotId(u64::MAX - 2),
            factory: Some(Arc::new(move |_, _| {
                counted.fetch_add(1, Relaxed);
                Ok(())
            })),
            ..NodeConfig::default()
        },
        store(&p, 10) as Arc<dyn LocationStore>,
        None,
    )
    .unwrap();
    let before = runs.load(Relaxed);
    b.create_user_spot(SpotId(20)).unwrap();
    b.send_or_create(SpotId(30), vec![1u8]).unwrap();
    assert_eq!(
        runs.load(Relaxed) - before,
        2,
        "re-created on the next explicit intent"
    );
    assert_eq!(
        watcher
            .read(SpotId(30))
            .unwrap()
            .record
            .unwrap()
            .authority
            .node,
        NodeId(2)
    );
    b.shutdown();
}
