//! A node: one timer runtime, its Spots (the local admission view), the creation
//! coordinator, the object catalog and the lanes.
//!
//! Ground rules:
//! - A Spot is in the admission view (`spots`) while it is Ready on this node: it enters,
//!   its lock held, right before the store's Ready commit in the same synchronous
//!   continuation (whoever finds it waits on the lock until the commit and the creator's
//!   first message are done) and leaves only after its closing callback, before the
//!   store's release.
//! - A Spot's lanes, queues and activity are guarded by its own mutex; no other lock is
//!   taken while it is held except the timer runtime's (a doorbell registration), which
//!   never calls back into this layer, and at publication the admission view's and the
//!   catalog's (never the other way round: the eviction scan releases the catalog before
//!   it locks a Spot). A Spot notes its activity in its catalog place under its mutex, and
//!   leaves the catalog under it (noted in its close state: nothing is written to the
//!   place once it may be another Spot's).
//! - A closing Spot (its `close` state, changed under its mutex and kept outside it for the
//!   start check) admits and starts nothing; its close finishes once no record of it holds
//!   its gate.
//! - Everything a node does for its Spots belongs to its current term in the store
//!   (`authority`): nothing is admitted or started, no closing callback that may save
//!   state runs, once the term has ended. Its Spots' owner leases in the timer runtime
//!   never run past what the store has confirmed of the term, and the node's keeper
//!   renews them while the term runs. A node whose term ended gives its Spots up
//!   (`CloseReason::AuthorityLost`) before it takes a new term.
//! - Work reaches the host only as records of the timer runtime, so a Spot's messages and
//!   timer ticks share its serial gate (T9), its owner's lease check (T6) and the batch.
//! - The node schedules its own idle scans: a timer of its runtime on the Entry Spot's
//!   owner, armed only while the catalog holds Spots, consumed inside `exchange`
//!   (`idle_scan`).
//! - A Spot with queued messages has one doorbell rung (`Queues::doorbell`): rung when
//!   its lanes go from empty to not empty, and again when a burst leaves messages behind.
//!   A doorbell's record hands the host a burst of up to `BURST_LIMIT` messages and holds
//!   the Spot's gate until the last of them completed (`Pending::burst_left`).
//!
//! Split by role: `activation` (creation, L3), `admission` (send, routing, L4, L6),
//! `delivery` (exchange and completion), `closing` (close and idle eviction, L5),
//! `idle_scan` (the node's own eviction passes), `authority` (the node's term, its
//! keeper); a Spot's state in `local_spot`, the configuration in `config`, the counters
//! in `stats`.

mod activation;
mod active_spots;
mod admission;
mod authority;
mod close_state;
mod closing;
mod config;
mod delivery;
mod idle_scan;
mod local_spot;
mod pending;
mod source;
mod stats;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use spot_timer_core::{GateMode, Nanos, Runtime, RuntimeConfig, Sink, TimerSpec};

use crate::catalog::Catalog;
use crate::cluster::{Cluster, Peer};
use crate::error::{LifecycleError, Queue, Result};
use crate::kind::{Entry, Instance, Kind, Spot, SpotId, SpotKind, SpotMap, User};
use crate::lane::{LaneKind, LaneUse};
use crate::store::{LocationStore, NodeAddress, NodeId, NodeStatus, NodeTerm};
use crate::timer_work::Work;
use crate::transport::{PeerServer, Remotes};

/// How much longer than a creation may wait a request to another process's node waits for
/// its answer (the store's round trips and the factory on the other side).
const REMOTE_ANSWER_MARGIN: Duration = Duration::from_secs(10);

pub(crate) use activation::Attempt;
use active_spots::ActiveSpots;
pub use config::{CloseReason, ClosingCallback, Factory, NodeConfig};
pub(crate) use local_spot::LocalSpot;
use local_spot::SpotState;
use pending::{Item, NOTHING_IN_HAND};
pub use source::{NodeCompleter, NodeSource};
use stats::Counters;
pub use stats::NodeStats;

/// What a node lists for relocation when it drains (L2): its User and Instance Spots, and
/// the actors of its Entry Spot — never the Entry Spot itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelocationTarget {
    /// A Spot that moves.
    Spot(SpotId, SpotKind),
    /// An actor living in the Entry Spot.
    EntryActor(u64),
}

