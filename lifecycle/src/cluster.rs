//! Several nodes in one process, and what one node asks of another to forward a message
//! or an activation (`Peer`). Nodes of other processes are reached through the
//! `transport` module, which implements the same trait over TCP; the rules on the
//! receiving side (the owner and lease check of L4) stay in the node, which is a `Peer`
//! here — this module knows nothing else of it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::RwLock;

use crate::error::Result;
use crate::kind::{SpotId, SpotKind};
use crate::lane::LaneKind;
use crate::store::NodeId;

/// What one node asks of another.
pub(crate) trait Peer: Send + Sync {
    /// The receiving side of a routed message: its Spot's object generation once admitted.
    /// `payload` is taken when the message was admitted or may have run; it is left when
    /// the request certainly did not run (so an intent may take it elsewhere).
    fn accept(
        &self,
        spot: SpotId,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
    ) -> Result<u64>;
    /// Creates `spot` there (with `first` as its first message, taken when used): its
    /// object generation, or None when another node created it meanwhile.
    fn activate_here(
        &self,
        spot: SpotId,
        kind: SpotKind,
        first: &mut Option<(LaneKind, Box<[u8]>)>,
    ) -> Result<Option<u64>>;
}

/// The nodes of one process, by id.
#[derive(Default)]
pub struct Cluster {
    nodes: RwLock<HashMap<NodeId, Weak<dyn Peer>>>,
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn join(&self, id: NodeId, node: Weak<dyn Peer>) {
        self.nodes.write().insert(id, node);
    }

    pub(crate) fn leave(&self, id: NodeId) {
        self.nodes.write().remove(&id);
    }

    /// The node `id`, if it runs in this process.
    pub(crate) fn node(&self, id: NodeId) -> Option<Arc<dyn Peer>> {
        self.nodes.read().get(&id).and_then(Weak::upgrade)
    }
}
