//! `spot_timer.lifecycle.Store`: a Location Store for nodes.
//!
//! - `Store()`: the embedded store with its in-process cluster. Nodes started on the same
//!   store are simulated nodes of one cluster: they route to each other and agree on where
//!   every Spot is.
//! - `Store.etcd(endpoints, ...)`: the etcd store (`spot-lifecycle-etcd`), for nodes in
//!   several processes. Its nodes get no cluster: there is no transport between processes
//!   yet, so a message for a Spot another node owns ends with `StaleRouteError`.

use std::sync::Arc;

use pyo3::prelude::*;

use spot_lifecycle::{
    Cluster, EmbeddedStore, LocationState, LocationStore, NodeId, NodeStatus, SpotId,
};

use super::args::{u64_arg, Arg};
use super::errors::to_py;
use super::etcd::{self, SharedEtcd};
use super::types::types;
use crate::errors::{fail, Exc};

/// The store behind a `Store` object.
enum Backend {
    Embedded {
        store: Arc<EmbeddedStore>,
        cluster: Arc<Cluster>,
    },
    Etcd(Arc<SharedEtcd>),
}

#[pyclass(module = "spot_timer.lifecycle", name = "Store", frozen, weakref)]
pub struct PyStore {
    backend: Backend,
}

impl PyStore {
    pub fn new_store() -> Self {
        Self {
            backend: Backend::Embedded {
                store: Arc::new(EmbeddedStore::new()),
                cluster: Cluster::new(),
            },
        }
    }

    /// What a node started on this store is given: the store, and the in-process cluster
    /// of the embedded one.
    pub fn for_node(&self) -> (Arc<dyn LocationStore>, Option<Arc<Cluster>>) {
        match &self.backend {
            Backend::Embedded { store, cluster } => (store.clone(), Some(cluster.clone())),
            Backend::Etcd(store) => (store.clone(), None),
        }
    }

    fn kind_name(&self) -> &'static str {
        match &self.backend {
            Backend::Embedded { .. } => "embedded",
            Backend::Etcd(_) => "etcd",
        }
    }

    /// The embedded store, for the calls only it offers (`StoreKindError` on etcd, whose
    /// node leases and records live in etcd, not in this process).
    fn embedded(&self, py: Python<'_>, call: &str, why: &str) -> PyResult<Arc<EmbeddedStore>> {
        match &self.backend {
            Backend::Embedded { store, .. } => Ok(store.clone()),
            Backend::Etcd(_) => fail(
                py,
                Exc::StoreKind,
                format!("{call} needs the embedded store (Store()), not an etcd store: {why}"),
            ),
        }
    }
}

fn status_name(s: NodeStatus) -> &'static str {
    match s {
        NodeStatus::Alive => "alive",
        NodeStatus::Down => "down",
        NodeStatus::Gone => "gone",
    }
}

#[pymethods]
impl PyStore {
    #[new]
    fn new() -> Self {
        Self::new_store()
    }

