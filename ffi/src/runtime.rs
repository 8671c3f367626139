//! The runtime behind a handle: the core runtime plus the handle bookkeeping of the ABI
//! (owner authorities by id, timer handles by slot), and the runtime-level exports.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use spot_timer_core::{ClockKind, Owner, Runtime, RuntimeConfig, Sink, TimerHandle, TimerId};

use crate::boundary::{boundary, read_versioned, write_versioned, Failure, FfiResult, Out};
use crate::delivery::CallbackHandler;
use crate::handles;
use crate::status::*;
use crate::types::*;

/// What the core carries for every timer of a C runtime: the host's user data pointer.
pub(crate) struct Payload {
    pub user_data: usize,
}

const TIMER_SHARDS: usize = 64;

/// A C runtime: the core runtime and the tables that turn ABI integers into core objects.
pub(crate) struct FfiRuntime {
    pub rt: Runtime<Payload>,
    pub callback_mode: bool,
    /// The latest authority of each owner id acquired through this runtime.
    pub owners: RwLock<HashMap<u64, Owner<Payload>>>,
    /// The newest generation registered in each slot, kept after it ended so that a
    /// later cancel of it sees its recorded terminal result (until the slot is reused).
    timers: Vec<Mutex<HashMap<u32, TimerHandle<Payload>>>>,
}

impl FfiRuntime {
    pub fn owner(&self, owner_id: u64) -> FfiResult<Owner<Payload>> {
        self.owners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&owner_id)
            .cloned()
            .ok_or_else(|| Failure::new(SPOT_E_UNKNOWN_OWNER, format!("unknown owner {owner_id}")))
    }

    /// The owner's authority `epoch`, if it is the current one.
    pub fn authority(&self, owner_id: u64, epoch: u64) -> FfiResult<Owner<Payload>> {
        let owner = self.owner(owner_id)?;
        if owner.epoch() != epoch {
            return Err(Failure::new(
                SPOT_E_REVOKED,
                format!(
                    "epoch {epoch} of owner {owner_id} is not its current authority (epoch {})",
                    owner.epoch()
                ),
            ));
        }
        Ok(owner)
    }

    fn shard(&self, slot: u32) -> std::sync::MutexGuard<'_, HashMap<u32, TimerHandle<Payload>>> {
        self.timers[slot as usize % TIMER_SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub fn remember_timer(&self, handle: &TimerHandle<Payload>) {
        let id = handle.id();
        let mut shard = self.shard(id.slot);
        match shard.get(&id.slot) {
            Some(old) if old.id().generation > id.generation => {}
            _ => {
                shard.insert(id.slot, handle.clone());
            }
        }
    }

    pub fn timer(&self, t: &spot_timer) -> FfiResult<TimerHandle<Payload>> {
        if let Some(h) = self.shard(t.slot).get(&t.slot) {
            if h.id().generation == t.generation {
                return Ok(h.clone());
            }
        }
        self.rt
            .timer(TimerId {
                slot: t.slot,
                generation: t.generation,
            })
            .map_err(|_| {
                Failure::new(
                    SPOT_E_STALE_TIMER,
                    format!(
                        "timer (slot {}, generation {}) names no live or recorded generation",
                        t.slot, t.generation
                    ),
                )
            })
    }
}

thread_local! {
    /// The runtime whose batch callback this thread is running (0: none).
    static IN_CALLBACK: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn in_callback_of(rt: u64) -> bool {
    IN_CALLBACK.with(|c| c.get()) == rt
}

/// Marks this thread as running the batch callback of `rt` until the guard drops.
pub(crate) fn enter_callback(rt: u64) -> impl Drop {
    struct Guard(u64);
    impl Drop for Guard {
        fn drop(&mut self) {
            IN_CALLBACK.with(|c| c.set(self.0));
        }
    }
    Guard(IN_CALLBACK.with(|c| c.replace(rt)))
}

/// The ABI version of the library: `(major << 16) | minor`; this header is
/// `SPOT_ABI_VERSION` (1.1). A host built against major M works with a library of the
/// same major M and a minor >= its own.
///
/// Infallible. Thread-safe.
#[no_mangle]
pub extern "C" fn spot_abi_version() -> u32 {
    SPOT_ABI_VERSION
}

/// Creates a runtime with its scheduler thread and writes its handle to `*out_rt`.
///
/// `cfg` is read during the call only. With `SPOT_DELIVERY_CALLBACK`, the runtime keeps
/// `callback_env` and calls `callback` on its scheduler thread once per batch, and calls
/// `callback_finalizer` (if not NULL) exactly once when the runtime is freed; when this
/// function fails, neither is ever called and the caller still owns `callback_env`.
///
/// Ownership: the caller owns the returned handle and must free it with
/// `spot_runtime_free`. Thread-safe.
///
/// Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_UNKNOWN_ENUM,
/// SPOT_E_INVALID_ARGUMENT (reserved field set, callback missing or given with exchange
/// delivery), SPOT_E_OS.
#[no_mangle]
pub unsafe extern "C" fn spot_runtime_new(
    cfg: *const spot_runtime_config,
    out_rt: *mut u64,
) -> spot_status {
    boundary("spot_runtime_new", || {
        let cfg = read_versioned(cfg, "cfg")?;
        let out = Out::new(out_rt, "out_rt")?;
        let clock = clock_from_u32(cfg.clock)?;
        let delivery = delivery_from_u32(cfg.delivery)?;
        if cfg.reserved != 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`cfg->reserved` must be 0",
            ));
        }
        let handle_cell = Arc::new(AtomicU64::new(0));
        let armed = Arc::new(AtomicBool::new(false));
        let sink = match delivery {
            DeliveryChoice::Exchange => {
                if cfg.callback.is_some() || cfg.callback_finalizer.is_some() {
                    return Err(Failure::new(
                        SPOT_E_INVALID_ARGUMENT,
                        "`cfg->callback` and `cfg->callback_finalizer` must be NULL with SPOT_DELIVERY_EXCHANGE",
                    ));
                }
                Sink::Exchange
            }
            DeliveryChoice::Callback => {
                let Some(cb) = cfg.callback else {
                    return Err(Failure::new(
                        SPOT_E_NULL_ARGUMENT,
                        "`cfg->callback` must not be NULL with SPOT_DELIVERY_CALLBACK",
                    ));
                };
                Sink::Callback(Box::new(CallbackHandler::new(
                    cb,
                    cfg.callback_env,
                    cfg.callback_finalizer,
                    armed.clone(),
                    handle_cell.clone(),
                )))
            }
        };
        let rt = Runtime::new(RuntimeConfig {
            clock: match clock {
                ClockChoice::Real => ClockKind::Real,
                ClockChoice::Manual => ClockKind::manual(),
            },
            sink,
            ..RuntimeConfig::default()
        })?;
        let ffi = Arc::new(FfiRuntime {
            rt,
            callback_mode: delivery == DeliveryChoice::Callback,
            owners: RwLock::new(HashMap::new()),
            timers: (0..TIMER_SHARDS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
        });
        armed.store(true, Ordering::Release);
        let handle = handles::insert(ffi);
        handle_cell.store(handle, Ordering::Release);
        out.write(handle);
        Ok(())
    })
}

