//! The in-process Location Store: one mutex over a map, a condition variable for
//! creation waiters. Nodes are simulated: a test marks one down (its Spots become
//! Unavailable) or gone (its lease is over: its authorities are released, the ids are
//! Missing again).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::compact_record::{CompactRecord, NodeNumbers};
use super::*;
use crate::error::LifecycleError;
use crate::kind::SpotMap;

#[derive(Default)]
struct State {
    revision: u64,
    records: SpotMap<CompactRecord>,
    /// The numbers the records name their owner nodes by.
    node_numbers: NodeNumbers,
    /// Object generations of ids whose records were released: a re-creation continues
    /// from here. The generation of a record is one past its id's entry (1 without one):
    /// an entry changes only as its id's record goes.
    generations: SpotMap<u64>,
    nodes: HashMap<NodeId, NodeEntry>,
    /// Terms granted so far (the next term's number is one more).
    terms: u64,
}

impl State {
    /// The object generation of `spot`'s record (or of its next one, when it has none).
    fn generation(&self, spot: SpotId) -> u64 {
        self.generations.get(&spot).copied().unwrap_or(0) + 1
    }

    /// Removes `spot`'s record, its generation becoming the one a re-creation continues
    /// from.
    fn remove_record(&mut self, spot: SpotId) -> Option<CompactRecord> {
        let removed = self.records.remove(&spot)?;
        let generation = self.generation(spot);
        self.generations.insert(spot, generation);
        Some(removed)
    }
}

struct NodeEntry {
    status: NodeStatus,
    cap: u64,
    active: u64,
    address: Option<std::net::SocketAddr>,
    /// The node's current term: ended by `expire_node` (or when the node leaves).
    term: Arc<TermFlag>,
}

impl State {
    /// The running term of `node` numbered `term`, if that is its current one.
    fn running_term(&self, node: NodeId, term: u64) -> bool {
        self.nodes
            .get(&node)
            .is_some_and(|n| n.term.number() == term && n.term.runs())
    }
}

/// The embedded Location Store (the default).
#[derive(Default)]
pub struct EmbeddedStore {
    state: Mutex<State>,
    changed: Condvar,
}

