//! [`EtcdLocationStore`]: the Location Store on etcd.
//!
//! - Create-reservation: one transaction, "location key absent" → put `Creating` with
//!   the creator's lease. The put's revision is the authority epoch and the object
//!   generation.
//! - Ready commit: one transaction fenced by the reservation (create revision = epoch and
//!   mod revision = epoch, i.e. still that attempt's `Creating`) → put `Ready`.
//! - Release and abort: one transaction fenced by the epoch → delete.
//! - A node's term of authority is this store's lease ([`EtcdLocationStore::register_node`]
//!   hands it out as the node's `NodeTerm`); the end of the lease deletes its locations
//!   (etcd deletes the keys attached to it): the ids are Missing again. A node whose term
//!   ended registers again: the old lease is revoked (whatever it still carried goes at
//!   once) and a new one granted. Every write is made under the current lease and fenced
//!   by it: a reservation of an ended term is never committed, and a node's leaving
//!   deletes its key only while the key is still that term's. Before that, a node that misses its keep-alives (see
//!   `liveness`), or one a transport reported with [`EtcdLocationStore::mark_down`], is
//!   Down: its Spots are Unavailable, cached routes included.
//! - Reads of Ready records are cached and invalidated by the watch (see `view`), so the
//!   steady-state read path makes no etcd request; [`EtcdLocationStore::requests`] counts
//!   the requests that the Location Store methods made.
//! - This node's active count is written by a background task when it changed, never on
//!   the activation path.
//!
//! The trait is synchronous: every method runs its request on the store's own tokio
//! runtime (`block_on`, bounded by `request_timeout`). It must not be called from inside
//! a tokio runtime.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stop::Stop;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetResponse, PutOptions, Txn, TxnOp, TxnOpResponse,
    TxnResponse,
};
use parking_lot::Mutex;
use spot_lifecycle::store::{NodeAddress, Reservation, Reserved, StoreView};
use spot_lifecycle::{
    Authority, LifecycleError, LocationRecord, LocationState, LocationStore, NodeId, NodeStatus,
    NodeTerm, Result, SpotId, SpotKind,
};
use tokio::runtime::Runtime;

use crate::config::EtcdConfig;
use crate::keys::{Keys, LocationValue, NodeValue};
use crate::lease::{self, CurrentLease, LeaseState};
use crate::liveness;
use crate::request::{Answer, Requests};
use crate::view::View;
use crate::watch;

/// The Location Store on etcd (one instance per process; its nodes share its lease).
pub struct EtcdLocationStore {
    rt: Runtime,
    client: Client,
    keys: Keys,
    config: EtcdConfig,
    /// The current lease (the current term of the nodes registered here).
    lease: CurrentLease,
    /// Stops the current lease's keep-alive (fault injection: `halt_keep_alive`).
    lease_stop: Mutex<Arc<Stop>>,
    /// Held while a new lease is granted.
    granting: Mutex<()>,
    view: Arc<View>,
    /// The nodes registered through this store, and whether their count must be written.
    own: Arc<Mutex<HashMap<NodeId, (NodeValue, bool)>>>,
    requests: Requests,
    stop: Arc<Stop>,
}

