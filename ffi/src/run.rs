//! The delivery driver across the boundary: `spot_session_run` and `spot_node_run` hand a
//! batch to a host function, one plain C call per record, and the core's driver does the
//! rest (the receive with the previous outcomes, the start check right before each call,
//! the outcome, kept records, cancel notices, a stop that keeps the rest of the batch).
//! A C host writes one function — run this record and say how it went — and no loop.
//!
//! What the host function returns: SPOT_OUTCOME_* (how the record ended), SPOT_RUN_KEEP
//! (it goes on: complete it later by its token, `spot_complete` or `spot_node_complete`),
//! or an outcome with SPOT_RUN_STOP set (it ended so, and the rest of the batch waits for
//! the next run call). Anything else completes the record FAILED, stops the batch and
//! makes the call return SPOT_E_UNKNOWN_ENUM. For a CANCEL_DONE record its result is
//! ignored.

use std::ffi::c_void;
use std::sync::Arc;

use spot_lifecycle::{NodeSource, SpotRecord};
use spot_timer_core::driver::{Driver, Host, Pass, Ticket, TimerSource, Verdict};
use spot_timer_core::{Outcome, Record};

use crate::boundary::{boundary, write_versioned, Failure, FfiResult};
use crate::core_runtime::Payload;
use crate::delivery::to_c;
use crate::lifecycle_status::lf;
use crate::node::{c_record, FfiNode, NODES};
use crate::node_types::{spot_node_record, spot_node_run_fn};
use crate::session::with_driver;
use crate::status::*;
use crate::types::{
    spot_pass, spot_record, spot_run_fn, timeout_from_i64, SPOT_RUN_KEEP, SPOT_RUN_STOP,
};

/// What a host function's answer asks of the driver; a value outside the contract is kept
/// in `bad` (the record fails and the batch stops).
fn verdict(answer: u32, bad: &mut Option<u32>) -> Verdict {
    if answer == SPOT_RUN_KEEP {
        return Verdict::Held;
    }
    let stop = answer & SPOT_RUN_STOP != 0;
    match Outcome::from_u32(answer & !SPOT_RUN_STOP) {
        Some(o) if stop => Verdict::Stop(o),
        Some(o) => Verdict::Done(o),
        None => {
            bad.get_or_insert(answer);
            Verdict::Stop(Outcome::Failed)
        }
    }
}

fn pass_out(out: *mut spot_pass, pass: Pass) -> FfiResult {
    if out.is_null() {
        return Ok(());
    }
    let p = spot_pass {
        struct_size: std::mem::size_of::<spot_pass>() as u32,
        stopped: u32::from(pass.stopped),
        ran: pass.ran,
        kept: pass.held,
        not_started: pass.not_started,
        notices: pass.notices,
    };
    // SAFETY: `out` is the caller's, checked non-null; its size is checked by the call.
    unsafe { write_versioned(out, "out_pass", p, std::mem::size_of::<spot_pass>()) }
}

fn bad_answer(answer: u32) -> Failure {
    Failure::new(
        SPOT_E_UNKNOWN_ENUM,
        format!(
            "the run function returned {answer:#x}: return SPOT_OUTCOME_*, SPOT_RUN_KEEP, or an \
             outcome | SPOT_RUN_STOP (the record completed FAILED, the rest of the batch waits)"
        ),
    )
}

fn run_fn<F: Copy>(f: Option<F>) -> FfiResult<F> {
    f.ok_or_else(|| Failure::new(SPOT_E_NULL_ARGUMENT, "`run` must not be NULL"))
}

struct TimerHost {
    run: unsafe extern "C" fn(*mut c_void, *const spot_record) -> u32,
    env: *mut c_void,
    bad: Option<u32>,
}

impl Host<TimerSource<Payload>> for TimerHost {
    fn run(&mut self, record: &Record<Payload>) -> Verdict {
        let c = to_c(record);
        // SAFETY: the host's function with its own env and a record valid for the call.
        verdict(unsafe { (self.run)(self.env, &c) }, &mut self.bad)
    }
    fn keep(&mut self, _record: &Record<Payload>, ticket: Ticket<TimerSource<Payload>>) {
        // The host completes it by the record's token (`spot_complete`).
        ticket.into_held();
    }
    fn notice(&mut self, record: &Record<Payload>) {
        let c = to_c(record);
        // SAFETY: as above; a notice's answer means nothing.
        unsafe { (self.run)(self.env, &c) };
    }
}