impl EmbeddedStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks a node unusable while its lease still runs: its Spots are Unavailable.
    pub fn mark_down(&self, node: NodeId) {
        let mut s = self.state.lock();
        if let Some(n) = s.nodes.get_mut(&node) {
            n.status = NodeStatus::Down;
        }
        s.revision += 1;
        self.changed.notify_all();
    }

    /// Ends a node's lease: its term ends (the node admits and starts nothing of it any
    /// more, and takes a new term), and its authorities are released (the ids become
    /// Missing).
    pub fn expire_node(&self, node: NodeId) {
        let mut s = self.state.lock();
        if let Some(n) = s.nodes.get_mut(&node) {
            n.status = NodeStatus::Gone;
            n.active = 0;
            n.term.end();
        }
        let number = s.node_numbers.get(node);
        let gone: Vec<SpotId> = s
            .records
            .iter()
            .filter(|(_, r)| Some(r.node()) == number)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            s.remove_record(id);
        }
        s.revision += 1;
        self.changed.notify_all();
    }

    /// Number of location records (Creating or Ready).
    pub fn len(&self) -> usize {
        self.state.lock().records.len()
    }

    /// True when no Spot has a location.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl LocationStore for EmbeddedStore {
    fn register_node(
        &self,
        node: NodeId,
        active_cap: u64,
        address: Option<std::net::SocketAddr>,
    ) -> Result<Arc<dyn NodeTerm>> {
        let mut s = self.state.lock();
        if s.nodes.get(&node).is_some_and(|n| n.term.runs()) {
            return Err(LifecycleError::Store(
                format!("node id {} is already live in this store", node.0).into(),
            ));
        }
        s.terms += 1;
        let term = Arc::new(TermFlag::new(s.terms));
        s.nodes.insert(
            node,
            NodeEntry {
                status: NodeStatus::Alive,
                cap: active_cap,
                active: 0,
                address,
                term: term.clone(),
            },
        );
        s.revision += 1;
        Ok(term)
    }

    fn node_address(&self, node: NodeId) -> NodeAddress {
        match self.state.lock().nodes.get(&node) {
            Some(NodeEntry {
                status: NodeStatus::Gone,
                ..
            })
            | None => NodeAddress::Unknown,
            Some(n) => n
                .address
                .map_or(NodeAddress::NotListening, NodeAddress::Listening),
        }
    }

    fn remove_node(&self, node: NodeId, term: u64) {
        let mut s = self.state.lock();
        if s.nodes.get(&node).is_none_or(|n| n.term.number() != term) {
            return; // a later term of the node id registered since: it stays
        }
        if let Some(n) = s.nodes.remove(&node) {
            n.term.end();
        }
        s.revision += 1;
        self.changed.notify_all();
    }

    fn set_active(&self, node: NodeId, active: u64) {
        if let Some(n) = self.state.lock().nodes.get_mut(&node) {
            n.active = active;
        }
    }

    fn place(&self, preferred: NodeId) -> Option<NodeId> {
        let s = self.state.lock();
        let open = |n: &NodeEntry| n.status == NodeStatus::Alive && n.active < n.cap;
        if s.nodes.get(&preferred).is_some_and(open) {
            return Some(preferred);
        }
        s.nodes
            .iter()
            .filter(|(_, n)| open(n))
            .min_by_key(|(id, n)| (n.active, **id))
            .map(|(id, _)| *id)
    }

    fn node_status(&self, node: NodeId) -> NodeStatus {
        self.state
            .lock()
            .nodes
            .get(&node)
            .map_or(NodeStatus::Gone, |n| n.status)
    }

    fn read(&self, spot: SpotId) -> Result<StoreView> {
        let s = self.state.lock();
        let held = s.records.get(&spot);
        let record = held.map(|r| r.record(&s.node_numbers, s.generation(spot)));
        let owner_status = record.map(|r| {
            s.nodes
                .get(&r.authority.node)
                .map_or(NodeStatus::Gone, |n| n.status)
        });
        Ok(StoreView {
            record,
            owner_status,
            revision: held.map_or(s.revision, |r| r.changed_at()),
        })
    }

    fn reserve(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Option<Reservation>> {
        let mut s = self.state.lock();
        if s.records.contains_key(&spot) {
            return Ok(None);
        }
        let Some(term) = s
            .nodes
            .get(&node)
            .filter(|n| n.status == NodeStatus::Alive && n.term.runs())
            .map(|n| n.term.number())
        else {
            return Err(LifecycleError::Store(
                format!("node {} is not a live node of this store", node.0).into(),
            ));
        };
        let number = s.node_numbers.number(node)?;
        s.revision += 1;
        let rev = s.revision;
        let generation = s.generation(spot);
        let authority = Authority { node, epoch: rev };
        let record = LocationRecord {
            kind,
            state: LocationState::Creating,
            authority,
            object_generation: generation,
        };
        let held = CompactRecord::new(&record, number, rev)?;
        s.records.insert(spot, held);
        self.changed.notify_all();
        Ok(Some(Reservation {
            spot,
            kind,
            generation,
            authority,
            term,
        }))
    }

    fn commit_ready(&self, r: &Reservation) -> Result<LocationRecord> {
        let mut s = self.state.lock();
        if !s.running_term(r.authority.node, r.term) {
            return Err(LifecycleError::Store(
                format!(
                    "spot {}: the term of node {} that reserved it has ended",
                    r.spot, r.authority.node.0
                )
                .into(),
            ));
        }
        s.revision += 1;
        let rev = s.revision;
        let number = s.node_numbers.get(r.authority.node);
        let generation = s.generation(r.spot);
        let s = &mut *s;
        let Some(held) = s.records.get_mut(&r.spot) else {
            return Err(LifecycleError::Store("the reservation is gone".into()));
        };
        if !held.held_by(r.authority, number) || held.state() != LocationState::Creating {
            return Err(LifecycleError::Store(
                "the reservation was fenced off by a newer authority".into(),
            ));
        }
        held.set(LocationState::Ready, rev)?;
        let out = held.record(&s.node_numbers, generation);
        self.changed.notify_all();
        Ok(out)
    }

    fn abort(&self, r: &Reservation) -> Result<()> {
        let mut s = self.state.lock();
        let number = s.node_numbers.get(r.authority.node);
        if s.records
            .get(&r.spot)
            .is_some_and(|held| held.held_by(r.authority, number))
        {
            s.records.remove(&r.spot);
            s.revision += 1;
        }
        self.changed.notify_all();
        Ok(())
    }

    fn abort_orphan(&self, spot: SpotId, authority: Authority) -> Result<()> {
        let mut s = self.state.lock();
        let number = s.node_numbers.get(authority.node);
        if s.records.get(&spot).is_some_and(|held| {
            held.held_by(authority, number) && held.state() == LocationState::Creating
        }) {
            s.records.remove(&spot);
            s.revision += 1;
            self.changed.notify_all();
        }
        Ok(())
    }

    fn release(&self, spot: SpotId, authority: Authority) -> Result<()> {
        let mut s = self.state.lock();
        let number = s.node_numbers.get(authority.node);
        match s.records.get(&spot) {
            Some(r) if r.held_by(authority, number) => {
                s.remove_record(spot);
                s.revision += 1;
                self.changed.notify_all();
                Ok(())
            }
            _ => Err(LifecycleError::Store(
                format!("spot {spot}: the released authority is not the current one").into(),
            )),
        }
    }

    fn wait_change(&self, spot: SpotId, seen: u64, timeout: Duration) {
        let mut s = self.state.lock();
        let unchanged = |s: &State| s.records.get(&spot).is_some_and(|r| r.changed_at() == seen);
        if unchanged(&s) {
            let _ = self.changed.wait_for(&mut s, timeout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generation_read(store: &EmbeddedStore, spot: SpotId) -> Option<u64> {
        store
            .read(spot)
            .unwrap()
            .record
            .map(|r| r.object_generation)
    }

    #[test]
    fn generations_continue_across_release_and_expiry_and_not_across_abort() {
        let store = EmbeddedStore::new();
        let (a, b) = (NodeId(1), NodeId(2));
        let _ta = store.register_node(a, 10, None).unwrap();
        let _tb = store.register_node(b, 10, None).unwrap();
        let spot = SpotId(7);
        let first = store.reserve(spot, SpotKind::Instance, a).unwrap().unwrap();
        assert_eq!(first.generation, 1);
        assert_eq!(generation_read(&store, spot), Some(1));
        let ready = store.commit_ready(&first).unwrap();
        assert_eq!(ready.object_generation, 1);
        assert_eq!(ready.authority, first.authority);
        store.release(spot, first.authority).unwrap();
        assert_eq!(generation_read(&store, spot), None);
        // An aborted creation leaves the next one at the same generation.
        let aborted = store.reserve(spot, SpotKind::User, b).unwrap().unwrap();
        assert_eq!(aborted.generation, 2);
        store.abort(&aborted).unwrap();
        let second = store.reserve(spot, SpotKind::User, b).unwrap().unwrap();
        assert_eq!(second.generation, 2);
        let record = store.commit_ready(&second).unwrap();
        assert_eq!(record.kind, SpotKind::User);
        assert_eq!(record.authority.node, b);
        // The owner's lease ends: the record goes, the next creation continues.
        store.expire_node(b);
        assert!(!_tb.runs(), "the expired node's term is over");
        assert_eq!(generation_read(&store, spot), None);
        let third = store.reserve(spot, SpotKind::Instance, a).unwrap().unwrap();
        assert_eq!(third.generation, 3);
        // A release fenced by an older authority changes nothing.
        assert!(store.release(spot, second.authority).is_err());
        assert_eq!(generation_read(&store, spot), Some(3));
    }

    #[test]
    fn a_term_fences_commits_and_the_leaving_of_its_node() {
        let store = EmbeddedStore::new();
        let n = NodeId(4);
        let first = store.register_node(n, 10, None).unwrap();
        assert!(
            store.register_node(n, 10, None).is_err(),
            "a running term is refused a second one"
        );
        let r = store
            .reserve(SpotId(1), SpotKind::Instance, n)
            .unwrap()
            .unwrap();
        assert_eq!(r.term, first.number());
        store.expire_node(n);
        let second = store.register_node(n, 10, None).unwrap();
        assert!(second.runs() && !first.runs());
        assert_ne!(first.number(), second.number());
        // A reservation of the ended term is never committed in the new one.
        let stale = Reservation {
            term: first.number(),
            ..r
        };
        assert!(store.commit_ready(&stale).is_err());
        // The old term's leaving does not remove the new term's registration.
        store.remove_node(n, first.number());
        assert_eq!(store.node_status(n), NodeStatus::Alive);
        assert!(second.runs());
        store.remove_node(n, second.number());
        assert!(!second.runs());
        assert_eq!(store.node_status(n), NodeStatus::Gone);
    }
}
