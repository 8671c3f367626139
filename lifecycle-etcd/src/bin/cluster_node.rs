//! One node process of the cluster tests (`tests/cluster.rs` spawns it several times).
//!
//! `spot-cluster-node MODE ENDPOINT PREFIX NODE [ARGS]`, one result line per fact on
//! stdout (`key value`), errors on stderr with exit code 2:
//! Every node listens on a free loopback port, so that the others forward messages and
//! creations to it, and runs a delivery loop that handles the messages of its Spots.
//! - `race IDS THREADS GO_FILE`: waits for GO_FILE, then THREADS threads call
//!   `send_or_create` (having printed `ready` once its node runs) on ids 0..IDS (each from its own offset) with a payload unique in
//!   the cluster (node << 48 | thread << 32 | i); prints `created ID` for each id whose
//!   factory ran here, `ok N`, `stale N`, `other N`, `requests N`, `done`; then waits for
//!   `GO_FILE.end` (every process has finished sending), waits until every message
//!   admitted here has run, prints `ran PAYLOAD` for each message handled here,
//!   `dropped N` and `end`, and shuts its node down.
//! - `hold FIRST COUNT`: creates Instance Spots FIRST..FIRST+COUNT here, prints `ready`,
//!   then handles messages (printing `ran PAYLOAD` for each 8-byte payload as it runs)
//!   until it is killed or stopped by the test.
//! - `ticks SPOT`: creates SPOT here with a 20 ms timer and runs a delivery loop that
//!   records when each piece of work starts; prints `ready`, reads a line from stdin (the
//!   test stops the process past its lease meanwhile), waits 300 ms, then prints
//!   `send stale_lease|not_found|<error>|ok`, `starts N` and `last_start UNIX_NANOS`.
//! - `fence SPOT`: reserves SPOT, prints `reserved`, reads a line from stdin (the test
//!   stops the process past its lease meanwhile), then prints `lease_valid BOOL` and
//!   `commit ok|refused`.
//! - `serve`: a node that logs what it does, one line per event with the wall clock in
//!   nanoseconds since the Unix epoch (the one clock every process of the test shares):
//!   `factory T SPOT`, `close T SPOT REASON`, `ran T SPOT SEQ` (a message, its 8-byte
//!   payload), `admitted T N` (the node's admitted count, when it changed), `term T N`
//!   (terms renewed); `ready ADDRESS` once it serves. Reads commands from stdin:
//!   `create FIRST COUNT` (Instance Spots created here; `created`), `shutdown` (the
//!   node's shutdown, then `shutdown_done T`). At EOF it exits at once.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spot_lifecycle::{LifecycleError, LocationStore, Node, NodeConfig, NodeId, SpotId, SpotKind};
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

fn main() {
    if let Err(e) = run() {
        eprintln!("spot-cluster-node: {e}");
        std::process::exit(2);
    }
}

