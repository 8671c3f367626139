//! The Spot lifecycle through the C ABI: stores, nodes, sending, creating,
//! closing, eviction, and the node's exchange of Spot work. A thin adapter over the
//! `spot-lifecycle` crate: every rule lives there.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spot_lifecycle::{
    CloseReason, LaneKind, LaneLimits, Node, NodeConfig, NodeId, NodeSource, RelocationTarget,
    SpotCompletion, SpotId, SpotKind, SpotRecord,
};
use spot_timer_core::driver::Driver;
use spot_timer_core::ClockKind;

use crate::boundary::{
    arg_slice, boundary, read_versioned, write_versioned, Failure, FfiResult, Out, OutSlice,
    TextOut,
};
use crate::lifecycle_status::lf;
use crate::node_handles::HandleTable;
use crate::node_inflight::InFlight;
use crate::node_types::*;
use crate::status::*;
use crate::store::{opt_str, FfiStore, STORES};
use crate::types::{clock_from_u32, outcome_from_u32, ClockChoice};

pub(crate) struct FfiNode {
    pub(crate) node: Arc<Node>,
    /// Records handed to the host and not yet completed, by the tokens the host got.
    inflight: Mutex<InFlight>,
    /// `spot_node_run`'s driver, kept between calls (it holds the rest of a stopped
    /// batch).
    pub(crate) driver: Mutex<Option<Driver<NodeSource>>>,
    /// The buffer an exchange receives records into, kept for the next exchange (a fresh
    /// one would grow, copying itself, on every exchange of a large batch).
    batch: Mutex<Vec<SpotRecord>>,
}

/// A batch buffer with room for more records than this is not kept.
const KEEP_BATCH_AT_MOST: usize = 16_384;

impl FfiNode {
    /// The records in the host's hands.
    pub(crate) fn inflight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) static NODES: HandleTable<FfiNode> = HandleTable::new("node", b'N');

fn kind_code(k: SpotKind) -> u32 {
    k as u32
}

fn kind_from(v: u32) -> FfiResult<SpotKind> {
    SpotKind::from_u32(v).map_err(|_| {
        Failure::new(
            SPOT_E_UNKNOWN_ENUM,
            format!("spot kind {v} is not SPOT_KIND_ENTRY (1), USER (2) or INSTANCE (3)"),
        )
    })
}

/// The host's `env` pointer: opaque, handed back to its callbacks from any thread.
#[derive(Clone, Copy)]
struct Env(*mut c_void);
// SAFETY: the library never dereferences it; the header tells the host its callbacks run
// on whichever thread creates or closes a Spot.
unsafe impl Send for Env {}
unsafe impl Sync for Env {}

fn lane_limits(items: u64, bytes: u64, default: LaneLimits) -> LaneLimits {
    LaneLimits {
        items: if items == 0 { default.items } else { items },
        bytes: if bytes == 0 { default.bytes } else { bytes },
    }
}

/// The size of `spot_node_config` before ABI 2.3 (no `listen`).
const NODE_CONFIG_V2_2_SIZE: usize = std::mem::offset_of!(spot_node_config, listen);

