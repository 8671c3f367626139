//! Delivery sessions across the boundary: `spot_session_*`, the core's delivery loop for
//! one host thread (exchange, start check, collected completions, help for a blocking
//! cancel made on that thread).
//!
//! A session belongs to the thread that created it, so the table of sessions is per
//! thread: a handle used on another thread, freed or made up is not in the calling
//! thread's table and is rejected with SPOT_E_INVALID_HANDLE. A thread that exits frees
//! its sessions (their unread records complete as not started).

use std::cell::RefCell;

use spot_timer_core::driver::{Driver, TimerSource};
use spot_timer_core::DeliverySession;

use crate::boundary::{boundary, write_versioned, Failure, FfiResult, Out};
use crate::core_runtime::Payload;
use crate::delivery::to_c;
use crate::handles;
use crate::status::*;
use crate::types::*;

struct Entry {
    generation: u32,
    session: Option<DeliverySession<Payload>>,
    /// The C form of the batch handed out last (`spot_session_batch`).
    records: Vec<spot_record>,
    capacity: usize,
    /// `spot_session_run`: where a stopped batch resumes (any other call ends it).
    resume: Option<usize>,
    /// A `spot_session_run` has the session out (its `run` is running).
    running: bool,
}

thread_local! {
    static SESSIONS: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

fn invalid(handle: u64) -> Failure {
    Failure::new(
        SPOT_E_INVALID_HANDLE,
        format!(
            "session handle {handle:#x} is not a live session of this thread (sessions belong \
             to the thread that created them)"
        ),
    )
}

fn busy() -> Failure {
    Failure::new(
        SPOT_E_WOULD_DEADLOCK,
        "a session call from code that a call on the same session is running (a release hook)",
    )
}

/// Runs `f` on the calling thread's session `handle`.
fn with_session<R>(
    handle: u64,
    f: impl FnOnce(&mut DeliverySession<Payload>) -> FfiResult<R>,
) -> FfiResult<R> {
    with_entry(handle, |s, _| f(s))
}

/// Runs `f` on the calling thread's session `handle` and its batch records.
fn with_entry<R>(
    handle: u64,
    f: impl FnOnce(&mut DeliverySession<Payload>, &mut Vec<spot_record>) -> FfiResult<R>,
) -> FfiResult<R> {
    let index = (handle as u32)
        .checked_sub(1)
        .ok_or_else(|| invalid(handle))? as usize;
    let generation = (handle >> 32) as u32;
    SESSIONS.with(|t| {
        let mut t = t.try_borrow_mut().map_err(|_| busy())?;
        match t.get_mut(index) {
            Some(e) if e.generation == generation && e.running => Err(busy()),
            Some(Entry {
                generation: g,
                session: Some(s),
                records,
                resume,
                ..
            }) if *g == generation => {
                // Any call but a run ends a stopped batch (its rest completes as not started).
                *resume = None;
                f(s, records)
            }
            _ => Err(invalid(handle)),
        }
    })
}

/// Runs `f` with a driver over the calling thread's session `handle` and the session's
/// capacity: the session leaves the table for the call (so `f` may run host code that
/// calls into other sessions of this thread) and comes back after it, with where a
/// stopped batch resumes.
pub(crate) fn with_driver<R>(
    handle: u64,
    f: impl FnOnce(&mut Driver<TimerSource<Payload>>, usize) -> FfiResult<R>,
) -> FfiResult<R> {
    let index = (handle as u32)
        .checked_sub(1)
        .ok_or_else(|| invalid(handle))? as usize;
    let generation = (handle >> 32) as u32;
    let (session, resume, capacity) = SESSIONS.with(|t| {
        let mut t = t.try_borrow_mut().map_err(|_| busy())?;
        match t.get_mut(index) {
            Some(e) if e.generation == generation && e.running => Err(busy()),
            Some(e) if e.generation == generation && e.session.is_some() => {
                e.running = true;
                let s = e.session.take().expect("checked above");
                Ok((s, e.resume.take(), e.capacity))
            }
            _ => Err(invalid(handle)),
        }
    })?;
    let mut driver = Driver::from_parts(TimerSource::from_session(session), resume);
    // The session goes back whatever happens in `f` (a panic continues after it).
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut driver, capacity)));
    let (source, resume) = driver.into_parts();
    SESSIONS.with(|t| {
        let mut t = t.borrow_mut();
        let e = &mut t[index];
        e.running = false;
        e.resume = resume;
        e.session = Some(source.into_session());
    });
    r.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Starts a delivery session on runtime `rt` for the calling thread, receiving up to
