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
//!   leaves the catalog by taking its place out under it.
//! - A closing Spot (its `closing` flag, mirrored outside the mutex for the start check)
//!   admits and starts nothing; its close finishes once no record of it holds its gate.
//! - Work reaches the host only as records of the timer runtime, so a Spot's messages and
//!   timer ticks share its serial gate (T9), its owner's lease check (T6) and the batch.
//! - A Spot with queued messages has one doorbell rung (`Queues::doorbell`): rung when
//!   its lanes go from empty to not empty, and again when a burst leaves messages behind.
//!   A doorbell's record hands the host a burst of up to `BURST_LIMIT` messages and holds
//!   the Spot's gate until the last of them completed (`SpotState::burst_left`).
//!
//! Split by role: `activation` (creation, L3), `admission` (send, routing, L4, L6),
//! `delivery` (exchange and completion), `closing` (close and idle eviction, L5).

mod activation;
mod admission;
mod closing;
mod delivery;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use spot_timer_core::{ClockKind, GateMode, Nanos, Owner, Runtime, RuntimeConfig, Sink, TimerSpec};

use crate::catalog::{Catalog, Place, BUSY};
use crate::cluster::{Cluster, Peer};
use crate::error::{LifecycleError, Queue, Result};
use crate::kind::{Entry, Instance, Kind, Spot, SpotId, SpotKind, SpotMap, User};
use crate::lane::{LaneKind, LaneLimits, LaneUse};
use crate::store::{Authority, LocationStore, NodeAddress, NodeId};
use crate::timer_work::Work;
use crate::transport::{PeerServer, Remotes};
use crate::work::DEFAULT_CREATION_WAIT;

/// How much longer than a creation may wait a request to another process's node waits for
/// its answer (the store's round trips and the factory on the other side).
const REMOTE_ANSWER_MARGIN: Duration = Duration::from_secs(10);

pub(crate) use activation::Attempt;

/// Runs once per creation of a Spot (the application builds its object); an error fails
/// the creation and releases its reservation.
pub type Factory = Arc<dyn Fn(SpotId, SpotKind) -> std::result::Result<(), String> + Send + Sync>;

/// Called once when a Spot closes, before its location is released; no new work is
/// admitted meanwhile. The application saves what it needs here.
pub type ClosingCallback = Arc<dyn Fn(SpotId, SpotKind, CloseReason) + Send + Sync>;

/// Why a Spot closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Idle past `instance_idle_timeout` (Instance Spots only).
    IdleEvicted,
    /// Closed by an explicit call.
    Closed,
    /// Its node shut down.
    NodeShutdown,
}

/// How to build a node.
#[derive(Clone)]
pub struct NodeConfig {
    /// This node's id in the cluster.
    pub node: NodeId,
    /// The id of this node's Entry Spot (default `u64::MAX`, out of the way of application
    /// ids; several nodes on one store need different ones).
    pub entry: SpotId,
    /// The clock of the node's timer runtime (manual for tests).
    pub clock: ClockKind,
    /// Limits of each Spot's application lane (default 1,024 items / 64 MiB).
    pub application_lane: LaneLimits,
    /// Limits of each Spot's lifecycle lane (default 128 items / 4 MiB).
    pub lifecycle_lane: LaneLimits,
    /// Payload bytes pending on the whole node (default 1 GiB).
    pub node_inbound_bytes: u64,
    /// Active Spots on this node, the Entry Spot included (default 100,000).
    pub active_cap: u64,
    /// Instance Spots idle this long are evicted (None: never).
    pub instance_idle_timeout: Option<Duration>,
    /// How long a caller waits for another caller's creation of the same id.
    pub creation_wait: Duration,
    /// The Spots' owner lease in the timer runtime (None: none).
    pub owner_lease: Option<Duration>,
    /// Builds a Spot's object.
    pub factory: Option<Factory>,
    /// Told when a Spot closes.
    pub on_close: Option<ClosingCallback>,
    /// Serve the nodes of other processes on this address (port 0: any free port; the
    /// address bound is recorded in the store with the node, see [`Node::address`]).
    /// None: the node is reached from this process only. A node forwards to other
    /// processes' nodes whether it listens or not.
    pub listen: Option<std::net::SocketAddr>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node: NodeId(1),
            entry: SpotId(u64::MAX),
            clock: ClockKind::Real,
            application_lane: LaneLimits::APPLICATION,
            lifecycle_lane: LaneLimits::LIFECYCLE,
            node_inbound_bytes: 1 << 30,
            active_cap: 100_000,
            instance_idle_timeout: Some(Duration::from_secs(15 * 60)),
            creation_wait: DEFAULT_CREATION_WAIT,
            owner_lease: None,
            factory: None,
            on_close: None,
            listen: None,
        }
    }
}

