//! The atomics of the cross-thread protocols (slot liveness words, completion claims,
//! owner leases and gates). Under `--cfg spot_loom` they are loom's, so the loom models in
//! `table.rs` and `owner.rs` check the real code paths, not copies of them.

#[cfg(spot_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};
#[cfg(not(spot_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};