impl EtcdLocationStore {
    /// Connects to etcd, grants this node's owner lease and starts its keep-alive and the
    /// watch. An unreachable etcd is a readable error after `connect_timeout`.
    pub fn connect(config: EtcdConfig) -> Result<Self> {
        config.validate()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("spot-etcd")
            .enable_all()
            .build()
            .map_err(|e| store_error(format!("etcd: cannot start the client runtime: {e}")))?;
        let keys = Keys::new(&config.prefix);
        let unreachable = |e: String| {
            store_error(format!(
                "etcd at {} cannot be reached: {e}",
                config.endpoints.join(",")
            ))
        };
        let start = async {
            let options = ConnectOptions::new()
                .with_connect_timeout(config.connect_timeout)
                .with_timeout(config.request_timeout);
            let mut client = Client::connect(&config.endpoints, Some(options)).await?;
            let granted_at = Instant::now();
            let grant = client
                .lease_grant(config.lease_ttl.as_secs() as i64, None)
                .await?;
            let (nodes, revision) = watch::read_nodes(&mut client, &keys).await?;
            Ok::<_, etcd_client::Error>((
                client,
                grant.id(),
                grant.ttl(),
                granted_at,
                nodes,
                revision,
            ))
        };
        let (client, lease_id, ttl, granted_at, nodes, revision) = match rt
            .block_on(async { tokio::time::timeout(config.connect_timeout, start).await })
        {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => {
                return Err(unreachable(format!(
                    "no answer within {:?}",
                    config.connect_timeout
                )))
            }
        };
        let first = Arc::new(LeaseState::new(
            lease_id,
            Duration::from_secs(ttl.max(1) as u64),
            granted_at,
        ));
        let lease: CurrentLease = Arc::new(parking_lot::RwLock::new(first.clone()));
        let view = Arc::new(View::default());
        view.restart(nodes, revision);
        let stop = Arc::new(Stop::default());
        let lease_stop = Arc::new(Stop::default());
        let own: Arc<Mutex<HashMap<NodeId, (NodeValue, bool)>>> = Arc::default();
        rt.spawn(lease::keep_alive(client.clone(), first, lease_stop.clone()));
        rt.spawn(watch::run(
            client.clone(),
            keys.clone(),
            view.clone(),
            revision,
            stop.clone(),
        ));
        rt.spawn(liveness::run(
            client.clone(),
            view.clone(),
            lease.clone(),
            stop.clone(),
        ));
        rt.spawn(flush_active(
            client.clone(),
            keys.clone(),
            own.clone(),
            lease.clone(),
            config.active_flush,
            stop.clone(),
        ));
        let requests = Requests::new(config.request_timeout, &config.endpoints);
        Ok(Self {
            requests,
            rt,
            client,
            keys,
            config,
            lease,
            lease_stop: Mutex::new(lease_stop),
            granting: Mutex::new(()),
            view,
            own,
            stop,
        })
    }

    /// The current lease.
    fn lease(&self) -> Arc<LeaseState> {
        self.lease.read().clone()
    }

    /// A running lease for a new term: the current one while it runs; else the old one is
    /// revoked (what it still carried goes now, not at its expiry) and a new one granted,
    /// with its keep-alive. `Unavailable` while etcd cannot be reached.
    fn running_lease(&self, node: NodeId) -> Result<Arc<LeaseState>> {
        // One granting at a time; readers of the current lease (every admission asks it)
        // never wait for etcd.
        let _granting = self.granting.lock();
        let current = self.lease();
        if current.valid() {
            return Ok(current);
        }
        let old = current.id;
        let ttl = self.config.lease_ttl.as_secs() as i64;
        let mut client = self.client.clone();
        let granted = self.rt.block_on(async {
            tokio::time::timeout(self.config.request_timeout, async {
                match client.lease_revoke(old).await {
                    // Gone already (expired): nothing left to revoke.
                    Ok(_) => {}
                    Err(etcd_client::Error::GRpcStatus(st))
                        if st.code() == tonic::Code::NotFound => {}
                    Err(e) => return Err(e),
                }
                let granted_at = Instant::now();
                let grant = client.lease_grant(ttl, None).await?;
                Ok((grant.id(), grant.ttl(), granted_at))
            })
            .await
        });
        let (id, ttl, granted_at) = match granted {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(unavailable_store(node, format!("{e}"))),
            Err(_) => {
                return Err(unavailable_store(
                    node,
                    format!("no answer within {:?}", self.config.request_timeout),
                ))
            }
        };
        let fresh = Arc::new(LeaseState::new(
            id,
            Duration::from_secs(ttl.max(1) as u64),
            granted_at,
        ));
        let stop = Arc::new(Stop::default());
        self.rt.spawn(lease::keep_alive(
            self.client.clone(),
            fresh.clone(),
            stop.clone(),
        ));
        *self.lease_stop.lock() = stop;
        *self.lease.write() = fresh.clone();
        Ok(fresh)
    }

