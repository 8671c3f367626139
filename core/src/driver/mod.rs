//! The delivery driver: the protocol every host runs, written once. A host supplies one
//! function — run this record and say how it went ([`Host::run`]) — and the driver does
//! the rest: receive a batch (sending the outcomes of the previous one with the same
//! exchange), claim each record's start right before its handler, write the outcome,
//! keep the records of handlers that finish later and complete them from any thread
//! ([`Ticket`]), hand cancel notices to the host, stop where the host says the rest must
//! wait (a fatal error) and resume there, and size batches by a time budget.
//!
//! It is generic over where its records come from ([`Source`]): a timer runtime's
//! delivery session ([`TimerSource`]) or a Spot node (in the lifecycle crate, which builds
//! on this module). Nothing below it knows it exists.
//!
//! Ground rules:
//! - **One exchange per batch** (T10): [`Driver::receive`] makes one call into the source
//!   and the batch it returns is run whole by [`Driver::run`]; nothing is called per
//!   record but the start check and the host's function.
//! - **The start check runs right before the handler**, never earlier: a record whose
//!   generation was cancelled, replaced or whose lease ended while earlier records ran is
//!   completed `NotStarted` and the host never sees it.
//! - **Every record received is completed exactly once**: by the outcome the driver
//!   writes (sent with the next exchange, a flush, or the source's drop), by its
//!   [`Ticket`] (a kept record; a ticket dropped without an outcome completes it
//!   `Failed`), or by a blocking cancel on this thread (the session completes a pending
//!   record of the cancelled timer at once; the driver skips records no longer pending).
//! - **A stop keeps the rest of the batch**: after [`Verdict::Stop`] or a panicking
//!   handler, the records after it stay received, and the next [`Driver::receive`] hands
//!   them out again without an exchange. A panic completes its record `Failed` and goes on
//!   to the caller; the driver stays usable.
//! - **Host code runs under no lock of the driver or the runtime**; the driver itself is
//!   not `Send` when its source is not (a timer session belongs to its thread).
//! - The driver never waits except inside its source's exchange: a host that must wait
//!   elsewhere (a poll that a signal interrupts, an event loop) receives with a zero
//!   timeout and waits on the runtime's wakeup fd itself.

mod budget;
mod source;
mod ticket;
mod timers;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use budget::Budget;
pub use source::{CompleteHeld, Source};
pub use ticket::Ticket;
pub use timers::TimerSource;

use crate::tick::Outcome;

/// How the host's handler for one record went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It ended so: the record is completed with this outcome.
    Done(Outcome),
    /// It goes on after [`Host::run`] returned (an asynchronous handler): the driver hands
    /// the host a [`Ticket`] ([`Host::keep`]) that completes the record when it ends.
    Held,
    /// It ended so, and the rest of the batch must wait (a fatal error of the host, such
    /// as an interrupt): [`Driver::run`] returns, and the records after this one are
    /// handed out again by the next receive.
    Stop(Outcome),
}

/// A host: what runs the records a driver delivers.
pub trait Host<S: Source> {
    /// Runs one record whose start was just claimed.
    fn run(&mut self, record: &S::Record) -> Verdict;
    /// After [`Verdict::Held`]: the ticket that completes `record` once its handler ends.
    fn keep(&mut self, record: &S::Record, ticket: Ticket<S>) {
        let _ = record;
        drop(ticket);
    }
    /// A record that is not work: a cancel's notice (nothing to start or complete).
    fn notice(&mut self, record: &S::Record) {
        let _ = record;
    }
}

/// What one [`Driver::run`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Records whose handler ran (kept ones included).
    pub ran: usize,
    /// Of those, the records the host kept ([`Verdict::Held`]).
    pub held: usize,
    /// Records that failed the start check (completed `NotStarted`).
    pub not_started: usize,
    /// Cancel notices handed to the host.
    pub notices: usize,
    /// True if the host stopped the batch ([`Verdict::Stop`]).
    pub stopped: bool,
}

/// The delivery driver over one source (see the module's ground rules).
pub struct Driver<S: Source> {
    source: S,
    /// The batch's next record to run after a stop (`None`: the batch ran whole).
    resume: Option<usize>,
    window: Duration,
    budget: Option<Arc<Budget>>,
}