impl NodeConfig {
    /// Reads a `listen` address as hosts spell it: `""` is none; otherwise `IP:PORT`
    /// (`"127.0.0.1:0"`, `"[::1]:7000"`; port 0: any free port). `what` names the argument
    /// in the error. Every binding parses with this, so a bad address reads the same in
    /// every language.
    ///
    /// Errors: `InvalidArgument` naming `what`, the text and what was wrong.
    pub fn parse_listen(text: &str, what: &str) -> Result<Option<std::net::SocketAddr>> {
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|e| {
            LifecycleError::InvalidArgument(format!(
                "{what} {text:?} is not an address IP:PORT (e.g. \"127.0.0.1:0\" or \"[::1]:0\"): {e}"
            ))
        })
    }
}

/// A node's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Gauge: Spots active on this node (the Entry Spot included).
    pub active_spots: u64,
    /// Counter: Spots created here (factory succeeded, Ready committed).
    pub created: u64,
    /// Counter: factory calls.
    pub factory_runs: u64,
    /// Counter: creations that failed (factory or store).
    pub creation_failures: u64,
    /// Counter: Instance Spots evicted idle.
    pub evicted: u64,
    /// Counter: Spots closed by a call or the node's shutdown.
    pub closed: u64,
    /// Counter: messages admitted to a lane.
    pub messages_admitted: u64,
    /// Counter: messages whose handler ran and completed (Ok or Failed).
    pub messages_completed: u64,
    /// Counter: admitted messages that never ran (their Spot closed or its authority
    /// ended first). Once quiet: `admitted == completed + dropped`.
    pub messages_dropped: u64,
    /// Counter: admissions refused by a Spot's application lane.
    pub rejected_application_lane: u64,
    /// Counter: admissions refused by a Spot's lifecycle lane.
    pub rejected_lifecycle_lane: u64,
    /// Counter: admissions refused by the node's inbound byte budget.
    pub rejected_node_inbound: u64,
    /// Counter: activations refused by the active cap.
    pub rejected_activation: u64,
    /// Counter: messages that ended with `StaleRoute`.
    pub stale_routes: u64,
    /// Counter: timer ticks kept (deferred) because the application lane was full.
    pub ticks_deferred: u64,
    /// Counter: idle-eviction passes.
    pub eviction_passes: u64,
    /// Counter: Spots examined by those passes (at most 64 per pass).
    pub eviction_examined: u64,
}

#[derive(Default)]
struct Counters {
    created: AtomicU64,
    factory_runs: AtomicU64,
    creation_failures: AtomicU64,
    evicted: AtomicU64,
    closed: AtomicU64,
    messages_admitted: AtomicU64,
    messages_completed: AtomicU64,
    messages_dropped: AtomicU64,
    rejected: [AtomicU64; 4],
    stale_routes: AtomicU64,
    ticks_deferred: AtomicU64,
    eviction_passes: AtomicU64,
    eviction_examined: AtomicU64,
}

impl Counters {
    fn reject(&self, queue: Queue) {
        self.rejected[queue as usize].fetch_add(1, Relaxed);
    }
}

/// One queued message.
struct Item {
    payload: Box<[u8]>,
    cost: u64,
}

/// A Spot's queued messages, one FIFO per lane, and the doorbell rung for them.
#[derive(Default)]
struct Queues {
    application: VecDeque<Item>,
    lifecycle: VecDeque<Item>,
    /// The doorbell rung for the queued messages and not handed over yet (cancelled when
    /// they are dropped).
    doorbell: Option<spot_timer_core::TimerId>,
}

impl Queues {
    fn len(&self) -> usize {
        self.application.len() + self.lifecycle.len()
    }
}

/// What a Spot holds, under its mutex.
pub(crate) struct SpotState {
    application: LaneUse,
    lifecycle: LaneUse,
    /// The queued messages; none while nothing is queued (an idle Spot keeps no queue).
    queues: Option<Box<Queues>>,
    /// Records of this Spot handed to the host and not yet completed.
    in_flight: u32,
    /// Messages of the burst in flight not yet completed: its doorbell's record completes
    /// (and frees the gate) with the last of them.
    burst_left: u32,
    /// The token of the runtime's record in the host's hands (a tick, or the doorbell of
    /// a burst; `NOTHING_IN_HAND`: none): the Spot's serial gate lets only one be out at a
    /// time. A completion for any other record, or a second one for a message
    /// (`burst_done`), is refused.
    in_hand: u64,
    /// The messages of the burst in hand that have completed (bit = place in the burst).
    burst_done: u64,
    /// Doorbells rung so far (their keys).
    doorbells: u32,
    /// A close is in progress: nothing more is admitted.
    closing: bool,
    /// A close waiting for the record that holds the Spot's gate to complete.
    close_pending: Option<CloseReason>,
    /// Its place in the eviction catalog (evictable Spots), where its activity is noted
    /// under this lock; taken out when it leaves the catalog.
    place: Option<Place>,
}