    /// The etcd Location Store: connects to etcd (detached; an unreachable etcd raises
    /// LocationStoreError after `connect_timeout`), grants this process's owner lease
    /// (`lease_ttl`: whole seconds, at least 2) and keeps it alive. Every process of a
    /// cluster gives the same endpoints and `prefix`, and its nodes their own ids.
    #[staticmethod]
    #[pyo3(
        signature = (
            endpoints, *, prefix=Arg::Default, lease_ttl=Arg::Default,
            connect_timeout=Arg::Default, request_timeout=Arg::Default
        ),
        text_signature = "(endpoints, *, prefix='/spot-timer/', lease_ttl=10.0, \
            connect_timeout=5.0, request_timeout=5.0)"
    )]
    fn etcd(
        py: Python<'_>,
        endpoints: &Bound<'_, PyAny>,
        prefix: Arg<'_>,
        lease_ttl: Arg<'_>,
        connect_timeout: Arg<'_>,
        request_timeout: Arg<'_>,
    ) -> PyResult<Self> {
        let config = etcd::config(
            py,
            endpoints,
            prefix,
            lease_ttl,
            connect_timeout,
            request_timeout,
        )?;
        let store = etcd::connect(py, config)?;
        Ok(Self {
            backend: Backend::Etcd(Arc::new(store)),
        })
    }

    /// `"embedded"` or `"etcd"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind_name()
    }

    /// etcd requests made by the store's lifecycle calls so far (the steady-state send
    /// path makes none; keep-alives and the watch are not counted). 0 for the embedded
    /// store.
    #[getter]
    fn requests(&self) -> u64 {
        match &self.backend {
            Backend::Embedded { .. } => 0,
            Backend::Etcd(store) => store.requests(),
        }
    }

    /// Marks node `node_id` unusable while its lease runs: its Spots are Unavailable
    /// (nothing re-creates them until the lease is over). On etcd this is this process's
    /// view only (a transport's evidence), until the node's lease ends or it registers
    /// again.
    fn mark_down(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = NodeId(u64_arg(py, node_id, "node_id")?);
        match &self.backend {
            Backend::Embedded { store, .. } => {
                let store = store.clone();
                py.detach(move || store.mark_down(id));
            }
            Backend::Etcd(store) => store.mark_down(id),
        }
        Ok(())
    }

    /// Ends node `node_id`'s lease: its authorities are released (its Spots' ids are
    /// Missing and may be created again). Embedded store only.
    fn expire_node(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = u64_arg(py, node_id, "node_id")?;
        let store = self.embedded(
            py,
            "expire_node",
            "a node's lease is an etcd lease, which ends when its process stops keeping it \
             alive",
        )?;
        py.detach(move || store.expire_node(NodeId(id)));
        Ok(())
    }

    /// The store's record of Spot `spot_id`: `Location(node_id, kind, state, generation)`,
    /// or None when the id has no location (never created, or released). On etcd a read
    /// that is not cached asks etcd (UnavailableError when it cannot be reached).
    fn location<'py>(
        &self,
        py: Python<'py>,
        spot_id: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let id = u64_arg(py, spot_id, "spot_id")?;
        let (store, _) = self.for_node();
        let view = py
            .detach(move || store.read(SpotId(id)))
            .map_err(|e| to_py(py, e))?;
        let Some(r) = view.record else {
            return Ok(None);
        };
        let t = types(py)?;
        let state = match r.state {
            LocationState::Creating => "creating",
            LocationState::Ready => "ready",
        };
        t.location
            .bind(py)
            .call1((
                r.authority.node.0,
                t.spot_kind(py, r.kind),
                state,
                r.object_generation,
            ))
            .map(Some)
    }

    /// `"alive"`, `"down"` or `"gone"` (also for a node the store never saw).
    fn node_status(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        let id = u64_arg(py, node_id, "node_id")?;
        let (store, _) = self.for_node();
        Ok(status_name(
            py.detach(move || store.node_status(NodeId(id))),
        ))
    }

    /// Number of location records (Creating or Ready). Embedded store only.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.embedded(
            py,
            "len()",
            "its records are in etcd, shared with other processes",
        )?;
        Ok(py.detach(move || store.len()))
    }

    /// An embedded store is true when it holds a record (as its `len()` says); an etcd
    /// store is always true (it has no `len()`, and `if store:` must not raise).
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        match &self.backend {
            Backend::Embedded { .. } => Ok(self.__len__(py)? > 0),
            Backend::Etcd(_) => Ok(true),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match &self.backend {
            Backend::Embedded { .. } => {
                format!(
                    "<spot_timer.lifecycle.Store: {} locations>",
                    self.__len__(py)?
                )
            }
            Backend::Etcd(store) => {
                let c = store.config();
                format!(
                    "<spot_timer.lifecycle.Store: etcd at {}, prefix {:?}>",
                    c.endpoints.join(","),
                    c.prefix
                )
            }
        })
    }
}
