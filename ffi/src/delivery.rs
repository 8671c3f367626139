//! Delivery across the boundary: the exchange call (completions in, a batch out), late
//! completions, the start re-check, the wakeup fd, and the batch-callback adapter that
//! turns a C `(callback, env, finalizer)` triple into a core `BatchHandler`.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use spot_timer_core::{BatchHandler, Completion, Record};

use crate::boundary::{arg_ref, arg_slice, boundary, Failure, FfiResult, Out, OutSlice};
use crate::core_runtime::{enter_callback, timer_id, Payload};
use crate::handles;
use crate::status::*;
use crate::types::*;

/// The C view of a core record.
pub(crate) fn to_c(r: &Record<Payload>) -> spot_record {
    let mut c = spot_record {
        kind: SPOT_RECORD_TICK,
        end_reason: 0,
        status: SPOT_OK,
        reserved: 0,
        token: 0,
        timer: spot_timer::default(),
        owner_id: 0,
        key: 0,
        user_data: std::ptr::null_mut(),
        delivery_index: 0,
        scheduled_index: 0,
        skipped_ticks: 0,
        live_word: std::ptr::null_mut(),
        live_value: 0,
        started_value: 0,
        lease_word: std::ptr::null(),
        tag: 0,
    };
    match r {
        Record::Tick(t) => {
            let id = t.timer_id();
            let tick = t.tick();
            let check = t.start_check();
            c.token = t.token();
            c.timer = spot_timer {
                generation: id.generation(),
                slot: id.slot(),
                reserved: 0,
            };
            c.owner_id = t.owner_id();
            c.key = t.key();
            c.user_data = t.payload().user_data as *mut c_void;
            c.delivery_index = tick.delivery_index;
            c.scheduled_index = tick.scheduled_index;
            c.skipped_ticks = tick.skipped_ticks;
            c.live_word = check.word as *mut u64;
            c.live_value = check.handed;
            c.started_value = check.started;
            c.lease_word = check.lease_deadline;
        }
        Record::CancelDone(n) => {
            c.kind = SPOT_RECORD_CANCEL_DONE;
            c.timer = spot_timer {
                generation: n.timer.generation(),
                slot: n.timer.slot(),
                reserved: 0,
            };
            c.owner_id = n.owner;
            c.key = n.key;
            c.tag = n.tag;
            match &n.result {
                Ok(reason) => c.end_reason = end_reason_to_u32(*reason),
                Err(e) => c.status = status_of(e),
            }
        }
    }
    c
}

fn completion_from_c(c: &spot_completion) -> FfiResult<Completion> {
    if c.reserved != 0 {
        return Err(Failure::new(
            SPOT_E_INVALID_ARGUMENT,
            "`spot_completion::reserved` must be 0",
        ));
    }
    Ok(Completion::new(c.token, outcome_from_u32(c.outcome)?))
}