/// `capacity` records per exchange.
///
/// The session hands out one record at a time (`spot_session_next`): a TICK record whose
/// start is already checked and claimed — run its handler without calling
/// `spot_record_begin`, then `spot_session_done` — or a CANCEL_DONE record. Completions
/// are collected and sent with the exchange that fetches more records. A record that went
/// stale before its turn is completed as not started and never handed out. A blocking
/// `spot_timer_cancel` made on this thread first sends the session's collected
/// completions and completes the cancelled timer's records that the session holds unread
/// as not started, so it never waits for a record only this thread would complete (a
/// cancel of the very timer whose handler is running still returns
/// SPOT_E_WOULD_DEADLOCK).
///
/// Ownership: the session belongs to the calling thread; free it there with
/// `spot_session_free` (a thread that exits frees its sessions). Exchange-delivery
/// runtimes only.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (capacity
/// 0), SPOT_E_WRONG_DELIVERY_MODE, SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_session_new(
    rt: u64,
    capacity: usize,
    out_session: *mut u64,
) -> spot_status {
    boundary("spot_session_new", || {
        let out = Out::new(out_session, "out_session")?;
        let ffi = handles::get(rt)?;
        if ffi.callback_mode {
            return Err(Failure::new(
                SPOT_E_WRONG_DELIVERY_MODE,
                "this runtime delivers through its batch callback",
            ));
        }
        if ffi.rt.is_closed() {
            return Err(Failure::new(SPOT_E_CLOSED, "the runtime is closed"));
        }
        let session = ffi.rt.session(capacity)?;
        let handle = SESSIONS.with(|t| {
            let mut t = t.try_borrow_mut().map_err(|_| busy())?;
            let index = match t.iter().position(|e| e.session.is_none() && !e.running) {
                Some(i) => i,
                None if t.len() < u32::MAX as usize - 1 => {
                    t.push(Entry {
                        generation: 0,
                        session: None,
                        records: Vec::new(),
                        capacity: 0,
                        resume: None,
                        running: false,
                    });
                    t.len() - 1
                }
                None => {
                    return Err(Failure::new(
                        SPOT_E_CAPACITY_EXHAUSTED,
                        "too many sessions on this thread",
                    ))
                }
            };
            let e = &mut t[index];
            e.generation = e.generation.wrapping_add(1).max(1);
            e.session = Some(session);
            e.capacity = capacity;
            e.resume = None;
            Ok((u64::from(e.generation) << 32) | (index as u64 + 1))
        })?;
        out.write(handle);
        Ok(())
    })
}

/// Writes the next record to `*out_record` and 1 to `*out_got`, or 0 to `*out_got` when
/// none arrived within `timeout_ns` (-1: wait until one does or the runtime closes; 0:
/// don't wait). A TICK record is started already: run its handler, then call
/// `spot_session_done` before the next `spot_session_next`.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_INVALID_ARGUMENT (the
/// previous tick was not completed with `spot_session_done`, or a bad timeout),
/// SPOT_E_CLOSED (the runtime closed and the session holds nothing more).
#[no_mangle]
pub unsafe extern "C" fn spot_session_next(
    session: u64,
    timeout_ns: i64,
    out_record: *mut spot_record,
    out_got: *mut u32,
) -> spot_status {
    boundary("spot_session_next", || {
        let got = Out::new(out_got, "out_got")?;
        let rec = Out::new(out_record, "out_record")?;
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let next = with_session(session, |s| Ok(s.next(timeout)?))?;
        match next {
            Some(r) => {
                rec.write(to_c(&r));
                got.write(1);
            }
            None => got.write(0),
        }
        Ok(())
    })
}

