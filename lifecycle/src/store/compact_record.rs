//! How the embedded store keeps one id's location record: the public `LocationRecord`
//! and the revision it last changed at, packed into two words (the map holds one per Spot,
//! so its width is paid by every Spot). The owner node is named by its number in the
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
    numbers: std::collections::HashMap<NodeId, u16>,
}

impl NodeNumbers {
    /// The number of `node`, given one the first time it is seen. Err once 2^16 node ids
    /// have been numbered (a record has 16 bits for it).
    pub(super) fn number(&mut self, node: NodeId) -> Result<u16> {
        if let Some(n) = self.numbers.get(&node) {
            return Ok(*n);
        }
        let n = u16::try_from(self.ids.len()).map_err(|_| {
            LifecycleError::Store("the embedded store has numbered 2^16 node ids".into())
        })?;
        self.ids.push(node);
        self.numbers.insert(node, n);
        Ok(n)
    }

    /// The number of `node` if the store has seen it.
    pub(super) fn get(&self, node: NodeId) -> Option<u16> {
        self.numbers.get(&node).copied()
    }

    fn id(&self, number: u16) -> NodeId {
        self.ids[number as usize]
    }
}

/// Bits of a revision in a record: a store revision (an epoch, or when a record last
/// changed) must stay below `2^REVISION_BITS` to be kept (the embedded store counts one per
/// change, so at a million changes a second it reaches it after about nine years).
const REVISION_BITS: u32 = 48;
const REVISION_MASK: u64 = (1 << REVISION_BITS) - 1;

/// One id's record and the revision it last changed at, in two words: each holds a
/// revision in its low `REVISION_BITS` bits, the first with the owner node's number above
/// it, the second with the kind and the state.
#[derive(Clone, Copy)]
pub(super) struct CompactRecord {
    epoch_and_node: u64,
    changed_at_kind_and_state: u64,
}

const _: () = assert!(std::mem::size_of::<CompactRecord>() <= 16);

fn revision_fits(revision: u64) -> Result<u64> {
    if revision > REVISION_MASK {
        return Err(LifecycleError::Store(
            format!(
                "the embedded store has used all 2^{REVISION_BITS} revisions its records can name"
            )
            .into(),
        ));
    }
    Ok(revision)
}

fn state_bit(state: LocationState) -> u64 {
    match state {
        LocationState::Creating => 0,
        LocationState::Ready => 1,
    }
}

impl CompactRecord {
    /// A record of node number `node`, changed at `changed_at` (its object generation is
    /// the store's to keep). Err when a revision is past what a record can name.
    pub(super) fn new(record: &LocationRecord, node: u16, changed_at: u64) -> Result<Self> {
        let epoch = revision_fits(record.authority.epoch)?;
        let mut r = Self {
            epoch_and_node: epoch | u64::from(node) << REVISION_BITS,
            changed_at_kind_and_state: u64::from(record.kind as u8) << (REVISION_BITS + 1),
        };
        r.set(record.state, changed_at)?;
        Ok(r)
    }

    /// The record as the store's interface gives it, of object generation `generation`.
    pub(super) fn record(&self, nodes: &NodeNumbers, generation: u64) -> LocationRecord {
        let kind = (self.changed_at_kind_and_state >> (REVISION_BITS + 1)) as u32;
        LocationRecord {
            kind: SpotKind::from_u32(kind).expect("written from a SpotKind"),
            state: self.state(),
            authority: Authority {
                node: nodes.id(self.node()),
                epoch: self.epoch_and_node & REVISION_MASK,
            },
            object_generation: generation,
        }
    }

    /// The owner node's number in `NodeNumbers`.
    pub(super) fn node(&self) -> u16 {
        (self.epoch_and_node >> REVISION_BITS) as u16
    }

    /// The store revision of the record's last change.
    pub(super) fn changed_at(&self) -> u64 {
        self.changed_at_kind_and_state & REVISION_MASK
    }

    pub(super) fn state(&self) -> LocationState {
        if self.changed_at_kind_and_state >> REVISION_BITS & 1 == 1 {
            LocationState::Ready
        } else {
            LocationState::Creating
        }
    }

    /// Puts the record in `state`, changed at `changed_at`. Err (and nothing changed) when
    /// `changed_at` is past what a record can name.
    pub(super) fn set(&mut self, state: LocationState, changed_at: u64) -> Result<()> {
        let changed_at = revision_fits(changed_at)?;
        let kind = self.changed_at_kind_and_state & !((1 << (REVISION_BITS + 1)) - 1);
        self.changed_at_kind_and_state = kind | state_bit(state) << REVISION_BITS | changed_at;
        Ok(())
    }

    /// Whether the record's authority is `authority` (numbered `node` by the store, if
    /// it has seen that node).
    pub(super) fn held_by(&self, authority: Authority, node: Option<u16>) -> bool {
        node == Some(self.node()) && self.epoch_and_node & REVISION_MASK == authority.epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_gives_back_what_it_was_made_of() {
        let mut nodes = NodeNumbers::default();
        nodes.number(NodeId(10)).unwrap();
        let n = nodes.number(NodeId(u64::MAX)).unwrap();
        for kind in [SpotKind::Entry, SpotKind::User, SpotKind::Instance] {
            let made = LocationRecord {
                kind,
                state: LocationState::Creating,
                authority: Authority {
                    node: NodeId(u64::MAX),
                    epoch: REVISION_MASK,
                },
                object_generation: 5,
            };
            let mut r = CompactRecord::new(&made, n, REVISION_MASK).unwrap();
            assert_eq!(r.record(&nodes, 5), made);
            assert_eq!(r.changed_at(), REVISION_MASK);
            assert!(r.held_by(made.authority, Some(n)));
            assert!(!r.held_by(made.authority, Some(0)));
            r.set(LocationState::Ready, 3).unwrap();
            assert_eq!(r.state(), LocationState::Ready);
            assert_eq!(r.changed_at(), 3);
            assert_eq!(r.record(&nodes, 5).kind, kind);
            assert_eq!(r.record(&nodes, 5).authority, made.authority);
            assert!(r.set(LocationState::Ready, REVISION_MASK + 1).is_err());
            assert_eq!(r.changed_at(), 3);
        }
        let too_late = LocationRecord {
            kind: SpotKind::User,
            state: LocationState::Creating,
            authority: Authority {
                node: NodeId(10),
                epoch: REVISION_MASK + 1,
            },
            object_generation: 1,
        };
        assert!(CompactRecord::new(&too_late, 0, 1).is_err());
    }

    #[test]
    fn node_numbers_stop_at_what_a_record_can_name() {
        let mut nodes = NodeNumbers::default();
        for i in 0..=u64::from(u16::MAX) {
            assert_eq!(u64::from(nodes.number(NodeId(i * 3)).unwrap()), i);
        }
        assert_eq!(nodes.number(NodeId(0)).unwrap(), 0);
        assert!(nodes.number(NodeId(1)).is_err());
        assert_eq!(nodes.get(NodeId(1)), None);
    }
}
