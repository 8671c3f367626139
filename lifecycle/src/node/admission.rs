//! Admission: sending work to a Spot. An ordinary send reaches only a Ready Spot and
//! never creates one (L3); an instance intent creates a missing Instance Spot first. The
//! receiving node checks that it owns the Spot and that its lease runs — never the
//! object generation — and a stale route ends with `StaleRoute`, not retried (L4). A
//! lane admits by count and bytes, `payload + 256 B` per item (L6).

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use spot_timer_core::TimerSpec;

use super::{Item, LocalSpot, Node};
use crate::error::{LifecycleError, Queue, Result, StaleReason};
use crate::kind::{Instance, Spot, SpotId, SpotKind, User};
use crate::lane::{LaneKind, ITEM_OVERHEAD_BYTES};
use crate::resolver::{resolve, Resolution};
use crate::store::{NodeId, NodeStatus};
use crate::timer_work::{Work, DOORBELL_KEY};

/// Routes to Spots of other nodes a node keeps at most.
const ROUTE_CACHE_MAX: usize = 1 << 16;
/// The longest one wait of a route refresh for the store's record to change (the record's
/// change usually wakes it earlier).
const ROUTE_REFRESH_WAIT: Duration = Duration::from_millis(100);

impl Node {
    /// Sends an application message to a Ready Spot. A missing id gives `NotFound`
    /// (nothing is created); a route to a node that no longer owns the Spot gives
    /// `StaleRoute` (the message did not run; it is not retried).
    pub fn send(&self, spot: SpotId, payload: impl Into<Box<[u8]>>) -> Result<()> {
        self.route(spot, LaneKind::Application, payload.into(), None)
            .map(|_| ())
    }

    /// [`Node::send`] to a Spot active on this node, and only there: it never reads the
    /// store, forwards or waits for a creation, so a binding may call it without releasing
    /// its interpreter lock. `Err(payload)`: the Spot is not active here (send it with
    /// [`Node::send`]); `Ok` holds what `send` would have returned.
    pub fn send_here(
        &self,
        spot: SpotId,
        payload: Box<[u8]>,
    ) -> std::result::Result<Result<()>, Box<[u8]>> {
        if let Err(e) = self.check_open() {
            return Ok(Err(e));
        }
        match self.local(spot) {
            Some(s) => {
                if let Err(e) = self.check_fits(LaneKind::Application, payload.len() as u64) {
                    return Ok(Err(e));
                }
                let mut payload = Some(payload);
                Ok(self.admit(&s, LaneKind::Application, &mut payload))
            }
            None => Err(payload),
        }
    }

    /// Sends lifecycle work to a Ready Spot (its lifecycle lane, served first).
    pub fn send_lifecycle(&self, spot: SpotId, payload: impl Into<Box<[u8]>>) -> Result<()> {
        self.route(spot, LaneKind::Lifecycle, payload.into(), None)
            .map(|_| ())
    }

    /// The instance intent: sends to Instance Spot `spot`, creating it first if it does
    /// not exist (the factory runs once however many callers race).
    pub fn send_or_create(
        &self,
        spot: SpotId,
        payload: impl Into<Box<[u8]>>,
    ) -> Result<Spot<Instance>> {
        let (_, generation) = self.route(
            spot,
            LaneKind::Application,
            payload.into(),
            Some(SpotKind::Instance),
        )?;
        Ok(Spot::new(spot, generation))
    }

    /// Creates User Spot `id` (or returns it if it exists already).
    pub fn create_user_spot(&self, id: SpotId) -> Result<Spot<User>> {
        self.check_open()?;
        let (_, generation) = self.create(id, SpotKind::User, &mut None, None)?;
        Ok(Spot::new(id, generation))
    }

    /// Delivers `payload` to `spot` wherever it is. Returns the owner node and the
    /// Spot's object generation.
    ///
    /// An intent to create that meets a stale route — its Spot closing here, a node that
    /// no longer owns it, a cached route to a node whose lease ended — refreshes the route
    /// (L5): it waits for the store's record to change and resolves again, so a Spot
    /// released meanwhile is created anew and one Ready elsewhere is reached there. The
    /// message did not run in any of those cases: this is a route refresh, not a retry.
    /// A plain send ends with the refusal.
    fn route(
        &self,
        spot: SpotId,
        lane: LaneKind,
        payload: Box<[u8]>,
        create: Option<SpotKind>,
    ) -> Result<(NodeId, u64)> {
        self.check_open()?;
        self.check_fits(lane, payload.len() as u64)?;
        let until = Instant::now() + self.config.creation_wait;
        let mut payload = Some(payload);
        let mut fresh = false;
        loop {
            let mut tried = None;
            let r = self.route_once(spot, lane, &mut payload, create, fresh, until, &mut tried);
            let refresh = create.is_some()
                && payload.is_some()
                && !super::closing::closing_here(spot)
                && Instant::now() < until;
            match r {
                Err(LifecycleError::StaleRoute { .. }) if refresh => {
                    self.await_route_change(spot, tried, until);
                    fresh = true;
                }
                // The node tried could not be reached, and the store no longer names it
                // (a killed node whose lease ended): the route was stale.
                Err(LifecycleError::Unavailable {
                    may_have_run: false,
                    ..
                }) if refresh
                    && tried.is_some_and(|n| n != self.id)
                    && self.route_moved(spot, tried) =>
                {
                    fresh = true;
                }
                r => return r,
            }
        }
    }

