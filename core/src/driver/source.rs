//! Where a driver's records come from, as the driver sees it: a batch at a time, with a
//! cell per record for its outcome and a cell for the record whose handler runs.

use std::cell::Cell;
use std::time::Duration;

use crate::tick::Outcome;

/// The batch a source handed out last: read by the driver, its cells written by the
/// driver and (for a timer session) by a blocking cancel on the same thread.
pub struct Cells<'a, R> {
    /// The records, in the order received.
    pub records: &'a [R],
    /// One per record: `BATCH_PENDING` on arrival, then the outcome (as `u32`) or
    /// `BATCH_KEPT`.
    pub outcomes: &'a [Cell<u32>],
    /// The record whose handler is about to run (`usize::MAX`: none yet).
    pub position: &'a Cell<usize>,
}

/// Completes records a host kept, from any thread (a clone per [`super::Ticket`]).
pub trait CompleteHeld<H>: Clone + Send + Sync + 'static {
    /// The source's error.
    type Error;
    /// Completes one kept record with how its handler ended.
    fn complete(&self, held: H, outcome: Outcome) -> Result<(), Self::Error>;
}

/// A source of records for a [`super::Driver`]: a timer runtime's delivery session, or a
/// Spot node's exchange.
pub trait Source {
    /// One unit of work (or a notice) handed to the host.
    type Record;
    /// What completes a record the host keeps.
    type Held: Send + 'static;
    /// Completes kept records from any thread.
    type Completer: CompleteHeld<Self::Held, Error = Self::Error>;
    /// The source's error (its closed error ends a host's loop).
    type Error;

    /// Completes the batch handed out last from its cells (sending the outcomes with this
    /// exchange) and receives the next: up to `max` records, waiting up to `timeout` for
    /// the first, then `window` for more. Returns how many.
    fn receive(
        &mut self,
        timeout: Option<Duration>,
        max: usize,
        window: Duration,
    ) -> Result<usize, Self::Error>;
    /// The batch handed out last.
    fn batch(&self) -> Cells<'_, Self::Record>;
    /// A record that is a notice, not work.
    fn is_notice(&self, record: &Self::Record) -> bool;
    /// The start check, right before the handler: true claims the start.
    fn begin(&self, record: &Self::Record) -> bool;
    /// What completes `record` later (its cell says `BATCH_KEPT`).
    fn hold(&self, record: &Self::Record) -> Self::Held;
    /// A completer for kept records.
    fn completer(&self) -> Self::Completer;
    /// Completes the batch handed out last from its cells and sends the outcomes now.
    fn flush(&mut self) -> Result<(), Self::Error>;
}
