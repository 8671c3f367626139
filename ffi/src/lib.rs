//! # spot-timer C ABI
//!
//! A thin, stable C layer over `spot-timer-core` (library `libspot_timer`, header
//! `include/spot_timer.h`, generated from this crate by cbindgen). No timer logic lives
//! here: every export decodes its arguments, calls the core and encodes the result.
//!
//! One concept per module: [`boundary`] (panic boundary, last error, pointer checks),
//! [`status`] (status codes), [`handles`] (generation-tagged runtime handles), [`types`]
//! (`#[repr(C)]` structs and enum values), `core_runtime` (what a handle names), and the
//! exports: [`runtime`], [`owner`], [`timer`], [`delivery`], [`session`] and [`run`] (the
//! core's delivery driver calling a host function per record); the Spot lifecycle's
//! exports in [`node`] (types in [`node_types`], handles of stores and nodes in
//! `node_handles`), over the `spot-lifecycle` crate.
#![warn(missing_docs)]
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // every export documents its contract in the header

pub mod boundary;
mod core_runtime;
pub mod delivery;
pub mod handles;
mod lifecycle_status;
pub mod metrics;
pub mod node;
mod node_handles;
mod node_inflight;
pub mod node_types;
pub mod owner;
pub mod run;
pub mod runtime;
pub mod schema;
pub mod session;
pub mod status;
pub mod store;
pub mod timer;
pub mod types;

pub use boundary::{spot_last_error, spot_status_name};
pub use delivery::*;
pub use metrics::*;
pub use node::*;
pub use node_types::*;
pub use owner::*;
pub use run::*;
pub use runtime::*;
pub use schema::*;
pub use status::*;
pub use timer::*;
pub use types::*;
