//! Owner authorities: acquire with a lease, renew, revoke, and the host's side of the
//! owner's execution gate.

use std::time::Duration;

use spot_timer_core::OwnerOptions;

use crate::boundary::{boundary, Failure, Out};
use crate::core_runtime::in_callback_of;
use crate::handles;
use crate::status::*;
use crate::types::{gate_from_u32, timeout_from_i64};

fn lease(ns: u64) -> Option<Duration> {
    (ns != 0).then(|| Duration::from_nanos(ns))
}

/// Starts a new authority of owner `owner_id` and writes its epoch to `*out_epoch`. Any
/// older authority of the id is revoked: its timers end with SPOT_END_REVOKED.
///
/// `lease_ns`: lease length on the runtime's clock (0 = no lease, never expires); renew
/// it with `spot_owner_renew` before it runs out. `gate`: SPOT_GATE_*.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_UNKNOWN_ENUM, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_owner_acquire(
    rt: u64,
    owner_id: u64,
    lease_ns: u64,
    gate: u32,
    out_epoch: *mut u64,
) -> spot_status {
    boundary("spot_owner_acquire", || {
        let out = Out::new(out_epoch, "out_epoch")?;
        let gate = gate_from_u32(gate)?;
        let ffi = handles::get(rt)?;
        let owner = ffi.rt.acquire_owner(
            owner_id,
            OwnerOptions {
                lease: lease(lease_ns),
                gate,
            },
        )?;
        out.write(owner.epoch());
        Ok(())
    })
}

/// Extends the lease of authority (`owner_id`, `epoch`) to now + `lease_ns` (0 = no
/// deadline any more). Fails once the lease has expired: the authority is over.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED,
/// SPOT_E_LEASE_EXPIRED, SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_owner_renew(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    lease_ns: u64,
) -> spot_status {
    boundary("spot_owner_renew", || {
        let ffi = handles::get(rt)?;
        ffi.rt.authority(owner_id, epoch)?.renew(lease(lease_ns))?;
        Ok(())
    })
}

/// Ends authority (`owner_id`, `epoch`): its timers end with SPOT_END_REVOKED and none of
/// their pending ticks run.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED
/// (already revoked or superseded), SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_owner_revoke(rt: u64, owner_id: u64, epoch: u64) -> spot_status {
    boundary("spot_owner_revoke", || {
        let ffi = handles::get(rt)?;
        ffi.rt.authority(owner_id, epoch)?.revoke()?;
        Ok(())
    })
}

/// Ends authority (`owner_id`, `epoch`) like spot_owner_revoke and lets the runtime forget
/// the owner: once its timers have ended (each with SPOT_END_REVOKED; a callback already
/// started runs to its end first), the runtime frees everything it kept for the owner and
/// `spot_stats().owners` drops. Use it when an owner goes away for good (an actor stops, a
/// session closes); without it every owner id ever acquired stays known to the runtime.
/// Acquiring `owner_id` again later starts a new owner whose epochs are above every epoch
/// of the released one, so an (owner_id, epoch) kept from before never matches it.
///
/// After the call the id is unknown to this runtime until acquired again: a second
/// release, or a renew, revoke or registration with the released authority, gives
/// SPOT_E_UNKNOWN_OWNER.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER (never acquired, or
/// released), SPOT_E_REVOKED (`epoch` is not the current authority: revoked or
/// superseded), SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_owner_release(rt: u64, owner_id: u64, epoch: u64) -> spot_status {
    boundary("spot_owner_release", || {
        let ffi = handles::get(rt)?;
        ffi.rt.authority(owner_id, epoch)?.release()?;
        Ok(())
    })
}

/// Takes owner `owner_id`'s execution gate for the host's own work, waiting up to
/// `timeout_ns` (-1 = forever, 0 = try once). While the host holds it none of the
/// owner's timer callbacks start; due ticks wait and run after `spot_owner_gate_leave`.
///
/// Thread-safe. From inside the batch callback it never waits (the gate may be held by a
/// record of the running batch): SPOT_E_WOULD_DEADLOCK when the gate is not free.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER, SPOT_E_INVALID_ARGUMENT,
/// SPOT_E_TIMEOUT, SPOT_E_WOULD_DEADLOCK, SPOT_E_CLOSED (the runtime was freed while
/// waiting: a free wakes every waiter).
#[no_mangle]
pub extern "C" fn spot_owner_gate_enter(rt: u64, owner_id: u64, timeout_ns: i64) -> spot_status {
    boundary("spot_owner_gate_enter", || {
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let ffi = handles::get(rt)?;
        let owner = ffi.rt.known_owner(owner_id)?;
        if in_callback_of(rt) {
            if owner.try_enter_gate() {
                return Ok(());
            }
            return Err(Failure::new(
                SPOT_E_WOULD_DEADLOCK,
                "the gate is taken and cannot be released while the batch callback runs",
            ));
        }
        if owner.enter_gate(timeout) {
            Ok(())
        } else if ffi.rt.is_closed() {
            Err(Failure::new(
                SPOT_E_CLOSED,
                "the runtime was freed while waiting for the gate",
            ))
        } else {
            Err(Failure::new(
                SPOT_E_TIMEOUT,
                "the owner's gate stayed taken",
            ))
        }
    })
}

/// Releases the gate taken with `spot_owner_gate_enter`; waiting ticks run.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_OWNER,
/// SPOT_E_INVALID_ARGUMENT (the host does not hold the gate), SPOT_E_CLOSED.
#[no_mangle]
pub extern "C" fn spot_owner_gate_leave(rt: u64, owner_id: u64) -> spot_status {
    boundary("spot_owner_gate_leave", || {
        let ffi = handles::get(rt)?;
        ffi.rt.known_owner(owner_id)?.leave_gate()?;
        Ok(())
    })
}
