//! What this process knows of the store without asking etcd: the Ready routes it read
//! (cached), the live nodes with their caps and counts, the nodes a transport reported
//! down, and the creation waiters. The watch keeps it current; the store reads it.
//!
//! The one rule that keeps the route cache right: a Ready record read from etcd at
//! revision `H` is cached only while the watch has applied no revision above `H`
//! (`progress <= H`). Every later change of that key is then applied after the insert and
//! removes it; a change the watch already applied may be newer than the read, so the
//! answer is returned uncached. Without a running watch nothing is cached.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use spot_lifecycle::{LocationRecord, NodeId, SpotId};

use crate::keys::NodeValue;

#[derive(Default)]
pub(crate) struct Known {
    /// Ready records and the revision they were last changed at.
    pub routes: HashMap<SpotId, (LocationRecord, u64)>,
    /// Live nodes (their keys exist) and what they last wrote.
    pub nodes: HashMap<NodeId, NodeValue>,
    /// The lease each live node's key is attached to.
    pub leases: HashMap<NodeId, i64>,
    /// Nodes a transport found unreachable while their lease runs.
    pub down: HashSet<NodeId>,
    /// Nodes whose lease etcd shows missing its keep-alives (checked in the background).
    pub missed: HashSet<NodeId>,
    /// The last revision the watch applied; meaningful while `watching`.
    pub progress: u64,
    pub watching: bool,
    /// Creation waiters by id: how many wait, and the revision of the last change seen.
    pub waiting: HashMap<SpotId, (usize, u64)>,
}

/// The shared view and the condition variable its changes signal.
#[derive(Default)]
pub(crate) struct View {
    pub known: Mutex<Known>,
    pub changed: Condvar,
}

/// One change the watch saw.
pub(crate) enum Change {
    Location {
        spot: SpotId,
        revision: u64,
    },
    NodePut {
        node: NodeId,
        value: NodeValue,
        lease: i64,
    },
    NodeGone {
        node: NodeId,
    },
}

impl View {
    /// Caches a Ready record read at store revision `read_at`, if the rule allows.
    pub fn cache(&self, spot: SpotId, record: LocationRecord, changed_at: u64, read_at: u64) {
        let mut k = self.known.lock();
        if k.watching && k.progress <= read_at {
            k.routes.insert(spot, (record, changed_at));
        }
    }

    /// Down: a transport said so, or the node's lease misses its keep-alives.
    pub fn is_down(&self, node: NodeId) -> bool {
        let k = self.known.lock();
        k.down.contains(&node) || k.missed.contains(&node)
    }

    pub fn route(&self, spot: SpotId) -> Option<(LocationRecord, u64)> {
        self.known.lock().routes.get(&spot).copied()
    }

    pub fn forget(&self, spot: SpotId) {
        self.known.lock().routes.remove(&spot);
    }

    /// Applies the changes of one watch answer, then its revision.
    pub fn apply(&self, changes: Vec<Change>, revision: u64) {
        let mut k = self.known.lock();
        for c in changes {
            match c {
                Change::Location { spot, revision } => {
                    k.routes.remove(&spot);
                    if let Some(w) = k.waiting.get_mut(&spot) {
                        w.1 = revision;
                    }
                }
                Change::NodePut { node, value, lease } => {
                    k.nodes.insert(node, value);
                    k.leases.insert(node, lease);
                }
                Change::NodeGone { node } => {
                    k.nodes.remove(&node);
                    k.leases.remove(&node);
                    k.down.remove(&node);
                    k.missed.remove(&node);
                }
            }
        }
        if revision > k.progress {
            k.progress = revision;
        }
        drop(k);
        self.changed.notify_all();
    }

    /// The watch starts (again) from `revision + 1`, with this list of live nodes read at
    /// `revision`.
    pub fn restart(&self, nodes: HashMap<NodeId, (NodeValue, i64)>, revision: u64) {
        let mut k = self.known.lock();
        k.leases = nodes.iter().map(|(n, (_, l))| (*n, *l)).collect();
        k.nodes = nodes.into_iter().map(|(n, (v, _))| (n, v)).collect();
        k.progress = revision;
        k.watching = true;
    }

    /// The watch broke: nothing cached can be trusted any more.
    pub fn lost(&self) {
        let mut k = self.known.lock();
        k.watching = false;
        k.routes.clear();
        for w in k.waiting.values_mut() {
            w.1 = u64::MAX;
        }
        drop(k);
        self.changed.notify_all();
    }

    pub fn begin_wait(&self, spot: SpotId, seen: u64) {
        let mut k = self.known.lock();
        let w = k.waiting.entry(spot).or_insert((0, seen));
        w.0 += 1;
    }

    /// Waits until a change of `spot` other than `seen` was applied, or `until`.
    pub fn wait(&self, spot: SpotId, seen: u64, until: Instant) {
        let mut k = self.known.lock();
        while k.waiting.get(&spot).is_some_and(|w| w.1 == seen) {
            if self.changed.wait_until(&mut k, until).timed_out() {
                break;
            }
        }
    }

    pub fn end_wait(&self, spot: SpotId) {
        let mut k = self.known.lock();
        if let Some(w) = k.waiting.get_mut(&spot) {
            w.0 -= 1;
            if w.0 == 0 {
                k.waiting.remove(&spot);
            }
        }
    }
}