/// A node of the Spot lifecycle.
pub struct Node {
    id: NodeId,
    config: NodeConfig,
    rt: Runtime<Work>,
    store: Arc<dyn LocationStore>,
    cluster: Option<Arc<Cluster>>,
    spots: RwLock<ActiveSpots>,
    attempts: Mutex<SpotMap<Arc<Attempt>>>,
    routes: Mutex<SpotMap<NodeId>>,
    catalog: Catalog<Arc<LocalSpot>>,
    entry_actors: Mutex<Vec<u64>>,
    inbound_bytes: AtomicU64,
    counters: Counters,
    /// Completions of ticks kept (deferred) while handing records over, applied by the
    /// next exchange.
    deferred: Mutex<Vec<spot_timer_core::Completion>>,
    closed: std::sync::atomic::AtomicBool,
    /// Held (shared) by every activation while it runs host code (the factory) and
    /// publishes; `shutdown` takes it exclusively after closing the node, so no factory
    /// runs once `shutdown` returned.
    activations: RwLock<()>,
    /// Spots active or being created here: taken before a factory runs, so concurrent
    /// creations cannot pass the active cap together.
    occupied: AtomicU64,
    /// The Entry Spot's handle (created again in every term).
    entry: Mutex<Option<Spot<Entry>>>,
    /// The node's current term of authority in the store.
    term: RwLock<Arc<dyn NodeTerm>>,
    /// The thread that renews the Spots' leases and takes a new term when one ends.
    keeper: authority::Keeper,
    /// Whether an idle scan is armed (`idle_scan`).
    scan_armed: std::sync::atomic::AtomicBool,
    /// Spots whose close waits for a running record (see `Node::retry_closes`).
    closing: Mutex<Vec<Arc<LocalSpot>>>,
    /// Reservations of failed creations whose abort the store did not confirm: the keeper
    /// tries again, so no id stays Creating while this node lives.
    failed_aborts: Mutex<Vec<crate::store::Reservation>>,
    /// Set during a shutdown once a release found the store unreachable: the remaining
    /// releases are left to the end of the node's term.
    releases_failing: std::sync::atomic::AtomicBool,
    /// Serves other processes' nodes (when `config.listen`); stopped at shutdown.
    server: Mutex<Option<PeerServer>>,
    /// The address other processes reach this node at.
    address: Option<std::net::SocketAddr>,
    /// Connections to other processes' nodes.
    remotes: Remotes,
}

impl Node {
    /// Starts a node: registers it in the store (and in `cluster`, for simulated nodes in
    /// one process) and creates its Entry Spot.
    pub fn start(
        config: NodeConfig,
        store: Arc<dyn LocationStore>,
        cluster: Option<Arc<Cluster>>,
    ) -> Result<Arc<Self>> {
        config.application_lane.validate("application lane")?;
        config.lifecycle_lane.validate("lifecycle lane")?;
        if config.active_cap == 0 {
            return Err(LifecycleError::InvalidArgument(
                "active_cap must be at least 1 (the Entry Spot)".into(),
            ));
        }
        let rt = Runtime::new(RuntimeConfig {
            clock: config.clock.clone(),
            sink: Sink::Exchange,
            ..RuntimeConfig::default()
        })?;
        let mut server = config.listen.map(PeerServer::bind).transpose()?;
        let address = server.as_ref().map(PeerServer::address);
        let term = store.register_node(config.node, config.active_cap, address)?;
        // A node the store reports down, or one whose registration is gone (its lease
        // ended), is not waited for. (A node just registered may not be known here yet:
        // its address is asked for before it counts as gone.)
        let given_up = {
            let store = store.clone();
            Arc::new(move |n| match store.node_status(n) {
                NodeStatus::Alive => false,
                NodeStatus::Down => true,
                NodeStatus::Gone => store.node_address(n) == NodeAddress::Unknown,
            })
        };
        let remotes = Remotes::new(config.creation_wait + REMOTE_ANSWER_MARGIN, given_up);
        let node = Arc::new(Self {
            id: config.node,
            config,
            rt,
            store,
            cluster,
            spots: RwLock::default(),
            attempts: Mutex::default(),
            routes: Mutex::default(),
            catalog: Catalog::default(),
            entry_actors: Mutex::default(),
            inbound_bytes: AtomicU64::new(0),
            counters: Counters::default(),
            deferred: Mutex::default(),
            closed: Default::default(),
            activations: RwLock::new(()),
            occupied: AtomicU64::new(0),
            entry: Mutex::new(None),
            term: RwLock::new(term),
            keeper: authority::Keeper::default(),
            scan_armed: Default::default(),
            closing: Mutex::default(),
            failed_aborts: Mutex::default(),
            releases_failing: Default::default(),
            server: Mutex::new(None),
            address,
            remotes,
        });
        let weak: std::sync::Weak<Node> = Arc::downgrade(&node);
        if let Some(c) = &node.cluster {
            c.join(node.id, weak.clone());
        }
        if let Some(mut server) = server.take() {
            if let Err(e) = server.serve(node.id, weak) {
                node.shutdown();
                return Err(e);
            }
            *node.server.lock() = Some(server);
        }
        if let Err(e) = node.create_entry() {
            node.shutdown();
            return Err(e);
        }
        node.keeper.start(&node);
        Ok(node)
    }

