//! What a runtime handle names: the core runtime carrying C payloads, the release of those
//! payloads, and the helpers every export uses on it (timer ids, the thread's batch-callback
//! mark). The exports live in `runtime.rs`, `owner.rs`, `timer.rs` and `delivery.rs`.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};

use spot_timer_core::{EndReason, Runtime, TimerId};

use crate::boundary::{Failure, FfiResult};
use crate::status::*;
use crate::types::*;

/// What the core carries for every timer of a C runtime: the host's user data and its
/// release function (called by the runtime-wide release, `release_payload`).
#[derive(Clone, Copy)]
pub(crate) struct Payload {
    pub user_data: usize,
    pub release: spot_release_fn,
}

impl Payload {
    /// A registration's user data (never dereferenced) and release function.
    pub(crate) fn new(user_data: *mut std::ffi::c_void, release: spot_release_fn) -> Self {
        Self {
            user_data: user_data as usize,
            release,
        }
    }
}

const RELEASE_MSG_LEN: usize = 256;

thread_local! {
    /// While a release hook runs on this thread: its generation's end reason
    /// (`spot_release_reason`); `u32::MAX` otherwise.
    static RELEASE_REASON: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// The end reason of the generation whose release hook runs on this thread, if one does.
pub(crate) fn release_reason() -> u32 {
    RELEASE_REASON.with(Cell::get)
}

/// Runs a payload's C release function (if any) when its generation ends (`why`).
pub(crate) fn release_payload(p: &Payload, why: EndReason) -> Result<(), String> {
    let Some(f) = p.release else {
        return Ok(());
    };
    let mut msg = [0 as c_char; RELEASE_MSG_LEN];
    // A hook may end another generation, whose hook runs nested: restore the outer reason.
    let outer = RELEASE_REASON.with(|r| r.replace(u32::from(why.code())));
    // SAFETY: the host's hook, called once with its own user data and a writable buffer
    // of RELEASE_MSG_LEN bytes.
    let rc = unsafe {
        f(
            p.user_data as *mut c_void,
            msg.as_mut_ptr(),
            RELEASE_MSG_LEN,
        )
    };
    RELEASE_REASON.with(|r| r.set(outer));
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
}

/// A C runtime.
pub(crate) struct FfiRuntime {
    pub rt: Runtime<Payload>,
    pub callback_mode: bool,
}

/// A C timer handle as the core's id; a non-zero reserved field is rejected.
pub(crate) fn timer_id(t: &spot_timer) -> FfiResult<TimerId> {
    if t.reserved != 0 {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            "`spot_timer::reserved` must be 0",
        ));
    }
    // Numbers out of the runtime's range never name a generation: the handle is stale.
    TimerId::from_parts(t.slot, t.generation).ok_or_else(|| stale(t))
}

pub(crate) fn stale(t: &spot_timer) -> Failure {
    Failure::new(
        SPOT_E_STALE_TIMER,
        format!(
            "timer (slot {}, generation {}) names no live or recorded generation",
            t.slot, t.generation
        ),
    )
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
