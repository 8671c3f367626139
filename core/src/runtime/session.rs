//! A delivery session: one host thread's loop over a runtime's records, so that hosts
//! (the C ABI, the bindings) do not each write it. It exchanges completions for records,
//! start-checks each record right before handing it out (a record that went stale is
//! completed as not started and skipped), collects the completions, and helps a blocking
//! cancel made from inside one of its handlers.
//!
//! Ground rules:
//! - A session belongs to the thread that created it (it is not `Send`); records it has
//!   received and not handed out yet are its *unread* records, and completions it has
//!   collected and not sent yet its *collected* ones, both in a box whose address does not
//!   change.
//! - The thread's `HELPING` cell points at the box of the session it used last. A blocking
//!   cancel on that thread first sends the collected completions and completes the
//!   cancelled timer's unread record (if any) as not started, so the generation does not
//!   wait for a record only this thread would complete. Nothing else reads the pointer;
//!   dropping the session clears it.
//! - Dropping a session completes its unread records as not started and sends what it
//!   collected: a record it received never stays in flight.
//! - The batch form ([`DeliverySession::batch`]) hands out a whole exchange at once: the
//!   records, one outcome cell per record (`BATCH_PENDING` until the host writes how the
//!   record ended) and a position cell (the record whose handler runs). They live in the
//!   same box as the unread records; the host writes the cells, a blocking cancel on the
//!   thread writes `NotStarted` into a pending cell after the position (and completes that
//!   record at once), and the next `batch` (or `next`, or the drop) completes every other
//!   record of the batch from its cell. Nothing else touches them.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::runtime::shared::{with_work, Shared};
use crate::spec::TimerId;
use crate::tick::{Completion, Outcome, Record, TickRecord};

thread_local! {
    /// (runtime id, unread records of the session whose handler runs on this thread).
    static HELPING: Cell<(u64, *const ())> = const { Cell::new((0, std::ptr::null())) };
}

struct Unread<P> {
    records: VecDeque<Record<P>>,
    completions: Vec<Completion>,
}

/// The outcome cell of a batch record its host has not reported yet.
pub const BATCH_PENDING: u32 = u32::MAX;
/// The outcome cell of a batch record its host keeps: it completes it later itself (an
/// asynchronous handler), with [`crate::Runtime::complete`]; the session never does.
pub const BATCH_KEPT: u32 = u32::MAX - 1;

/// The batch handed out last (see the ground rules): read by the host while a blocking
/// cancel on the same thread may write its cells, so only cells are written.
struct BatchCells<P> {
    records: Vec<Record<P>>,
    outcomes: Vec<Cell<u32>>,
    /// Completed by a blocking cancel already: the next settle skips them.
    helped: Vec<Cell<bool>>,
    position: Cell<usize>,
}

/// What the thread's `HELPING` cell points at.
struct Held<P> {
    unread: RefCell<Unread<P>>,
    batch: BatchCells<P>,
}

/// A batch handed out by [`DeliverySession::batch`], valid until the session's next call.
pub struct Batch<'s, P> {
    /// The records, in the order received. A tick is not start-checked: check it right
    /// before its handler runs (`Runtime::begin`, or the call-free check of the C ABI).
    pub records: &'s [Record<P>],
    /// One per record, [`BATCH_PENDING`] on arrival: write the [`Outcome`] (as `u32`) of
    /// each tick handled, or [`BATCH_KEPT`] for a tick the host completes later itself. A
    /// pending tick is completed as not started.
    pub outcomes: &'s [Cell<u32>],
    /// Write the index of the record whose handler is about to run (`usize::MAX` on
    /// arrival: none yet). A blocking cancel on this thread completes only pending ticks
    /// after it.
    pub position: &'s Cell<usize>,
}

