//! Where a driver's records come from, as the driver sees it: a batch at a time, each
//! record finished (its outcome written), kept, or still pending.

use std::time::Duration;

use crate::tick::Outcome;

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

    /// Completes the batch handed out last (sending its outcomes with this exchange) and
    /// receives the next: up to `max` records, waiting up to `timeout` for the first, then
    /// `window` for more. Returns how many.
    fn receive(
        &mut self,
        timeout: Option<Duration>,
        max: usize,
        window: Duration,
    ) -> Result<usize, Self::Error>;
    /// The batch handed out last.
    fn records(&self) -> &[Self::Record];
    /// Whether record `i` of the batch still waits for its outcome (false once finished or
    /// kept, or completed by a blocking cancel on this thread).
    fn is_pending(&self, i: usize) -> bool;
    /// Record `i`'s handler is about to run (a blocking cancel on this thread completes
    /// only pending records after it).
    fn set_position(&self, i: usize);
    /// Whether record `i` is a notice, not work.
    fn is_notice(&self, i: usize) -> bool;
    /// The start check of record `i`, right before its handler: true claims the start.
    fn begin(&self, i: usize) -> bool;
    /// Record `i` ended so (a notice: handed out). Its completion goes with the next
    /// exchange or flush; what depends on it (the next message of a burst) may start now.
    fn finish(&self, i: usize, outcome: Outcome);
    /// Record `i` is kept: what completes it later.
    fn hold(&self, i: usize) -> Self::Held;
    /// A completer for kept records.
    fn completer(&self) -> Self::Completer;
    /// Sends the outcomes of the batch handed out last now.
    fn flush(&mut self) -> Result<(), Self::Error>;
}