    /// etcd requests made by the Location Store methods so far (keep-alives, the watch
    /// and the background count writes are not counted: they are on no request path).
    pub fn requests(&self) -> u64 {
        self.requests.count()
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// Keep-alive round trips of this node's lease so far.
    pub fn keep_alives(&self) -> u64 {
        self.lease()
            .keep_alives
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This node's current etcd lease id.
    pub fn lease_id(&self) -> i64 {
        self.lease().id
    }

    /// True while this node's current lease is known to run; false once it is over (or
    /// once its last confirmed expiry passed, e.g. after the process was stopped) until a
    /// node registers again and a new lease is granted.
    pub fn lease_valid(&self) -> bool {
        self.lease().valid()
    }

    /// A transport's evidence: `node` cannot be reached while its lease runs. Its Spots
    /// are Unavailable until its lease ends (its key is deleted) or it registers again.
    pub fn mark_down(&self, node: NodeId) {
        self.view.known.lock().down.insert(node);
    }

    /// Fault injection for tests: this store stops keeping its lease alive, as a node
    /// that died would (nothing is revoked; the lease runs out on its own).
    pub fn halt_keep_alive(&self) {
        self.lease_stop.lock().fire();
    }

    /// Runs one request (see `request`).
    fn call<T, F, Fut>(&self, op: F) -> std::result::Result<Answer<T>, String>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        self.requests.run(&self.rt, &self.client, op)
    }

    fn get(&self, spot: SpotId) -> std::result::Result<Answer<GetResponse>, String> {
        let key = self.keys.location(spot);
        self.call(move |mut c| {
            let key = key.clone();
            async move { c.get(key, None).await }
        })
    }

    fn txn(&self, txn: Txn) -> std::result::Result<Answer<TxnResponse>, String> {
        self.call(move |mut c| {
            let txn = txn.clone();
            async move { c.txn(txn).await }
        })
    }

    /// The current lease while it runs; `Unavailable` (nothing ran) once it is over,
    /// until the node has taken a new term.
    fn require_lease(&self, spot: SpotId) -> Result<Arc<LeaseState>> {
        let lease = self.lease();
        if lease.valid() {
            return Ok(lease);
        }
        Err(unavailable(
            spot,
            "this node's etcd lease is over: its term of authority ended, and it has not \
             taken a new one yet"
                .into(),
        ))
    }

    fn require_own(&self, node: NodeId) -> Result<()> {
        if self.own.lock().contains_key(&node) {
            return Ok(());
        }
        Err(store_error(format!(
            "node {} is not a live node of this store",
            node.0
        )))
    }

    fn owner_status(&self, node: NodeId) -> NodeStatus {
        if self.view.is_down(node) {
            NodeStatus::Down
        } else {
            NodeStatus::Alive
        }
    }

    /// A transaction on `spot`'s location fenced by `epoch` (its create revision, and
    /// its mod revision too when `creating`), running `then` when the fence holds and
    /// reading the key when it does not. Returns whether it held, the revision, the key's
    /// record when read, and whether the request was retried.
    fn fenced(
        &self,
        spot: SpotId,
        epoch: u64,
        creating: bool,
        then: TxnOp,
    ) -> std::result::Result<Fenced, String> {
        let key = self.keys.location(spot);
        let mut when = vec![Compare::create_revision(
            key.clone(),
            CompareOp::Equal,
            epoch as i64,
        )];
        if creating {
            when.push(Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                epoch as i64,
            ));
        }
        let txn = Txn::new()
            .when(when)
            .and_then(vec![then])
            .or_else(vec![TxnOp::get(key, None)]);
        let answer = self.txn(txn)?;
        let resp = answer.value;
        let current = first_kv(&resp).map(|kv| {
            (
                kv.create_revision() as u64,
                LocationValue::decode(kv.value()),
            )
        });
        Ok(Fenced {
            held: resp.succeeded(),
            revision: resp.header().map_or(0, |h| h.revision()) as u64,
            current,
            retried: answer.retried,
        })
    }
}