/// One host thread's delivery loop over a runtime (see [`crate::Runtime::session`]).
pub struct DeliverySession<P: Send + Sync + 'static> {
    shared: Arc<Shared<P>>,
    held: Box<Held<P>>,
    /// The tick handed out by `next` and not yet completed by `done`.
    current: Option<u64>,
    capacity: usize,
    received: Vec<Record<P>>,
    /// Not `Send`: `HELPING` of the creating thread points at `unread`.
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl<P: Clone + Send + Sync + 'static> DeliverySession<P> {
    pub(crate) fn new(shared: Arc<Shared<P>>, capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::InvalidArgument(
                "session capacity must be at least 1".into(),
            ));
        }
        if shared.callback_sink {
            return Err(Error::InvalidArgument(
                "this runtime delivers through a batch callback, not exchange".into(),
            ));
        }
        Ok(Self {
            shared,
            held: Box::new(Held {
                unread: RefCell::new(Unread {
                    records: VecDeque::with_capacity(capacity),
                    completions: Vec::with_capacity(capacity),
                }),
                batch: BatchCells {
                    records: Vec::new(),
                    outcomes: Vec::new(),
                    helped: Vec::new(),
                    position: Cell::new(usize::MAX),
                },
            }),
            current: None,
            capacity,
            received: Vec::with_capacity(capacity),
            _thread_bound: std::marker::PhantomData,
        })
    }

    /// Points this thread's `HELPING` cell at this session.
    fn mark_helping(&self) {
        let held: *const Held<P> = &*self.held;
        HELPING.with(|h| h.set((self.shared.id, held.cast())));
    }

    fn unread(&self) -> std::cell::RefMut<'_, Unread<P>> {
        self.held.unread.borrow_mut()
    }

    fn settle_batch(&mut self) {
        settle(&mut self.held);
    }

    /// The batch form: completes the batch handed out last from its outcome cells, then
    /// exchanges the collected completions for up to `capacity` records and hands them all
    /// out (see [`Batch`]). The batch is empty when none arrived within `timeout`.
    /// `Error::Closed` once the runtime closed and nothing is left; `Error::InvalidArgument`
    /// while a tick of [`DeliverySession::next`] is not completed.
    pub fn batch(&mut self, timeout: Option<Duration>) -> Result<Batch<'_, P>> {
        self.batch_window(timeout, self.capacity, Duration::ZERO)
    }

    /// [`DeliverySession::batch`] taking at most `max` records from this exchange (clamped
    /// to `1..=capacity`): a host that sizes its batches by their expected run time.
    pub fn batch_max(&mut self, timeout: Option<Duration>, max: usize) -> Result<Batch<'_, P>> {
        self.batch_window(timeout, max, Duration::ZERO)
    }

    /// [`DeliverySession::batch_max`] with a window: when the exchange returned some records
    /// but fewer than `max`, waits `window` and adds the records that came due meanwhile
    /// (without waiting again) to the same batch.
    pub fn batch_window(
        &mut self,
        timeout: Option<Duration>,
        max: usize,
        window: Duration,
    ) -> Result<Batch<'_, P>> {
        let max = max.clamp(1, self.capacity);
        if self.current.is_some() {
            return Err(Error::InvalidArgument(
                "complete the tick the session handed out (done) before asking for a batch".into(),
            ));
        }
        self.settle_batch();
        // The batch's vector is reused (settling emptied it). Records received for `next`
        // and not handed out yet come first; else the exchange writes straight into it.
        let mut records = std::mem::take(&mut self.held.batch.records);
        records.extend(self.unread().records.drain(..));
        if records.is_empty() {
            let mut list = std::mem::take(&mut self.unread().completions);
            let mut r = self.shared.exchange(&list, &mut records, max, timeout);
            list.clear();
            if r.is_ok() && !window.is_zero() && !records.is_empty() && records.len() < max {
                // Let records that come due within the window join this batch.
                std::thread::sleep(window);
                let room = max - records.len();
                r = match self
                    .shared
                    .exchange(&[], &mut records, room, Some(Duration::ZERO))
                {
                    Err(Error::Closed) => Ok(0),
                    other => other,
                };
            }
            let mut unread = self.unread();
            if unread.completions.is_empty() {
                unread.completions = list;
            }
            drop(unread);
            match r {
                // The valid completions were applied; the bad one is not the session's to
                // resubmit.
                Ok(_) | Err(Error::InvalidCompletion(_)) => {}
                Err(e) => {
                    self.held.batch.records = records;
                    return Err(e);
                }
            }
        }
        let batch = &mut self.held.batch;
        batch.outcomes.clear();
        batch
            .outcomes
            .resize_with(records.len(), || Cell::new(BATCH_PENDING));
        batch.helped.clear();
        batch.helped.resize_with(records.len(), || Cell::new(false));
        batch.position.set(usize::MAX);
        batch.records = records;
        // The cells handed out and the pointer a blocking cancel follows come from one
        // shared borrow of the box, taken after its last change.
        let held: &Held<P> = &self.held;
        HELPING.with(|h| h.set((self.shared.id, (held as *const Held<P>).cast())));
        Ok(Batch {
            records: &held.batch.records,
            outcomes: &held.batch.outcomes,
            position: &held.batch.position,
        })
    }

    /// The batch handed out last, its cells as they are now (empty once the next call
    /// settled it): for a host that reads it again after waiting detached.
    pub fn last_batch(&self) -> Batch<'_, P> {
        let batch = &self.held.batch;
        Batch {
            records: &batch.records,
            outcomes: &batch.outcomes,
            position: &batch.position,
        }
    }

    /// Completes the batch handed out last from its outcome cells and sends every collected
    /// completion now, without receiving (a host that returns to an event loop between
    /// batches). `Error::InvalidArgument` while a tick of [`DeliverySession::next`] is not
    /// completed.
    pub fn flush(&mut self) -> Result<()> {
        if self.current.is_some() {
            return Err(Error::InvalidArgument(
                "complete the tick the session handed out (done) before flushing".into(),
            ));
        }
        self.settle_batch();
        let mut list = std::mem::take(&mut self.unread().completions);
        if !list.is_empty() && !self.shared.is_closed() {
            submit(&self.shared, &list);
        }
        list.clear();
        let mut unread = self.unread();
        if unread.completions.is_empty() {
            unread.completions = list;
        }
        Ok(())
    }

    /// The next record to act on: a tick whose start is already checked and claimed (run
    /// its handler, then call [`DeliverySession::done`]), or a cancel's notice. Completions
    /// collected so far go back with the exchange that fetches more records. `None`: none
    /// arrived within `timeout` (`None` waits until one does or the runtime closes;
    /// `Some(ZERO)` does not wait). `Error::Closed` once the runtime closed and nothing is
    /// left; `Error::InvalidArgument` if the previous tick was not completed yet.
    pub fn next(&mut self, timeout: Option<Duration>) -> Result<Option<Record<P>>> {
        if self.current.is_some() {
            return Err(Error::InvalidArgument(
                "complete the tick the session handed out (done) before asking for the next".into(),
            ));
        }
        self.settle_batch();
        self.mark_helping();
        let mut waited = false;
        loop {
            let record = self.unread().records.pop_front();
            match record {
                Some(Record::Tick(t)) => {
                    if self.shared.start(t.timer, t.queued).is_ok() {
                        self.current = Some(t.token);
                        return Ok(Some(Record::Tick(t)));
                    }
                    self.unread()
                        .completions
                        .push(Completion::new(t.token, Outcome::NotStarted));
                }
                Some(notice) => return Ok(Some(notice)),
                None if waited => return Ok(None),
                None => {
                    self.fetch(timeout)?;
                    waited = true;
                }
            }
        }
    }

    /// Completes the tick [`DeliverySession::next`] handed out, with how its handler ended.
    /// The completion goes back with the next exchange.
    pub fn done(&mut self, outcome: Outcome) -> Result<()> {
        let token = self
            .current
            .take()
            .ok_or_else(|| Error::InvalidArgument("the session has no tick in progress".into()))?;
        self.mark_helping();
        let mut unread = self.held.unread.borrow_mut();
        unread.completions.push(Completion::new(token, outcome));
        if unread.completions.len() >= self.capacity {
            let list = std::mem::take(&mut unread.completions);
            drop(unread);
            submit(&self.shared, &list);
        }
        Ok(())
    }

    /// Exchanges the collected completions for new records.
    fn fetch(&mut self, timeout: Option<Duration>) -> Result<()> {
        let mut list = std::mem::take(&mut self.unread().completions);
        let r = self
            .shared
            .exchange(&list, &mut self.received, self.capacity, timeout);
        let mut unread = self.held.unread.borrow_mut();
        // The list's allocation serves the next completions.
        list.clear();
        if unread.completions.is_empty() {
            unread.completions = list;
        }
        unread.records.extend(self.received.drain(..));
        match r {
            Ok(_) => Ok(()),
            // The valid completions were applied; the bad one is not the session's to
            // resubmit.
            Err(Error::InvalidCompletion(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl<P: Send + Sync + 'static> Drop for DeliverySession<P> {
    fn drop(&mut self) {
        HELPING.with(|h| {
            if h.get().1 == (&*self.held as *const Held<P>).cast() {
                h.set((0, std::ptr::null()));
            }
        });
        settle(&mut self.held);
        let mut unread = self.held.unread.borrow_mut();
        let mut list = std::mem::take(&mut unread.completions);
        if let Some(token) = self.current.take() {
            // Handed out and never reported: it ran, as far as the session knows.
            list.push(Completion::new(token, Outcome::Ok));
        }
        for r in unread.records.drain(..) {
            if let Record::Tick(t) = r {
                list.push(Completion::new(t.token, Outcome::NotStarted));
            }
        }
        drop(unread);
        if !list.is_empty() && !self.shared.is_closed() {
            submit(&self.shared, &list);
        }
    }
}

/// Completes the batch handed out last from its outcome cells (a pending or invalid cell:
/// not started; a tick a blocking cancel completed already: skipped), into the collected
/// completions.
fn settle<P>(held: &mut Held<P>) {
    let batch = &mut held.batch;
    if batch.records.is_empty() {
        return;
    }
    let unread = held.unread.get_mut();
    for (i, r) in batch.records.drain(..).enumerate() {
        if let Record::Tick(t) = r {
            if batch.helped[i].get() || batch.outcomes[i].get() == BATCH_KEPT {
                continue;
            }
            let outcome = Outcome::from_u32(batch.outcomes[i].get()).unwrap_or(Outcome::NotStarted);
            unread.completions.push(Completion::new(t.token, outcome));
        }
    }
    batch.outcomes.clear();
    batch.helped.clear();
    batch.position.set(usize::MAX);
}

/// Completes records from any thread: those a host kept out of a batch ([`BATCH_KEPT`],
/// an asynchronous handler) once they end. A clone of it keeps the runtime's shared state,
/// not the runtime: after the close every call answers `Error::Closed`.
pub struct Completer<P: Send + Sync + 'static> {
    shared: Arc<Shared<P>>,
}

impl<P: Send + Sync + 'static> Clone for Completer<P> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<P: Send + Sync + 'static> Completer<P> {
    /// As [`crate::Runtime::complete`].
    pub fn complete(&self, completions: &[Completion]) -> Result<()> {
        self.shared.complete(completions)
    }
}

impl<P: Clone + Send + Sync + 'static> DeliverySession<P> {
    /// The start check of a record of this session's batch, right before its handler (as
    /// [`crate::Runtime::begin`]).
    pub fn begin(&self, record: &TickRecord<P>) -> bool {
        record.runtime == self.shared.id && self.shared.start(record.timer, record.queued).is_ok()
    }

    /// A completer for the records this session's host keeps ([`BATCH_KEPT`]).
    pub fn completer(&self) -> Completer<P> {
        Completer {
            shared: self.shared.clone(),
        }
    }
}

fn submit<P>(shared: &Shared<P>, list: &[Completion]) {
    with_work(shared.now(), |work| {
        // A token that matches no record (its generation was closed meanwhile) is counted
        // by `submit`; the others apply regardless.
        let _ = shared.submit(list, work);
        shared.flush(work);
    });
}

impl<P: Send + Sync + 'static> Shared<P> {
    /// Submits completions without receiving (see [`crate::Runtime::complete`]).
    pub(crate) fn complete(&self, completions: &[Completion]) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let invalid = with_work(self.now(), |work| {
            let invalid = self.submit(completions, work);
            self.flush(work);
            invalid
        });
        match invalid {
            Some(token) => Err(Error::InvalidCompletion(token)),
            None => Ok(()),
        }
    }

    /// A blocking cancel on a thread that uses a session of this runtime: sends the
    /// session's collected completions and, if generation `id` has an unread record there,
    /// completes it as not started, so the end need not wait for this thread. True if it
    /// sent anything.
    pub(crate) fn help_session(&self, id: TimerId) -> bool {
        let (runtime, ptr) = HELPING.with(|h| h.get());
        if runtime != self.id || ptr.is_null() {
            return false;
        }
        // SAFETY: the pointer is set by a session of this runtime (same `P`) on this thread
        // and cleared by its drop before the box goes away (ground rules); only cells of
        // the batch are written through it.
        let held = unsafe { &*ptr.cast::<Held<P>>() };
        let list = {
            let Ok(mut u) = held.unread.try_borrow_mut() else {
                return false;
            };
            let at = u
                .records
                .iter()
                .position(|r| matches!(r, Record::Tick(t) if t.timer == id));
            if let Some(Record::Tick(t)) = at.and_then(|at| u.records.remove(at)) {
                u.completions
                    .push(Completion::new(t.token, Outcome::NotStarted));
            }
            // The batch: ticks already reported go now; a pending tick of `id` after the
            // position did not start and never will.
            let b = &held.batch;
            let after = b.position.get().wrapping_add(1);
            for (i, r) in b.records.iter().enumerate() {
                let Record::Tick(t) = r else { continue };
                if b.helped[i].get() {
                    continue;
                }
                let reported = b.outcomes[i].get();
                let outcome = if reported == BATCH_KEPT {
                    continue;
                } else if reported != BATCH_PENDING {
                    Outcome::from_u32(reported).unwrap_or(Outcome::NotStarted)
                } else if t.timer == id && i >= after {
                    b.outcomes[i].set(Outcome::NotStarted as u32);
                    Outcome::NotStarted
                } else {
                    continue;
                };
                b.helped[i].set(true);
                u.completions.push(Completion::new(t.token, outcome));
            }
            std::mem::take(&mut u.completions)
        };
        if list.is_empty() {
            return false;
        }
        submit(self, &list);
        true
    }
}