/// One result line on stdout, flushed at once (the test reads it while this runs).
fn say(line: String) {
    let out = std::io::stdout();
    let mut o = out.lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, name: &str) -> Result<T, String> {
    args.get(i)
        .ok_or(format!("missing argument {name}"))?
        .parse()
        .map_err(|_| format!("argument {name} is not valid: {:?}", args[i]))
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let mode: String = arg(&args, 1, "MODE")?;
    let mut config = EtcdConfig::with_endpoints([arg::<String>(&args, 2, "ENDPOINT")?]);
    config.prefix = arg(&args, 3, "PREFIX")?;
    config.lease_ttl = Duration::from_secs(
        std::env::var("SPOT_LEASE_TTL")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    );
    let node = NodeId(arg(&args, 4, "NODE")?);
    let store = Arc::new(EtcdLocationStore::connect(config).map_err(|e| e.to_string())?);
    match mode.as_str() {
        "race" => {
            let ids: u64 = arg(&args, 5, "IDS")?;
            let threads: u64 = arg(&args, 6, "THREADS")?;
            let go: String = arg(&args, 7, "GO_FILE")?;
            let created = Arc::new(Mutex::new(Vec::new()));
            let made = created.clone();
            let n = start_node(node, store.clone(), Some(made))?;
            let ran = Arc::new(Mutex::new(Vec::<u64>::new()));
            let seen = ran.clone();
            let delivery = deliver(n.clone(), move |p| seen.lock().unwrap().push(p));
            say("ready".into());
            while !std::path::Path::new(&go).exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (n, counts) = (n.clone(), counts.clone());
                    s.spawn(move || {
                        for i in 0..ids {
                            let id = SpotId((i + t * ids / threads) % ids);
                            let payload = node.0 << 48 | t << 32 | i;
                            let slot = match n.send_or_create(id, payload.to_le_bytes().to_vec()) {
                                Ok(_) => 0,
                                Err(e @ LifecycleError::StaleRoute { .. }) => {
                                    eprintln!("spot {id}: {e:?}");
                                    1
                                }
                                Err(e) => {
                                    eprintln!("spot {id}: {e}");
                                    2
                                }
                            };
                            counts[slot].fetch_add(1, Relaxed);
                        }
                    });
                }
            });
            for id in created.lock().unwrap().iter() {
                say(format!("created {id}"));
            }
            say(format!("ok {}", counts[0].load(Relaxed)));
            say(format!("stale {}", counts[1].load(Relaxed)));
            say(format!("other {}", counts[2].load(Relaxed)));
            say(format!("requests {}", store.requests()));
            say("done".into());
            // Every process has finished sending once the test writes GO_FILE.end; then
            // every message admitted here runs before this node says what ran, and shuts
            // down (which releases this node's Spots) only then, so that no release lets
            // another process create an id again.
            let end = format!("{go}.end");
            while !std::path::Path::new(&end).exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let until = std::time::Instant::now() + Duration::from_secs(60);
            loop {
                let s = n.stats();
                if s.messages_admitted == s.messages_completed + s.messages_dropped {
                    break;
                }
                if std::time::Instant::now() > until {
                    return Err(format!("messages still pending after 60 s: {s:?}"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            {
                let out = std::io::stdout();
                let mut o = out.lock();
                for p in ran.lock().unwrap().iter() {
                    let _ = writeln!(o, "ran {p}");
                }
                let _ = o.flush();
            }
            say(format!("dropped {}", n.stats().messages_dropped));
            say("end".into());
            n.shutdown();
            let _ = delivery.join();
        }
        "hold" => {
            let first: u64 = arg(&args, 5, "FIRST")?;
            let count: u64 = arg(&args, 6, "COUNT")?;
            let n = start_node(node, store.clone(), None)?;
            for id in first..first + count {
                n.send_or_create(SpotId(id), vec![0u8])
                    .map_err(|e| format!("creating {id}: {e}"))?;
            }
            let _delivery = deliver(n.clone(), move |p| say(format!("ran {p}")));
            say("ready".into());
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "ticks" => {
            let spot = SpotId(arg(&args, 5, "SPOT")?);
            let n = start_node(node, store.clone(), None)?;
            let handle = n
                .send_or_create(spot, vec![0u8])
                .map_err(|e| e.to_string())?;
            n.every(&handle, 1, Duration::from_millis(20), 0)
                .map_err(|e| e.to_string())?;
            let starts = Arc::new(Mutex::new(Vec::<u128>::new()));
            let (driver, seen) = (n.clone(), starts.clone());
            std::thread::spawn(move || {
                let mut done = Vec::new();
                let mut batch = Vec::new();
                loop {
                    batch.clear();
                    if driver
                        .exchange(&done, &mut batch, 64, Some(Duration::from_millis(5)))
                        .is_err()
                    {
                        return;
                    }
                    done.clear();
                    for rec in batch.drain(..) {
                        if driver.begin(&rec) {
                            seen.lock().unwrap().push(unix_nanos());
                            done.push(rec.complete(spot_lifecycle::Outcome::Ok));
                        } else {
                            done.push(rec.complete(spot_lifecycle::Outcome::NotStarted));
                        }
                    }
                }
            });
            say("ready".into());
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            std::thread::sleep(Duration::from_millis(300));
            let sent = match n.send(spot, vec![2u8]) {
                Err(LifecycleError::StaleRoute {
                    reason: spot_lifecycle::StaleReason::LeaseExpired,
                    ..
                }) => "stale_lease".to_string(),
                Err(LifecycleError::NotFound(_)) => "not_found".to_string(),
                Err(e) => e.to_string().replace(' ', "_"),
                Ok(()) => "ok".into(),
            };
            say(format!("send {sent}"));
            let starts = starts.lock().unwrap();
            say(format!("starts {}", starts.len()));
            say(format!(
                "last_start {}",
                starts.iter().max().copied().unwrap_or(0)
            ));
        }
        "serve" => serve(node, store)?,
        "fence" => {
            let spot = SpotId(arg(&args, 5, "SPOT")?);
            store
                .register_node(node, 10, None)
                .map_err(|e| e.to_string())?;
            let r = store
                .reserve(spot, SpotKind::Instance, node)
                .map_err(|e| e.to_string())?
                .ok_or("the reservation was taken by another node")?;
            say("reserved".into());
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            say(format!("lease_valid {}", store.lease_valid()));
            say(format!(
                "commit {}",
                if store.commit_ready(&r).is_ok() {
                    "ok"
                } else {
                    "refused"
                }
            ));
        }
        other => {
            return Err(format!(
                "unknown mode {other:?} (race, hold, ticks, fence, serve)"
            ))
        }
    }
    Ok(())
}

/// The `serve` mode (see the file's comment).
fn serve(node: NodeId, store: Arc<EtcdLocationStore>) -> Result<(), String> {
    let on_close: spot_lifecycle::ClosingCallback = Arc::new(|id, _kind, reason| {
        say(format!("close {} {} {reason:?}", unix_nanos(), id.0));
    });
    let config = NodeConfig {
        node,
        entry: SpotId(u64::MAX - node.0),
        factory: Some(Arc::new(|id: SpotId, _| {
            say(format!("factory {} {}", unix_nanos(), id.0));
            Ok(())
        })),
        on_close: Some(on_close),
        listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
        ..NodeConfig::default()
    };
    let n = Node::start(config, store, None).map_err(|e| e.to_string())?;
    let _delivery = deliver_logged(n.clone());
    let watched = n.clone();
    std::thread::spawn(move || {
        let (mut admitted, mut terms) = (0, 0);
        loop {
            let s = watched.stats();
            if s.messages_admitted != admitted {
                admitted = s.messages_admitted;
                say(format!("admitted {} {admitted}", unix_nanos()));
            }
            if s.terms_renewed != terms {
                terms = s.terms_renewed;
                say(format!("term {} {terms}", unix_nanos()));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    say(format!(
        "ready {}",
        n.address().map_or(String::new(), |a| a.to_string())
    ));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["create", first, count] => {
                let (first, count): (u64, u64) = (
                    first.parse().map_err(|_| "create FIRST")?,
                    count.parse().map_err(|_| "create COUNT")?,
                );
                for id in first..first + count {
                    n.send_or_create(SpotId(id), vec![0u8; 8])
                        .map_err(|e| format!("creating {id}: {e}"))?;
                }
                say("created".into());
            }
            ["shutdown"] => {
                n.shutdown();
                say(format!("shutdown_done {}", unix_nanos()));
            }
            _ => return Err(format!("unknown command {line:?}")),
        }
    }
    std::process::exit(0);
}

/// A delivery loop that logs every message as `ran T SPOT SEQ` when its handler starts.
fn deliver_logged(node: Arc<Node>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut done, mut batch) = (Vec::new(), Vec::new());
        loop {
            batch.clear();
            if node
                .exchange(&done, &mut batch, 256, Some(Duration::from_millis(5)))
                .is_err()
            {
                return;
            }
            done.clear();
            for rec in batch.drain(..) {
                if !node.begin(&rec) {
                    done.push(rec.complete(spot_lifecycle::Outcome::NotStarted));
                    continue;
                }
                if let spot_lifecycle::SpotRecord::Message(m) = &rec {
                    if let Ok(p) = <[u8; 8]>::try_from(m.payload()) {
                        say(format!(
                            "ran {} {} {}",
                            unix_nanos(),
                            m.spot().0,
                            u64::from_le_bytes(p)
                        ));
                    }
                }
                done.push(rec.complete(spot_lifecycle::Outcome::Ok));
            }
        }
    })
}

/// Runs every record of `node` on a thread of its own until the node closes: each
/// message with an 8-byte payload is reported to `ran` (as a little-endian u64).
fn deliver(
    node: Arc<Node>,
    mut ran: impl FnMut(u64) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut done = Vec::new();
        let mut batch = Vec::new();
        loop {
            batch.clear();
            if node
                .exchange(&done, &mut batch, 256, Some(Duration::from_millis(5)))
                .is_err()
            {
                return;
            }
            done.clear();
            for rec in batch.drain(..) {
                if !node.begin(&rec) {
                    done.push(rec.complete(spot_lifecycle::Outcome::NotStarted));
                    continue;
                }
                if let spot_lifecycle::SpotRecord::Message(m) = &rec {
                    if let Ok(p) = <[u8; 8]>::try_from(m.payload()) {
                        ran(u64::from_le_bytes(p));
                    }
                }
                done.push(rec.complete(spot_lifecycle::Outcome::Ok));
            }
        }
    })
}

fn start_node(
    node: NodeId,
    store: Arc<EtcdLocationStore>,
    created: Option<Arc<Mutex<Vec<SpotId>>>>,
) -> Result<Arc<Node>, String> {
    let config = NodeConfig {
        node,
        entry: SpotId(u64::MAX - node.0),
        factory: created.map(|c| {
            Arc::new(move |id: SpotId, _kind: SpotKind| {
                c.lock().unwrap().push(id);
                Ok(())
            }) as spot_lifecycle::Factory
        }),
        listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
        ..NodeConfig::default()
    };
    Node::start(config, store, None).map_err(|e| e.to_string())
}

fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
