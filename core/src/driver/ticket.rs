//! A kept record's promise of completion: whoever holds the ticket completes the record
//! once its handler ends, on any thread.

use super::source::{CompleteHeld, Source};
use crate::tick::Outcome;

/// Completes one record a host kept ([`super::Verdict::Held`]). Dropped without
/// [`Ticket::complete`], it completes the record `Failed`: the handler started and never
/// said it succeeded.
pub struct Ticket<S: Source> {
    held: Option<S::Held>,
    completer: S::Completer,
}

impl<S: Source> Ticket<S> {
    pub(super) fn new(held: S::Held, completer: S::Completer) -> Self {
        Self {
            held: Some(held),
            completer,
        }
    }

    /// Completes the record with how its handler ended. After the source closed: its
    /// closed error (the record ended with the close).
    pub fn complete(mut self, outcome: Outcome) -> Result<(), S::Error> {
        let held = self.held.take().expect("a ticket completes once");
        self.completer.complete(held, outcome)
    }

    /// What completes the record, for a host that completes it by other means (a C host,
    /// by the record's token): the ticket no longer completes anything, dropped or not.
    pub fn into_held(mut self) -> S::Held {
        self.held.take().expect("a ticket completes once")
    }
}

impl<S: Source> Drop for Ticket<S> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            let _ = self.completer.complete(held, Outcome::Failed);
        }
    }
}

impl<S: Source> std::fmt::Debug for Ticket<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("completed", &self.held.is_none())
            .finish()
    }
}
