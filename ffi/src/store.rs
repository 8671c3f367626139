//! Location Stores through the C ABI: the embedded store (one process; nodes on the same
//! store are simulated nodes of one in-process cluster) and the etcd store
//! (nodes in several processes agree through etcd). A node is started on either
//! (`spot_node_start`); the lifecycle rules are the same.

use std::ffi::{c_char, CStr};
use std::sync::Arc;
#[cfg(feature = "etcd")]
use std::time::Duration;

use spot_lifecycle::{Cluster, EmbeddedStore, LocationStore, NodeId};
#[cfg(feature = "etcd")]
use spot_lifecycle_etcd::{EtcdConfig, EtcdLocationStore};

use crate::boundary::{boundary, read_versioned, Failure, FfiResult, Out};
#[cfg(feature = "etcd")]
use crate::lifecycle_status::lf;
use crate::node_handles::HandleTable;
use crate::node_types::spot_etcd_config;
use crate::status::*;

/// A store handle's store.
pub(crate) enum FfiStore {
    Embedded {
        store: Arc<EmbeddedStore>,
        cluster: Arc<Cluster>,
    },
    #[cfg(feature = "etcd")]
    Etcd(Arc<EtcdLocationStore>),
}

impl FfiStore {
    pub(crate) fn embedded() -> Self {
        FfiStore::Embedded {
            store: Arc::new(EmbeddedStore::new()),
            cluster: Cluster::new(),
        }
    }

    pub(crate) fn location_store(&self) -> Arc<dyn LocationStore> {
        match self {
            FfiStore::Embedded { store, .. } => store.clone(),
            #[cfg(feature = "etcd")]
            FfiStore::Etcd(store) => store.clone(),
        }
    }

    /// The in-process cluster of simulated nodes (none for etcd: nodes are processes).
    pub(crate) fn cluster(&self) -> Option<Arc<Cluster>> {
        match self {
            FfiStore::Embedded { cluster, .. } => Some(cluster.clone()),
            #[cfg(feature = "etcd")]
            FfiStore::Etcd(_) => None,
        }
    }

    // `what` names the call in an etcd store's error (no etcd store without the feature).
    #[cfg_attr(not(feature = "etcd"), allow(unused_variables))]
    fn embedded_only(&self, what: &str) -> FfiResult<&EmbeddedStore> {
        match self {
            FfiStore::Embedded { store, .. } => Ok(store),
            #[cfg(feature = "etcd")]
            FfiStore::Etcd(_) => Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                format!("{what} is for the embedded store; an etcd store's leases end in etcd"),
            )),
        }
    }
}

pub(crate) static STORES: HandleTable<FfiStore> = HandleTable::new("store", b'S');

/// Creates an embedded Location Store (with its in-process cluster): nodes started on the
/// same store are simulated nodes of one cluster.
///
/// Ownership: the caller frees it with `spot_store_free` after the nodes using it.
/// Errors: SPOT_E_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn spot_store_new(out_store: *mut u64) -> spot_status {
    boundary("spot_store_new", || {
        let out = Out::new(out_store, "out_store")?;
        out.write(STORES.insert(Arc::new(FfiStore::embedded())));
        Ok(())
    })
}

/// Reads an optional C string argument.
///
/// # Safety
/// When non-null, `p` must point to a NUL-terminated string.
pub(crate) unsafe fn opt_str(p: *const c_char, name: &str) -> FfiResult<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(p)
        .to_str()
        .map(|s| Some(s.to_owned()))
        .map_err(|_| Failure::new(SPOT_E_INVALID_ARGUMENT, format!("`{name}` is not UTF-8")))
}

#[cfg(feature = "etcd")]
fn duration_or(ns: u64, default: Duration) -> Duration {
    if ns == 0 {
        default
    } else {
        Duration::from_nanos(ns)
    }
}