    /// Creates the node's Entry Spot (at its start, and in every new term).
    fn create_entry(&self) -> Result<()> {
        match self.activate(self.config.entry, SpotKind::Entry, &mut None, &mut None)? {
            Some(s) => {
                *self.entry.lock() = Some(Spot::new(s.id(), s.generation));
                Ok(())
            }
            None => Err(LifecycleError::InvalidArgument(format!(
                "entry spot id {} is owned by another node",
                self.config.entry
            ))),
        }
    }

    /// The address other node processes reach this node at (when it listens).
    pub fn address(&self) -> Option<std::net::SocketAddr> {
        self.address
    }

    /// Node `node` to forward to: in this process, or else at the address the store
    /// holds for it. Err: `Unavailable` for a node that does not listen for other
    /// processes, `StaleRoute` for a node that is no longer registered.
    pub(crate) fn peer(&self, node: NodeId, spot: SpotId) -> Result<Arc<dyn Peer>> {
        if let Some(p) = self.cluster.as_ref().and_then(|c| c.node(node)) {
            return Ok(p);
        }
        match self.store.node_address(node) {
            NodeAddress::Listening(address) => Ok(self.remotes.peer(node, address)),
            NodeAddress::NotListening => Err(LifecycleError::unavailable(
                spot,
                format!(
                    "its node {} runs in another process and does not listen for other \
                     processes (NodeConfig::listen)",
                    node.0
                ),
            )),
            NodeAddress::Unknown => Err(LifecycleError::StaleRoute {
                spot,
                reason: crate::error::StaleReason::NotOwner,
            }),
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's Entry Spot (of its current term: a node that took a new term created it
    /// again, and a handle of the old one names nothing).
    pub fn entry(&self) -> Spot<Entry> {
        self.entry
            .lock()
            .expect("a started node has its Entry Spot")
    }

    /// The Instance Spot `id` if it is active on this node.
    pub fn instance(&self, id: SpotId) -> Result<Spot<Instance>> {
        self.typed(id)
    }

    /// The User Spot `id` if it is active on this node.
    pub fn user(&self, id: SpotId) -> Result<Spot<User>> {
        self.typed(id)
    }

    fn typed<K: Kind>(&self, id: SpotId) -> Result<Spot<K>> {
        let s = self.local(id).ok_or(LifecycleError::NotFound(id))?;
        if s.kind() != K::KIND {
            return Err(LifecycleError::WrongKind {
                spot: id,
                expected: K::KIND,
                actual: s.kind(),
            });
        }
        Ok(Spot::new(s.id(), s.generation))
    }

    pub(crate) fn local(&self, id: SpotId) -> Option<Arc<LocalSpot>> {
        self.spots.read().get(id).cloned()
    }

    /// Registers a repeating timer of a Spot (key below 2^63): each tick is application
    /// work of the Spot — admitted to its lane, run under its serial gate.
    pub fn every<K: Kind>(
        &self,
        spot: &Spot<K>,
        key: u64,
        period: Duration,
        value: u64,
    ) -> Result<spot_timer_core::TimerId> {
        register_tick(&*self.current(spot)?, key, TimerSpec::every(period), value)
    }

    /// Registers a one-shot timer of a Spot (key below 2^63): its tick is application work
    /// of the Spot, like a message.
    pub fn after<K: Kind>(
        &self,
        spot: &Spot<K>,
        key: u64,
        delay: Duration,
        value: u64,
    ) -> Result<spot_timer_core::TimerId> {
        register_tick(&*self.current(spot)?, key, TimerSpec::after(delay), value)
    }

    /// The kind of Spot `id` if it is active on this node (for callers that hold ids, not
    /// typed handles: the C ABI and the bindings).
    pub fn spot_kind(&self, id: SpotId) -> Result<SpotKind> {
        Ok(self.local_or_not_found(id)?.kind())
    }

    /// [`Node::every`] for Spot `id` active on this node, whatever its kind.
    pub fn every_of(
        &self,
        id: SpotId,
        key: u64,
        period: Duration,
        value: u64,
    ) -> Result<spot_timer_core::TimerId> {
        register_tick(
            &*self.local_or_not_found(id)?,
            key,
            TimerSpec::every(period),
            value,
        )
    }

    /// [`Node::lane_use`] for Spot `id` active on this node, whatever its kind.
    pub fn lane_use_of(&self, id: SpotId, lane: LaneKind) -> Result<LaneUse> {
        Ok(self.local_or_not_found(id)?.lane_use(lane))
    }

    fn local_or_not_found(&self, id: SpotId) -> Result<Arc<LocalSpot>> {
        self.local(id).ok_or(LifecycleError::NotFound(id))
    }

    /// The local Spot a handle names, if it is still that activation.
    fn current<K: Kind>(&self, spot: &Spot<K>) -> Result<Arc<LocalSpot>> {
        match self.local(spot.id()) {
            Some(s) if s.generation == spot.generation() => Ok(s),
            _ => Err(LifecycleError::NotFound(spot.id())),
        }
    }

    /// Adds an actor to the Entry Spot (it is listed for relocation, L2).
    pub fn add_entry_actor(&self, actor: u64) {
        let mut a = self.entry_actors.lock();
        if !a.contains(&actor) {
            a.push(actor);
        }
    }

    /// Removes an actor from the Entry Spot.
    pub fn remove_entry_actor(&self, actor: u64) {
        self.entry_actors.lock().retain(|a| *a != actor);
    }

    /// What this node would hand over if it drained now (L2).
    pub fn relocation_targets(&self) -> Vec<RelocationTarget> {
        let mut out: Vec<RelocationTarget> = self
            .spots
            .read()
            .iter()
            .filter(|s| crate::kind::relocatable(s.kind()))
            .map(|s| RelocationTarget::Spot(s.id(), s.kind()))
            .collect();
        out.extend(
            self.entry_actors
                .lock()
                .iter()
                .map(|a| RelocationTarget::EntryActor(*a)),
        );
        out
    }

    /// Manual clock only: moves time forward and lets the timer runtime deliver what came
    /// due.
    pub fn advance(&self, by: Duration) -> Result<()> {
        Ok(self.rt.advance(by)?)
    }

    /// The current time on the node's clock (nanoseconds).
    pub fn now(&self) -> Nanos {
        self.rt.now()
    }

    /// The counters of the timer runtime underneath (its records, batches, crossings).
    pub fn timer_stats(&self) -> spot_timer_core::Stats {
        self.rt.stats()
    }

    /// The node's counters.
    pub fn stats(&self) -> NodeStats {
        let c = &self.counters;
        let r = |q: Queue| c.rejected[q as usize].load(Relaxed);
        NodeStats {
            active_spots: self.spots.read().len() as u64,
            created: c.created.load(Relaxed),
            factory_runs: c.factory_runs.load(Relaxed),
            creation_failures: c.creation_failures.load(Relaxed),
            evicted: c.evicted.load(Relaxed),
            closed: c.closed.load(Relaxed),
            authority_lost: c.lost.load(Relaxed),
            terms_renewed: c.terms.load(Relaxed),
            messages_admitted: c.messages_admitted.load(Relaxed),
            messages_completed: c.messages_completed.load(Relaxed),
            messages_dropped: c.messages_dropped.load(Relaxed),
            rejected_application_lane: r(Queue::ApplicationLane),
            rejected_lifecycle_lane: r(Queue::LifecycleLane),
            rejected_node_inbound: r(Queue::NodeInbound),
            rejected_activation: r(Queue::Activation),
            stale_routes: c.stale_routes.load(Relaxed),
            ticks_deferred: c.ticks_deferred.load(Relaxed),
            eviction_passes: c.eviction_passes.load(Relaxed),
            eviction_examined: c.eviction_examined.load(Relaxed),
        }
    }

    /// What one Spot's lanes hold now.
    pub fn lane_use<K: Kind>(&self, spot: &Spot<K>, lane: LaneKind) -> Result<LaneUse> {
        Ok(self.current(spot)?.lane_use(lane))
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(LifecycleError::Closed);
        }
        Ok(())
    }

    fn owner_options(&self) -> spot_timer_core::OwnerOptions {
        spot_timer_core::OwnerOptions {
            lease: self.spot_lease(),
            gate: GateMode::Serial,
        }
    }

    fn publish_active(&self) {
        self.store
            .set_active(self.id, self.spots.read().len() as u64);
    }
}

/// Registers a timer of Spot `s` whose ticks are its application work.
fn register_tick(
    s: &LocalSpot,
    key: u64,
    spec: TimerSpec,
    value: u64,
) -> Result<spot_timer_core::TimerId> {
    check_key(key)?;
    Ok(s.owner.register_id(key, spec, Work::Timer(value), None)?)
}

fn check_key(key: u64) -> Result<()> {
    if key & crate::timer_work::DOORBELL_KEY != 0 {
        return Err(LifecycleError::InvalidArgument(format!(
            "timer key {key} is reserved (keys must be below 2^63)"
        )));
    }
    Ok(())
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown();
    }
}
