//! A host for lifecycle tests: nodes on manual clocks sharing one embedded store, and a
//! loop that runs every ready record through a handler.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spot_lifecycle::*;
use spot_timer_core::{ClockKind, ManualClock};

/// One closing callback: the Spot, its kind, why, and whether its location was still
/// recorded in the store when the callback ran.
pub type Closed = (SpotId, SpotKind, CloseReason, bool);

pub struct World {
    pub store: Arc<EmbeddedStore>,
    pub cluster: Arc<Cluster>,
    pub factory_runs: Arc<AtomicU64>,
    /// Factory runs per Spot id.
    pub runs_of: Arc<Mutex<std::collections::HashMap<SpotId, u64>>>,
    pub closes: Arc<Mutex<Vec<Closed>>>,
}

impl World {
    pub fn new() -> Self {
        Self {
            store: Arc::new(EmbeddedStore::new()),
            cluster: Cluster::new(),
            factory_runs: Arc::default(),
            runs_of: Arc::default(),
            closes: Arc::default(),
        }
    }

    /// A config for node `id` (entry Spot id 1000 + id) on a fresh manual clock, with a
    /// counting factory and a closing callback that records whether the Spot's location
    /// was still in the store when it ran.
    pub fn config(&self, id: u64) -> NodeConfig {
        let runs = self.factory_runs.clone();
        let runs_of = self.runs_of.clone();
        let closes = self.closes.clone();
        let store = self.store.clone();
        NodeConfig {
            node: NodeId(id),
            entry: SpotId(1000 + id),
            clock: ClockKind::Manual(ManualClock::new()),
            factory: Some(Arc::new(move |spot, _| {
                runs.fetch_add(1, SeqCst);
                *runs_of.lock().unwrap().entry(spot).or_insert(0) += 1;
                Ok(())
            })),
            on_close: Some(Arc::new(move |spot, kind, reason| {
                let located = store
                    .read(spot)
                    .map(|v| v.record.is_some())
                    .unwrap_or(false);
                closes.lock().unwrap().push((spot, kind, reason, located));
            })),
            ..NodeConfig::default()
        }
    }

    pub fn node(&self, id: u64) -> Arc<Node> {
        self.node_with(self.config(id))
    }

    pub fn node_with(&self, config: NodeConfig) -> Arc<Node> {
        Node::start(config, self.store.clone(), Some(self.cluster.clone())).expect("node")
    }

    pub fn factory_runs(&self) -> u64 {
        self.factory_runs.load(SeqCst)
    }

    /// Factory runs for Spot `spot`.
    pub fn runs_of(&self, spot: SpotId) -> u64 {
        self.runs_of
            .lock()
            .unwrap()
            .get(&spot)
            .copied()
            .unwrap_or(0)
    }
}

/// What a handler saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Message(SpotId, Vec<u8>),
    Tick(SpotId, u64),
}

/// Lets the node's timer runtime deliver what is due, then runs every ready record with
/// a handler that records it and completes it Ok; until nothing is ready.
pub fn run_ready(node: &Node) -> Vec<Ran> {
    let mut ran = Vec::new();
    let mut done = Vec::new();
    loop {
        node.advance(Duration::ZERO).unwrap();
        let mut out = Vec::new();
        node.exchange(&done, &mut out, 4096, Some(Duration::ZERO))
            .unwrap();
        done.clear();
        if out.is_empty() {
            break;
        }
        for r in &out {
            if node.begin(r) {
                ran.push(match r {
                    SpotRecord::Message(m) => Ran::Message(m.spot(), m.payload().to_vec()),
                    SpotRecord::Tick(t) => Ran::Tick(t.spot(), t.key()),
                });
                done.push(r.complete(Outcome::Ok));
            } else {
                done.push(r.complete(Outcome::NotStarted));
            }
        }
    }
    ran
}

/// Receives ready records without completing them.
pub fn take_ready(node: &Node) -> Vec<SpotRecord> {
    node.advance(Duration::ZERO).unwrap();
    let mut out = Vec::new();
    node.exchange(&[], &mut out, 4096, Some(Duration::ZERO))
        .unwrap();
    out
}

pub fn messages_for(ran: &[Ran], spot: SpotId) -> usize {
    ran.iter()
        .filter(|r| matches!(r, Ran::Message(s, _) if *s == spot))
        .count()
}

/// A host thread for real-clock tests: exchanges for ever, runs every record with a
/// handler that records it (spot, payload or key) and completes it Ok, until stopped.
pub struct Dispatcher {
    stop: Arc<std::sync::atomic::AtomicBool>,
    pub ran: Arc<Mutex<Vec<Ran>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Dispatcher {
    pub fn start(node: Arc<Node>) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ran: Arc<Mutex<Vec<Ran>>> = Arc::default();
        let thread = {
            let (stop, ran) = (stop.clone(), ran.clone());
            std::thread::spawn(move || {
                let mut done = Vec::new();
                let mut out = Vec::new();
                while !stop.load(SeqCst) {
                    out.clear();
                    if node
                        .exchange(&done, &mut out, 1024, Some(Duration::from_millis(5)))
                        .is_err()
                    {
                        done.clear();
                        continue;
                    }
                    done.clear();
                    for r in &out {
                        if node.begin(r) {
                            ran.lock().unwrap().push(match r {
                                SpotRecord::Message(m) => {
                                    Ran::Message(m.spot(), m.payload().to_vec())
                                }
                                SpotRecord::Tick(t) => Ran::Tick(t.spot(), t.key()),
                            });
                            done.push(r.complete(Outcome::Ok));
                        } else {
                            done.push(r.complete(Outcome::NotStarted));
                        }
                    }
                }
                let _ = node.complete(&done);
            })
        };
        Self {
            stop,
            ran,
            thread: Some(thread),
        }
    }

    pub fn ran(&self) -> Vec<Ran> {
        self.ran.lock().unwrap().clone()
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Polls `cond` until it holds or `limit` passes; false on timeout.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    cond()
}
