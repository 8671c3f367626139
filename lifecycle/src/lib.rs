//! # spot-lifecycle
//!
//! The life of Spots — the objects that own timers — over the spot-timer runtime: three
//! kinds as three types (Entry, User, Instance), creation only on an explicit intent,
//! stale-owner filtering by owner identity and lease, idle eviction of Instance Spots,
//! and execution lanes bounded by count and bytes. The contract is
//! `docs/lifecycle.md` in the repository (L1–L7).
//!
//! Arrows point one way: this crate uses `spot-timer-core`; the core knows nothing of
//! kinds, lanes or stores. A Spot is an owner of the timer runtime, and every piece of
//! Spot work — a message or a timer tick — reaches the host as a record of that runtime,
//! so both come in the same batch, under the Spot's serial gate and lease check.
//!
//! Modules: [`kind`] (kinds and Spot handles), [`error`], [`lane`] (lane limits and
//! accounting), [`store`] (the Location Store interface and the embedded store),
//! `resolver` (the four closed states of an id), `catalog` (the eviction cursor),
//! `timer_work` (what a record of the timer runtime stands for), `burst` (messages handed
//! over under one record), [`work`] (records and completions), [`cluster`] (nodes in one process), `transport` (nodes of other processes, over TCP),
//! [`node`] (the node, split by role).
#![warn(missing_docs)]

mod activity_words;
mod burst;
pub mod catalog;
pub mod cluster;
pub mod error;
pub mod kind;
pub mod lane;
pub mod node;
mod resolver;
pub mod store;
mod timer_work;
mod transport;
pub mod work;

pub use catalog::SCAN_LIMIT;
pub use cluster::Cluster;
pub use error::{LifecycleError, Queue, Result, StaleReason};
pub use kind::{Entry, Instance, InvalidKindNumber, Kind, Spot, SpotId, SpotKind, User};
pub use lane::{LaneKind, LaneLimits, LaneUse, ITEM_OVERHEAD_BYTES};
pub use node::{
    CloseReason, ClosingCallback, Factory, Node, NodeCompleter, NodeConfig, NodeSource, NodeStats,
    RelocationTarget,
};
pub use spot_timer_core::Outcome;
pub use store::{
    Authority, EmbeddedStore, LocationRecord, LocationState, LocationStore, NodeId, NodeStatus,
    NodeTerm, Reserved,
};
pub use work::{MessageRecord, SpotCompletion, SpotRecord, SpotTick};