/// Connects to etcd and returns a Location Store shared by the nodes of several processes.
/// The node started on it holds an etcd lease (its owner lease, kept alive by
/// the store) and creates, finds and releases Spots through etcd transactions; routes to
/// Ready Spots are cached and invalidated by a watch, so a steady-state send makes no etcd
/// request (`spot_store_requests`). While etcd cannot be reached, creating a missing Spot
/// is SPOT_E_UNAVAILABLE, never a creation.
///
/// `cfg->endpoints` (required): comma-separated client URLs, e.g.
/// `"http://127.0.0.1:2379"`; `cfg->prefix` (NULL: `"/spot-timer/"`, must end with '/'):
/// every key of the store starts with it; durations of 0 take their defaults (lease TTL
/// 10 s, whole seconds, at least 2 s; connect and request timeouts 5 s).
///
/// Ownership: `cfg` and its strings are read during the call only; free the store with
/// `spot_store_free` after the nodes using it.
/// Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_INVALID_ARGUMENT (no or a
/// malformed endpoint, a bad prefix or TTL), SPOT_E_STORE (etcd cannot be reached within
/// the connect timeout: the message names the endpoints).
#[no_mangle]
pub unsafe extern "C" fn spot_store_new_etcd(
    cfg: *const spot_etcd_config,
    out_store: *mut u64,
) -> spot_status {
    boundary("spot_store_new_etcd", || {
        let cfg = read_versioned(cfg, "cfg", &[])?;
        let out = Out::new(out_store, "out_store")?;
        if cfg.reserved != 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`cfg->reserved` must be 0",
            ));
        }
        let endpoints = opt_str(cfg.endpoints, "cfg->endpoints")?.ok_or_else(|| {
            Failure::new(
                SPOT_E_NULL_ARGUMENT,
                "`cfg->endpoints` must not be NULL (e.g. \"http://127.0.0.1:2379\")",
            )
        })?;
        connect_etcd(endpoints, opt_str(cfg.prefix, "cfg->prefix")?, &cfg, out)
    })
}

#[cfg(feature = "etcd")]
fn connect_etcd(
    endpoints: String,
    prefix: Option<String>,
    cfg: &spot_etcd_config,
    out: Out<u64>,
) -> FfiResult {
    let defaults = EtcdConfig::default();
    let config = EtcdConfig {
        endpoints: endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(String::from)
            .collect(),
        prefix: prefix.unwrap_or(defaults.prefix.clone()),
        lease_ttl: duration_or(cfg.lease_ttl_ns, defaults.lease_ttl),
        connect_timeout: duration_or(cfg.connect_timeout_ns, defaults.connect_timeout),
        request_timeout: duration_or(cfg.request_timeout_ns, defaults.request_timeout),
        ..defaults
    };
    let store = lf(EtcdLocationStore::connect(config))?;
    out.write(STORES.insert(Arc::new(FfiStore::Etcd(Arc::new(store)))));
    Ok(())
}

#[cfg(not(feature = "etcd"))]
fn connect_etcd(
    _endpoints: String,
    _prefix: Option<String>,
    _cfg: &spot_etcd_config,
    _out: Out<u64>,
) -> FfiResult {
    Err(Failure::new(
        SPOT_E_INVALID_ARGUMENT,
        "this libspot_timer was built without etcd support (cargo feature `etcd`)",
    ))
}

/// Writes the number of etcd requests the store has made to `*out_requests` (0 for the
/// embedded store): a steady-state send makes none.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn spot_store_requests(store: u64, out_requests: *mut u64) -> spot_status {
    boundary("spot_store_requests", || {
        let out = Out::new(out_requests, "out_requests")?;
        out.write(match &*STORES.get(store)? {
            FfiStore::Embedded { .. } => 0,
            #[cfg(feature = "etcd")]
            FfiStore::Etcd(s) => s.requests(),
        });
        Ok(())
    })
}

/// Frees a store handle (nodes started on it keep their reference).
/// Errors: SPOT_E_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn spot_store_free(store: u64) -> spot_status {
    boundary("spot_store_free", || STORES.remove(store).map(drop))
}

/// Marks node `node_id` unusable while its lease runs: its Spots are Unavailable
/// (nothing re-creates them). For tests of several simulated nodes.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_ARGUMENT (an etcd store).
#[no_mangle]
pub extern "C" fn spot_store_mark_down(store: u64, node_id: u64) -> spot_status {
    boundary("spot_store_mark_down", || {
        STORES
            .get(store)?
            .embedded_only("spot_store_mark_down")?
            .mark_down(NodeId(node_id));
        Ok(())
    })
}

/// Ends node `node_id`'s lease: its authorities are released (its Spots' ids are Missing
/// and may be created again).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_ARGUMENT (an etcd store).
#[no_mangle]
pub extern "C" fn spot_store_expire_node(store: u64, node_id: u64) -> spot_status {
    boundary("spot_store_expire_node", || {
        STORES
            .get(store)?
            .embedded_only("spot_store_expire_node")?
            .expire_node(NodeId(node_id));
        Ok(())
    })
}
