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

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::runtime::shared::{with_work, Shared};
use crate::spec::TimerId;
use crate::tick::{Completion, Outcome, Record};

thread_local! {
    /// (runtime id, unread records of the session whose handler runs on this thread).
    static HELPING: Cell<(u64, *const ())> = const { Cell::new((0, std::ptr::null())) };
}

struct Unread<P> {
    records: VecDeque<Record<P>>,
    completions: Vec<Completion>,
}

/// One host thread's delivery loop over a runtime (see [`crate::Runtime::session`]).
pub struct DeliverySession<P: Send + Sync + 'static> {
    shared: Arc<Shared<P>>,
    unread: Box<RefCell<Unread<P>>>,
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
            unread: Box::new(RefCell::new(Unread {
                records: VecDeque::with_capacity(capacity),
                completions: Vec::with_capacity(capacity),
            })),
            current: None,
            capacity,
            received: Vec::with_capacity(capacity),
            _thread_bound: std::marker::PhantomData,
        })
    }

    /// Points this thread's `HELPING` cell at this session.
    fn mark_helping(&self) {
        let unread: *const RefCell<Unread<P>> = &*self.unread;
        HELPING.with(|h| h.set((self.shared.id, unread.cast())));
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
        self.mark_helping();
        let mut waited = false;
        loop {
            let record = self.unread.borrow_mut().records.pop_front();
            match record {
                Some(Record::Tick(t)) => {
                    if self.shared.start(t.timer, t.queued).is_ok() {
                        self.current = Some(t.token);
                        return Ok(Some(Record::Tick(t)));
                    }
                    self.unread
                        .borrow_mut()
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
        let mut unread = self.unread.borrow_mut();
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
        let list = std::mem::take(&mut self.unread.borrow_mut().completions);
        let r = self
            .shared
            .exchange(&list, &mut self.received, self.capacity, timeout);
        let mut unread = self.unread.borrow_mut();
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
            if h.get().1 == (&*self.unread as *const RefCell<Unread<P>>).cast() {
                h.set((0, std::ptr::null()));
            }
        });
        let mut unread = self.unread.borrow_mut();
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

fn submit<P>(shared: &Shared<P>, list: &[Completion]) {
    with_work(shared.now(), |work| {
        // A token that matches no record (its generation was closed meanwhile) is counted
        // by `submit`; the others apply regardless.
        let _ = shared.submit(list, work);
        shared.flush(work);
    });
}

impl<P: Send + Sync + 'static> Shared<P> {
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
        // and cleared by its drop before the box goes away (ground rules).
        let unread = unsafe { &*ptr.cast::<RefCell<Unread<P>>>() };
        let list = {
            let Ok(mut u) = unread.try_borrow_mut() else {
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
            std::mem::take(&mut u.completions)
        };
        if list.is_empty() {
            return false;
        }
        submit(self, &list);
        true
    }
}
