//! Timers: register (spec, user data, release hook), blocking and non-blocking cancel,
//! per-generation statistics. Every call checks the handle against the core's slot word.

use std::ffi::c_void;
use std::time::Duration;

use spot_timer_core::{Cancelled, EndResult, Swap, TimerId, TimerSpec};

use crate::boundary::{boundary, with_versioned, write_versioned, Failure, FfiResult, Out};
use crate::core_runtime::{stale, timer_id, Payload};
use crate::handles;
use crate::status::*;
use crate::types::*;

fn spec_from_c(s: &spot_timer_spec) -> FfiResult<TimerSpec> {
    let policy = policy_from_u32(s.policy)?;
    if s.reserved != 0 {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            "`spec->reserved` must be 0",
        ));
    }
    let first_due =
        (s.first_due_ns != SPOT_FIRST_DUE_DEFAULT).then(|| Duration::from_nanos(s.first_due_ns));
    if s.period_ns == 0 && first_due.is_none() {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            "period_ns 0 registers a one-shot timer, which needs first_due_ns (a repeating \
             timer needs a period greater than zero)",
        ));
    }
    Ok(TimerSpec {
        period: (s.period_ns != 0).then(|| Duration::from_nanos(s.period_ns)),
        first_due,
        policy,
        max_catch_up_ticks: s.max_catch_up_ticks,
    })
}

/// Registers timer `key` of authority (`owner_id`, `epoch`) and writes its handle to
/// `*out_timer`. An existing registration of the same (owner, key) is superseded: its
/// generation ends with SPOT_END_SUPERSEDED and none of its pending ticks run; if its
/// callback is running, the new generation's first callback waits for it to end.
///
/// `spec` is read during the call only. `user_data` is handed back in every record of
/// the timer; the runtime never dereferences it. `release` (may be NULL) is called
/// exactly once with `user_data` when the generation ends, on the thread that ends it
/// (see `spot_release_fn`); it must not block for long. When this function fails,
/// `release` is never called and the caller keeps ownership of `user_data`.
///
/// Thread-safe; may be called from inside the batch callback.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE,
/// SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT, SPOT_E_UNKNOWN_OWNER, SPOT_E_REVOKED,
/// SPOT_E_LEASE_EXPIRED, SPOT_E_CAPACITY_EXHAUSTED, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_register(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    key: u64,
    spec: *const spot_timer_spec,
    user_data: *mut c_void,
    release: spot_release_fn,
    out_timer: *mut spot_timer,
) -> spot_status {
    boundary("spot_timer_register", || {
        register(
            rt, owner_id, epoch, key, spec, user_data, release, out_timer, false,
        )
    })
}

/// spot_timer_register and spot_timer_register_held alike: the latter's handle holds.
#[allow(clippy::too_many_arguments)]
unsafe fn register(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    key: u64,
    spec: *const spot_timer_spec,
    user_data: *mut c_void,
    release: spot_release_fn,
    out_timer: *mut spot_timer,
    held: bool,
) -> FfiResult {
    let (spec, out) = spec_and_out(spec, out_timer)?;
    let ffi = handles::get(rt)?;
    let payload = Payload::new(user_data, release);
    let id = if held {
        ffi.rt
            .register_held_for(owner_id, epoch, key, spec, payload, None)?
            .into_id()
    } else {
        ffi.rt
            .register_for(owner_id, epoch, key, spec, payload, None)?
    };
    write_timer(out, id);
    Ok(())
}

/// spot_timer_register, and the handle written to `*out_timer` *holds* its generation:
/// the generation's slot serves no other generation until the hold is given back with
/// spot_timer_release_hold, so spot_timer_cancel, spot_timer_cancel_async and
/// spot_timer_stats keep answering for it — with its recorded end once it ended — instead
/// of SPOT_E_STALE_TIMER. For wrappers whose handle object keeps its result as long as it
/// lives (the C++ `spot::Timer`). A hold never given back keeps its slot (64 bytes) for the
/// runtime's life.
///
/// Thread-safe; may be called from inside the batch callback. Errors as
/// spot_timer_register.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_register_held(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    key: u64,
    spec: *const spot_timer_spec,
    user_data: *mut c_void,
    release: spot_release_fn,
    out_timer: *mut spot_timer,
) -> spot_status {
    boundary("spot_timer_register_held", || {
        register(
            rt, owner_id, epoch, key, spec, user_data, release, out_timer, true,
        )
    })
}