/// Starts a node on `store` (0: a private embedded store) and creates its Entry Spot.
/// With `cfg->listen` ("IP:PORT"; NULL or "": none) the node serves the nodes of other
/// processes over TCP on that address and records the address bound in the store.
///
/// Ownership: the caller frees the node with `spot_node_free`. `cfg` and `cfg->listen`
/// are read during the call; `cfg->env` is kept and handed to the callbacks until the
/// node is freed.
/// Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_UNKNOWN_ENUM,
/// SPOT_E_INVALID_ARGUMENT (also `cfg->listen` not UTF-8 or not "IP:PORT", or the address
/// cannot be bound: the message says which), SPOT_E_INVALID_HANDLE (store), SPOT_E_STORE,
/// SPOT_E_OS.
#[no_mangle]
pub unsafe extern "C" fn spot_node_start(
    cfg: *const spot_node_config,
    store: u64,
    out_node: *mut u64,
) -> spot_status {
    boundary("spot_node_start", || {
        let cfg = read_versioned(cfg, "cfg", &[NODE_CONFIG_V2_2_SIZE])?;
        let out = Out::new(out_node, "out_node")?;
        let listen = match opt_str(cfg.listen, "cfg->listen")? {
            Some(text) => lf(NodeConfig::parse_listen(&text, "`cfg->listen`"))?,
            None => None,
        };
        let clock = match clock_from_u32(cfg.clock)? {
            ClockChoice::Real => ClockKind::Real,
            ClockChoice::Manual => ClockKind::manual(),
        };
        let shared = match store {
            0 => Arc::new(FfiStore::embedded()),
            h => STORES.get(h)?,
        };
        let env = Env(cfg.env);
        let defaults = NodeConfig::default();
        let config = NodeConfig {
            node: NodeId(cfg.node_id),
            entry: SpotId(cfg.entry_spot),
            clock,
            application_lane: lane_limits(
                cfg.application_lane_items,
                cfg.application_lane_bytes,
                LaneLimits::APPLICATION,
            ),
            lifecycle_lane: lane_limits(
                cfg.lifecycle_lane_items,
                cfg.lifecycle_lane_bytes,
                LaneLimits::LIFECYCLE,
            ),
            node_inbound_bytes: match cfg.node_inbound_bytes {
                0 => defaults.node_inbound_bytes,
                n => n,
            },
            active_cap: match cfg.active_cap {
                0 => defaults.active_cap,
                n => n,
            },
            instance_idle_timeout: (cfg.instance_idle_timeout_ns != 0)
                .then(|| Duration::from_nanos(cfg.instance_idle_timeout_ns)),
            creation_wait: defaults.creation_wait,
            owner_lease: (cfg.owner_lease_ns != 0)
                .then(|| Duration::from_nanos(cfg.owner_lease_ns)),
            factory: cfg.factory.map(|f| {
                Arc::new(move |id: SpotId, kind: SpotKind| {
                    let env = env;
                    let mut msg = [0 as c_char; 256];
                    // SAFETY: the host's function, called as the header documents.
                    let r = unsafe { f(env.0, id.0, kind_code(kind), msg.as_mut_ptr(), msg.len()) };
                    if r == 0 {
                        return Ok(());
                    }
                    msg[255] = 0;
                    // SAFETY: NUL-terminated above at the latest.
                    let text = unsafe { std::ffi::CStr::from_ptr(msg.as_ptr()) }
                        .to_string_lossy()
                        .into_owned();
                    Err(if text.is_empty() {
                        format!("the factory returned {r}")
                    } else {
                        text
                    })
                }) as spot_lifecycle::Factory
            }),
            on_close: cfg.on_close.map(|f| {
                Arc::new(move |id: SpotId, kind: SpotKind, reason: CloseReason| {
                    let env = env;
                    let code = close_reason_to_u32(reason);
                    // SAFETY: the host's function, called as the header documents.
                    unsafe { f(env.0, id.0, kind_code(kind), code) }
                }) as spot_lifecycle::ClosingCallback
            }),
            listen,
        };
        let node = lf(Node::start(
            config,
            shared.location_store(),
            shared.cluster(),
        ))?;
        out.write(NODES.insert(Arc::new(FfiNode {
            node,
            inflight: Mutex::new(InFlight::default()),
            driver: Mutex::new(None),
            batch: Mutex::new(Vec::new()),
        })));
        Ok(())
    })
}

/// Writes the address the node serves other processes' nodes at (`"127.0.0.1:40123"`,
/// `"[::1]:40123"`; the port bound when `cfg->listen` asked for port 0) to `buf`,
/// NUL-terminated; the empty string when the node does not listen. `*out_len` receives
/// the text's full length without the NUL: when it is `>= cap` the text was cut; call
/// again with a larger buffer (64 bytes always suffice).
///
/// Ownership: `buf` belongs to the caller and is written during the call only.
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT (cap 0).
#[no_mangle]
pub unsafe extern "C" fn spot_node_address(
    node: u64,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
) -> spot_status {
    boundary("spot_node_address", || {
        let out = TextOut::new(buf, cap, out_len)?;
        let n = NODES.get(node)?;
        out.write(&n.node.address().map(|a| a.to_string()).unwrap_or_default());
        Ok(())
    })
}

