//! The Location Store: for every Spot id, its authority (owner node, the node's lease
//! incarnation, the authority epoch), its state and its object generation; plus the
//! nodes, their liveness and their active counts for placement.
//!
//! An interface, so that a distributed store can stand behind it (etcd: a node's lease is
//! an etcd lease, revisions are fences, the create-reservation a transaction comparing
//! "key absent"). [`EmbeddedStore`] is the in-process default: one node, or several
//! simulated nodes sharing one store in one process.

mod compact_record;
mod embedded;
mod term;

pub use embedded::EmbeddedStore;
pub use term::{NodeTerm, TermFlag};

use std::sync::Arc;

use crate::error::Result;
use crate::kind::{SpotId, SpotKind};

/// A node's id in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u64);

/// Who holds a Spot: the owner node and the authority epoch (the fence of every
/// lifecycle change; an ordinary message is never checked against it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authority {
    /// The owner node.
    pub node: NodeId,
    /// The store revision that created this authority: unique per authority.
    pub epoch: u64,
}

/// Where a Spot's location record is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationState {
    /// A creation attempt holds the reservation.
    Creating,
    /// The Spot accepts application work on its owner node.
    Ready,
}

/// One Spot's location record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationRecord {
    /// The Spot's kind.
    pub kind: SpotKind,
    /// Creating or Ready.
    pub state: LocationState,
    /// The owner and the authority epoch.
    pub authority: Authority,
    /// Bumped each time the id is created again.
    pub object_generation: u64,
}

/// What the store says about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStatus {
    /// Registered, its lease running.
    Alive,
    /// Known to be unusable (unreachable), its lease not yet over: its Spots are
    /// Unavailable, not Missing — nothing may re-create them yet.
    Down,
    /// Its lease is over; its authorities have been released.
    Gone,
}

/// A read of one id: its record (if any) and the store revision it was read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreView {
    /// The record, if an authority (or a creation attempt) exists.
    pub record: Option<LocationRecord>,
    /// The owner node's status, when there is a record.
    pub owner_status: Option<NodeStatus>,
    /// The store's revision at the read.
    pub revision: u64,
}

/// The right to create one id, won by an atomic compare-and-put (key absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// The id reserved.
    pub spot: SpotId,
    /// The kind being created.
    pub kind: SpotKind,
    /// The object generation the Spot will have.
    pub generation: u64,
    /// The creator and the fence of this attempt.
    pub authority: Authority,
    /// The number of the creator's term ([`NodeTerm::number`]) the reservation was made
    /// in: a commit of another term is refused.
    pub term: u64,
}

/// Where a node can be reached from another process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAddress {
    /// Registered with this address.
    Listening(std::net::SocketAddr),
    /// Registered without one: reachable from its own process only.
    NotListening,
    /// Not registered (it left, or its lease ended).
    Unknown,
}

/// What an attempt to reserve an id found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserved {
    /// The id was free: the caller holds the right to create it.
    Won(Reservation),
    /// A record (or a creation in progress) holds the id, as read by the attempt.
    Taken(StoreView),
}

/// A Location Store. Every method is atomic with respect to the others.
pub trait LocationStore: Send + Sync {
    /// Registers a node with its active-Spot cap and the address other node processes
    /// reach it at (None: reachable in this process only), or registers it again after
    /// its term ended: the node's new term of authority. A node id whose term runs is
    /// refused. An unreachable store is `Unavailable`.
    fn register_node(
        &self,
        node: NodeId,
        active_cap: u64,
        address: Option<std::net::SocketAddr>,
    ) -> Result<Arc<dyn NodeTerm>>;
    /// Where `node` can be reached from another process, as registered. Read on every
    /// message forwarded to another process: a store answers it from what it holds,
    /// asking only about a node it has not heard of yet.
    fn node_address(&self, node: NodeId) -> NodeAddress;
    /// A node that shut down (its Spots closed) leaves: it is never chosen again. Fenced
    /// by the term that registered it: the registration of a later term of the same node
    /// id (a restarted node) stays.
    fn remove_node(&self, node: NodeId, term: u64);
    /// Updates the node's count of active Spots (for placement).
    fn set_active(&self, node: NodeId, active: u64);
    /// A live node whose active count is below its cap, preferring `preferred`, then the
    /// least loaded; None when every node is full.
    fn place(&self, preferred: NodeId) -> Option<NodeId>;
    /// The node's status.
    fn node_status(&self, node: NodeId) -> NodeStatus;
    /// Reads one id.
    fn read(&self, spot: SpotId) -> Result<StoreView>;
    /// Reserves the right to create `spot` on `node` if no record exists: the winner of
    /// concurrent reservations gets `Some`; the others `None` (and read again).
    fn reserve(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Option<Reservation>>;
    /// [`LocationStore::reserve`], or else what holds the id: a distributed store reads it
    /// in the same round trip as the attempt (an intent to create finds an existing Spot
    /// as cheaply as a read, and creates a missing one without a read first).
    fn reserve_or_read(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Reserved> {
        match self.reserve(spot, kind, node)? {
            Some(r) => Ok(Reserved::Won(r)),
            None => Ok(Reserved::Taken(self.read(spot)?)),
        }
    }
    /// A read that asks no one: what the store holds for `spot` without a request (a
    /// distributed store: its cached Ready routes). None when only a request could tell.
    fn read_local(&self, spot: SpotId) -> Option<StoreView> {
        self.read(spot).ok()
    }
    /// Commits a reservation as Ready (fenced: fails if the reservation is gone). Returns
    /// the new record.
    fn commit_ready(&self, reservation: &Reservation) -> Result<LocationRecord>;
    /// Drops a reservation whose creation failed (fenced: a later record of the id stays).
    /// Err when the store could not be asked: the caller tries again later, so a failed
    /// creation never holds its id.
    fn abort(&self, reservation: &Reservation) -> Result<()>;
    /// Drops `spot`'s record if it is still the Creating reservation of `authority` (an
    /// attempt that ended with neither its commit nor its abort confirmed): a record that
    /// moved on (committed Ready, or another reservation) stays.
    fn abort_orphan(&self, spot: SpotId, authority: Authority) -> Result<()>;
    /// Releases an authority after its Spot closed (fenced by the authority epoch): the id
    /// is Missing afterwards.
    fn release(&self, spot: SpotId, authority: Authority) -> Result<()>;
    /// Waits up to `timeout` for the record of `spot` to change from revision `seen`.
    fn wait_change(&self, spot: SpotId, seen: u64, timeout: std::time::Duration);
}