/// The outcome of a fenced transaction.
struct Fenced {
    held: bool,
    revision: u64,
    /// When the fence did not hold: the key's create revision and value, if it exists.
    current: Option<(u64, Option<LocationValue>)>,
    retried: bool,
}

impl EtcdLocationStore {
    /// The view of `spot` from its key as etcd answered it at revision `read_at` (None:
    /// no key); a Ready record of a live owner is cached as its route.
    fn view_of(
        &self,
        spot: SpotId,
        kv: Option<&etcd_client::KeyValue>,
        read_at: u64,
    ) -> Result<StoreView> {
        let Some(kv) = kv else {
            return Ok(StoreView {
                record: None,
                owner_status: None,
                revision: read_at,
            });
        };
        let value = LocationValue::decode(kv.value()).ok_or_else(|| {
            store_error(format!(
                "spot {spot}: the location record in etcd is not readable ({:?})",
                String::from_utf8_lossy(kv.value())
            ))
        })?;
        let epoch = kv.create_revision() as u64;
        let changed_at = kv.mod_revision() as u64;
        let record = LocationRecord {
            kind: value.kind,
            state: value.state,
            authority: Authority {
                node: value.node,
                epoch,
            },
            object_generation: epoch,
        };
        let status = self.owner_status(value.node);
        if value.state == LocationState::Ready && status == NodeStatus::Alive {
            self.view.cache(spot, record, changed_at, read_at);
        }
        Ok(StoreView {
            record: Some(record),
            owner_status: Some(status),
            revision: changed_at,
        })
    }
}

fn store_error(message: String) -> LifecycleError {
    LifecycleError::Store(message.into())
}

/// The key a transaction's `or_else` read, if it exists.
fn first_kv(resp: &TxnResponse) -> Option<etcd_client::KeyValue> {
    match resp.op_responses().into_iter().next() {
        Some(TxnOpResponse::Get(get)) => get.kvs().first().cloned(),
        _ => None,
    }
}

fn unavailable(spot: SpotId, evidence: String) -> LifecycleError {
    LifecycleError::unavailable(spot, evidence)
}

/// The store cannot grant or use a term for `node` now (etcd unreachable).
fn unavailable_store(node: NodeId, e: String) -> LifecycleError {
    LifecycleError::unavailable(
        SpotId(u64::MAX),
        format!(
            "node {}: etcd cannot be reached to take a term ({e})",
            node.0
        ),
    )
}

impl LocationStore for EtcdLocationStore {
    fn register_node(
        &self,
        node: NodeId,
        active_cap: u64,
        address: Option<std::net::SocketAddr>,
    ) -> Result<Arc<dyn NodeTerm>> {
        let lease = self.running_lease(node)?;
        let value = NodeValue {
            cap: active_cap,
            active: 0,
            address,
        };
        let key = self.keys.node(node);
        let key_again = key.clone();
        let txn = Txn::new()
            .when(vec![Compare::version(key.clone(), CompareOp::Equal, 0)])
            .and_then(vec![TxnOp::put(
                key,
                value.encode(),
                Some(PutOptions::new().with_lease(lease.id)),
            )])
            .or_else(vec![TxnOp::get(key_again, None)]);
        let answer = self.txn(txn).map_err(|e| unavailable_store(node, e))?;
        // A retried put may have been applied by the attempt whose answer was lost: the
        // key under this node's own lease is that put.
        let ours = answer.value.succeeded()
            || (answer.retried && first_kv(&answer.value).is_some_and(|kv| kv.lease() == lease.id));
        if !ours {
            return Err(store_error(format!(
                "node id {} is already live in this store (another process holds it)",
                node.0
            )));
        }
        self.own.lock().insert(node, (value, false));
        let mut k = self.view.known.lock();
        k.nodes.insert(node, value);
        k.down.remove(&node);
        Ok(lease)
    }

