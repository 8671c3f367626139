//! The driver's source for a timer runtime: the calling thread's delivery session in its
//! batch form (so a blocking cancel on the thread completes the records it would otherwise
//! wait for).

use std::time::Duration;

use super::source::{CompleteHeld, Source};
use crate::error::{Error, Result};
use crate::runtime::{Completer, DeliverySession, Runtime, BATCH_KEPT, BATCH_PENDING};
use crate::tick::{Completion, Outcome, Record};

/// Timer records of one runtime, through a delivery session of the calling thread (not
/// `Send`, like the session).
pub struct TimerSource<P: Send + Sync + 'static> {
    session: DeliverySession<P>,
}

impl<P: Clone + Send + Sync + 'static> TimerSource<P> {
    /// A source over `runtime` receiving up to `capacity` records per exchange.
    pub fn new(runtime: &Runtime<P>, capacity: usize) -> Result<Self> {
        Ok(Self {
            session: runtime.session(capacity)?,
        })
    }
}

impl<P: Send + Sync + 'static> TimerSource<P> {
    /// A source over a session the host already has.
    pub fn from_session(session: DeliverySession<P>) -> Self {
        Self { session }
    }

    /// The session back (its batch and collected completions with it).
    pub fn into_session(self) -> DeliverySession<P> {
        self.session
    }
}

impl<P: Send + Sync + 'static> CompleteHeld<u64> for Completer<P> {
    type Error = Error;
    fn complete(&self, token: u64, outcome: Outcome) -> Result<()> {
        Completer::complete(self, &[Completion::new(token, outcome)])
    }
}

impl<P: Clone + Send + Sync + 'static> Source for TimerSource<P> {
    type Record = Record<P>;
    type Held = u64;
    type Completer = Completer<P>;
    type Error = Error;

    fn receive(
        &mut self,
        timeout: Option<Duration>,
        max: usize,
        window: Duration,
    ) -> Result<usize> {
        self.session
            .batch_window(timeout, max, window)
            .map(|b| b.records.len())
    }

    fn records(&self) -> &[Record<P>] {
        self.session.last_batch().records
    }

    fn is_pending(&self, i: usize) -> bool {
        self.session.last_batch().outcomes[i].get() == BATCH_PENDING
    }

    fn set_position(&self, i: usize) {
        self.session.last_batch().position.set(i);
    }

    fn is_notice(&self, i: usize) -> bool {
        !matches!(self.records()[i], Record::Tick(_))
    }

    fn begin(&self, i: usize) -> bool {
        match &self.records()[i] {
            Record::Tick(t) => self.session.begin(t),
            _ => false,
        }
    }

    fn finish(&self, i: usize, outcome: Outcome) {
        // (A notice's cell only marks it handed out: the session completes ticks only.)
        self.session.last_batch().outcomes[i].set(outcome as u32);
    }

    fn hold(&self, i: usize) -> u64 {
        let batch = self.session.last_batch();
        batch.outcomes[i].set(BATCH_KEPT);
        match &batch.records[i] {
            Record::Tick(t) => t.token(),
            _ => 0,
        }
    }

    fn completer(&self) -> Completer<P> {
        self.session.completer()
    }

    fn flush(&mut self) -> Result<()> {
        self.session.flush()
    }
}
