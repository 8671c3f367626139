//! Node processes reaching each other over TCP: a message or a creation for a Spot owned
//! (or placed) on a node of another process travels to that node's address, recorded in
//! the Location Store next to the node's registration.
//!
//! Ground rules:
//! - The receiving node decides, exactly as for a node in the same process: it admits a
//!   message only if it owns the Spot now and its lease runs (L4), and answers
//!   `StaleRoute` otherwise. The wire carries no authority of its own.
//! - A request runs at most once. Nothing is retried: a request that failed before it
//!   was sent completely ran nothing (`Unavailable`, "did not run"); one whose answer was
//!   lost may have run (`Unavailable`, "may have run"). The caller decides what to do.
//! - The caller's store read says where to go; a connection answered by another node id
//!   than the one expected is a stale route.
//!
//! Modules: `wire` (the bytes), `client` (the calling side), `server` (the receiving side).

mod client;
mod server;
mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub(crate) use server::PeerServer;

use crate::cluster::Peer;
use crate::store::NodeId;
use client::TcpPeer;

/// Whether the store reports a node unusable (down, or its lease over): a request waiting
/// for that node's answer stops waiting.
pub(crate) type GivenUp = Arc<dyn Fn(NodeId) -> bool + Send + Sync>;

/// The nodes of other processes this node has reached, by id.
pub(crate) struct Remotes {
    answer_timeout: Duration,
    given_up: GivenUp,
    peers: Mutex<HashMap<NodeId, Arc<TcpPeer>>>,
}

impl Remotes {
    /// `answer_timeout`: how long a request may wait for its answer; `given_up`: asked
    /// while it waits, so a node the store reports down is not waited for.
    pub(crate) fn new(answer_timeout: Duration, given_up: GivenUp) -> Self {
        Self {
            answer_timeout,
            given_up,
            peers: Mutex::default(),
        }
    }

    /// Node `node` at `address`: the connections kept to it, or new ones when it is new
    /// or registered again at another address.
    pub(crate) fn peer(&self, node: NodeId, address: SocketAddr) -> Arc<dyn Peer> {
        let mut peers = self.peers.lock();
        match peers.get(&node) {
            Some(p) if p.address() == address => p.clone(),
            _ => {
                let p = Arc::new(TcpPeer::new(
                    node,
                    address,
                    self.answer_timeout,
                    self.given_up.clone(),
                ));
                peers.insert(node, p.clone());
                p
            }
        }
    }
}