/// `SpotState::in_hand` when no record is (a token names a slot below 2^24 in its top
/// half, so it is never this).
const NOTHING_IN_HAND: u64 = u64::MAX;

impl SpotState {
    fn quiescent(&self) -> bool {
        self.in_flight == 0 && self.application.items == 0 && self.lifecycle.items == 0
    }

    /// The Spot has work queued or handed over.
    fn mark_busy(&self) {
        if let Some(p) = &self.place {
            p.set(BUSY);
        }
    }

    /// Work of the Spot completed at `now`: idle from now if none is left.
    fn note_finished(&self, now: Nanos) {
        if let Some(p) = self.place.as_ref().filter(|_| self.quiescent()) {
            p.set(now);
        }
    }

    /// How long the Spot has been quiescent at `now` (None: busy, or not evictable).
    fn idle_for(&self, now: Nanos) -> Option<Nanos> {
        let since = self.place.as_ref()?.get();
        (since != BUSY).then(|| now.saturating_sub(since))
    }
}

/// A Spot active on this node.
pub(crate) struct LocalSpot {
    id: SpotId,
    kind: SpotKind,
    generation: u64,
    authority: Authority,
    owner: Owner<Work>,
    state: Mutex<SpotState>,
    /// Mirrors `state.closing` for the start check, which takes no lock (records of the
    /// Spot reach it through `Standing`).
    closing: AtomicBool,
}

impl std::fmt::Debug for LocalSpot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSpot")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl crate::burst::Standing for LocalSpot {
    fn closing(&self) -> bool {
        self.closing.load(std::sync::atomic::Ordering::Acquire)
    }

    fn authority_holds(&self) -> bool {
        self.owner.check().is_ok()
    }
}

impl LocalSpot {
    fn lane_use(&self, lane: LaneKind) -> LaneUse {
        let st = self.state.lock();
        match lane {
            LaneKind::Application => st.application,
            LaneKind::Lifecycle => st.lifecycle,
        }
    }

    fn set_closing(&self, st: &mut SpotState, closing: bool) {
        st.closing = closing;
        self.closing
            .store(closing, std::sync::atomic::Ordering::Release);
    }
}

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
    spots: RwLock<SpotMap<Arc<LocalSpot>>>,
    attempts: Mutex<SpotMap<Arc<Attempt>>>,
    routes: Mutex<SpotMap<NodeId>>,
    catalog: Mutex<Catalog<Arc<LocalSpot>>>,
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
    /// The Entry Spot's handle (it lives as long as the node).
    entry: std::sync::OnceLock<Spot<Entry>>,
    /// Spots whose close waits for a running record (see `Node::retry_closes`).
    closing: Mutex<Vec<Arc<LocalSpot>>>,
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
        store.register_node(config.node, config.active_cap, address)?;
        let remotes = Remotes::new(config.creation_wait + REMOTE_ANSWER_MARGIN);
        let node = Arc::new(Self {
            id: config.node,
            config,
            rt,
            store,
            cluster,
            spots: RwLock::default(),
            attempts: Mutex::default(),
            routes: Mutex::default(),
            catalog: Mutex::default(),
            entry_actors: Mutex::default(),
            inbound_bytes: AtomicU64::new(0),
            counters: Counters::default(),
            deferred: Mutex::default(),
            closed: Default::default(),
            activations: RwLock::new(()),
            occupied: AtomicU64::new(0),
            entry: std::sync::OnceLock::new(),
            closing: Mutex::default(),
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
        let entry = match node.activate(node.config.entry, SpotKind::Entry, &mut None, &mut None) {
            Ok(Some(s)) => {
                let _ = node.entry.set(Spot::new(s.id, s.generation));
                Ok(())
            }
            Ok(None) => Err(LifecycleError::InvalidArgument(format!(
                "entry spot id {} is owned by another node",
                node.config.entry
            ))),
            Err(e) => Err(e),
        };
        if let Err(e) = entry {
            node.shutdown();
            return Err(e);
        }
        Ok(node)
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
            NodeAddress::NotListening => Err(LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "its node {} runs in another process and does not listen for other \
                     processes (NodeConfig::listen)",
                    node.0
                )
                .into(),
            }),
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

    /// The node's Entry Spot.
    pub fn entry(&self) -> Spot<Entry> {
        *self.entry.get().expect("a started node has its Entry Spot")
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
        if s.kind != K::KIND {
            return Err(LifecycleError::WrongKind {
                spot: id,
                expected: K::KIND,
                actual: s.kind,
            });
        }
        Ok(Spot::new(s.id, s.generation))
    }

    pub(crate) fn local(&self, id: SpotId) -> Option<Arc<LocalSpot>> {
        self.spots.read().get(&id).cloned()
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
        Ok(self.local_or_not_found(id)?.kind)
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
            .values()
            .filter(|s| crate::kind::relocatable(s.kind))
            .map(|s| RelocationTarget::Spot(s.id, s.kind))
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
            lease: self.config.owner_lease,
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
