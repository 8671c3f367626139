//! Several nodes' costs: activations/s, etcd requests per activation and send→handler
//! latency, with the etcd Location Store against the embedded one. Needs etcd at
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
    run("embedded", Arc::new(EmbeddedStore::new()), None, spots);
    let mut config = EtcdConfig::with_endpoints([endpoint]);
    config.prefix = format!("/spot-bench/{}/", std::process::id());
    let etcd = Arc::new(EtcdLocationStore::connect(config).expect("etcd reachable"));
    run("etcd", etcd.clone(), Some(etcd), spots);
}

fn run(
    store_name: &str,
    store: Arc<dyn LocationStore>,
    etcd: Option<Arc<EtcdLocationStore>>,
    spots: u64,
) {
    let requests = || etcd.as_ref().map_or(0, |e| e.requests());
    let node = Node::start(
        NodeConfig {
            node: NodeId(1),
            ..NodeConfig::default()
        },
        store,
        None,
    )
    .expect("node");
    // Activations: THREADS threads create `spots` Instance Spots (first message each).
    let before = requests();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let node = &node;
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
        "{{\"store\":\"{store_name}\",\"row\":\"activations\",\"spots\":{spots},\"threads\":{THREADS},\
         \"per_s\":{:.0},\"etcd_requests_per_activation\":{per_activation:.2}}}",
        spots as f64 / took.as_secs_f64()
    );

    // Send→handler: one message at a time to a Spot that exists, a delivery thread
    // running the handlers; the latency from `send` to the handler's start.
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Instant>();
    let driver = {
        let (node, stop) = (node.clone(), stop.clone());
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
                        let _ = tx.send(Instant::now());
                        done.push(rec.complete(Outcome::Ok));
                    } else {
                        done.push(rec.complete(Outcome::NotStarted));
                    }
                }
            }
            node.complete(&done).expect("complete");
        })
    };
    // Drain the first messages of the activations.
    while rx.recv_timeout(Duration::from_millis(200)).is_ok() {}
    let before = requests();
    let mut latencies = Vec::with_capacity(SENDS);
    for i in 0..SENDS {
        let sent = Instant::now();
        node.send(SpotId(i as u64 % spots), vec![1u8])
            .expect("send");
        let ran = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("handler ran");
        latencies.push(ran.saturating_duration_since(sent));
    }
    let send_requests = requests() - before;
    stop.store(true, Relaxed);
    driver.join().expect("driver");
    latencies.sort();
    let q = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{{\"store\":\"{store_name}\",\"row\":\"send_to_handler\",\"sends\":{SENDS},\
         \"p50_us\":{:.1},\"p99_us\":{:.1},\"etcd_requests_on_send_path\":{send_requests}}}",
        q(0.5).as_secs_f64() * 1e6,
        q(0.99).as_secs_f64() * 1e6
    );
    node.shutdown();
}
