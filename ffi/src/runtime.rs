//! The runtime-level exports: create, free, clock, stats. The C ABI keeps no tables of its
//! own: timers are checked against the core's slot words, owners are resolved by their
//! epoch.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::{ClockKind, Runtime, RuntimeConfig, Sink};

use crate::boundary::{boundary, read_versioned, write_versioned, Failure, Out};
use crate::core_runtime::{close_handing_back, release_payload, FfiRuntime, Payload};
use crate::delivery::CallbackHandler;
use crate::handles;
use crate::status::*;
use crate::types::*;

/// The ABI version of the library: `(major << 16) | minor`; this header is
/// `SPOT_ABI_VERSION`. A host built against major M works with a library of the
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
        let cfg = read_versioned(cfg, "cfg", &[RUNTIME_CONFIG_V1_SIZE])?;
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
            resolution: match cfg.resolution_ns {
                0 => RuntimeConfig::<Payload>::default().resolution,
                ns => Duration::from_nanos(ns),
            },
            release: Some(Box::new(release_payload)),
            // Timers registered without a release function end without calling it.
            release_needed: Some(|p: &Payload| p.release.is_some()),
        })?;
        let ffi = Arc::new(FfiRuntime {
            rt,
            callback_mode: delivery == DeliveryChoice::Callback,
        });
        let handle = handles::insert(ffi.clone()).inspect_err(|_| ffi.rt.close())?;
        armed.store(true, Ordering::Release);
        handle_cell.store(handle, Ordering::Release);
        out.write(handle);
        Ok(())
    })
}

/// Closes a runtime without freeing its handle: every live timer ends with
/// SPOT_END_RUNTIME_CLOSED (release hooks run on this thread), threads blocked in this
/// runtime's calls wake with SPOT_E_CLOSED, and the scheduler thread exits. Afterwards the
/// handle stays valid until `spot_runtime_free`: a cancel gives the generation's terminal
/// result (SPOT_END_RUNTIME_CLOSED for the timers the close ended), `spot_stats` still
/// works, and registrations, exchanges and owner calls give SPOT_E_CLOSED. Closing again
/// does nothing. Lets a host stop every timer first and free the handle once no other
/// thread can still be using it.
///
/// Called from inside the batch callback (or a release hook) it does not wait for the
/// scheduler thread, as `spot_runtime_free`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn spot_runtime_close(rt: u64) -> spot_status {
    boundary("spot_runtime_close", || {
        handles::get(rt)?.rt.close();
        Ok(())
    })
}

/// Closes a runtime as `spot_runtime_close` does, except that the generations this call
/// ends hand their user data to `handback` (on this thread, up to 1,024 per call) instead
/// of calling their release functions one by one: a host that owns many timers takes them
/// back with one call per batch. Each of those generations ended `SPOT_END_RUNTIME_CLOSED`
/// (as a cancel says afterwards) and its release function never runs; generations without
/// a release function are not listed. As with release functions at a close, the list
/// includes generations whose records the host still holds (a batch in progress): free
/// their user data once that batch is done. A generation another thread ends meanwhile
/// runs its release function there, as usual. Closing a closed runtime does nothing and
/// calls `handback` for nothing.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT (`handback`).
#[no_mangle]
pub extern "C" fn spot_runtime_close_handing_back(
    rt: u64,
    handback: spot_handback_fn,
    env: *mut c_void,
) -> spot_status {
    boundary("spot_runtime_close_handing_back", || {
        let f = handback
            .ok_or_else(|| Failure::new(SPOT_E_NULL_ARGUMENT, "`handback` must not be NULL"))?;
        let ffi = handles::get(rt)?;
        close_handing_back(&ffi.rt, f, env);
        Ok(())
    })
}

/// Frees a runtime: every live timer ends with SPOT_END_RUNTIME_CLOSED (release hooks
/// run), threads blocked in this runtime's calls wake with SPOT_E_CLOSED, the scheduler
/// thread exits and the batch-callback finalizer runs. The handle is invalid afterwards;
/// freeing it again gives SPOT_E_INVALID_HANDLE. Records received earlier (their
/// `live_word` and `lease_word` pointers) must not be used after this call.
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

/// Writes the runtime's current time (nanoseconds on its clock) to `*out_ns`: on the real
/// clock, `CLOCK_BOOTTIME`; read it once per batch for the call-free start check (see
/// `spot_record`).
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
            records_taken_back: s.records_taken_back,
            records_abandoned: s.records_abandoned,
            scheduler_wakes_by_hosts: s.scheduler_wakes_by_hosts,
        };
        write_versioned(out, "out", v, STATS_V1_SIZE)
    })
}
