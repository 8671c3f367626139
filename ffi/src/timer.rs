//! Timers: register (spec, user data, release hook), blocking and non-blocking cancel,
//! per-generation statistics.

use std::ffi::{c_char, c_void, CStr};
use std::time::Duration;

use spot_timer_core::{EndResult, ReleaseHook, TimerSpec};

use crate::boundary::{boundary, read_versioned, write_versioned, Failure, FfiResult, Out};
use crate::handles;
use crate::runtime::Payload;
use crate::status::*;
use crate::types::*;

const RELEASE_MSG_LEN: usize = 256;

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
            "a one-shot timer (period_ns 0) needs first_due_ns",
        ));
    }
    Ok(TimerSpec {
        period: (s.period_ns != 0).then(|| Duration::from_nanos(s.period_ns)),
        first_due,
        policy,
        max_catch_up_ticks: s.max_catch_up_ticks,
    })
}

fn release_hook(
    f: unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> i32,
    user_data: usize,
) -> ReleaseHook {
    Box::new(move || {
        let mut msg = [0 as c_char; RELEASE_MSG_LEN];
        // SAFETY: the host's hook, called once with its own user data and a writable
        // buffer of RELEASE_MSG_LEN bytes.
        let rc = unsafe { f(user_data as *mut c_void, msg.as_mut_ptr(), RELEASE_MSG_LEN) };
        if rc == 0 {
            return Ok(());
        }
        msg[RELEASE_MSG_LEN - 1] = 0;
        // SAFETY: NUL-terminated within the buffer (forced above).
        let text = unsafe { CStr::from_ptr(msg.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Err(if text.is_empty() {
            format!("release hook returned {rc}")
        } else {
            text
        })
    })
}

/// Registers timer `key` of authority (`owner_id`, `epoch`) and writes its handle to
/// `*out_timer`. An existing registration of the same (owner, key) is superseded: its
/// generation ends with SPOT_END_SUPERSEDED and none of its pending ticks run.
///
/// `spec` is read during the call only. `user_data` is handed back in every record of
/// the timer; the runtime never dereferences it. `release` (may be NULL) is called
/// exactly once with `user_data` when the generation ends, on the scheduler thread (or
/// the thread freeing the runtime); it must not block for long. When this function fails,
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
        let spec = read_versioned(spec, "spec")?;
        let out = Out::new(out_timer, "out_timer")?;
        let spec = spec_from_c(&spec)?;
        let ffi = handles::get(rt)?;
        let owner = ffi.authority(owner_id, epoch)?;
        let ud = user_data as usize;
        let hook = release.map(|f| release_hook(f, ud));
        let handle = owner.register(key, spec, Payload { user_data: ud }, hook)?;
        ffi.remember_timer(&handle);
        let id = handle.id();
        out.write(spot_timer {
            generation: id.generation,
            slot: id.slot,
            reserved: 0,
        });
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
/// Returns SPOT_OK and writes the end reason (SPOT_END_*) to `*out_end_reason` (may be
/// NULL), or SPOT_E_CLEANUP_FAILED (the release hook failed; every canceller sees it;
/// the message is in spot_last_error). SPOT_E_TIMEOUT: not ended yet (the cancel goes
/// on; call again to wait more). SPOT_E_WOULD_DEADLOCK: called from inside `t`'s own
/// callback (after spot_record_begin) or from the batch callback while `t` has not ended
/// yet: the cancel goes on and completes after the callback; use spot_timer_cancel_async
/// to observe it. A generation that already ended gives its recorded result again (until
/// its slot is reused); an unknown one gives SPOT_E_STALE_TIMER.
///
/// Exchange delivery: a TICK record of `t` that the scheduler published but no
/// `spot_exchange` call has received yet is taken back (it ends as not started), so a
/// host's only exchanging thread may wait here without deadlock.
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
        let ffi = handles::get(rt)?;
        // From inside its own callback (after spot_record_begin) the core returns
        // WouldDeadlock at once; the cancel still completes after the callback.
        end_result(ffi.timer(&t)?.cancel(timeout), out)
    })
}

/// Cancels timer generation `t` without waiting. If the generation already ended,
/// writes 1 to `*out_done` and its end reason to `*out_end_reason` (may be NULL);
/// otherwise writes 0 to `*out_done`, and a SPOT_RECORD_CANCEL_DONE record carrying `tag`
/// and the terminal result arrives in a later batch. SPOT_E_CLEANUP_FAILED: the
/// generation already ended and its release hook failed (no record follows).
///
/// Thread-safe; may be called from inside any callback.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_STALE_TIMER,
/// SPOT_E_CLEANUP_FAILED, SPOT_E_CLOSED.
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
        let ffi = handles::get(rt)?;
        let handle = ffi.timer(&t)?;
        match handle.cancel_with_notice(tag)? {
            None => {
                done.write(0);
                Ok(())
            }
            Some(r) => {
                end_result(r, out)?;
                done.write(1);
                Ok(())
            }
        }
    })
}

/// Fills `*out` with the fixed-size statistics of generation `t` (also after it ended,
/// until its slot is reused). Set `out->struct_size = sizeof(spot_timer_stats)` first.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_BAD_STRUCT_SIZE, SPOT_E_STALE_TIMER.
#[no_mangle]
pub unsafe extern "C" fn spot_timer_stats(
    rt: u64,
    t: spot_timer,
    out: *mut spot_timer_stats,
) -> spot_status {
    boundary("spot_timer_stats", || {
        let ffi = handles::get(rt)?;
        let s = ffi.timer(&t)?.stats();
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
        )
    })
}
