//! The `#[repr(C)]` structs and enum values of the Spot lifecycle's C ABI.

use std::ffi::{c_char, c_void};

/// `spot_node_record::kind`: a message sent to the Spot.
pub const SPOT_WORK_MESSAGE: u32 = 0;
/// `spot_node_record::kind`: a tick of one of the Spot's timers.
pub const SPOT_WORK_TICK: u32 = 1;

/// A lane: application work (messages, ticks).
pub const SPOT_LANE_APPLICATION: u32 = 0;
/// A lane: lifecycle work (served first).
pub const SPOT_LANE_LIFECYCLE: u32 = 1;

/// Spot kinds (0 is invalid and refused, like every unknown value).
pub const SPOT_KIND_INVALID: u32 = 0;
/// The node's own Spot: one per node, never moves, never evicted.
pub const SPOT_KIND_ENTRY: u32 = 1;
/// Created only by `spot_node_create_user_spot`; never evicted.
pub const SPOT_KIND_USER: u32 = 2;
/// Created by `spot_node_send_or_create`; evicted when idle.
pub const SPOT_KIND_INSTANCE: u32 = 3;

/// Why a Spot closed (the closing callback's `reason`): idle past the timeout.
pub const SPOT_CLOSE_IDLE_EVICTED: u32 = 0;
/// Closed by `spot_node_close_spot`.
pub const SPOT_CLOSE_CLOSED: u32 = 1;
/// Its node shut down (`spot_node_free`).
pub const SPOT_CLOSE_NODE_SHUTDOWN: u32 = 2;
/// The node's authority over it ended first (its term in the store — the process was
/// stopped or cut off from the store past its lease — or its owner lease): another node
/// may own it now. Drop its object; save nothing.
pub const SPOT_CLOSE_AUTHORITY_LOST: u32 = 3;
/// Its creation failed after the factory ran: it never became Ready. Drop its object.
pub const SPOT_CLOSE_CREATION_FAILED: u32 = 4;

/// `spot_relocation_target::what`: a Spot (User or Instance).
pub const SPOT_TARGET_SPOT: u32 = 0;
/// `spot_relocation_target::what`: an actor of the Entry Spot.
pub const SPOT_TARGET_ENTRY_ACTOR: u32 = 1;

/// Builds a Spot's object when it is created. Return 0 on success; otherwise write a
/// message (NUL-terminated, at most `msg_len` bytes) to `msg` and return non-zero: the
/// creation fails with SPOT_E_CREATION_FAILED and its reservation is released. Runs on
/// the thread that creates the Spot; it must not call back into the node.
pub type spot_factory_fn = Option<
    unsafe extern "C" fn(
        env: *mut c_void,
        spot_id: u64,
        kind: u32,
        msg: *mut c_char,
        msg_len: usize,
    ) -> i32,
>;

/// Told once for every Spot whose factory ran, when it goes (`reason`: SPOT_CLOSE_*).
/// With IDLE_EVICTED, CLOSED and NODE_SHUTDOWN the node still holds its authority: it runs
/// before the Spot's location is released, nothing new is admitted meanwhile, and no
/// handler of the Spot runs beside it — save state here. With AUTHORITY_LOST and
/// CREATION_FAILED the Spot is not (or no longer) this node's: drop it, save nothing.
/// Runs on the thread that closes it (a host's exchanging thread for idle evictions, the
/// node's keeper thread for Spots whose authority ended); it must not call back into the
/// node.
pub type spot_closing_fn =
    Option<unsafe extern "C" fn(env: *mut c_void, spot_id: u64, kind: u32, reason: u32)>;

/// How to reach etcd (`spot_store_new_etcd`). Set `struct_size` to
/// `sizeof(struct spot_etcd_config)`; a zero duration takes its default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_etcd_config {
    /// `sizeof(struct spot_etcd_config)` as the host was built.
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Comma-separated etcd client URLs (required), e.g. `"http://127.0.0.1:2379"`.
    pub endpoints: *const std::ffi::c_char,
    /// Key prefix of this store, ending with '/' (NULL: `"/spot-timer/"`).
    pub prefix: *const std::ffi::c_char,
    /// The node's owner lease in etcd (0: 10 s; whole seconds, at least 2 s).
    pub lease_ttl_ns: u64,
    /// How long connecting may take at start (0: 5 s).
    pub connect_timeout_ns: u64,
    /// How long one etcd request may take (0: 5 s).
    pub request_timeout_ns: u64,
}

/// How to start a node. Versioned: set `struct_size = sizeof(struct spot_node_config)`;
/// a zero limit takes its default. A host built against 2.1 or 2.2 (without `listen`,
/// 112 bytes) is still accepted: its node does not listen.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_node_config {
    /// `sizeof(struct spot_node_config)` as the host was built.
    pub struct_size: u32,
    /// SPOT_CLOCK_*.
    pub clock: u32,
    /// This node's id in its store.
    pub node_id: u64,
    /// The id of the node's Entry Spot (unique in the store).
    pub entry_spot: u64,
    /// Application lane: items (default 1,024).
    pub application_lane_items: u64,
    /// Application lane: bytes, `payload + 256` per item (default 64 MiB).
    pub application_lane_bytes: u64,
    /// Lifecycle lane: items (default 128).
    pub lifecycle_lane_items: u64,
    /// Lifecycle lane: bytes (default 4 MiB).
    pub lifecycle_lane_bytes: u64,
    /// Payload bytes pending on the whole node (default 1 GiB).
    pub node_inbound_bytes: u64,
    /// Active Spots on the node, the Entry Spot included (default 100,000).
    pub active_cap: u64,
    /// Instance Spots idle this long are evicted by `spot_node_evict_idle`; 0: never.
    pub instance_idle_timeout_ns: u64,
    /// The Spots' owner lease (0: none).
    pub owner_lease_ns: u64,
    /// May be NULL (Spots need no object).
    pub factory: spot_factory_fn,
    /// May be NULL.
    pub on_close: spot_closing_fn,
    /// Handed to `factory` and `on_close`; never read by the library.
    pub env: *mut c_void,
    /// Serve the nodes of other processes (on other stores of the same etcd
    /// prefix) over TCP on this address: NULL or "" for none; otherwise "IP:PORT", e.g.
    /// "127.0.0.1:0" (port 0: any free port; `spot_node_address` tells the port bound).
    /// The address bound is recorded in the store with the node. Read during
    /// `spot_node_start` only. A node forwards to other processes' nodes whether it
    /// listens or not.
    pub listen: *const c_char,
}