    /// Whether the store no longer names node `tried` as `spot`'s owner (asked afresh).
    fn route_moved(&self, spot: SpotId, tried: Option<NodeId>) -> bool {
        match self.store.read(spot) {
            Ok(view) => match view.record {
                None => true,
                Some(r) => Some(r.authority.node) != tried,
            },
            Err(_) => false,
        }
    }

    /// Waits (at most until `until`) for the store's record of `spot` to move on from the
    /// stale route that was tried at node `tried`: at once when the store already names
    /// another owner or none.
    fn await_route_change(&self, spot: SpotId, tried: Option<NodeId>, until: Instant) {
        let Ok(view) = self.store.read(spot) else {
            return;
        };
        let Some(record) = view.record else {
            return; // Missing: the next round creates it
        };
        if tried.is_some_and(|n| n != record.authority.node) {
            return; // Ready elsewhere: the next round goes there
        }
        let left = until.saturating_duration_since(Instant::now());
        self.store
            .wait_change(spot, view.revision, left.min(ROUTE_REFRESH_WAIT));
    }

    /// One resolution of `spot`'s route and one delivery attempt. `payload` is taken only
    /// when the message was admitted (or handed to another process, where it may have run).
    /// `fresh`: the store is read, not the route cache. `tried`: the node the attempt went
    /// to.
    #[allow(clippy::too_many_arguments)]
    fn route_once(
        &self,
        spot: SpotId,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
        fresh: bool,
        until: Instant,
        tried: &mut Option<NodeId>,
    ) -> Result<(NodeId, u64)> {
        self.check_open()?;
        if let Some(s) = self.local(spot) {
            self.check_kind(&s, create)?;
            *tried = Some(self.id);
            self.admit(&s, lane, payload)?;
            return Ok((self.id, s.generation));
        }
        self.check_term(spot)?;
        if !fresh {
            let cached = self.routes.lock().get(&spot).copied();
            if let Some(node) = cached {
                *tried = Some(node);
                return self.forward(node, spot, lane, payload, create);
            }
        }
        // An intent to create looks at what the store holds without a request first; an
        // id unknown there goes straight to creation, whose reservation finds an existing
        // record in the same round trip as a read.
        let mut first_look = create.is_some() && !fresh;
        loop {
            let view = if std::mem::take(&mut first_look) {
                self.store.read_local(spot)
            } else {
                Some(self.store.read(spot)?)
            };
            let resolution = match &view {
                Some(v) => resolve(v),
                None => Resolution::Missing,
            };
            match resolution {
                Resolution::Ready { authority, kind } => {
                    if let Some(k) = create {
                        if k != kind {
                            return Err(LifecycleError::WrongKind {
                                spot,
                                expected: k,
                                actual: kind,
                            });
                        }
                    }
                    *tried = Some(authority.node);
                    if authority.node == self.id {
                        // Created here since the first look at the admission view?
                        if let Some(s) = self.local(spot) {
                            self.admit(&s, lane, payload)?;
                            return Ok((self.id, s.generation));
                        }
                        // Ours in the store but not in the admission view: it is closing.
                        self.counters.stale_routes.fetch_add(1, Relaxed);
                        return Err(LifecycleError::StaleRoute {
                            spot,
                            reason: StaleReason::Closing,
                        });
                    }
                    // Only Ready routes are cached (never Creating).
                    self.cache_route(spot, authority.node);
                    return self.forward(authority.node, spot, lane, payload, create);
                }
                Resolution::Creating { revision } => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left == Duration::ZERO {
                        return Err(LifecycleError::unavailable(
                            spot,
                            "its creation did not finish in time",
                        ));
                    }
                    self.wait_creation(spot, revision, until)?;
                }
                Resolution::Unavailable { evidence, .. } => {
                    return Err(LifecycleError::unavailable(spot, evidence))
                }
                Resolution::Missing => match create {
                    None => return Err(LifecycleError::NotFound(spot)),
                    Some(kind) => {
                        // The creating call's message is the Spot's first.
                        let mut first = payload.take().map(|p| (lane, p));
                        let created = self.create(spot, kind, &mut first, view);
                        *payload = first.map(|(_, p)| p);
                        let (node, generation) = created?;
                        if payload.is_none() {
                            return Ok((node, generation));
                        }
                        *tried = Some(node);
                        if node == self.id {
                            let s = self.local(spot).ok_or(LifecycleError::NotFound(spot))?;
                            self.admit(&s, lane, payload)?;
                            return Ok((self.id, s.generation));
                        }
                        self.cache_route(spot, node);
                        return self.forward(node, spot, lane, payload, create);
                    }
                },
            }
        }
    }

    /// Refuses at once a message that no lane of its kind could ever hold, and one larger
    /// than the node's whole inbound budget — before any store read or creation (L6), so
    /// an oversized first message creates nothing.
    pub(super) fn check_fits(&self, lane: LaneKind, len: u64) -> Result<()> {
        let limits = match lane {
            LaneKind::Application => &self.config.application_lane,
            LaneKind::Lifecycle => &self.config.lifecycle_lane,
        };
        let queue = if len.saturating_add(ITEM_OVERHEAD_BYTES) > limits.bytes {
            lane.queue()
        } else if len > self.config.node_inbound_bytes {
            Queue::NodeInbound
        } else {
            return Ok(());
        };
        self.counters.reject(queue);
        Err(LifecycleError::CapacityExceeded { queue })
    }

    fn check_kind(&self, s: &LocalSpot, create: Option<SpotKind>) -> Result<()> {
        match create {
            Some(k) if k != s.kind() => Err(LifecycleError::WrongKind {
                spot: s.id(),
                expected: k,
                actual: s.kind(),
            }),
            _ => Ok(()),
        }
    }

    /// Remembers that `spot` is Ready on `node`. The cache is bounded: a full one starts
    /// over (a route not cached costs one store read, which a distributed store answers
    /// from its own watch-invalidated cache), so ids sent to once do not accumulate.
    fn cache_route(&self, spot: SpotId, node: NodeId) {
        let mut routes = self.routes.lock();
        if routes.len() >= ROUTE_CACHE_MAX && !routes.contains_key(&spot) {
            routes.clear();
        }
        routes.insert(spot, node);
    }

    /// Hands the message to node `node`; a stale answer or an unreachable node drops the
    /// cached route. A node the store reports down is not asked: `Unavailable` at once
    /// (the message did not run), whatever route led there.
    fn forward(
        &self,
        node: NodeId,
        spot: SpotId,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
    ) -> Result<(NodeId, u64)> {
        let r = if node == self.id {
            Err(LifecycleError::StaleRoute {
                spot,
                reason: StaleReason::NotOwner,
            })
        } else if self.store.node_status(node) == NodeStatus::Down {
            Err(LifecycleError::unavailable(
                spot,
                format!(
                    "its owner node {} is down (the location store says so)",
                    node.0
                ),
            ))
        } else {
            self.peer(node, spot)
                .and_then(|remote| remote.accept(spot, lane, payload, create))
        };
        match &r {
            Err(LifecycleError::StaleRoute { .. }) => {
                self.routes.lock().remove(&spot);
                self.counters.stale_routes.fetch_add(1, Relaxed);
            }
            // The owner cannot be reached: the next call asks the store again, which
            // knows when that node's lease has ended and the Spot may be created anew.
            Err(LifecycleError::Unavailable { .. }) => {
                self.routes.lock().remove(&spot);
            }
            _ => {}
        }
        r.map(|g| (node, g))
    }

    /// The receiving side of a routed message (L4): admitted only if this node owns the
    /// Spot now and its owner's lease runs. The object generation is not compared.
    /// `payload` is taken when admitted.
    pub(crate) fn accept(
        &self,
        spot: SpotId,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
    ) -> Result<u64> {
        self.check_open()?;
        let Some(s) = self.local(spot) else {
            self.counters.stale_routes.fetch_add(1, Relaxed);
            let reason = if self.term_runs() {
                StaleReason::NotOwner
            } else {
                StaleReason::LeaseExpired
            };
            return Err(LifecycleError::StaleRoute { spot, reason });
        };
        self.check_kind(&s, create)?;
        self.admit(&s, lane, payload)?;
        Ok(s.generation)
    }

    /// A refusal of Spot `s` (counted as a stale route).
    fn stale(&self, s: &LocalSpot, reason: StaleReason) -> LifecycleError {
        self.counters.stale_routes.fetch_add(1, Relaxed);
        LifecycleError::StaleRoute {
            spot: s.id(),
            reason,
        }
    }

    /// Admits one item to a local Spot's lane (taking it from `payload`), ringing its
    /// doorbell if none is rung: the item reaches the host in a burst of its Spot's
    /// messages under one record of the timer runtime, so it runs under the Spot's gate
    /// and lease check and in the same batches as its ticks.
    ///
    /// The reason of a refusal is decided under the Spot's lock: a Spot whose close has
    /// begun says `Closing` (or `LeaseExpired` when it closes because its authority
    /// ended), never what its close does to its owner meanwhile.
    pub(crate) fn admit(
        &self,
        s: &LocalSpot,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
    ) -> Result<()> {
        let mut st = s.state.lock();
        if s.close.closing() {
            let reason = if s.close.lost() {
                StaleReason::LeaseExpired
            } else {
                StaleReason::Closing
            };
            return Err(self.stale(s, reason));
        }
        if !self.term_runs() {
            return Err(self.stale(s, StaleReason::LeaseExpired));
        }
        if let Err(e) = s.owner.check() {
            drop(st);
            // Not closing, so not released: only its lease can have ended.
            if matches!(e, spot_timer_core::Error::LeaseExpired) {
                self.note_expired();
            }
            return Err(self.stale(s, StaleReason::LeaseExpired));
        }
        let r = self.admit_locked(s, &mut st, lane, payload);
        if matches!(
            r,
            Err(LifecycleError::StaleRoute {
                reason: StaleReason::LeaseExpired,
                ..
            })
        ) {
            drop(st);
            self.note_expired();
        }
        r
    }

    /// [`Node::admit`] with the Spot's lock already held (the creator admits the first
    /// message before anyone else can).
    pub(crate) fn admit_locked(
        &self,
        s: &LocalSpot,
        st: &mut super::SpotState,
        lane: LaneKind,
        payload: &mut Option<Box<[u8]>>,
    ) -> Result<()> {
        let len = payload.as_ref().map_or(0, |p| p.len() as u64);
        if s.close.closing() {
            return Err(self.stale(s, StaleReason::Closing));
        }
        let limits = match lane {
            LaneKind::Application => &self.config.application_lane,
            LaneKind::Lifecycle => &self.config.lifecycle_lane,
        };
        let cost = match st.pending().lane(lane).reserve(limits, lane, len) {
            Ok(c) => c,
            Err(e) => {
                st.settle();
                self.counters.reject(lane.queue());
                return Err(e);
            }
        };
        let give_back = |st: &mut super::SpotState| {
            st.pending().lane(lane).release(cost);
            st.settle();
        };
        let inbound = self.inbound_bytes.fetch_add(len, Relaxed) + len;
        if inbound > self.config.node_inbound_bytes {
            self.inbound_bytes.fetch_sub(len, Relaxed);
            give_back(st);
            self.counters.reject(Queue::NodeInbound);
            return Err(LifecycleError::CapacityExceeded {
                queue: Queue::NodeInbound,
            });
        }
        // The doorbell is rung under the Spot's lock so it and the queue cannot be
        // separated by a close; one rung doorbell serves every message queued behind it.
        if st.pending().queues.doorbell.is_none() {
            if let Err(e) = ring(s, st) {
                self.inbound_bytes.fetch_sub(len, Relaxed);
                give_back(st);
                return Err(match e {
                    // Not closing (checked under this lock), so not released: its lease.
                    spot_timer_core::Error::LeaseExpired | spot_timer_core::Error::Revoked => {
                        self.stale(s, StaleReason::LeaseExpired)
                    }
                    other => other.into(),
                });
            }
        }
        let item = Item {
            payload: payload.take().unwrap_or_default(),
            cost,
        };
        let q = &mut st.pending().queues;
        match lane {
            LaneKind::Application => q.application.push_back(item),
            LaneKind::Lifecycle => q.lifecycle.push_back(item),
        }
        s.mark_busy(st, &self.catalog);
        self.counters.messages_admitted.fetch_add(1, Relaxed);
        debug_assert!(cost >= ITEM_OVERHEAD_BYTES);
        Ok(())
    }
}

/// Rings Spot `s`'s doorbell (its lock held as `st`): a one-shot record of the timer
/// runtime, due now, whose hand-over takes the queued messages in a burst.
pub(super) fn ring(s: &LocalSpot, st: &mut super::SpotState) -> spot_timer_core::Result<()> {
    let key = DOORBELL_KEY | u64::from(s.next_doorbell());
    let id = s
        .owner
        .register_id(key, TimerSpec::after(Duration::ZERO), Work::Doorbell, None)?;
    st.pending().queues.doorbell = Some(id);
    Ok(())
}
