//! `spot_timer.lifecycle.Store`: the embedded Location Store with its in-process cluster.
//! Nodes started on the same store are simulated nodes of one cluster: they route to each
//! other and agree on where every Spot is.

use std::sync::Arc;

use pyo3::prelude::*;

use spot_lifecycle::{
    Cluster, EmbeddedStore, LocationState, LocationStore, NodeId, NodeStatus, SpotId,
};

use super::args::u64_arg;
use super::errors::to_py;
use super::types::types;

#[pyclass(module = "spot_timer.lifecycle", name = "Store", frozen, weakref)]
pub struct PyStore {
    pub store: Arc<EmbeddedStore>,
    pub cluster: Arc<Cluster>,
}

impl PyStore {
    pub fn new_store() -> Self {
        Self {
            store: Arc::new(EmbeddedStore::new()),
            cluster: Cluster::new(),
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

    /// Marks node `node_id` unusable while its lease runs: its Spots are Unavailable
    /// (nothing re-creates them until the lease is over).
    fn mark_down(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = u64_arg(py, node_id, "node_id")?;
        let store = self.store.clone();
        py.detach(move || store.mark_down(NodeId(id)));
        Ok(())
    }

    /// Ends node `node_id`'s lease: its authorities are released (its Spots' ids are
    /// Missing and may be created again).
    fn expire_node(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = u64_arg(py, node_id, "node_id")?;
        let store = self.store.clone();
        py.detach(move || store.expire_node(NodeId(id)));
        Ok(())
    }

    /// The store's record of Spot `spot_id`: `Location(node_id, kind, state, generation)`,
    /// or None when the id has no location (never created, or released).
    fn location<'py>(
        &self,
        py: Python<'py>,
        spot_id: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let id = u64_arg(py, spot_id, "spot_id")?;
        let store = self.store.clone();
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
        let store = self.store.clone();
        Ok(status_name(
            py.detach(move || store.node_status(NodeId(id))),
        ))
    }

    /// Number of location records (Creating or Ready).
    fn __len__(&self, py: Python<'_>) -> usize {
        let store = self.store.clone();
        py.detach(move || store.len())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<spot_timer.lifecycle.Store: {} locations>",
            self.__len__(py)
        )
    }
}