/// One unit of Spot work handed to the host by `spot_node_exchange`. Valid (its payload
/// too) until it is completed.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct spot_node_record {
    /// SPOT_WORK_MESSAGE or SPOT_WORK_TICK.
    pub kind: u32,
    /// SPOT_LANE_* the work came from.
    pub lane: u32,
    /// The Spot.
    pub spot_id: u64,
    /// The token to complete it with (`spot_node_begin`, `spot_node_completion`).
    pub token: u64,
    /// MESSAGE: the payload (NULL when empty). TICK: NULL.
    pub payload: *const u8,
    /// MESSAGE: the payload's length. TICK: 0.
    pub payload_len: usize,
    /// TICK: the timer's key. MESSAGE: 0.
    pub key: u64,
    /// TICK: the value given at registration. MESSAGE: 0.
    pub value: u64,
    /// TICK: tick information (T4). MESSAGE: 0.
    pub delivery_index: u64,
    /// TICK: the nominal tick this callback stands for. MESSAGE: 0.
    pub scheduled_index: u64,
    /// TICK: nominal ticks skipped since the previous callback. MESSAGE: 0.
    pub skipped_ticks: u64,
}

/// Runs one record of `spot_node_run` (its start already checked) and says how it went:
/// SPOT_OUTCOME_*, SPOT_RUN_KEEP (complete it later with `spot_node_complete` and
/// `record->token`), or an outcome | SPOT_RUN_STOP. `record` and its payload are valid
/// only during the call. Must not unwind.
pub type spot_node_run_fn =
    Option<unsafe extern "C" fn(env: *mut c_void, record: *const spot_node_record) -> u32>;

/// A host's report that a record's handler ended (SPOT_OUTCOME_OK / FAILED) or never
/// started (NOT_STARTED; DEFERRED keeps a tick, and ends a message as not started).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_node_completion {
    /// The record's `token`.
    pub token: u64,
    /// SPOT_OUTCOME_*.
    pub outcome: u32,
    /// Must be 0.
    pub reserved: u32,
}

/// One entry of a node's relocation target list.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_relocation_target {
    /// SPOT_TARGET_SPOT or SPOT_TARGET_ENTRY_ACTOR.
    pub what: u32,
    /// SPOT_TARGET_SPOT: its SPOT_KIND_*. Otherwise 0.
    pub spot_kind: u32,
    /// The Spot's or the actor's id.
    pub id: u64,
}

/// A node's counters (each a counter unless marked as a gauge). Set `struct_size` first;
/// the library fills the whole fields that fit and stores the bytes filled.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct spot_node_stats {
    /// `sizeof(struct spot_node_stats)` as the host was built; the library stores the
    /// bytes it filled.
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Gauge: Spots active on the node (the Entry Spot included).
    pub active_spots: u64,
    /// Spots created on the node.
    pub created: u64,
    /// Factory calls.
    pub factory_runs: u64,
    /// Creations that failed.
    pub creation_failures: u64,
    /// Instance Spots evicted idle.
    pub evicted: u64,
    /// Spots closed by a call or the node's shutdown.
    pub closed: u64,
    /// Messages admitted to a lane.
    pub messages_admitted: u64,
    /// Messages whose handler ran.
    pub messages_completed: u64,
    /// Admitted messages that never ran (their Spot closed first). Once quiet:
    /// `messages_admitted == messages_completed + messages_dropped`.
    pub messages_dropped: u64,
    /// Admissions refused by a Spot's application lane.
    pub rejected_application_lane: u64,
    /// Admissions refused by a Spot's lifecycle lane.
    pub rejected_lifecycle_lane: u64,
    /// Admissions refused by the node's inbound byte budget.
    pub rejected_node_inbound: u64,
    /// Activations refused by the active cap.
    pub rejected_activation: u64,
    /// Messages that ended with SPOT_E_STALE_ROUTE.
    pub stale_routes: u64,
    /// Ticks kept because the application lane was full.
    pub ticks_deferred: u64,
    /// Idle-eviction passes.
    pub eviction_passes: u64,
    /// Spots examined by those passes (at most 64 each).
    pub eviction_examined: u64,
    /// Spots given up because the node's authority over them ended first (closed with
    /// SPOT_CLOSE_AUTHORITY_LOST).
    pub authority_lost: u64,
    /// Terms of authority the node took after its first.
    pub terms_renewed: u64,
}

pub(crate) fn close_reason_to_u32(r: spot_lifecycle::CloseReason) -> u32 {
    use spot_lifecycle::CloseReason;
    match r {
        CloseReason::IdleEvicted => SPOT_CLOSE_IDLE_EVICTED,
        CloseReason::Closed => SPOT_CLOSE_CLOSED,
        CloseReason::NodeShutdown => SPOT_CLOSE_NODE_SHUTDOWN,
        CloseReason::AuthorityLost => SPOT_CLOSE_AUTHORITY_LOST,
        CloseReason::CreationFailed => SPOT_CLOSE_CREATION_FAILED,
    }
}