/// Frees a runtime: every live timer ends with SPOT_END_RUNTIME_CLOSED (release hooks
/// run), threads blocked in this runtime's calls wake with SPOT_E_CLOSED, the scheduler
/// thread exits and the batch-callback finalizer runs. The handle is invalid afterwards;
/// freeing it again gives SPOT_E_INVALID_HANDLE. Records received earlier (their
/// `live_word` pointers) must not be used after this call.
///
/// Called from inside the batch callback (or a release hook) it does not wait for the
/// scheduler thread: the runtime finishes closing, and the finalizer runs, on the
/// scheduler thread right after the callback returns.
///
/// Ownership: consumes the handle. Thread-safe: a call racing this one on the same handle
/// either completes normally or returns SPOT_E_INVALID_HANDLE / SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_runtime_free(rt: u64) -> spot_status {
    boundary("spot_runtime_free", || {
        let ffi = handles::remove(rt)?;
        ffi.rt.close();
        drop(ffi);
        Ok(())
    })
}

/// Manual clock only: moves the clock forward by `ns` and returns once the scheduler fired
/// everything that became due (the records are ready for `spot_exchange` or have been
/// handed to the batch callback).
///
/// Thread-safe. From inside the batch callback: SPOT_E_WOULD_DEADLOCK.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NOT_MANUAL_CLOCK, SPOT_E_CLOSED,
/// SPOT_E_WOULD_DEADLOCK.
#[no_mangle]
pub extern "C" fn spot_advance(rt: u64, ns: u64) -> spot_status {
    boundary("spot_advance", || {
        let ffi = handles::get(rt)?;
        ffi.rt.advance(Duration::from_nanos(ns))?;
        Ok(())
    })
}

/// Writes the runtime's current time (nanoseconds on its clock) to `*out_ns`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn spot_now(rt: u64, out_ns: *mut u64) -> spot_status {
    boundary("spot_now", || {
        let out = Out::new(out_ns, "out_ns")?;
        let ffi = handles::get(rt)?;
        out.write(ffi.rt.now());
        Ok(())
    })
}

/// Fills `*out` with a snapshot of the runtime's counters. Set `out->struct_size` to
/// `sizeof(spot_stats)` first; see `spot_stats`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_BAD_STRUCT_SIZE.
#[no_mangle]
pub unsafe extern "C" fn spot_stats(rt: u64, out: *mut spot_stats) -> spot_status {
    boundary("spot_stats", || {
        let ffi = handles::get(rt)?;
        let s = ffi.rt.stats();
        let v = spot_stats {
            struct_size: std::mem::size_of::<spot_stats>() as u32,
            reserved: 0,
            scheduler_threads: s.scheduler_threads,
            wakeup_primitives: s.wakeup_primitives,
            os_timers: s.os_timers,
            queue_len: s.queue_len,
            live_timers: s.live_timers,
            owners: s.owners,
            wakeups: s.wakeups,
            batches: s.batches,
            records_published: s.records_published,
            host_crossings: s.host_crossings,
            records_received: s.records_received,
            completed_ok: s.completed_ok,
            completed_failed: s.completed_failed,
            completed_deferred: s.completed_deferred,
            not_started: s.not_started,
            ticks_skipped: s.ticks_skipped,
            ticks_dropped_authority: s.ticks_dropped_authority,
            registered: s.registered,
            ended: s.ended,
            cleanup_failures: s.cleanup_failures,
            invalid_completions: s.invalid_completions,
            stale_entries_dropped: s.stale_entries_dropped,
            compactions: s.compactions,
            gate_waits: s.gate_waits,
            ticks_due: s.ticks_due,
            ticks_discarded: s.ticks_discarded,
        };
        write_versioned(out, "out", v)
    })
}