    fn node_address(&self, node: NodeId) -> NodeAddress {
        let of = |v: &NodeValue| {
            v.address
                .map_or(NodeAddress::NotListening, NodeAddress::Listening)
        };
        if let Some((v, _)) = self.own.lock().get(&node) {
            return of(v);
        }
        if let Some(v) = self.view.known.lock().nodes.get(&node) {
            return of(v);
        }
        // A node this process's watch has not shown yet (it registered a moment ago):
        // asked once from etcd, without caching it (the watch brings it, and its end).
        let key = self.keys.node(node);
        let Ok(answer) = self.call(move |mut c| {
            let key = key.clone();
            async move { c.get(key, None).await }
        }) else {
            return NodeAddress::Unknown;
        };
        match answer
            .value
            .kvs()
            .first()
            .and_then(|kv| NodeValue::decode(kv.value()))
        {
            Some(v) => of(&v),
            None => NodeAddress::Unknown,
        }
    }

    fn remove_node(&self, node: NodeId, term: u64) {
        // Only the term that registered the node leaves: a stale node object of an ended
        // term never removes a later term's registration (here, or in etcd).
        if self.lease().number() != term || self.own.lock().remove(&node).is_none() {
            return;
        }
        self.view.known.lock().nodes.remove(&node);
        let key = self.keys.node(node);
        let txn = Txn::new()
            .when(vec![Compare::lease(
                key.clone(),
                CompareOp::Equal,
                term as i64,
            )])
            .and_then(vec![TxnOp::delete(key, None)]);
        let _ = self.txn(txn);
    }

    fn set_active(&self, node: NodeId, active: u64) {
        let mut own = self.own.lock();
        if let Some((value, dirty)) = own.get_mut(&node) {
            if value.active != active {
                value.active = active;
                *dirty = true;
                let v = *value;
                drop(own);
                self.view.known.lock().nodes.insert(node, v);
            }
        }
    }

    fn place(&self, preferred: NodeId) -> Option<NodeId> {
        let own = self.own.lock().clone();
        let k = self.view.known.lock();
        let value = |id: &NodeId| {
            own.get(id)
                .map(|(v, _)| *v)
                .or_else(|| k.nodes.get(id).copied())
        };
        let open = |id: &NodeId| {
            !k.down.contains(id)
                && !k.missed.contains(id)
                && value(id).is_some_and(|v| v.active < v.cap)
        };
        if open(&preferred) {
            return Some(preferred);
        }
        let known = k
            .nodes
            .keys()
            .chain(own.keys())
            .filter(|id| open(id))
            .min_by_key(|id| (value(id).map_or(u64::MAX, |v| v.active), **id))
            .copied();
        if known.is_some() {
            return known;
        }
        let (down, missed) = (k.down.clone(), k.missed.clone());
        drop(k);
        // Every node this process knows is full: one the watch has not shown yet (it
        // registered a moment ago) may not be. Asked once from etcd — only on this path.
        let keys = self.keys.clone();
        let (nodes, _) = self
            .call(move |mut c| {
                let keys = keys.clone();
                async move { watch::read_nodes(&mut c, &keys).await }
            })
            .ok()?
            .value;
        nodes
            .into_iter()
            .filter(|(id, (v, _))| {
                !own.contains_key(id)
                    && !down.contains(id)
                    && !missed.contains(id)
                    && v.active < v.cap
            })
            .min_by_key(|(id, (v, _))| (v.active, *id))
            .map(|(id, _)| id)
    }

    fn node_status(&self, node: NodeId) -> NodeStatus {
        if self.own.lock().contains_key(&node) {
            return if self.lease().valid() {
                NodeStatus::Alive
            } else {
                NodeStatus::Gone
            };
        }
        if self.view.is_down(node) {
            return NodeStatus::Down;
        }
        let k = self.view.known.lock();
        if k.nodes.contains_key(&node) {
            NodeStatus::Alive
        } else {
            NodeStatus::Gone
        }
    }