/// Runs one batch of the calling thread's session `session` through `run`: receives up
/// to the session's capacity of records (sending the outcomes of the previous batch),
/// waiting up to `timeout_ns` (-1: until one arrives or the runtime closes; 0: don't
/// wait), then calls `run(env, record)` for each record in order — for a TICK right after
/// its start was checked and claimed (do not call `spot_record_begin`); a TICK that went
/// stale meanwhile is completed NOT_STARTED and never reaches `run`. The outcomes go back
/// with the next run call (or `spot_session_free`). A kept TICK (SPOT_RUN_KEEP) is
/// completed later by the host: `spot_complete` with its token, from any thread. After a
/// stop the next `spot_session_run` hands out the rest of the batch first, without
/// receiving; any other call on the session completes that rest NOT_STARTED (its ticks
/// that are still due come back). Writes what the call did to `*out_pass` (may be NULL).
///
/// `run` must not unwind (no C++ exception, no longjmp). It may call into the library,
/// also a blocking `spot_timer_cancel` (which never waits for a record of this batch that
/// has not started), but not this session.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE,
/// SPOT_E_INVALID_ARGUMENT (a bad timeout, or a tick of `spot_session_next` not
/// completed), SPOT_E_WOULD_DEADLOCK (called from `run` on its own session),
/// SPOT_E_UNKNOWN_ENUM (`run` returned a value outside the contract), SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_session_run(
    session: u64,
    timeout_ns: i64,
    run: spot_run_fn,
    env: *mut c_void,
    out_pass: *mut spot_pass,
) -> spot_status {
    boundary("spot_session_run", || {
        let run = run_fn(run)?;
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let mut host = TimerHost {
            run,
            env,
            bad: None,
        };
        let pass = with_driver(session, |driver, capacity| {
            driver.receive(timeout, capacity)?;
            Ok(driver.run(&mut host))
        })?;
        pass_out(out_pass, pass)?;
        match host.bad {
            Some(answer) => Err(bad_answer(answer)),
            None => Ok(()),
        }
    })
}

struct NodeHost<'a> {
    run: unsafe extern "C" fn(*mut c_void, *const spot_node_record) -> u32,
    env: *mut c_void,
    node: &'a FfiNode,
    /// The in-flight token the record being run was handed with.
    token: u64,
    bad: Option<u32>,
}

impl Host<NodeSource> for NodeHost<'_> {
    fn run(&mut self, record: &SpotRecord) -> Verdict {
        // The record goes in flight under a token the host can complete it by, should it
        // keep it; otherwise it leaves again when the call returns.
        let mut c = c_record(record);
        self.token = self.node.inflight().insert(record.detached_copy());
        c.token = self.token;
        // SAFETY: the host's function with its own env and a record valid for the call.
        let v = verdict(unsafe { (self.run)(self.env, &c) }, &mut self.bad);
        if v != Verdict::Held {
            drop(self.node.inflight().remove(self.token));
        }
        v
    }
    fn keep(&mut self, _record: &SpotRecord, ticket: Ticket<NodeSource>) {
        // Completed by the host with `spot_node_complete` and the token it was handed.
        drop(ticket.into_held());
    }
}

/// Runs one batch of node `node`'s Spot work — messages and ticks in one batch — through
/// `run`: receives up to `max` records (at least 1), waiting up to `timeout_ns` (-1: until
/// some arrive or the node closes; 0: don't wait), then calls `run(env, record)` for each
/// in order, right after its start check (a record whose Spot lost its authority, or a
/// message whose burst cannot go on, is completed NOT_STARTED and never reaches `run`).
/// The outcomes are sent before the call returns. A kept record (SPOT_RUN_KEEP) is
/// completed later with `spot_node_complete` and the record's `token`; the next message
/// of its Spot does not wait for it. After a stop the next `spot_node_run` hands out the
/// rest of the batch first; `spot_node_free` completes it NOT_STARTED (its messages count
/// as dropped). Writes what the call did to `*out_pass` (may be NULL).
///
/// One thread's batch at a time is kept across calls; a second thread running the same
/// node meanwhile gets a batch of its own for its call. `run` must not unwind.
/// Errors: SPOT_E_INVALID_HANDLE, SPOT_E_NULL_ARGUMENT, SPOT_E_BAD_STRUCT_SIZE,
/// SPOT_E_INVALID_ARGUMENT (a bad timeout), SPOT_E_UNKNOWN_ENUM (`run` returned a value
/// outside the contract), SPOT_E_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn spot_node_run(
    node: u64,
    timeout_ns: i64,
    max: usize,
    run: spot_node_run_fn,
    env: *mut c_void,
    out_pass: *mut spot_pass,
) -> spot_status {
    boundary("spot_node_run", || {
        let run = run_fn(run)?;
        let timeout = timeout_from_i64(timeout_ns, "timeout_ns")?;
        let n = NODES.get(node)?;
        let mut kept = n.driver.try_lock().ok();
        let mut own = None;
        let driver = match kept.as_mut() {
            Some(slot) => slot.get_or_insert_with(|| new_driver(&n)),
            None => own.insert(new_driver(&n)),
        };
        let mut host = NodeHost {
            run,
            env,
            node: &n,
            token: 0,
            bad: None,
        };
        let pass = match lf(driver.receive(timeout, max.max(1)))? {
            0 => Pass::default(),
            _ => driver.run(&mut host),
        };
        let sent = lf(driver.flush());
        pass_out(out_pass, pass)?;
        if let Some(answer) = host.bad {
            return Err(bad_answer(answer));
        }
        match sent {
            Err(e) if e.status == SPOT_E_CLOSED => Ok(()),
            other => other,
        }
    })
}

fn new_driver(n: &Arc<FfiNode>) -> Driver<NodeSource> {
    Driver::new(NodeSource::new(n.node.clone()))
}