/// Shuts a node down (every Spot closes with SPOT_CLOSE_NODE_SHUTDOWN, its timers end)
/// and frees the handle. Records not yet completed become invalid.
/// Errors: SPOT_E_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn spot_node_free(node: u64) -> spot_status {
    boundary("spot_node_free", || {
        let n = NODES.remove(node)?;
        // The rest of a stopped `spot_node_run` batch completes as not started first. A run
        // in progress (waiting, or this free called from its run function) keeps its driver:
        // the shutdown below wakes or ends it, and the driver goes with the last reference.
        let driver = n.driver.try_lock().ok().and_then(|mut d| d.take());
        drop(driver);
        n.node.shutdown();
        Ok(())
    })
}

/// Sends a message to a Ready Spot (SPOT_LANE_APPLICATION or SPOT_LANE_LIFECYCLE); the
/// payload is copied. A missing id gives SPOT_E_NOT_FOUND (nothing is created).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM,
/// SPOT_E_NOT_FOUND, SPOT_E_STALE_ROUTE, SPOT_E_UNAVAILABLE, SPOT_E_*_LANE_FULL,
/// SPOT_E_NODE_INBOUND_FULL, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_node_send(
    node: u64,
    spot_id: u64,
    lane: u32,
    payload: *const u8,
    payload_len: usize,
) -> spot_status {
    boundary("spot_node_send", || {
        let n = NODES.get(node)?;
        let bytes: Box<[u8]> = arg_slice(payload, payload_len, "payload")?.into();
        match lane {
            SPOT_LANE_APPLICATION => lf(n.node.send(SpotId(spot_id), bytes)),
            SPOT_LANE_LIFECYCLE => lf(n.node.send_lifecycle(SpotId(spot_id), bytes)),
            other => Err(Failure::new(
                SPOT_E_UNKNOWN_ENUM,
                format!("lane {other} is not SPOT_LANE_APPLICATION (0) or SPOT_LANE_LIFECYCLE (1)"),
            )),
        }
    })
}

/// The instance intent: sends to Instance Spot `spot_id`, creating it first if it does not
/// exist (the factory runs once however many callers race). Writes the Spot's object
/// generation to `*out_generation` (may be NULL).
/// Errors: as `spot_node_send`, and SPOT_E_CREATION_FAILED, SPOT_E_ACTIVE_CAP,
/// SPOT_E_WRONG_KIND, SPOT_E_STORE.
#[no_mangle]
pub unsafe extern "C" fn spot_node_send_or_create(
    node: u64,
    spot_id: u64,
    payload: *const u8,
    payload_len: usize,
    out_generation: *mut u64,
) -> spot_status {
    boundary("spot_node_send_or_create", || {
        let n = NODES.get(node)?;
        let bytes: Box<[u8]> = arg_slice(payload, payload_len, "payload")?.into();
        let out = Out::optional(out_generation, "out_generation")?;
        let spot = lf(n.node.send_or_create(SpotId(spot_id), bytes))?;
        if let Some(o) = out {
            o.write(spot.generation());
        }
        Ok(())
    })
}

/// Creates User Spot `spot_id` (or finds it if it exists). Writes its object generation
/// to `*out_generation` (may be NULL).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_CREATION_FAILED, SPOT_E_ACTIVE_CAP,
/// SPOT_E_WRONG_KIND, SPOT_E_UNAVAILABLE, SPOT_E_STORE, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_node_create_user_spot(
    node: u64,
    spot_id: u64,
    out_generation: *mut u64,
) -> spot_status {
    boundary("spot_node_create_user_spot", || {
        let n = NODES.get(node)?;
        let out = Out::optional(out_generation, "out_generation")?;
        let spot = lf(n.node.create_user_spot(SpotId(spot_id)))?;
        if let Some(o) = out {
            o.write(spot.generation());
        }
        Ok(())
    })
}

/// Writes the kind (SPOT_KIND_*) of Spot `spot_id` if it is active on this node.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_NOT_FOUND.
#[no_mangle]
pub unsafe extern "C" fn spot_node_spot_kind(
    node: u64,
    spot_id: u64,
    out_kind: *mut u32,
) -> spot_status {
    boundary("spot_node_spot_kind", || {
        let n = NODES.get(node)?;
        let out = Out::new(out_kind, "out_kind")?;
        let kind = lf(n.node.spot_kind(SpotId(spot_id)))?;
        out.write(kind_code(kind));
        Ok(())
    })
}

