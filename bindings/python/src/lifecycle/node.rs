//! `spot_timer.lifecycle.Node`: one node of the Spot lifecycle (`spot_lifecycle::Node`).
//!
//! Every call that reaches the node detaches from the interpreter first: a call may wait
//! (for another caller's creation of the same id, for the store, for the scheduler) and
//! may run the Python factory or closing callback, which attach for the call only. No
//! lock of this module is held across Python code.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::PyTraverseError;

use spot_lifecycle::{
    LaneKind, LaneLimits, Node, NodeConfig, NodeId, RelocationTarget, Result as LResult, SpotId,
    SpotKind,
};
use spot_timer_core::ClockKind;

use super::args::{
    bool_arg, kind_arg, lane_arg, limits_arg, listen_arg, opt_seconds, payload_arg, positive,
    seconds, u64_arg, Arg,
};
use super::callbacks::Callbacks;
use super::dispatch::Delivery;
use super::errors::{clear_factory_error, closed, to_py};
use super::store::PyStore;
use super::types::types;
use crate::errors::{fail, py_error, Exc};
use crate::owner::check_callable;

#[pyclass(module = "spot_timer.lifecycle", name = "Node", frozen, weakref)]
pub struct PyNode {
    node: Arc<Node>,
    node_id: u64,
    entry: SpotId,
    manual: bool,
    store: Py<PyStore>,
    callbacks: Arc<Callbacks>,
    delivery: Delivery,
    closed: AtomicBool,
}

impl PyNode {
    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed(py));
        }
        Ok(())
    }

    /// Runs `f` on the node, detached; maps its error.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Node) -> LResult<T> + Send,
    ) -> PyResult<T> {
        self.check_open(py)?;
        let node = &*self.node;
        py.detach(|| f(node)).map_err(|e| to_py(py, e))
    }

    /// As [`PyNode::call`] for a call that may create a Spot (and run the factory).
    fn creating<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Node) -> LResult<T> + Send,
    ) -> PyResult<T> {
        clear_factory_error();
        let r = self.call(py, f);
        clear_factory_error();
        r
    }

    /// Shuts the node down (detached): the rest of a batch a handler stopped completes
    /// NOT_STARTED, then `Node::shutdown` (every Spot closes with
    /// `CloseReason.NODE_SHUTDOWN`, the timer runtime stops, the node leaves its store).
    fn stop(&self, py: Option<Python<'_>>) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let delivery = &self.delivery;
        let node = &*self.node;
        let work = || {
            delivery.stop();
            node.shutdown();
        };
        match py {
            Some(py) => py.detach(work),
            None => work(),
        }
    }
}