/// Gives back the hold spot_timer_register_held took for generation `t`. Once its
/// generation has ended and its holds are gone, `t`'s slot may serve another generation
/// and `t` goes stale. Does not cancel `t`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_ARGUMENT (`t.reserved` not
/// 0), SPOT_E_STALE_TIMER (`t` holds nothing: never held, given back already, or its slot
/// moved on). A hold given back twice takes another holder's hold of the same slot (whose
/// results may then go stale early), never more: a slot serves a new generation only
/// after its last one ended.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_release_hold(rt: u64, t: spot_timer) -> spot_status {
    boundary("spot_timer_release_hold", || {
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        match ffi.rt.release_hold_of(id) {
            Err(spot_timer_core::Error::StaleHandle) => Err(stale(&t)),
            r => Ok(r?),
        }
    })
}

/// What spot_timer_register and spot_timer_rearm read alike: the spec, read in place, and
/// `out_timer`, checked in order: the spec's size, `out_timer`, the spec's fields.
unsafe fn spec_and_out(
    spec: *const spot_timer_spec,
    out_timer: *mut spot_timer,
) -> FfiResult<(TimerSpec, Out<spot_timer>)> {
    with_versioned(spec, "spec", &[], |s| {
        let out = Out::new(out_timer, "out_timer")?;
        Ok((spec_from_c(s)?, out))
    })
}

fn write_timer(out: Out<spot_timer>, id: TimerId) {
    out.write(spot_timer {
        generation: id.generation(),
        slot: id.slot(),
        reserved: 0,
    });
}

/// spot_timer_register, naming `previous`: the handle of the key's current generation as
/// the host knows it (a timeout it resets, a deadline it moves). The outcome is the same —
/// a new generation supersedes the key's current one — and when `previous` is that
/// generation, idle (no record of it with a host), without a `release` function and with
/// nobody waiting for it, the new generation takes its slot in place: only the timer's
/// own line, its user data and one deadline entry are written. `previous` keeps its one
/// result, SPOT_END_SUPERSEDED. A `previous` that is stale or names another key only
/// costs the look (it is not an error); a malformed one (`reserved` not 0) is.
///
/// `spec`, `user_data`, `release` and `out_timer` as for spot_timer_register.
/// Thread-safe; may be called from inside the batch callback.
/// Errors: those of spot_timer_register.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn spot_timer_rearm(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    previous: spot_timer,
    key: u64,
    spec: *const spot_timer_spec,
    user_data: *mut c_void,
    release: spot_release_fn,
    out_timer: *mut spot_timer,
) -> spot_status {
    boundary("spot_timer_rearm", || {
        let (spec, out) = spec_and_out(spec, out_timer)?;
        if previous.reserved != 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`previous.reserved` must be 0",
            ));
        }
        // A handle out of the runtime's range names nothing: no slot is looked at.
        let previous = TimerId::from_parts(previous.slot, previous.generation)
            .unwrap_or_else(|| TimerId::from_parts(0, 0).expect("slot 0 exists"));
        let ffi = handles::get(rt)?;
        let id = ffi.rt.rearm_for(
            owner_id,
            epoch,
            previous,
            key,
            spec,
            Payload::new(user_data, release),
            None,
        )?;
        write_timer(out, id);
        Ok(())
    })
}

