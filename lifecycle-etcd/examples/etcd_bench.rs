//! Several nodes' costs: activations/s, etcd requests per activation and send→handler
//! latency, with the etcd Location Store against the embedded one, for one node and for
//! three nodes that reach each other over TCP (as three processes would). Needs etcd at
//! `SPOT_ETCD_ENDPOINT` (`make bench-cluster` starts one). One JSON line per row.
//!
//! `cargo run --release -p spot-lifecycle-etcd --example etcd_bench [-- --spots N]`

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use spot_lifecycle::{EmbeddedStore, LocationStore, Node, NodeConfig, NodeId, Outcome, SpotId};
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

const THREADS: u64 = 4;
const SENDS: usize = 5_000;

fn main() {
    let mut spots = 4_000u64;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--spots") {
        spots = args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .expect("--spots N");
    }
    let endpoint = std::env::var("SPOT_ETCD_ENDPOINT")
        .expect("SPOT_ETCD_ENDPOINT is not set: run `make bench-cluster`");
    let etcd = |run: &str| {
        let mut config = EtcdConfig::with_endpoints([endpoint.clone()]);
        config.prefix = format!("/spot-bench/{}/{run}/", std::process::id());
        Arc::new(EtcdLocationStore::connect(config).expect("etcd reachable"))
    };
    for nodes in [1u64, 3] {
        // Nodes of one store as separate processes would have them: no in-process
        // cluster; with 3 nodes they listen on loopback and reach each other over TCP.
        let embedded = Arc::new(EmbeddedStore::new());
        let stores: Vec<Arc<dyn LocationStore>> =
            (0..nodes).map(|_| embedded.clone() as _).collect();
        run("embedded", stores, Vec::new(), spots);
        let etcds: Vec<_> = (0..nodes).map(|_| etcd(&format!("n{nodes}"))).collect();
        let stores = etcds.iter().map(|e| e.clone() as _).collect();
        run("etcd", stores, etcds, spots);
    }
}

/// Runs every record of `node` until `stop`, telling `ran` when each handler starts.
fn deliver(
    node: Arc<Node>,
    stop: Arc<AtomicBool>,
    ran: mpsc::Sender<Instant>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut done = Vec::new();
        let mut batch = Vec::new();
        while !stop.load(Relaxed) {
            batch.clear();
            node.exchange(&done, &mut batch, 256, Some(Duration::from_millis(2)))
                .expect("exchange");
            done.clear();
            for rec in batch.drain(..) {
                if node.begin(&rec) {
                    let _ = ran.send(Instant::now());
                    done.push(rec.complete(Outcome::Ok));
                } else {
                    done.push(rec.complete(Outcome::NotStarted));
                }
            }
        }
        node.complete(&done).expect("complete");
    })
}

/// One node per store given (several: each listens on loopback).
fn run(
    store_name: &str,
    stores: Vec<Arc<dyn LocationStore>>,
    etcd: Vec<Arc<EtcdLocationStore>>,
    spots: u64,
) {
    let requests = || etcd.iter().map(|e| e.requests()).sum::<u64>();
    let several = stores.len() > 1;
    let nodes: Vec<Arc<Node>> = stores
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            let id = i as u64 + 1;
            Node::start(
                NodeConfig {
                    node: NodeId(id),
                    entry: SpotId(u64::MAX - id),
                    listen: several.then(|| "127.0.0.1:0".parse().unwrap()),
                    ..NodeConfig::default()
                },
                store,
                None,
            )
            .expect("node")
        })
        .collect();
    let n = nodes.len();
    // Activations: THREADS threads (on the nodes in turn) create `spots` Instance Spots
    // (first message each).
    let before = requests();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let node = &nodes[t as usize % n];
            s.spawn(move || {
                for i in (t..spots).step_by(THREADS as usize) {
                    node.send_or_create(SpotId(i), vec![0u8]).expect("create");
                }
            });
        }
    });
    let took = t0.elapsed();
    let per_activation = (requests() - before) as f64 / spots as f64;
    println!(
        "{{\"store\":\"{store_name}\",\"nodes\":{n},\"row\":\"activations\",\"spots\":{spots},\
         \"threads\":{THREADS},\"per_s\":{:.0},\"etcd_requests_per_activation\":{per_activation:.2}}}",
        spots as f64 / took.as_secs_f64()
    );

    // Send→handler: one message at a time from the first node to Spots the last node
    // owns (another process's node when there are several: one TCP round trip), a
    // delivery thread per node running the handlers; the latency from `send` to the
    // handler's start.
    let owner = nodes[n - 1].clone();
    let targets: Vec<SpotId> = (0..spots)
        .map(SpotId)
        .filter(|id| owner.spot_kind(*id).is_ok())
        .collect();
    assert!(!targets.is_empty(), "the last node owns some Spots");
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Instant>();
    let drivers: Vec<_> = nodes
        .iter()
        .map(|node| deliver(node.clone(), stop.clone(), tx.clone()))
        .collect();
    // Warm the routes: the first send to a Spot another node created reads its location
    // once (later ones are steady state: cached, invalidated by the watch). Then drain
    // the first messages of the activations and these.
    let cold = requests();
    for id in &targets {
        nodes[0].send(*id, vec![1u8]).expect("send");
    }
    let cold = requests() - cold;
    while rx.recv_timeout(Duration::from_millis(200)).is_ok() {}
    let before = requests();
    let mut latencies = Vec::with_capacity(SENDS);
    for i in 0..SENDS {
        let sent = Instant::now();
        nodes[0]
            .send(targets[i % targets.len()], vec![1u8])
            .expect("send");
        let ran = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("handler ran");
        latencies.push(ran.saturating_duration_since(sent));
    }
    let send_requests = requests() - before;
    stop.store(true, Relaxed);
    for d in drivers {
        d.join().expect("driver");
    }
    latencies.sort();
    let q = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{{\"store\":\"{store_name}\",\"nodes\":{n},\"row\":\"send_to_handler\",\"sends\":{SENDS},\
         \"p50_us\":{:.1},\"p99_us\":{:.1},\"etcd_requests_on_send_path\":{send_requests},\
         \"first_sends\":{},\"etcd_requests_on_first_sends\":{cold}}}",
        q(0.5).as_secs_f64() * 1e6,
        q(0.99).as_secs_f64() * 1e6,
        targets.len()
    );
    for node in nodes {
        node.shutdown();
    }
}
