//! The driver's source for a timer runtime: the calling thread's delivery session in its
//! batch form (so a blocking cancel on the thread completes the records it would otherwise
//! wait for).

use std::time::Duration;

use super::source::{Cells, CompleteHeld, Source};
use crate::error::{Error, Result};
use crate::runtime::{Completer, DeliverySession, Runtime};
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

    fn batch(&self) -> Cells<'_, Record<P>> {
        let b = self.session.last_batch();
        Cells {
            records: b.records,
            outcomes: b.outcomes,
            position: b.position,
        }
    }

    fn is_notice(&self, record: &Record<P>) -> bool {
        !matches!(record, Record::Tick(_))
    }

    fn begin(&self, record: &Record<P>) -> bool {
        match record {
            Record::Tick(t) => self.session.begin(t),
            _ => false,
        }
    }

    fn hold(&self, record: &Record<P>) -> u64 {
        match record {
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