/// Closes Spot `spot_id` of `kind` on this node: its closing callback runs
/// (SPOT_CLOSE_CLOSED), its timers end, its queued messages are dropped (counted), its
/// location is released. The Entry Spot closes only with its node (SPOT_E_WRONG_KIND).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_ENUM, SPOT_E_NOT_FOUND,
/// SPOT_E_WRONG_KIND.
#[no_mangle]
pub extern "C" fn spot_node_close_spot(node: u64, spot_id: u64, kind: u32) -> spot_status {
    boundary("spot_node_close_spot", || {
        let n = NODES.get(node)?;
        let id = SpotId(spot_id);
        match kind_from(kind)? {
            SpotKind::Entry => Err(Failure::new(
                SPOT_E_WRONG_KIND,
                "the Entry Spot closes only with its node",
            )),
            SpotKind::User => lf(n.node.user(id).and_then(|s| n.node.close_user_spot(s))).map(drop),
            SpotKind::Instance => {
                lf(n.node.instance(id).and_then(|s| n.node.close_instance(s))).map(drop)
            }
        }
    })
}

/// Registers a repeating timer of Spot `spot_id` (key below 2^63, period > 0): each tick
/// is application work of the Spot, handed over as a SPOT_WORK_TICK record carrying
/// `value`.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_FOUND, SPOT_E_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn spot_node_every(
    node: u64,
    spot_id: u64,
    key: u64,
    period_ns: u64,
    value: u64,
) -> spot_status {
    boundary("spot_node_every", || {
        let n = NODES.get(node)?;
        let period = Duration::from_nanos(period_ns);
        lf(n.node.every_of(SpotId(spot_id), key, period, value)).map(drop)
    })
}

/// One idle-eviction pass: examines at most 64 Instance Spots and evicts the idle ones
/// (closing callback with SPOT_CLOSE_IDLE_EVICTED first). Writes how many it evicted.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn spot_node_evict_idle(node: u64, out_evicted: *mut usize) -> spot_status {
    boundary("spot_node_evict_idle", || {
        let n = NODES.get(node)?;
        let out = Out::new(out_evicted, "out_evicted")?;
        out.write(n.node.evict_idle());
        Ok(())
    })
}

/// Manual clock only: moves the node's clock forward by `ns` and lets due work become
/// ready. With `ns` = 0 it only makes what is due ready.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_MANUAL_CLOCK, SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_node_advance(node: u64, ns: u64) -> spot_status {
    boundary("spot_node_advance", || {
        lf(NODES.get(node)?.node.advance(Duration::from_nanos(ns)))
    })
}

/// Takes the records `done` completes: every entry is checked first, so a call with a
/// bad entry applies nothing (its valid tokens stay awaiting completion). Linear in the
/// call's length: a token given twice is found missing the second time.
fn complete_all(n: &FfiNode, done: &[spot_node_completion]) -> FfiResult<Vec<SpotCompletion>> {
    let mut outcomes = Vec::with_capacity(done.len());
    for (i, c) in done.iter().enumerate() {
        if c.reserved != 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                format!("`done[{i}].reserved` must be 0"),
            ));
        }
        outcomes.push(outcome_from_u32(c.outcome)?);
    }
    let mut inflight = n.inflight.lock().unwrap_or_else(|e| e.into_inner());
    for (i, c) in done.iter().enumerate() {
        if !inflight.mark(c.token) {
            for d in &done[..i] {
                inflight.unmark(d.token);
            }
            return Err(Failure::new(
                SPOT_E_INVALID_COMPLETION,
                format!(
                    "`done[{i}]`: token {:#x} names no record awaiting completion (or twice in one call); nothing was applied",
                    c.token
                ),
            ));
        }
    }
    Ok(done
        .iter()
        .zip(outcomes)
        .map(|(c, outcome)| {
            let rec = inflight.remove(c.token).expect("marked above");
            rec.complete(outcome)
        })
        .collect())
}

