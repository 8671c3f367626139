//! Where a runtime hands its batches (contract T10).

use crate::tick::{Completion, Record};

/// Receives each batch on the scheduler thread, in one call per wakeup.
///
/// Completions pushed into `completions` are applied as soon as the call returns, so a
/// host whose handlers are synchronous completes a batch without a second crossing. A
/// handler may also complete later through [`crate::Runtime::complete`].
pub trait BatchHandler<P>: Send + 'static {
    /// Handles one batch.
    fn on_batch(&mut self, batch: &[Record<P>], completions: &mut Vec<Completion>);
}

impl<P, F> BatchHandler<P> for F
where
    F: FnMut(&[Record<P>], &mut Vec<Completion>) + Send + 'static,
{
    fn on_batch(&mut self, batch: &[Record<P>], completions: &mut Vec<Completion>) {
        self(batch, completions)
    }
}

/// Where a runtime delivers its batches.
#[derive(Default)]
pub enum Sink<P> {
    /// Records wait in a ready queue for [`crate::Runtime::exchange`].
    #[default]
    Exchange,
    /// Records go to a callback on the scheduler thread, one call per batch.
    Callback(Box<dyn BatchHandler<P>>),
}
