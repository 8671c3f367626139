//! The etcd Location Store (`spot-lifecycle-etcd`) as `Store.etcd(...)` builds it: its
//! arguments, the connect, and the store shared by the `Store` object and its nodes.

use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use spot_lifecycle::store::{NodeAddress, Reservation, Reserved, StoreView};
use spot_lifecycle::{
    Authority, LifecycleError, LocationRecord, LocationStore, NodeId, NodeStatus, NodeTerm, Result,
    SpotId, SpotKind,
};
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

use super::args::{seconds, Arg};
use super::errors::to_py;
use crate::errors::{py_error, type_name, Exc};

/// `endpoints`: one str (several endpoints may be comma-separated, as etcdctl's
/// `--endpoints` takes them) or a sequence of str. Whether each is a usable endpoint is
/// `EtcdConfig::validate`'s to say, so the wording of those errors is the crate's.
fn endpoints_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_cow()?;
        return Ok(s
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(String::from)
            .collect());
    }
    let bad_type = || {
        py_error(
            py,
            Exc::ArgumentType,
            format!(
                "endpoints must be a str or a sequence of str, not {}",
                type_name(obj)
            ),
        )
    };
    // bytes are a sequence too, of ints: refused rather than read as endpoint numbers.
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
        return Err(bad_type());
    }
    let mut out = Vec::new();
    for item in obj.try_iter().map_err(|_| bad_type())? {
        let item = item?;
        let s = item.cast::<PyString>().map_err(|_| {
            py_error(
                py,
                Exc::ArgumentType,
                format!("each endpoint must be a str, not {}", type_name(&item)),
            )
        })?;
        out.push(s.to_cow()?.trim().to_string());
    }
    Ok(out)
}

/// The configuration of `Store.etcd(...)`: what was not given is the crate's default
/// (`EtcdConfig::default()`), so the two cannot drift apart.
pub fn config(
    py: Python<'_>,
    endpoints: &Bound<'_, PyAny>,
    prefix: Arg<'_>,
    lease_ttl: Arg<'_>,
    connect_timeout: Arg<'_>,
    request_timeout: Arg<'_>,
) -> PyResult<EtcdConfig> {
    let mut c = EtcdConfig::with_endpoints(endpoints_arg(py, endpoints)?);
    if let Some(p) = prefix.given() {
        c.prefix = p
            .cast::<PyString>()
            .map_err(|_| {
                py_error(
                    py,
                    Exc::ArgumentType,
                    format!("prefix must be a str, not {}", type_name(p)),
                )
            })?
            .to_cow()?
            .to_string();
    }
    let duration = |arg: &Arg<'_>, name: &str, default: Duration| match arg.given() {
        Some(v) => seconds(py, v, name),
        None => Ok(default),
    };
    c.lease_ttl = duration(&lease_ttl, "lease_ttl", c.lease_ttl)?;
    c.connect_timeout = duration(&connect_timeout, "connect_timeout", c.connect_timeout)?;
    c.request_timeout = duration(&request_timeout, "request_timeout", c.request_timeout)?;
    // Checked here too (connect checks again) so that a bad argument is refused without
    // starting the client's runtime.
    c.validate().map_err(|e| to_py(py, e))?;
    Ok(c)
}

/// Connects, detached: it may wait up to `connect_timeout` for etcd.
pub fn connect(py: Python<'_>, config: EtcdConfig) -> PyResult<SharedEtcd> {
    let r = py.detach(move || {
        // The etcd client parses the endpoints and sets up its channel: code of another
        // crate, whose panic must not cross into Python.
        catch_unwind(AssertUnwindSafe(|| EtcdLocationStore::connect(config))).unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(LifecycleError::Store(
                format!("etcd: the client failed while connecting: {what}").into(),
            ))
        })
    });
    match r {
        Ok(store) => Ok(SharedEtcd(ManuallyDrop::new(store))),
        Err(e) => Err(to_py(py, e)),
    }
}

/// The etcd store shared by a `Store` object and the nodes started on it.
///
/// Its end revokes its lease (one request: up to 2 s when etcd is gone) and stops its
/// client runtime. The last owner is usually a `Store` or `Node` being collected, i.e. a
/// thread attached to the interpreter: the end runs detached so that no other Python
/// thread waits for etcd.
pub struct SharedEtcd(ManuallyDrop<EtcdLocationStore>);

impl Deref for SharedEtcd {
    type Target = EtcdLocationStore;
    fn deref(&self) -> &EtcdLocationStore {
        &self.0
    }
}

impl Drop for SharedEtcd {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.0` is not used again.
        let mut store = Some(unsafe { ManuallyDrop::take(&mut self.0) });
        // On a thread not attached, this attaches only to detach at once; while the
        // interpreter finalizes it does nothing and the store ends right here.
        let _ = Python::try_attach(|py| {
            let s = store.take();
            py.detach(move || drop(s));
        });
        drop(store);
    }
}

/// Every method is the etcd store's own.
impl LocationStore for SharedEtcd {
    fn register_node(
        &self,
        node: NodeId,
        active_cap: u64,
        address: Option<std::net::SocketAddr>,
    ) -> Result<Arc<dyn NodeTerm>> {
        self.0.register_node(node, active_cap, address)
    }

    fn node_address(&self, node: NodeId) -> NodeAddress {
        self.0.node_address(node)
    }
    fn remove_node(&self, node: NodeId, term: u64) {
        self.0.remove_node(node, term)
    }
    fn set_active(&self, node: NodeId, active: u64) {
        self.0.set_active(node, active)
    }
    fn place(&self, preferred: NodeId) -> Option<NodeId> {
        self.0.place(preferred)
    }
    fn node_status(&self, node: NodeId) -> NodeStatus {
        self.0.node_status(node)
    }
    fn read(&self, spot: SpotId) -> Result<StoreView> {
        self.0.read(spot)
    }
    fn reserve(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Option<Reservation>> {
        self.0.reserve(spot, kind, node)
    }
    fn reserve_or_read(&self, spot: SpotId, kind: SpotKind, node: NodeId) -> Result<Reserved> {
        self.0.reserve_or_read(spot, kind, node)
    }
    fn read_local(&self, spot: SpotId) -> Option<StoreView> {
        self.0.read_local(spot)
    }
    fn commit_ready(&self, reservation: &Reservation) -> Result<LocationRecord> {
        self.0.commit_ready(reservation)
    }
    fn abort(&self, reservation: &Reservation) -> Result<()> {
        self.0.abort(reservation)
    }
    fn abort_orphan(&self, spot: SpotId, authority: Authority) -> Result<()> {
        self.0.abort_orphan(spot, authority)
    }
    fn release(&self, spot: SpotId, authority: Authority) -> Result<()> {
        self.0.release(spot, authority)
    }
    fn wait_change(&self, spot: SpotId, seen: u64, timeout: Duration) {
        self.0.wait_change(spot, seen, timeout)
    }
}