pub(crate) fn c_record(r: &SpotRecord) -> spot_node_record {
    let mut c = spot_node_record {
        kind: SPOT_WORK_MESSAGE,
        lane: SPOT_LANE_APPLICATION,
        spot_id: r.spot().0,
        // Made by the in-flight table when the record goes there.
        token: 0,
        payload: std::ptr::null(),
        payload_len: 0,
        key: 0,
        value: 0,
        delivery_index: 0,
        scheduled_index: 0,
        skipped_ticks: 0,
    };
    match r {
        SpotRecord::Message(m) => {
            c.lane = match m.lane() {
                LaneKind::Application => SPOT_LANE_APPLICATION,
                LaneKind::Lifecycle => SPOT_LANE_LIFECYCLE,
            };
            if !m.payload().is_empty() {
                c.payload = m.payload().as_ptr();
                c.payload_len = m.payload().len();
            }
        }
        SpotRecord::Tick(t) => {
            c.kind = SPOT_WORK_TICK;
            c.key = t.key();
            c.value = t.value();
            let tick = t.tick();
            c.delivery_index = tick.delivery_index;
            c.scheduled_index = tick.scheduled_index;
            c.skipped_ticks = tick.skipped_ticks;
        }
    }
    c
}

/// Submits completions and waits up to `timeout_ns` (-1: forever, 0: not at all) for
/// ready Spot work — messages and ticks in one batch, one crossing. Writes at most `cap`
/// records to `out` and their number to `*out_n`. Every record must be completed once;
/// its payload stays valid until then.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT,
/// SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_COMPLETION (nothing of the call applied),
/// SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_node_exchange(
    node: u64,
    done: *const spot_node_completion,
    n_done: usize,
    out: *mut spot_node_record,
    cap: usize,
    timeout_ns: i64,
    out_n: *mut usize,
) -> spot_status {
    boundary("spot_node_exchange", || {
        let n = NODES.get(node)?;
        let done = arg_slice(done, n_done, "done")?;
        let out = OutSlice::new(out, cap, "out")?;
        let out_n = Out::new(out_n, "out_n")?;
        let timeout = match timeout_ns {
            t if t < 0 => None,
            t => Some(Duration::from_nanos(t as u64)),
        };
        let completions = complete_all(&n, done)?;
        let mut batch = std::mem::take(&mut *n.batch.lock().unwrap_or_else(|e| e.into_inner()));
        let r = n
            .node
            .exchange(&completions, &mut batch, out.capacity(), timeout);
        if r.is_ok() {
            let mut inflight = n.inflight.lock().unwrap_or_else(|e| e.into_inner());
            // At most `out.capacity()` records: every one is written and kept.
            out_n.write(out.write_all(batch.drain(..).map(|r| {
                // Read before the record moves into the table (its payload does not move).
                let mut c = c_record(&r);
                c.token = inflight.insert(r);
                c
            })));
        }
        batch.clear();
        if batch.capacity() <= KEEP_BATCH_AT_MOST {
            *n.batch.lock().unwrap_or_else(|e| e.into_inner()) = batch;
        }
        lf(r)?;
        Ok(())
    })
}

/// Right before running a record's handler: SPOT_OK if it may start; SPOT_E_STALE_ROUTE
/// if its Spot's authority ended or its lease ran out, or — several messages of one Spot
/// in a batch — an earlier one of them has not started or ended yet, or another of them
/// runs on another thread (complete it NOT_STARTED). Start a batch's records in its order,
/// a Spot's on one thread.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_COMPLETION (unknown token),
/// SPOT_E_STALE_ROUTE.
#[no_mangle]
pub extern "C" fn spot_node_begin(node: u64, token: u64) -> spot_status {
    boundary("spot_node_begin", || {
        let n = NODES.get(node)?;
        let inflight = n.inflight.lock().unwrap_or_else(|e| e.into_inner());
        let Some(rec) = inflight.get(token) else {
            return Err(Failure::new(
                SPOT_E_INVALID_COMPLETION,
                format!("token {token:#x} names no record awaiting completion"),
            ));
        };
        if n.node.begin(rec) {
            Ok(())
        } else {
            Err(Failure::new(
                SPOT_E_STALE_ROUTE,
                "the record may not start: its Spot no longer holds its authority (closed, revoked or lease over), or an earlier message of its Spot in the batch has not started or ended, or runs on another thread",
            ))
        }
    })
}

/// Submits completions without receiving.
/// Errors: as `spot_node_exchange`.
#[no_mangle]
pub unsafe extern "C" fn spot_node_complete(
    node: u64,
    done: *const spot_node_completion,
    n_done: usize,
) -> spot_status {
    boundary("spot_node_complete", || {
        let n = NODES.get(node)?;
        let done = arg_slice(done, n_done, "done")?;
        let completions = complete_all(&n, done)?;
        lf(n.node.complete(&completions))
    })
}