/// Decodes completions one by one into `out`; a malformed one (unknown outcome, reserved
/// field set) is left out and its failure returned after the rest were decoded, so it
/// rejects only itself.
fn completions_from_c(list: &[spot_completion], out: &mut Vec<Completion>) -> FfiResult {
    let mut first = None;
    for c in list {
        match completion_from_c(c) {
            Ok(c) => out.push(c),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

fn exchange_runtime(rt: u64) -> FfiResult<handles::RuntimeRef> {
    let ffi = handles::get(rt)?;
    if ffi.callback_mode {
        return Err(Failure::new(
            SPOT_E_WRONG_DELIVERY_MODE,
            "this runtime delivers through its batch callback",
        ));
    }
    Ok(ffi)
}

thread_local! {
    static BATCH: RefCell<Vec<Record<Payload>>> = const { RefCell::new(Vec::new()) };
    static COMPLETIONS: RefCell<Vec<Completion>> = const { RefCell::new(Vec::new()) };
}

/// Submits `list` through `submit` with a reused buffer; the first malformed completion's
/// failure (after the others were applied), else `submit`'s result.
fn submit_decoded<T>(
    list: &[spot_completion],
    submit: impl FnOnce(&[Completion]) -> FfiResult<T>,
) -> FfiResult<T> {
    let mut decoded = COMPLETIONS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    decoded.clear();
    let malformed = completions_from_c(list, &mut decoded);
    let r = submit(&decoded);
    decoded.clear();
    COMPLETIONS.with(|c| *c.borrow_mut() = decoded);
    malformed?;
    r
}

/// Submits `n_completions` completions, then waits up to `timeout_ns` (-1 = forever,
/// 0 = don't wait) for records and copies up to `capacity` of them into `out`, writing
/// their number to `*out_count` (0 on timeout). One call = one crossing: everything ready
/// is returned at once, up to `capacity`.
///
/// Completions are applied on the calling thread, each on its own: a tick a completion
/// makes due at once (a backlog, a freed gate) is in this call's result. A completion that
/// is malformed (SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT) or whose token matches no
/// outstanding record (SPOT_E_INVALID_COMPLETION: never handed out, already completed —
/// also the same token twice in one call) is skipped and counted; the others are applied,
/// and the call then returns that first failure without receiving any record (call again
/// to receive). Records whose generation ended while they waited are not returned.
///
/// `completions` may be NULL when `n_completions` is 0. `out` is written only on success
/// (only its first `*out_count` entries). Records stay valid until the runtime is freed.
/// Exchange-delivery runtimes only. Thread-safe (several threads may exchange at once;
/// each record goes to exactly one of them).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT
/// (capacity 0), SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_COMPLETION,
/// SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_exchange(
    rt: u64,
    completions: *const spot_completion,
    n_completions: usize,
    out: *mut spot_record,
    capacity: usize,
    timeout_ns: i64,
    out_count: *mut usize,
) -> spot_status {
    boundary("spot_exchange", || {
        let list = arg_slice(completions, n_completions, "completions")?;
        let out = OutSlice::new(out, capacity, "out")?;
        let count = Out::new(out_count, "out_count")?;
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let ffi = exchange_runtime(rt)?;
        submit_decoded(list, |list| Ok(ffi.rt.complete(list)?))?;
        let mut batch = BATCH.with(|b| std::mem::take(&mut *b.borrow_mut()));
        batch.clear();
        let r = ffi.rt.exchange(&[], &mut batch, out.capacity(), timeout);
        let n = r.map(|_| out.write_all(batch.iter().map(to_c)));
        batch.clear();
        BATCH.with(|b| *b.borrow_mut() = batch);
        count.write(n?);
        Ok(())
    })
}

/// Submits completions without receiving records (a batch-callback host completing
/// later, or an exchange host completing from worker threads). Checked like
/// `spot_exchange`: each completion stands alone; the first failure is returned after
/// the valid ones were applied. `completions` may be NULL when `n` is 0.
///
/// Thread-safe; may be called from inside the batch callback.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_UNKNOWN_ENUM,
/// SPOT_E_INVALID_COMPLETION, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_complete(
    rt: u64,
    completions: *const spot_completion,
    n: usize,
) -> spot_status {
    boundary("spot_complete", || {
        let list = arg_slice(completions, n, "completions")?;
        let ffi = handles::get(rt)?;
        submit_decoded(list, |list| Ok(ffi.rt.complete(list)?))
    })
}

/// Right before starting a TICK record's handler: checks that its generation is current
/// and not cancelled and its owner's lease running, and claims the start (a record starts
/// at most once). SPOT_OK: start the handler (this thread is marked as running it until
/// it completes the record, so a blocking self-cancel returns SPOT_E_WOULD_DEADLOCK
/// instead of waiting for itself). SPOT_E_STALE_TIMER: do not start it (stale, its lease
/// over, already started or completed); complete it with SPOT_OUTCOME_NOT_STARTED unless
/// it was already completed. The same check without a call is described at `spot_record`.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_INVALID_ARGUMENT (not a TICK record, a reserved field set), SPOT_E_STALE_TIMER.
#[no_mangle]
pub unsafe extern "C" fn spot_record_begin(rt: u64, rec: *const spot_record) -> spot_status {
    boundary("spot_record_begin", || {
        let rec = arg_ref(rec, "rec")?;
        if rec.kind != SPOT_RECORD_TICK {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`rec` is not a TICK record",
            ));
        }
        if rec.reserved != 0 {
            return Err(Failure::new(
                SPOT_E_INVALID_ARGUMENT,
                "`rec->reserved` must be 0",
            ));
        }
        let id = timer_id(&rec.timer)?;
        let ffi = handles::get(rt)?;
        ffi.rt
            .start(id, rec.live_value)
            .map_err(|e| Failure::new(SPOT_E_STALE_TIMER, format!("do not start: {e}")))
    })
}

