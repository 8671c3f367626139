//! What a runtime handle names: the core runtime carrying C payloads, the release of those
//! payloads, and the helpers every export uses on it (timer ids, the thread's batch-callback
//! mark). The exports live in `runtime.rs`, `owner.rs`, `timer.rs` and `delivery.rs`.

use std::cell::{Cell, RefCell};
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

/// Up to this many user data are handed back per call of a `spot_handback_fn`.
const HANDBACK_BATCH: usize = 1024;

/// A close that hands user data back in batches (`spot_runtime_close_handing_back`).
struct HandBack {
    f: unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize),
    env: usize,
    batch: Vec<*mut c_void>,
}

thread_local! {
    /// While this thread closes a runtime handing user data back: where it goes.
    static HANDING_BACK: RefCell<Option<HandBack>> = const { RefCell::new(None) };
}

/// Closes `rt` on this thread; every generation the close ends whose release function
/// would run hands its user data to `f` instead, in batches. A generation ended by another
/// thread meanwhile still runs its release function there.
pub(crate) fn close_handing_back(
    rt: &Runtime<Payload>,
    f: unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize),
    env: *mut c_void,
) {
    /// Puts the thread's cell back as it was, however the close ends (a panic included).
    struct Restore(Option<HandBack>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            let _ = HANDING_BACK.try_with(|h| *h.borrow_mut() = outer);
        }
    }
    let outer = HANDING_BACK.with(|h| {
        h.borrow_mut().replace(HandBack {
            f,
            env: env as usize,
            batch: Vec::with_capacity(HANDBACK_BATCH),
        })
    });
    let restore = Restore(outer);
    rt.close();
    let mine = HANDING_BACK.with(|h| h.borrow_mut().take());
    drop(restore);
    if let Some(mut mine) = mine {
        flush(&mut mine);
    }
}

/// Hands the collected user data to the host and empties the batch.
fn flush(h: &mut HandBack) {
    if !h.batch.is_empty() {
        // The host's function may close other runtimes: their ends run their own release
        // functions, so this thread hands nothing back while it runs.
        let outer = HANDING_BACK.with(|c| c.borrow_mut().take());
        // SAFETY: the host's function, with its own env and an array of `len` pointers it
        // gave the library, valid for the call.
        unsafe { (h.f)(h.env as *mut c_void, h.batch.as_ptr(), h.batch.len()) };
        HANDING_BACK.with(|c| *c.borrow_mut() = outer);
        h.batch.clear();
    }
}

/// Keeps `p`'s user data for the hand-back when this thread closes a runtime handing user
/// data back; false otherwise.
fn handed_back(p: &Payload) -> bool {
    // The host function runs with the batch taken out of the thread's cell: it may end
    // other generations, whose user data then start a new batch.
    let full = HANDING_BACK.with(|h| {
        let mut h = h.borrow_mut();
        let Some(h) = h.as_mut() else {
            return Some(None);
        };
        h.batch.push(p.user_data as *mut c_void);
        if h.batch.len() < HANDBACK_BATCH {
            return None;
        }
        Some(Some(HandBack {
            f: h.f,
            env: h.env,
            batch: std::mem::replace(&mut h.batch, Vec::with_capacity(HANDBACK_BATCH)),
        }))
    });
    match full {
        Some(None) => false,
        Some(Some(mut full)) => {
            flush(&mut full);
            true
        }
        None => true,
    }
}

/// Runs a payload's C release function (if any) when its generation ends (`why`), or
/// hands its user data back when this thread closes the runtime handing them back.
pub(crate) fn release_payload(p: &Payload, why: EndReason) -> Result<(), String> {
    let Some(f) = p.release else {
        return Ok(());
    };
    if why == EndReason::RuntimeClosed && handed_back(p) {
        return Ok(());
    }
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