/// Moves live generation `t` — a timeout that is reset, a deadline that is moved — to a
/// new generation of the same owner authority and key, with `t`'s period and policy, its
/// first tick due `delay_ns` from now, carrying `user_data` and `release` (as
/// spot_timer_register takes them; pass `t`'s own to keep them): in place, when `t` is idle
/// (no record of it with a host) and nobody waits for its end. Then `t` ends
/// SPOT_END_SUPERSEDED *without* its release hook running (its user data is the host's
/// again), only the timer's own line and one deadline entry are written, the new handle
/// goes to `*out_timer` and `*out_moved` is 1.
///
/// When `t` cannot move in place, nothing changes and `*out_moved` is 0 (`*out_timer` is
/// untouched, `user_data` stays the host's and `release` never runs for it): register the
/// key again instead (spot_timer_register supersedes `t` the ordinary way).
///
/// Thread-safe; may be called from inside the batch callback (also for `t` itself, whose
/// record is then with the host: `*out_moved` is 0).
/// Errors: SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (`t.reserved` not 0),
/// SPOT_E_INVALID_HANDLE, SPOT_E_STALE_TIMER (`t` ended), SPOT_E_LEASE_EXPIRED,
/// SPOT_E_REVOKED.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_reset(
    rt: u64,
    t: spot_timer,
    delay_ns: u64,
    user_data: *mut c_void,
    release: spot_release_fn,
    out_timer: *mut spot_timer,
    out_moved: *mut u32,
) -> spot_status {
    boundary("spot_timer_reset", || {
        let out = Out::new(out_timer, "out_timer")?;
        let moved = Out::new(out_moved, "out_moved")?;
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        let payload = Payload::new(user_data, release);
        match ffi
            .rt
            .reset_timer_swapping(id, Duration::from_nanos(delay_ns), payload)?
        {
            // The previous user data is the host's again: dropping its payload runs nothing.
            Swap::Moved { id: new, .. } => {
                write_timer(out, new);
                moved.write(1);
            }
            Swap::Refused(_) => moved.write(0),
        }
        Ok(())
    })
}

fn end_result(r: EndResult, out_reason: Option<Out<u32>>) -> FfiResult {
    let reason = r?;
    if let Some(o) = out_reason {
        o.write(end_reason_to_u32(reason));
    }
    Ok(())
}

/// Cancels timer generation `t` and waits up to `timeout_ns` (-1 = forever, 0 = don't
/// wait) for its terminal result. From the moment of the call no new callback of `t`
/// starts; a callback already started runs to its end and the release hook runs before
/// the result is published.
///
/// A timer whose record no host holds ends within this call, on the calling thread (its
/// release hook runs here): no wait, no round trip to the scheduler. A record published
/// but not yet received by any `spot_exchange` is taken back (it ends as not started).
/// Only a record a host has received is waited for — also when the calling thread itself
/// received it and has not completed it yet (a handler cancelling a timer whose record is
/// later in the same batch): complete that record first (SPOT_OUTCOME_NOT_STARTED if it
/// did not start), or cancel with a timeout of 0 or with spot_timer_cancel_async, or the
/// wait lasts until the timeout. A thread that delivers through a session
/// (`spot_session_*`) needs none of this: its blocking cancels complete its own records.
///
/// Returns SPOT_OK and writes the end reason (SPOT_END_*) to `*out_end_reason` (may be
/// NULL), or SPOT_E_CLEANUP_FAILED (the release hook failed; every canceller sees it;
/// the message is in spot_last_error). SPOT_E_TIMEOUT: not ended yet (the cancel goes
/// on; call again to wait more). SPOT_E_WOULD_DEADLOCK: called from inside `t`'s own
/// callback (after spot_record_begin) or from the batch callback while `t` has not ended
/// yet: the cancel goes on and completes after the callback; use spot_timer_cancel_async
/// to observe it. A generation that already ended gives its recorded result again, also a
/// superseded one (SPOT_END_SUPERSEDED), until its slot is reused; after that, and for a
/// handle that was never valid, SPOT_E_STALE_TIMER.
///
/// Thread-safe; concurrent cancels of one generation all see the same result.
/// Errors: also SPOT_E_INVALID_HANDLE, SPOT_E_INVALID_ARGUMENT, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_cancel(
    rt: u64,
    t: spot_timer,
    timeout_ns: i64,
    out_end_reason: *mut u32,
) -> spot_status {
    boundary("spot_timer_cancel", || {
        let out = Out::optional(out_end_reason, "out_end_reason")?;
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        match ffi.rt.cancel_timer(id, timeout) {
            Err(spot_timer_core::Error::StaleHandle) => Err(stale(&t)),
            r => end_result(r, out),
        }
    })
}

