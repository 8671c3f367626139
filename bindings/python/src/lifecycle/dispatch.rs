//! A node's delivery into Python: one exchange (detached, in short slices so Ctrl-C stays
//! responsive), then, attached, every ready record through the handler — `begin` first
//! (a record whose Spot lost its authority or lease completes NOT_STARTED), OK when the
//! handler returned, FAILED when it raised (reported to the node's exception handler) —
//! and the completions handed back before returning, so no record stays outstanding.
//!
//! A handler that raises KeyboardInterrupt or SystemExit fails its record and the
//! exception propagates; the rest of the batch is kept for the next `dispatch`, as the
//! timer runtime's dispatcher does.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use spot_lifecycle::{LifecycleError, Node, Outcome, SpotCompletion, SpotRecord};

use super::callbacks::Callbacks;
use super::errors::to_py;
use super::record::PySpotRecord;
use crate::dispatch::is_coroutine;
use crate::errors::py_error;
use crate::inner::wait_slice;

/// What a node keeps for its delivery.
pub struct Delivery<'a> {
    pub node: &'a Node,
    /// Manual clock: what is due is made ready before the exchange.
    pub manual: bool,
    pub callbacks: &'a Callbacks,
    /// Records received and not yet started (left by a handler that raised
    /// KeyboardInterrupt / SystemExit).
    pub backlog: &'a Mutex<Vec<SpotRecord>>,
    /// The buffers of the last dispatch, kept for the next one.
    pub spare: &'a Mutex<Buffers>,
}

/// A dispatch's buffers: kept between dispatches so that a batch of thousands of records
/// does not grow a fresh vector (copying it several times) on every exchange.
#[derive(Default)]
pub struct Buffers {
    records: Vec<SpotRecord>,
    done: Vec<SpotCompletion>,
}

/// Buffers with room for more records than this are not kept (a dispatch with a large
/// `max_records` leaves no lasting memory behind).
const KEEP_AT_MOST: usize = 16_384;

impl Buffers {
    fn keep(&mut self, mut records: Vec<SpotRecord>, mut done: Vec<SpotCompletion>) {
        if records.capacity() <= KEEP_AT_MOST {
            records.clear();
            self.records = records;
        }
        if done.capacity() <= KEEP_AT_MOST {
            done.clear();
            self.done = done;
        }
    }
}

impl Delivery<'_> {
    /// One exchange and its batch; returns how many records were handled.
    pub fn dispatch(
        &self,
        py: Python<'_>,
        handler: &Bound<'_, PyAny>,
        timeout: Option<Duration>,
        max: usize,
    ) -> PyResult<usize> {
        let mut records = std::mem::take(&mut *self.backlog.lock());
        let done = std::mem::take(&mut self.spare.lock().done);
        if records.is_empty() {
            records = std::mem::take(&mut self.spare.lock().records);
            if let Err(e) = self.receive(py, &mut records, timeout, max) {
                self.spare.lock().keep(records, done);
                return Err(e);
            }
        }
        self.run(py, handler, records, done)
    }

    fn receive(
        &self,
        py: Python<'_>,
        records: &mut Vec<SpotRecord>,
        timeout: Option<Duration>,
        max: usize,
    ) -> PyResult<()> {
        let node = self.node;
        if self.manual {
            py.detach(|| node.advance(Duration::ZERO))
                .map_err(|e| to_py(py, e))?;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let slice = wait_slice(deadline);
            py.detach(|| node.exchange(&[], records, max, slice))
                .map_err(|e| to_py(py, e))?;
            if !records.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
            py.check_signals()?;
        }
    }

    fn run(
        &self,
        py: Python<'_>,
        handler: &Bound<'_, PyAny>,
        mut records: Vec<SpotRecord>,
        mut done: Vec<SpotCompletion>,
    ) -> PyResult<usize> {
        done.reserve(records.len());
        let mut fatal = None;
        let mut processed = 0;
        // By reference: a record is not moved to be run (only what stays is moved out).
        for rec in &records {
            processed += 1;
            let outcome = if !self.node.begin(rec) {
                Outcome::NotStarted
            } else {
                match self.run_one(py, handler, rec) {
                    Ok(o) => o,
                    Err(e) => {
                        fatal = Some(e);
                        Outcome::Failed
                    }
                }
            };
            done.push(rec.complete(outcome));
            if fatal.is_some() {
                break;
            }
        }
        let rest: Vec<SpotRecord> = records.drain(processed..).collect();
        // The handled records go (their payloads and lane reservations with them) before
        // the completions are applied; their buffer stays for the next dispatch.
        records.clear();
        if !rest.is_empty() {
            let mut b = self.backlog.lock();
            let later = std::mem::replace(&mut *b, rest);
            b.extend(later);
        }
        if !done.is_empty() {
            let node = self.node;
            let r = py.detach(|| node.complete(&done));
            self.spare.lock().keep(records, done);
            match r {
                Ok(())
                | Err(LifecycleError::Closed)
                | Err(LifecycleError::Timer(spot_timer_core::Error::Closed)) => {}
                Err(e) => return Err(fatal.unwrap_or_else(|| to_py(py, e))),
            }
        } else {
            self.spare.lock().keep(records, done);
        }
        match fatal {
            Some(e) => Err(e),
            None => Ok(processed),
        }
    }

    /// Runs one begun record's handler. `Err` only for what must propagate
    /// (KeyboardInterrupt, SystemExit, or a record that could not be built).
    fn run_one(
        &self,
        py: Python<'_>,
        handler: &Bound<'_, PyAny>,
        rec: &SpotRecord,
    ) -> PyResult<Outcome> {
        let obj = Bound::new(py, PySpotRecord::new(py, rec))?.into_any();
        match handler.call1((&obj,)) {
            Ok(res) if res.is_none() => Ok(Outcome::Ok),
            Ok(res) => {
                if !is_coroutine(py, &res)? {
                    return Ok(Outcome::Ok);
                }
                let _ = res.call_method0("close");
                let err = py_error(
                    py,
                    "ArgumentTypeError",
                    "the handler returned a coroutine; Node.dispatch() runs handlers \
                     synchronously (await inside a task of your own instead)"
                        .into(),
                );
                self.callbacks.report(py, err, Some(&obj));
                Ok(Outcome::Failed)
            }
            Err(err) if err.is_instance_of::<PyException>(py) => {
                self.callbacks.report(py, err, Some(&obj));
                Ok(Outcome::Failed)
            }
            Err(err) => Err(err),
        }
    }
}