#[pymethods]
impl PyNode {
    /// Starts node `node_id` on `store` (None: a private store) and creates its Entry
    /// Spot `entry_spot`. See `spot_timer/lifecycle.pyi` for every argument.
    #[new]
    #[pyo3(
        signature = (
            node_id, entry_spot, store=None, *, manual_clock=Arg::Default,
            application_lane=Arg::Default, lifecycle_lane=Arg::Default,
            node_inbound_bytes=Arg::Default, active_cap=Arg::Default,
            instance_idle_timeout=Arg::Default, creation_wait=Arg::Default,
            owner_lease=None, factory=None, on_close=None, exception_handler=None,
            listen=None
        ),
        text_signature = "(node_id, entry_spot, store=None, *, manual_clock=False, \
            application_lane=(1024, 67108864), lifecycle_lane=(128, 4194304), \
            node_inbound_bytes=1073741824, active_cap=100000, instance_idle_timeout=900.0, \
            creation_wait=5.0, owner_lease=None, factory=None, on_close=None, \
            exception_handler=None, listen=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        entry_spot: &Bound<'_, PyAny>,
        store: Option<&Bound<'_, PyAny>>,
        manual_clock: Arg<'_>,
        application_lane: Arg<'_>,
        lifecycle_lane: Arg<'_>,
        node_inbound_bytes: Arg<'_>,
        active_cap: Arg<'_>,
        instance_idle_timeout: Arg<'_>,
        creation_wait: Arg<'_>,
        owner_lease: Option<&Bound<'_, PyAny>>,
        factory: Option<&Bound<'_, PyAny>>,
        on_close: Option<&Bound<'_, PyAny>>,
        exception_handler: Option<&Bound<'_, PyAny>>,
        listen: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Every default is the crate's (`text_signature` above shows them).
        let defaults = NodeConfig::default();
        let node_id = u64_arg(py, node_id, "node_id")?;
        let manual_clock = match manual_clock.given() {
            Some(v) => bool_arg(py, v, "manual_clock")?,
            None => false,
        };
        let entry = SpotId(u64_arg(py, entry_spot, "entry_spot")?);
        let store: Py<PyStore> = match store.filter(|s| !s.is_none()) {
            Some(s) => s
                .cast::<PyStore>()
                .map_err(|_| {
                    py_error(
                        py,
                        Exc::ArgumentType,
                        format!(
                            "store must be a spot_timer.lifecycle.Store or None, not {}",
                            s.get_type()
                                .name()
                                .map(|n| n.to_string())
                                .unwrap_or_default()
                        ),
                    )
                })?
                .clone()
                .unbind(),
            None => Py::new(py, PyStore::new_store())?,
        };
        let application_lane = limits_arg(
            py,
            application_lane.given(),
            "application_lane",
            LaneLimits::APPLICATION,
        )?;
        let lifecycle_lane = limits_arg(
            py,
            lifecycle_lane.given(),
            "lifecycle_lane",
            LaneLimits::LIFECYCLE,
        )?;
        let node_inbound_bytes = match node_inbound_bytes.given() {
            Some(v) => u64_arg(py, v, "node_inbound_bytes")?,
            None => defaults.node_inbound_bytes,
        };
        let active_cap = match active_cap.given() {
            Some(v) => u64_arg(py, v, "active_cap")?,
            None => defaults.active_cap,
        };
        let instance_idle_timeout = match instance_idle_timeout.given() {
            Some(v) => opt_seconds(py, v, "instance_idle_timeout")?,
            None => defaults.instance_idle_timeout,
        };
        let creation_wait = match creation_wait.given() {
            Some(v) => seconds(py, v, "creation_wait")?,
            None => defaults.creation_wait,
        };
        let owner_lease = match owner_lease {
            Some(v) => positive(py, opt_seconds(py, v, "owner_lease")?, "owner_lease")?,
            None => None,
        };
        let listen = match listen.filter(|v| !v.is_none()) {
            Some(v) => listen_arg(py, v)?,
            None => None,
        };
        let callable =
            |obj: Option<&Bound<'_, PyAny>>, name: &str| -> PyResult<Option<Py<PyAny>>> {
                match obj.filter(|o| !o.is_none()) {
                    Some(o) => {
                        check_callable(py, o, name)?;
                        Ok(Some(o.clone().unbind()))
                    }
                    None => Ok(None),
                }
            };
        let factory = callable(factory, "factory")?;
        let on_close = callable(on_close, "on_close")?;
        let exception_handler = callable(exception_handler, "exception_handler")?;
        let (has_factory, has_on_close) = (factory.is_some(), on_close.is_some());
        let callbacks = Callbacks::new(factory, on_close, exception_handler);
        let config = NodeConfig {
            node: NodeId(node_id),
            entry,
            clock: if manual_clock {
                ClockKind::manual()
            } else {
                ClockKind::Real
            },
            application_lane,
            lifecycle_lane,
            node_inbound_bytes,
            active_cap,
            instance_idle_timeout,
            creation_wait,
            owner_lease,
            factory: has_factory.then(|| callbacks.factory()),
            on_close: has_on_close.then(|| callbacks.on_close()),
            listen,
        };
        let (s, c) = store.get().for_node();
        clear_factory_error();
        let started = py.detach(move || Node::start(config, s, c));
        let r = match started {
            Ok(node) => Ok(Self {
                node,
                node_id,
                entry,
                manual: manual_clock,
                store,
                callbacks,
                delivery: Delivery::default(),
                closed: AtomicBool::new(false),
            }),
            Err(e) => Err(to_py(py, e)),
        };
        clear_factory_error();
        r
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.store)?;
        self.callbacks.visit(&visit)
    }

    fn __clear__(&self) {
        let taken = self.callbacks.take_all();
        drop(taken);
    }

    /// This node's id in the cluster.
    #[getter]
    fn node_id(&self) -> u64 {
        self.node_id
    }

    /// The id of the node's Entry Spot.
    #[getter]
    fn entry_spot(&self) -> u64 {
        self.entry.0
    }

    /// The store the node runs on.
    #[getter]
    fn store(&self, py: Python<'_>) -> Py<PyStore> {
        self.store.clone_ref(py)
    }

    /// True once `shutdown()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// True if the node runs on a manual clock (`advance()`).
    #[getter]
    fn manual_clock(&self) -> bool {
        self.manual
    }

    /// The address other processes' nodes reach this node at ("127.0.0.1:40123", the
    /// port bound when `listen` asked for port 0); None when it does not listen.
    #[getter]
    fn address(&self) -> Option<String> {
        self.node.address().map(|a| a.to_string())
    }

    /// Sends an application message to a Ready Spot. A missing id raises NotFoundError
    /// (nothing is created); a route to a node that no longer owns the Spot raises
    /// StaleRouteError (the message did not run and is not retried).
    fn send(
        &self,
        py: Python<'_>,
        spot_id: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let payload = payload_arg(py, payload)?;
        self.check_open(py)?;
        // A Spot of this node is reached without releasing the GIL: that path never waits
        // for Python code (no creation, no store); any other goes the detached way.
        match self.node.send_here(id, payload) {
            Ok(r) => r.map_err(|e| to_py(py, e)),
            Err(payload) => self.call(py, move |n| n.send(id, payload)),
        }
    }

    /// Sends lifecycle work to a Ready Spot (its lifecycle lane, served first).
    fn send_lifecycle(
        &self,
        py: Python<'_>,
        spot_id: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let payload = payload_arg(py, payload)?;
        self.call(py, move |n| n.send_lifecycle(id, payload))
    }

    /// The instance intent: sends to Instance Spot `spot_id`, creating it first if it does
    /// not exist (the factory runs once however many callers race). Returns the Spot's
    /// object generation.
    fn send_or_create(
        &self,
        py: Python<'_>,
        spot_id: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let payload = payload_arg(py, payload)?;
        self.creating(py, move |n| {
            n.send_or_create(id, payload).map(|s| s.generation())
        })
    }

    /// Creates User Spot `spot_id` (or finds it if it exists). Returns its generation.
    fn create_user_spot(&self, py: Python<'_>, spot_id: &Bound<'_, PyAny>) -> PyResult<u64> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        self.creating(py, move |n| n.create_user_spot(id).map(|s| s.generation()))
    }

    /// The kind of Spot `spot_id` if it is active on this node (else NotFoundError).
    fn spot_kind<'py>(
        &self,
        py: Python<'py>,
        spot_id: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let kind = self.call(py, move |n| n.spot_kind(id))?;
        Ok(types(py)?.spot_kind(py, kind))
    }

    /// Closes Spot `spot_id` of `kind` (USER or INSTANCE) on this node: its closing
    /// callback runs (`CloseReason.CLOSED`), its timers end, its queued messages are
    /// dropped (counted), its location is released. False if a close of it was already
    /// in progress. The Entry Spot closes only with its node (WrongKindError).
    fn close_spot(
        &self,
        py: Python<'_>,
        spot_id: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let kind = kind_arg(py, kind)?;
        if kind == SpotKind::Entry {
            let kind_obj = types(py)?.spot_kind(py, kind);
            let kw = PyDict::new(py);
            kw.set_item("spot_id", id.0)?;
            kw.set_item("expected", &kind_obj)?;
            kw.set_item("actual", &kind_obj)?;
            return Err(crate::errors::py_error_with(
                py,
                Exc::WrongKind,
                format!("spot {id} is an Entry spot: the Entry Spot closes only with its node"),
                Some(&kw),
            ));
        }
        self.call(py, move |n| match kind {
            SpotKind::User => n.user(id).and_then(|s| n.close_user_spot(s)),
            _ => n.instance(id).and_then(|s| n.close_instance(s)),
        })
    }

    /// Registers a repeating timer of local Spot `spot_id` (key below 2**63): each tick is
    /// application work of the Spot, handed to `dispatch` as a "tick" record carrying
    /// `value`. The timer ends when the Spot closes.
    #[pyo3(
        signature = (spot_id, key, period, value=Arg::Default),
        text_signature = "($self, spot_id, key, period, value=0)"
    )]
    fn every(
        &self,
        py: Python<'_>,
        spot_id: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        period: &Bound<'_, PyAny>,
        value: Arg<'_>,
    ) -> PyResult<()> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let key = u64_arg(py, key, "key")?;
        let period = seconds(py, period, "period")?;
        let value = match value.given() {
            Some(v) => u64_arg(py, v, "value")?,
            None => 0,
        };
        self.call(py, move |n| n.every_of(id, key, period, value).map(drop))
    }

    /// One idle-eviction pass: examines at most 64 Instance Spots and evicts those idle
    /// past `instance_idle_timeout` (closing callback with `CloseReason.IDLE_EVICTED`
    /// first). Returns how many it evicted.
    fn evict_idle(&self, py: Python<'_>) -> PyResult<usize> {
        self.call(py, |n| Ok(n.evict_idle()))
    }

    /// Manual clock only: moves the node's clock forward and makes what came due ready.
    fn advance(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = seconds(py, by, "by")?;
        self.call(py, move |n| n.advance(by))
    }

    /// The node's clock in seconds.
    fn now(&self) -> f64 {
        self.node.now() as f64 / 1e9
    }

    /// What the node would hand over if it drained now: its User and Instance Spots and
    /// the actors of its Entry Spot — never the Entry Spot itself.
    fn relocation_targets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let targets = self.call(py, |n| Ok(n.relocation_targets()))?;
        let t = types(py)?;
        let list = PyList::empty(py);
        for target in targets {
            let item = match target {
                RelocationTarget::Spot(id, kind) => {
                    t.relocation_target
                        .bind(py)
                        .call1(("spot", id.0, t.spot_kind(py, kind)))?
                }
                RelocationTarget::EntryActor(a) => {
                    t.relocation_target
                        .bind(py)
                        .call1(("entry_actor", a, py.None()))?
                }
            };
            list.append(item)?;
        }
        Ok(list)
    }

    /// Adds an actor to the node's Entry Spot (it is listed for relocation).
    fn add_entry_actor(&self, py: Python<'_>, actor_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let a = u64_arg(py, actor_id, "actor_id")?;
        self.call(py, move |n| {
            n.add_entry_actor(a);
            Ok(())
        })
    }

    /// Removes an actor from the node's Entry Spot.
    fn remove_entry_actor(&self, py: Python<'_>, actor_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let a = u64_arg(py, actor_id, "actor_id")?;
        self.call(py, move |n| {
            n.remove_entry_actor(a);
            Ok(())
        })
    }

    /// What one lane of local Spot `spot_id` holds: `LaneUse(items, bytes)` (each item
    /// counts its payload plus 256 bytes).
    #[pyo3(signature = (spot_id, lane=Arg::Default), text_signature = "($self, spot_id, lane=0)")]
    fn lane_use<'py>(
        &self,
        py: Python<'py>,
        spot_id: &Bound<'_, PyAny>,
        lane: Arg<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = SpotId(u64_arg(py, spot_id, "spot_id")?);
        let lane = match lane.given() {
            Some(l) => lane_arg(py, l)?,
            None => LaneKind::Application,
        };
        let used = self.call(py, move |n| n.lane_use_of(id, lane))?;
        types(py)?.lane_use.bind(py).call1((used.items, used.bytes))
    }

    /// The node's counters (`NodeStats`), from the lifecycle's own list of fields
    /// (`NodeStats::metrics`): a field added there and not to the dataclass fails here.
    /// Also after shutdown.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let node = &*self.node;
        let s = py.detach(|| node.stats());
        let d = PyDict::new(py);
        for m in s.metrics() {
            d.set_item(m.name, m.value)?;
        }
        types(py)?.node_stats.bind(py).call((), Some(&d))
    }

    /// Every counter as `(name, "gauge" | "counter", value)`, in the lifecycle's order.
    fn metrics(&self, py: Python<'_>) -> Vec<(&'static str, &'static str, u64)> {
        let node = &*self.node;
        py.detach(|| node.stats())
            .metrics()
            .into_iter()
            .map(|m| (m.name, crate::errors::metric_kind(m.kind), m.value))
            .collect()
    }

    /// The counters in the Prometheus text format 0.0.4 (counters end in `_total`), every
    /// name prefixed with `prefix`.
    #[pyo3(signature = (prefix = "spot_node"))]
    fn prometheus(&self, py: Python<'_>, prefix: &str) -> PyResult<String> {
        crate::errors::check_metric_prefix(py, prefix)?;
        let node = &*self.node;
        Ok(py.detach(|| node.stats()).prometheus(prefix))
    }

    /// One exchange: waits up to `timeout` (None: until work arrives) for ready Spot work
    /// — messages and timer ticks in one batch — and runs each record through
    /// `handler(record)`; returns how many records were handled. On a manual clock what
    /// is due is made ready first. Every record is completed before this returns.
    #[pyo3(
        signature = (handler, timeout=Arg::Default, max_records=Arg::Default),
        text_signature = "($self, handler, timeout=0, max_records=4096)"
    )]
    fn dispatch(
        &self,
        py: Python<'_>,
        handler: &Bound<'_, PyAny>,
        timeout: Arg<'_>,
        max_records: Arg<'_>,
    ) -> PyResult<usize> {
        check_callable(py, handler, "handler")?;
        let timeout = match timeout.given() {
            Some(t) => opt_seconds(py, t, "timeout")?,
            None => Some(Duration::ZERO),
        };
        let max = match max_records.given() {
            Some(m) => u64_arg(py, m, "max_records")?,
            None => 4096,
        };
        if !(1..=1 << 20).contains(&max) {
            return fail(
                py,
                Exc::InvalidArgument,
                format!("max_records must be in 1..=1048576, got {max}"),
            );
        }
        self.check_open(py)?;
        self.delivery.dispatch(
            py,
            &self.node,
            &self.callbacks,
            handler,
            timeout,
            max as usize,
        )
    }

    /// Shuts the node down: every Spot closes (`CloseReason.NODE_SHUTDOWN`), its timers
    /// end, the node leaves its store. Idempotent; later calls raise NodeClosedError.
    fn shutdown(&self, py: Python<'_>) {
        self.stop(Some(py));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop(Some(py));
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            "shut down"
        } else {
            "running"
        };
        format!(
            "<spot_timer.lifecycle.Node {} (entry spot {}) {state}>",
            self.node_id, self.entry.0
        )
    }
}

impl Drop for PyNode {
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // A node nobody can reach any more shuts down, as the Rust `Node` does when its
        // last handle goes: detached, since closing Spots runs the closing callback.
        let mut done = false;
        let _ = Python::try_attach(|py| {
            self.stop(Some(py));
            done = true;
        });
        if !done {
            self.stop(None);
        }
    }
}