/// Cancels timer generation `t` without waiting. If the generation has ended — as it has
/// on return for a timer whose record no host holds — writes 1 to `*out_done` and its end
/// reason to `*out_end_reason` (may be NULL); otherwise writes 0 to `*out_done`, and a
/// SPOT_RECORD_CANCEL_DONE record carrying `tag` and the terminal result arrives in a
/// later batch. SPOT_E_CLEANUP_FAILED: the generation ended and its release hook failed
/// (no record follows).
///
/// Thread-safe; may be called from inside any callback.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT,
/// SPOT_E_STALE_TIMER, SPOT_E_CLEANUP_FAILED, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_cancel_async(
    rt: u64,
    t: spot_timer,
    tag: u64,
    out_done: *mut u32,
    out_end_reason: *mut u32,
) -> spot_status {
    boundary("spot_timer_cancel_async", || {
        let done = Out::new(out_done, "out_done")?;
        let out = Out::optional(out_end_reason, "out_end_reason")?;
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        match ffi.rt.cancel_timer_with_notice(id, tag) {
            Err(spot_timer_core::Error::StaleHandle) => Err(stale(&t)),
            Err(e) => Err(e.into()),
            Ok(None) => {
                done.write(0);
                Ok(())
            }
            Ok(Some(r)) => {
                end_result(r, out)?;
                done.write(1);
                Ok(())
            }
        }
    })
}

/// spot_timer_cancel_async for a host that keeps its own state per generation (an index
/// into its table as `user_data`): when the generation is idle and its end has no other
/// work, it ends here with one compare-and-swap and its release function does NOT run —
/// `*out_done` 1, `*out_kept` 1: the host cleans up what it knows, with no call back into it.
/// Otherwise the end is the ordinary one: `*out_done` 1 and `*out_kept` 0 when it ended here
/// (its release function ran, on this thread); `*out_done` 0 when it ends later (its record
/// is with a host; its release function runs then, and no notice record follows: call
/// spot_timer_cancel to wait for it). `*out_end_reason` (may be NULL) is written when done.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT,
/// SPOT_E_STALE_TIMER, SPOT_E_CLEANUP_FAILED (ended here, its release function failed),
/// SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_cancel_keeping(
    rt: u64,
    t: spot_timer,
    out_done: *mut u32,
    out_end_reason: *mut u32,
    out_kept: *mut u32,
) -> spot_status {
    boundary("spot_timer_cancel_keeping", || {
        let done = Out::new(out_done, "out_done")?;
        let kept = Out::new(out_kept, "out_kept")?;
        let out = Out::optional(out_end_reason, "out_end_reason")?;
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        let (r, was_kept) = match ffi.rt.cancel_timer_keeping_payload(id) {
            Err(spot_timer_core::Error::StaleHandle) => return Err(stale(&t)),
            Err(e) => return Err(e.into()),
            Ok(Cancelled::Later) => {
                done.write(0);
                kept.write(0);
                return Ok(());
            }
            Ok(Cancelled::PayloadKept(r)) => (r, 1),
            Ok(Cancelled::Released(r)) => (r, 0),
        };
        end_result(r, out)?;
        done.write(1);
        kept.write(was_kept);
        Ok(())
    })
}

/// Fills `*out` with the fixed-size statistics of generation `t` (also after it ended,
/// until its slot is reused). Set `out->struct_size = sizeof(spot_timer_stats)` first.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE, SPOT_E_STALE_TIMER.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_stats(
    rt: u64,
    t: spot_timer,
    out: *mut spot_timer_stats,
) -> spot_status {
    boundary("spot_timer_stats", || {
        let id = timer_id(&t)?;
        let ffi = handles::get(rt)?;
        let s = ffi.rt.timer_stats(id).map_err(|_| stale(&t))?;
        write_versioned(
            out,
            "out",
            spot_timer_stats {
                struct_size: std::mem::size_of::<spot_timer_stats>() as u32,
                reserved: 0,
                delivered: s.delivered,
                failed: s.failed,
                skipped_ticks: s.skipped_ticks,
                last_scheduled_index: s.last_scheduled_index,
            },
            std::mem::size_of::<spot_timer_stats>(),
        )
    })
}