/// The batch form of a session: completes the batch handed out last from its outcome
/// cells, exchanges the session's collected completions for up to its capacity of
/// records, waiting up to `timeout_ns` (-1: until one arrives or the runtime closes; 0:
/// don't wait), and describes them in `*out` (see `struct spot_batch`: the records, one
/// outcome cell per record, the position cell). One call per batch instead of one per
/// record; a blocking cancel made on this thread (from a handler, or between handlers)
/// never waits for a record of this batch that has not started.
///
/// Ownership: `*out` points into the session; see `struct spot_batch`.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE,
/// SPOT_E_INVALID_ARGUMENT (a tick of `spot_session_next` not completed, or a bad
/// timeout), SPOT_E_CLOSED (the runtime closed and the session holds nothing more).
#[no_mangle]
pub unsafe extern "C" fn spot_session_batch(
    session: u64,
    timeout_ns: i64,
    out: *mut spot_batch,
) -> spot_status {
    boundary("spot_session_batch", || {
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        check_batch_size(out)?;
        let batch = with_entry(session, |s, c_records| {
            c_records.clear();
            let b = s.batch(timeout)?;
            c_records.extend(b.records.iter().map(to_c));
            let count = c_records.len();
            Ok(spot_batch {
                struct_size: std::mem::size_of::<spot_batch>() as u32,
                reserved: 0,
                records: if count == 0 {
                    std::ptr::null()
                } else {
                    c_records.as_ptr()
                },
                outcomes: if count == 0 {
                    std::ptr::null_mut()
                } else {
                    // `Cell<u32>` has the layout of `u32`; the cells live in the session's
                    // box until its next call.
                    b.outcomes[0].as_ptr()
                },
                position: b.position.as_ptr(),
                count,
            })
        })?;
        write_versioned(out, "out", batch, std::mem::size_of::<spot_batch>())
    })
}

/// `out` is non-null with a `struct_size` this library can fill whole (every field of
/// `spot_batch` is needed; there is no older size).
unsafe fn check_batch_size(out: *mut spot_batch) -> FfiResult {
    if out.is_null() {
        return Err(Failure::new(SPOT_E_NULL_ARGUMENT, "`out` must not be NULL"));
    }
    let size = (out as *const u32).read() as usize;
    if size < std::mem::size_of::<spot_batch>() || size > 4096 {
        return Err(Failure::new(
            SPOT_E_BAD_STRUCT_SIZE,
            format!(
                "`out->struct_size` is {size}: set it to sizeof(struct spot_batch) ({})",
                std::mem::size_of::<spot_batch>()
            ),
        ));
    }
    Ok(())
}

/// Completes the TICK record the last `spot_session_next` handed out, with `outcome`
/// (SPOT_OUTCOME_*). The completion goes back with the session's next exchange (or
/// earlier, when a blocking cancel on this thread needs it).
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_UNKNOWN_ENUM, SPOT_E_INVALID_ARGUMENT (no tick in
/// progress).
#[no_mangle]
pub extern "C" fn spot_session_done(session: u64, outcome: u32) -> spot_status {
    boundary("spot_session_done", || {
        let outcome = outcome_from_u32(outcome)?;
        with_session(session, |s| Ok(s.done(outcome)?))
    })
}

/// Frees a session of the calling thread: the records it holds unread complete as not
/// started, a tick handed out and not completed counts as run, and its collected
/// completions are sent.
/// Errors: SPOT_E_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn spot_session_free(session: u64) -> spot_status {
    boundary("spot_session_free", || {
        let taken = with_session(session, |_| Ok(())).and_then(|()| {
            SESSIONS.with(|t| {
                let mut t = t.try_borrow_mut().map_err(|_| busy())?;
                let index = (session as u32 - 1) as usize;
                Ok(t[index].session.take())
            })
        })?;
        // Dropped outside the table's borrow: its completions may run release hooks that
        // call back into sessions of this thread.
        drop(taken);
        Ok(())
    })
}