    fn read(&self, spot: SpotId) -> Result<StoreView> {
        if let Some(view) = self.read_local(spot) {
            return Ok(view);
        }
        let resp = self
            .get(spot)
            .map_err(|e| unavailable(spot, format!("the location store cannot be used ({e})")))?
            .value;
        let read_at = resp.header().map_or(0, |h| h.revision()) as u64;
        self.view_of(spot, resp.kvs().first(), read_at)
    }

    fn read_local(&self, spot: SpotId) -> Option<StoreView> {
        let (record, revision) = self.view.route(spot)?;
        Some(StoreView {
            record: Some(record),
            owner_status: Some(self.owner_status(record.authority.node)),
            revision,
        })
    }

    fn reserve(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Option<Reservation>> {
        Ok(match self.reserve_or_read(spot, kind, node)? {
            Reserved::Won(r) => Some(r),
            Reserved::Taken(_) => None,
        })
    }

    fn reserve_or_read(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Reserved> {
        self.require_own(node)?;
        let lease = self.require_lease(spot)?;
        let key = self.keys.location(spot);
        let key_again = key.clone();
        let value = LocationValue {
            state: LocationState::Creating,
            kind,
            node,
        };
        let txn = Txn::new()
            .when(vec![Compare::version(key.clone(), CompareOp::Equal, 0)])
            .and_then(vec![TxnOp::put(
                key,
                value.encode(),
                Some(PutOptions::new().with_lease(lease.id)),
            )])
            .or_else(vec![TxnOp::get(key_again, None)]);
        let answer = self
            .txn(txn)
            .map_err(|e| unavailable(spot, format!("the location store cannot be used ({e})")))?;
        let resp = answer.value;
        let epoch = if resp.succeeded() {
            resp.header().map_or(0, |h| h.revision()) as u64
        } else {
            // After a retry, a reservation of this node under its own lease that is still
            // Creating is this attempt's own put, whose answer was lost (a node runs one
            // creation attempt per id at a time).
            let kv = first_kv(&resp);
            match &kv {
                Some(kv)
                    if answer.retried
                        && kv.lease() == lease.id
                        && LocationValue::decode(kv.value()) == Some(value) =>
                {
                    kv.create_revision() as u64
                }
                _ => {
                    // The "else" branch read what holds the id, at this revision.
                    let read_at = resp.header().map_or(0, |h| h.revision()) as u64;
                    return Ok(Reserved::Taken(self.view_of(spot, kv.as_ref(), read_at)?));
                }
            }
        };
        Ok(Reserved::Won(Reservation {
            spot,
            kind,
            generation: epoch,
            authority: Authority { node, epoch },
            term: lease.number(),
        }))
    }

    fn commit_ready(&self, r: &Reservation) -> Result<LocationRecord> {
        let lease = self.require_lease(r.spot)?;
        if lease.number() != r.term {
            return Err(store_error(format!(
                "spot {}: the term that reserved it has ended",
                r.spot
            )));
        }
        let value = LocationValue {
            state: LocationState::Ready,
            kind: r.kind,
            node: r.authority.node,
        };
        let put = TxnOp::put(
            self.keys.location(r.spot),
            value.encode(),
            Some(PutOptions::new().with_lease(lease.id)),
        );
        let f = self
            .fenced(r.spot, r.authority.epoch, true, put)
            .map_err(|e| unavailable(r.spot, format!("the location store cannot be used ({e})")))?;
        // A retried commit may have been applied already: the record is then this
        // authority's Ready.
        let applied = f
            .current
            .is_some_and(|(epoch, v)| epoch == r.authority.epoch && v == Some(value));
        let revision = f.revision;
        let done = f.held || (f.retried && applied);
        if !done {
            return Err(store_error(format!(
                "spot {}: the reservation was fenced off (its record changed or its lease ended)",
                r.spot
            )));
        }
        let record = LocationRecord {
            kind: r.kind,
            state: LocationState::Ready,
            authority: r.authority,
            object_generation: r.generation,
        };
        self.view.cache(r.spot, record, revision, revision);
        Ok(record)
    }

    fn abort(&self, r: &Reservation) -> Result<()> {
        self.view.forget(r.spot);
        let del = TxnOp::delete(self.keys.location(r.spot), None);
        self.fenced(r.spot, r.authority.epoch, false, del)
            .map(drop)
            .map_err(|e| unavailable(r.spot, format!("the location store cannot be used ({e})")))
    }

    fn abort_orphan(&self, spot: SpotId, authority: Authority) -> Result<()> {
        self.view.forget(spot);
        let del = TxnOp::delete(self.keys.location(spot), None);
        // Fenced on the Creating put itself (create and mod revision): a record committed
        // Ready meanwhile stays.
        self.fenced(spot, authority.epoch, true, del)
            .map(drop)
            .map_err(|e| unavailable(spot, format!("the location store cannot be used ({e})")))
    }

    fn release(&self, spot: SpotId, authority: Authority) -> Result<()> {
        self.view.forget(spot);
        let del = TxnOp::delete(self.keys.location(spot), None);
        let f = self
            .fenced(spot, authority.epoch, false, del)
            .map_err(|e| unavailable(spot, format!("the location store cannot be used ({e})")))?;
        // A retried delete may have been applied already: the key is then gone.
        let done = f.held || (f.retried && f.current.is_none());
        if !done {
            return Err(store_error(format!(
                "spot {spot}: the released authority is not the current one"
            )));
        }
        Ok(())
    }

    fn wait_change(&self, spot: SpotId, seen: u64, timeout: Duration) {
        let until = Instant::now() + timeout;
        self.view.begin_wait(spot, seen);
        // A change may have been applied before this waiter was registered: look once.
        let unchanged = match self.get(spot) {
            Ok(answer) => answer
                .value
                .kvs()
                .first()
                .is_some_and(|kv| kv.mod_revision() as u64 == seen),
            Err(_) => false,
        };
        if unchanged {
            self.view.wait(spot, seen, until);
        }
        self.view.end_wait(spot);
    }
}

impl Drop for EtcdLocationStore {
    fn drop(&mut self) {
        self.stop.fire();
        self.lease_stop.lock().fire();
        // A graceful end: revoking the lease deletes whatever is still attached to it.
        let lease = self.lease();
        if lease.valid() {
            let mut client = self.client.clone();
            let id = lease.id;
            let _ = self.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(2), client.lease_revoke(id)).await
            });
        }
    }
}