impl<S: Source> Driver<S> {
    /// A driver over `source`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            resume: None,
            window: Duration::ZERO,
            budget: None,
        }
    }

    /// After the first records of an exchange, waits `window` for more to join the batch
    /// (zero, the default: does not).
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Takes only as many records per exchange as the measured time per record fits in
    /// the budget (shared by the drivers of one runtime's delivering threads).
    pub fn with_budget(mut self, budget: Arc<Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// A driver over `source` that resumes a stopped batch at record `resume` (what
    /// [`Driver::into_parts`] gave back).
    pub fn from_parts(source: S, resume: Option<usize>) -> Self {
        Self {
            resume,
            ..Self::new(source)
        }
    }

    /// The source and where a stopped batch resumes, for a host that keeps them apart
    /// between calls (the C ABI keeps a session in its table between driver calls).
    pub fn into_parts(self) -> (S, Option<usize>) {
        (self.source, self.resume)
    }

    /// The source, for what the driver does not cover (its stats, its runtime).
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Whether it waits a window for more records after the first (see
    /// [`Driver::with_window`]).
    pub fn has_window(&self) -> bool {
        !self.window.is_zero()
    }

    /// Whether it holds a batch: outcomes not sent yet, or the rest of a stopped batch.
    pub fn holds_batch(&self) -> bool {
        !self.source.records().is_empty()
    }

    /// Records received and not run yet: the rest of a stopped batch.
    pub fn waiting(&self) -> usize {
        match self.resume {
            Some(at) => self.source.records().len().saturating_sub(at),
            None => 0,
        }
    }

    /// Sends the outcomes of the last batch and receives the next, up to `max` records
    /// (fewer under a budget), waiting up to `timeout` (`None`: until records arrive or
    /// the source closes). The rest of a stopped batch comes first, without an exchange.
    /// Returns how many records wait for [`Driver::run`]; the source's closed error once
    /// it closed.
    pub fn receive(&mut self, timeout: Option<Duration>, max: usize) -> Result<usize, S::Error> {
        if self.resume.is_some() {
            return Ok(self.waiting());
        }
        let max = match &self.budget {
            Some(b) => b.limit(max),
            None => max,
        };
        self.source.receive(timeout, max.max(1), self.window)
    }

    /// Runs the received batch through `host`: per record the start check, the host's
    /// function and the outcome (see the ground rules). A panic of the host completes its
    /// record `Failed`, keeps the rest and continues unwinding.
    pub fn run<H: Host<S>>(&mut self, host: &mut H) -> Pass {
        let Self {
            source,
            resume,
            budget,
            ..
        } = self;
        let first = resume.take().unwrap_or(0);
        let len = source.records().len();
        let started = Instant::now();
        let mut pass = Pass::default();
        for i in first..len {
            // A blocking cancel on this thread completed it already.
            if !source.is_pending(i) {
                continue;
            }
            source.set_position(i);
            if source.is_notice(i) {
                source.finish(i, Outcome::Ok);
                pass.notices += 1;
                host.notice(&source.records()[i]);
                continue;
            }
            if !source.begin(i) {
                pass.not_started += 1;
                source.finish(i, Outcome::NotStarted);
                continue;
            }
            pass.ran += 1;
            let record = &source.records()[i];
            let verdict = match catch_unwind(AssertUnwindSafe(|| host.run(record))) {
                Ok(v) => v,
                Err(panic) => {
                    source.finish(i, Outcome::Failed);
                    if i + 1 < len {
                        *resume = Some(i + 1);
                    }
                    observe(budget, pass.ran, started);
                    resume_unwind(panic);
                }
            };
            match verdict {
                Verdict::Done(outcome) => source.finish(i, outcome),
                Verdict::Held => {
                    pass.held += 1;
                    let ticket = Ticket::new(source.hold(i), source.completer());
                    host.keep(&source.records()[i], ticket);
                }
                Verdict::Stop(outcome) => {
                    source.finish(i, outcome);
                    pass.stopped = true;
                    if i + 1 < len {
                        *resume = Some(i + 1);
                    }
                    break;
                }
            }
        }
        observe(budget, pass.ran, started);
        pass
    }

    /// [`Driver::receive`] and, if records came, [`Driver::run`].
    pub fn deliver<H: Host<S>>(
        &mut self,
        host: &mut H,
        timeout: Option<Duration>,
        max: usize,
    ) -> Result<Pass, S::Error> {
        if self.receive(timeout, max)? == 0 {
            return Ok(Pass::default());
        }
        Ok(self.run(host))
    }

    /// Sends the outcomes of the last batch now, without receiving (a host that returns to
    /// an event loop between batches). The rest of a stopped batch stays.
    pub fn flush(&mut self) -> Result<(), S::Error> {
        if self.resume.is_some() {
            return Ok(());
        }
        self.source.flush()
    }
}

fn observe(budget: &Option<Arc<Budget>>, ran: usize, started: Instant) {
    if let Some(b) = budget {
        b.observe(ran, started.elapsed());
    }
}
