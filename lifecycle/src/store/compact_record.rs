//! How the embedded store keeps one id's location record: the public `LocationRecord`
//! and the revision it last changed at, packed into three words (the map holds one per
//! Spot, so its width is paid by every Spot). The owner node is named by its number in the
//! store's list of node ids (`NodeNumbers`) rather than by its 64-bit id, and the object
//! generation is not kept here: it is one past the generation the store last released the
//! id at, which the store keeps anyway.

use super::{Authority, LocationRecord, LocationState, NodeId};
use crate::error::{LifecycleError, Result};
use crate::kind::SpotKind;

/// Every node id the store has seen, each with a number that stays its own (nodes are
/// few; the list never shrinks, so a record outliving its node still names it).
#[derive(Default)]
pub(super) struct NodeNumbers {
    ids: Vec<NodeId>,
    numbers: std::collections::HashMap<NodeId, u32>,
}

impl NodeNumbers {
    /// The number of `node`, given one the first time it is seen.
    pub(super) fn number(&mut self, node: NodeId) -> Result<u32> {
        if let Some(n) = self.numbers.get(&node) {
            return Ok(*n);
        }
        let n = u32::try_from(self.ids.len()).map_err(|_| {
            LifecycleError::Store("the embedded store has numbered 2^32 node ids".into())
        })?;
        self.ids.push(node);
        self.numbers.insert(node, n);
        Ok(n)
    }

    /// The number of `node` if the store has seen it.
    pub(super) fn get(&self, node: NodeId) -> Option<u32> {
        self.numbers.get(&node).copied()
    }

    fn id(&self, number: u32) -> NodeId {
        self.ids[number as usize]
    }
}

/// One id's record and the revision it last changed at.
#[derive(Clone, Copy)]
pub(super) struct CompactRecord {
    /// The authority's epoch.
    epoch: u64,
    /// The store revision of the record's last change.
    pub(super) changed_at: u64,
    /// The owner node's number in `NodeNumbers`.
    pub(super) node: u32,
    /// `SpotKind` as its ABI number.
    kind: u8,
    state: LocationState,
}

const _: () = assert!(std::mem::size_of::<CompactRecord>() <= 24);

impl CompactRecord {
    /// A record of node number `node`, changed at `changed_at` (its object generation is
    /// the store's to keep).
    pub(super) fn new(record: &LocationRecord, node: u32, changed_at: u64) -> Self {
        Self {
            epoch: record.authority.epoch,
            changed_at,
            node,
            kind: record.kind as u8,
            state: record.state,
        }
    }

    /// The record as the store's interface gives it, of object generation `generation`.
    pub(super) fn record(&self, nodes: &NodeNumbers, generation: u64) -> LocationRecord {
        LocationRecord {
            kind: SpotKind::from_u32(self.kind.into()).expect("written from a SpotKind"),
            state: self.state,
            authority: Authority {
                node: nodes.id(self.node),
                epoch: self.epoch,
            },
            object_generation: generation,
        }
    }

    pub(super) fn state(&self) -> LocationState {
        self.state
    }

    pub(super) fn set_state(&mut self, state: LocationState) {
        self.state = state;
    }

    /// Whether the record's authority is `authority` (numbered `node` by the store, if
    /// it has seen that node).
    pub(super) fn held_by(&self, authority: Authority, node: Option<u32>) -> bool {
        node == Some(self.node) && self.epoch == authority.epoch
    }
}