/// Writes this process's nodes' active counts when they changed.
async fn flush_active(
    mut client: Client,
    keys: Keys,
    own: Arc<Mutex<HashMap<NodeId, (NodeValue, bool)>>>,
    lease: CurrentLease,
    every: Duration,
    stop: Arc<Stop>,
) {
    loop {
        tokio::select! {
            _ = stop.wait() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let current = lease.read().clone();
        if !current.valid() {
            continue; // until a new term is granted
        }
        let dirty: Vec<(NodeId, NodeValue)> = own
            .lock()
            .iter_mut()
            .filter(|(_, (_, d))| *d)
            .map(|(id, (v, d))| {
                *d = false;
                (*id, *v)
            })
            .collect();
        for (node, value) in dirty {
            // Only over this term's own registration: a node of an ended term never writes
            // over the registration of the node id's later term (another process).
            let key = keys.node(node);
            let txn = Txn::new()
                .when(vec![Compare::lease(
                    key.clone(),
                    CompareOp::Equal,
                    current.id,
                )])
                .and_then(vec![TxnOp::put(
                    key,
                    value.encode(),
                    Some(PutOptions::new().with_lease(current.id)),
                )]);
            if client.txn(txn).await.is_err() {
                if let Some((_, d)) = own.lock().get_mut(&node) {
                    *d = true;
                }
            }
        }
    }
}
