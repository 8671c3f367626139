//! Several simulated nodes in one process: how a node reaches another to forward a
//! message or an activation. A deployment across processes replaces this with its
//! transport; the rules on the receiving side (the owner and lease check of L4) stay in
//! the node.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::RwLock;

use crate::node::Node;
use crate::store::NodeId;

/// The nodes of one process, by id.
#[derive(Default)]
pub struct Cluster {
    nodes: RwLock<HashMap<NodeId, Weak<Node>>>,
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn join(&self, node: &Arc<Node>) {
        self.nodes.write().insert(node.id(), Arc::downgrade(node));
    }

    pub(crate) fn leave(&self, id: NodeId) {
        self.nodes.write().remove(&id);
    }

    /// The node `id`, if it runs in this process.
    pub(crate) fn node(&self, id: NodeId) -> Option<Arc<Node>> {
        self.nodes.read().get(&id).and_then(Weak::upgrade)
    }
}