/// Writes a file descriptor to `*out_fd` that is readable while records wait for
/// `spot_exchange`, and for good once the runtime closed (`spot_exchange` then answers
/// SPOT_E_CLOSED), for poll/epoll/select event loops. The runtime owns it: do not close
/// or read it; it stays valid until the runtime is freed. Exchange-delivery runtimes only.
///
/// Thread-safe. Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT,
/// SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_OS, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_wakeup_fd(rt: u64, out_fd: *mut i32) -> spot_status {
    boundary("spot_wakeup_fd", || {
        let out = Out::new(out_fd, "out_fd")?;
        let ffi = exchange_runtime(rt)?;
        out.write(ffi.rt.wakeup_fd()?);
        Ok(())
    })
}

type BatchFn =
    unsafe extern "C" fn(*mut c_void, *const spot_record, usize, *mut spot_completion, *mut usize);
type FinalizerFn = unsafe extern "C" fn(*mut c_void);

/// The C batch callback as a core `BatchHandler`. Its finalizer runs when the handler is
/// dropped, which the core does on the scheduler thread after the last batch, when the
/// runtime closes.
pub(crate) struct CallbackHandler {
    callback: BatchFn,
    env: usize,
    finalizer: Option<FinalizerFn>,
    /// Set once the runtime exists: a runtime that failed to start never finalizes.
    armed: Arc<AtomicBool>,
    /// The runtime's handle, known once it is registered.
    handle: Arc<AtomicU64>,
    records: RecordBuf,
    completions: Vec<spot_completion>,
}

/// The C records of the running batch, reused between batches.
struct RecordBuf(Vec<spot_record>);

// SAFETY: the raw pointers in a record (user data, live word) are values handed to C;
// this crate never dereferences them, so moving the buffer between threads is harmless.
unsafe impl Send for RecordBuf {}

impl CallbackHandler {
    pub fn new(
        callback: BatchFn,
        env: *mut c_void,
        finalizer: Option<FinalizerFn>,
        armed: Arc<AtomicBool>,
        handle: Arc<AtomicU64>,
    ) -> Self {
        Self {
            callback,
            env: env as usize,
            finalizer,
            armed,
            handle,
            records: RecordBuf(Vec::new()),
            completions: Vec::new(),
        }
    }
}

impl BatchHandler<Payload> for CallbackHandler {
    fn on_batch(&mut self, batch: &[Record<Payload>], completions: &mut Vec<Completion>) {
        if batch.is_empty() {
            return;
        }
        self.records.0.clear();
        self.records.0.extend(batch.iter().map(to_c));
        self.completions.clear();
        self.completions
            .resize(batch.len(), spot_completion::default());
        let mut n = 0usize;
        {
            let _guard = enter_callback(self.handle.load(Ordering::Acquire));
            // SAFETY: the host's callback with its own env, `records.len()` valid records
            // and as many writable completion slots, all alive for the call.
            unsafe {
                (self.callback)(
                    self.env as *mut c_void,
                    self.records.0.as_ptr(),
                    self.records.0.len(),
                    self.completions.as_mut_ptr(),
                    &mut n,
                )
            };
        }
        // Completions with an unknown outcome are ignored: those records stay outstanding
        // and can be completed with spot_complete.
        for c in &self.completions[..n.min(batch.len())] {
            if let Ok(outcome) = outcome_from_u32(c.outcome) {
                completions.push(Completion::new(c.token, outcome));
            }
        }
    }
}

impl Drop for CallbackHandler {
    fn drop(&mut self) {
        if self.armed.load(Ordering::Acquire) {
            if let Some(f) = self.finalizer {
                // SAFETY: the host's finalizer, called exactly once with its env.
                unsafe { f(self.env as *mut c_void) };
            }
        }
    }
}
