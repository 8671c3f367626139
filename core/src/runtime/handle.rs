//! The host's handle to one generation, and the forms of cancel (contract T2): blocking with
//! a timeout, a ticket (also a future), a notice record, a callback.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::end::{EndReason, EndResult};
use crate::error::{Error, Result};
use crate::owner::OwnerId;
use crate::runtime::end::Ended;
use crate::runtime::shared::{with_work, Shared, CURRENT_CALLBACK, SCHEDULER_OF};
use crate::slot::word;
use crate::spec::{TimerId, TimerKey, TimerStats};

/// How [`crate::Runtime::cancel_timer_keeping_payload`] went.
#[derive(Debug, Clone, PartialEq)]
pub enum Cancelled {
    /// Ended here, and its payload was not released: the caller releases it.
    PayloadKept(EndResult),
    /// Ended here, its payload released as any end releases it (its end had other work:
    /// a release hook, a waiter, ...; or the runtime closed).
    Released(EndResult),
    /// Ends later, its record being with a host; its payload is released then.
    Later,
}

/// The host's handle to one generation: the runtime and the generation's id, nothing
/// else. Cloning is cheap; every clone cancels the same generation and sees the same
/// terminal result. Dropping a handle does not cancel its timer. A handle from
/// [`crate::Owner::register`] and its clones keep the generation's result readable as
/// long as one of them lives (they hold its slot: see [`crate::HeldTimer`]); a handle
/// made from an id ([`crate::Runtime::timer`]) reads it while the slot still holds it.
pub struct TimerHandle<P: Send + Sync + 'static> {
    rt: Arc<Shared<P>>,
    id: TimerId,
    /// It holds the slot (and gives the hold back when dropped).
    held: bool,
}

impl<P: Send + Sync + 'static> Clone for TimerHandle<P> {
    fn clone(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            id: self.id,
            // A clone of a holding handle holds too, while the slot keeps count of more
            // (past that, the original's hold serves both while it lives).
            held: self.held && self.rt.slots.hold_for_clone(self.id.slot()),
        }
    }
}

impl<P: Send + Sync + 'static> Drop for TimerHandle<P> {
    fn drop(&mut self) {
        if self.held {
            let gave_back = self.rt.unhold(self.id.slot());
            debug_assert!(gave_back, "a holding handle has its hold");
        }
    }
}

impl<P: Send + Sync + 'static> std::fmt::Debug for TimerHandle<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerHandle").field("id", &self.id).finish()
    }
}

impl<P: Send + Sync + 'static> Shared<P> {
    /// Would waiting for generation `id`'s end wait for the calling thread itself (its own
    /// callback, or the scheduler thread that runs the batch callback)?
    fn waiting_would_deadlock(&self, id: TimerId) -> bool {
        SCHEDULER_OF.with(|s| s.get()) == self.id
            || CURRENT_CALLBACK.with(|c| c.get()) == (self.id, id.slot(), id.generation())
    }

    /// The generation's slot word, if the slot still holds it.
    fn word_of(&self, id: TimerId) -> Option<u64> {
        let w = self.slots.get(id.slot())?.word.load(Acquire);
        (word::generation(w) == id.generation()).then_some(w)
    }

    /// Cancels `id` without waiting. Inline, so that the common case — an idle timer with
    /// nothing to run at its end — builds the caller's result in place.
    #[inline]
    pub(crate) fn cancel_now(&self, id: TimerId) -> Result<Ended> {
        if !self.is_closed() {
            if let Some(ended) = self.end_quiet_idle(id, EndReason::Cancelled) {
                return Ok(Ended::Done(self.result_of(id.slot(), ended)));
            }
        }
        self.cancel_now_slow(id)
    }

    /// [`Shared::cancel_now`] for a caller that keeps the payload (see
    /// [`crate::Runtime::cancel_timer_keeping_payload`]).
    #[inline]
    pub(crate) fn cancel_now_keeping_payload(&self, id: TimerId) -> Result<Cancelled> {
        if !self.is_closed() {
            if let Some(ended) = self.end_idle_keeping_payload(id, EndReason::Cancelled) {
                return Ok(Cancelled::PayloadKept(self.result_of(id.slot(), ended)));
            }
        }
        Ok(match self.cancel_now_slow(id)? {
            Ended::Done(r) => Cancelled::Released(r),
            Ended::Later => Cancelled::Later,
        })
    }

    fn cancel_now_slow(&self, id: TimerId) -> Result<Ended> {
        if self.is_closed() {
            // `close` ended every generation; report what it recorded.
            return match self.end_result(id) {
                Some(r) => Ok(Ended::Done(r)),
                None => Ok(Ended::Later),
            };
        }
        with_work(self.observed_now(), |work| {
            let r = self.end(id, EndReason::Cancelled, work);
            self.flush(work);
            r
        })
    }
}