/// Writes the items and bytes a Spot's lane holds.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM,
/// SPOT_E_NOT_FOUND.
#[no_mangle]
pub unsafe extern "C" fn spot_node_lane_use(
    node: u64,
    spot_id: u64,
    lane: u32,
    out_items: *mut u64,
    out_bytes: *mut u64,
) -> spot_status {
    boundary("spot_node_lane_use", || {
        let n = NODES.get(node)?;
        let items = Out::new(out_items, "out_items")?;
        let bytes = Out::new(out_bytes, "out_bytes")?;
        let lane = match lane {
            SPOT_LANE_APPLICATION => LaneKind::Application,
            SPOT_LANE_LIFECYCLE => LaneKind::Lifecycle,
            other => {
                return Err(Failure::new(
                    SPOT_E_UNKNOWN_ENUM,
                    format!(
                        "lane {other} is not SPOT_LANE_APPLICATION (0) or SPOT_LANE_LIFECYCLE (1)"
                    ),
                ))
            }
        };
        let used = lf(n.node.lane_use_of(SpotId(spot_id), lane))?;
        items.write(used.items);
        bytes.write(used.bytes);
        Ok(())
    })
}

/// Adds an actor to the node's Entry Spot (listed for relocation).
/// Errors: SPOT_E_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn spot_node_add_entry_actor(node: u64, actor_id: u64) -> spot_status {
    boundary("spot_node_add_entry_actor", || {
        NODES.get(node)?.node.add_entry_actor(actor_id);
        Ok(())
    })
}

/// Writes the node's relocation targets (its User and Instance Spots and the actors of
/// its Entry Spot, never the Entry Spot itself): at most `cap` to `out`, their number to
/// `*out_n`, and the full count to `*out_total` (may be NULL).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn spot_node_relocation_targets(
    node: u64,
    out: *mut spot_relocation_target,
    cap: usize,
    out_n: *mut usize,
    out_total: *mut usize,
) -> spot_status {
    boundary("spot_node_relocation_targets", || {
        let n = NODES.get(node)?;
        let out = OutSlice::new(out, cap, "out")?;
        let out_n = Out::new(out_n, "out_n")?;
        let total = Out::optional(out_total, "out_total")?;
        let targets = n.node.relocation_targets();
        if let Some(t) = total {
            t.write(targets.len());
        }
        out_n.write(out.write_all(targets.into_iter().map(|t| match t {
            RelocationTarget::Spot(id, kind) => spot_relocation_target {
                what: SPOT_TARGET_SPOT,
                spot_kind: kind_code(kind),
                id: id.0,
            },
            RelocationTarget::EntryActor(a) => spot_relocation_target {
                what: SPOT_TARGET_ENTRY_ACTOR,
                spot_kind: 0,
                id: a,
            },
        })));
        Ok(())
    })
}

/// Fills `*out` with the node's counters. Set `out->struct_size` first.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE.
#[no_mangle]
pub unsafe extern "C" fn spot_node_stats(node: u64, out: *mut spot_node_stats) -> spot_status {
    boundary("spot_node_stats", || {
        let n = NODES.get(node)?;
        let s = n.node.stats();
        let stats = spot_node_stats {
            struct_size: 0,
            reserved: 0,
            active_spots: s.active_spots,
            created: s.created,
            factory_runs: s.factory_runs,
            creation_failures: s.creation_failures,
            evicted: s.evicted,
            closed: s.closed,
            messages_admitted: s.messages_admitted,
            messages_completed: s.messages_completed,
            messages_dropped: s.messages_dropped,
            rejected_application_lane: s.rejected_application_lane,
            rejected_lifecycle_lane: s.rejected_lifecycle_lane,
            rejected_node_inbound: s.rejected_node_inbound,
            rejected_activation: s.rejected_activation,
            stale_routes: s.stale_routes,
            ticks_deferred: s.ticks_deferred,
            eviction_passes: s.eviction_passes,
            eviction_examined: s.eviction_examined,
            authority_lost: s.authority_lost,
            terms_renewed: s.terms_renewed,
        };
        write_versioned(out, "out", stats, std::mem::size_of::<spot_node_stats>())
    })
}