impl<P: Send + Sync + 'static> Shared<P> {
    /// See [`TimerHandle::cancel`].
    pub(crate) fn cancel_blocking(&self, id: TimerId, timeout: Option<Duration>) -> EndResult {
        if let Ended::Done(r) = self.cancel_now(id)? {
            return r;
        }
        if self.help_session(id) {
            if let Some(r) = self.end_result(id) {
                return r;
            }
        }
        if self.waiting_would_deadlock(id) {
            return Err(Error::WouldDeadlock);
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.wait_end(id, deadline).unwrap_or(Err(Error::Timeout))
    }

    /// See [`TimerHandle::cancel_with_notice`]. The common case — an idle timer with
    /// nothing to run at its end — is inline and builds the caller's result in place.
    #[inline]
    pub(crate) fn cancel_with_notice(&self, id: TimerId, tag: u64) -> Result<Option<EndResult>> {
        if !self.is_closed() {
            if let Some(ended) = self.end_quiet_idle(id, EndReason::Cancelled) {
                return Ok(Some(self.result_of(id.slot(), ended)));
            }
        }
        self.cancel_with_notice_slow(id, tag)
    }

    fn cancel_with_notice_slow(&self, id: TimerId, tag: u64) -> Result<Option<EndResult>> {
        if let Ended::Done(r) = self.cancel_now_slow(id)? {
            return Ok(Some(r));
        }
        Ok(self.notice(id, tag))
    }

    /// See [`TimerHandle::try_stats`].
    pub(crate) fn timer_stats(&self, id: TimerId) -> Option<TimerStats> {
        let slot = self.slots.get(id.slot())?;
        let delivered = slot.delivered.load(Relaxed);
        let last = slot.last.load(Relaxed);
        let failed = self.failures(id.slot(), id.generation());
        self.word_of(id)?;
        Some(TimerStats {
            delivered,
            failed,
            skipped_ticks: last.saturating_sub(delivered),
            last_scheduled_index: last,
        })
    }
}

impl<P: Send + Sync + 'static> TimerHandle<P> {
    /// A handle that reads `id`'s result while its slot still holds it.
    pub(crate) fn new(rt: Arc<Shared<P>>, id: TimerId) -> Self {
        Self {
            rt,
            id,
            held: false,
        }
    }

    /// A handle given the hold the registration of `id` took for it.
    pub(crate) fn holding(rt: Arc<Shared<P>>, id: TimerId) -> Self {
        Self { rt, id, held: true }
    }

    /// The generation's id.
    pub fn id(&self) -> TimerId {
        self.id
    }

    /// The owner's id, while the slot still holds this generation.
    pub fn owner_id(&self) -> Option<OwnerId> {
        let slot = self.rt.slots.get(self.id.slot())?;
        let owner = self.rt.owners.entry(slot.owner_index()).id.load(Relaxed);
        self.rt.word_of(self.id).map(|_| owner)
    }

    /// The timer's key, while the slot still holds this generation.
    pub fn key(&self) -> Option<TimerKey> {
        let key = self.rt.slots.get(self.id.slot())?.key.load(Relaxed);
        self.rt.word_of(self.id).map(|_| key)
    }

    /// True while this generation may still start callbacks.
    pub fn is_live(&self) -> bool {
        self.rt.word_of(self.id).is_some_and(word::is_live)
    }

    /// The terminal result, once there is one. `Some(Err(StaleHandle))` once the slot has
    /// been reused by a later generation (the result is no longer known).
    pub fn result(&self) -> Option<EndResult> {
        self.rt.end_result(self.id)
    }

    /// Fixed-size statistics of this generation (zero once its slot was reused).
    pub fn stats(&self) -> TimerStats {
        self.try_stats().unwrap_or_default()
    }

    /// Statistics of this generation, while its slot still holds it.
    pub fn try_stats(&self) -> Option<TimerStats> {
        self.rt.timer_stats(self.id)
    }

    /// Cancels and waits up to `timeout` (forever with `None`) for the terminal result.
    /// A timer whose record the host does not hold ends right here, on the calling thread
    /// (its release hook runs here too); otherwise the call waits for the record's
    /// completion. From inside this timer's own callback (after the start check) or on
    /// the scheduler thread it returns `Error::WouldDeadlock` at once; the cancel still
    /// completes when the callback ends. On timeout it returns `Error::Timeout` and the
    /// cancel goes on.
    pub fn cancel(&self, timeout: Option<Duration>) -> EndResult {
        self.rt.cancel_blocking(self.id, timeout)
    }

    /// Cancels without waiting; the ticket yields the terminal result (also as a future).
    pub fn cancel_nowait(&self) -> Result<CancelTicket<P>> {
        self.rt.cancel_now(self.id)?;
        Ok(CancelTicket {
            rt: self.rt.clone(),
            id: self.id,
        })
    }

    /// Cancels without waiting and delivers the terminal result as a
    /// [`crate::Record::CancelDone`] carrying `tag` in a later batch. Returns the result
    /// directly instead when it is already known.
    pub fn cancel_with_notice(&self, tag: u64) -> Result<Option<EndResult>> {
        self.rt.cancel_with_notice(self.id, tag)
    }

    /// Runs `f` with the terminal result: now if known, else on the thread that ends the
    /// generation (keep `f` short and non-blocking).
    pub fn on_end(&self, f: impl FnOnce(&EndResult) + Send + 'static) {
        self.rt.subscribe(self.id, Box::new(f));
    }
}

/// A pending cancel result.
pub struct CancelTicket<P: Send + Sync + 'static> {
    rt: Arc<Shared<P>>,
    id: TimerId,
}

impl<P: Send + Sync + 'static> CancelTicket<P> {
    /// The result, if the generation has ended.
    pub fn try_result(&self) -> Option<EndResult> {
        self.rt.end_result(self.id)
    }

    /// Waits up to `timeout` (forever with `None`); `Error::Timeout` if it did not end.
    pub fn wait(&self, timeout: Option<Duration>) -> EndResult {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.rt
            .wait_end(self.id, deadline)
            .unwrap_or(Err(Error::Timeout))
    }
}

impl<P: Send + Sync + 'static> Future for CancelTicket<P> {
    type Output = EndResult;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<EndResult> {
        if let Some(r) = self.rt.end_result(self.id) {
            return Poll::Ready(r);
        }
        let waker = cx.waker().clone();
        self.rt.subscribe(self.id, Box::new(move |_| waker.wake()));
        match self.rt.end_result(self.id) {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}
