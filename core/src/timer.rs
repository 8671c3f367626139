//! Timers: what a host registers (spec), what a generation is (cell), and the handle the
//! host keeps to cancel it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::cancel::{EndCell, EndResult, Notice};
use crate::clock::{duration_to_nanos, Nanos};
use crate::error::{Error, Result};
use crate::owner::OwnerShared;
use crate::policy::{newest_due, next_scheduled, normalize_max_catch_up, OverrunPolicy};
use crate::runtime::{Shared, Wake};
use crate::table::WordTable;
use crate::tick::Tick;

/// The host's key of a timer, unique per owner.
pub type TimerKey = u64;

/// Names one generation of one timer: its slot in the runtime's table and the generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId {
    pub slot: u32,
    pub generation: u64,
}

/// Cleans up the host's user data when a generation ends. It may fail; the failure becomes
/// the generation's terminal result (SPEC T2).
pub type ReleaseHook = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

/// What to register: a repeating timer (`every`) or a one-shot (`after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerSpec {
    /// `None` for a one-shot timer.
    pub period: Option<Duration>,
    /// Delay from registration to the first nominal due time. Default: one period.
    pub first_due: Option<Duration>,
    pub policy: OverrunPolicy,
    pub max_catch_up_ticks: u64,
}

impl TimerSpec {
    /// A repeating timer with period `period`, first due one period from now.
    pub fn every(period: Duration) -> Self {
        Self {
            period: Some(period),
            first_due: None,
            policy: OverrunPolicy::SkipLateTicks,
            max_catch_up_ticks: 1,
        }
    }

    /// A one-shot timer due `delay` from now.
    pub fn after(delay: Duration) -> Self {
        Self {
            period: None,
            first_due: Some(delay),
            policy: OverrunPolicy::SkipLateTicks,
            max_catch_up_ticks: 1,
        }
    }

    pub fn policy(mut self, policy: OverrunPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn max_catch_up_ticks(mut self, n: u64) -> Self {
        self.max_catch_up_ticks = n;
        self
    }

    pub fn first_due(mut self, delay: Duration) -> Self {
        self.first_due = Some(delay);
        self
    }

    pub(crate) fn validate(&self) -> Result<NormalSpec> {
        let period = match self.period {
            Some(p) if p.is_zero() => {
                return Err(Error::InvalidArgument(
                    "period must be greater than zero for a repeating timer".into(),
                ))
            }
            Some(p) => duration_to_nanos(p),
            None => 0,
        };
        let delay = match (self.first_due, self.period) {
            (Some(d), _) => duration_to_nanos(d),
            (None, Some(_)) => period,
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "a one-shot timer needs a delay".into(),
                ))
            }
        };
        let max_catch_up = normalize_max_catch_up(self.policy, self.max_catch_up_ticks)?;
        Ok(NormalSpec {
            period,
            delay,
            policy: if period == 0 {
                OverrunPolicy::SkipLateTicks
            } else {
                self.policy
            },
            max_catch_up,
        })
    }
}

/// A validated spec in nanoseconds. `period == 0` means one-shot.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NormalSpec {
    pub period: Nanos,
    pub delay: Nanos,
    pub policy: OverrunPolicy,
    pub max_catch_up: u32,
}

/// Fixed-size statistics of one generation (SPEC T8): counters, never histories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerStats {
    pub delivered: u64,
    pub failed: u64,
    pub skipped_ticks: u64,
    pub last_scheduled_index: u64,
}

/// One registered generation, shared by the scheduler, the host's handle and its records.
///
/// `repr(C)` keeps the field order: what the scheduler reads to deliver a tick (identity,
/// authority, schedule, tick counters) comes first, in the cell's first two cache lines;
/// the rest is touched only when the generation ends or a host asks. (With the compiler's
/// order the scheduler missed the cache on three lines per delivery.)
#[repr(C)]
pub struct TimerCell<P> {
    pub(crate) id: TimerId,
    pub(crate) owner: Arc<OwnerShared>,
    pub(crate) epoch: u64,
    /// The generation's schedule: its spec and first nominal due time. Immutable, so the
    /// host thread handing a record over can apply the backlog rule too (`relabel`).
    pub(crate) t0: Nanos,
    pub(crate) spec: NormalSpec,
    pub(crate) last_scheduled: AtomicU64,
    pub(crate) delivered: AtomicU64,
    /// The scheduled index of the record in flight as the host received it, when a
    /// hand-over moved it past the one the scheduler published (see `relabel`); the
    /// scheduler commits the larger of the two.
    pub(crate) handed_index: AtomicU64,
    pub(crate) skipped: AtomicU64,
    pub(crate) failed: AtomicU64,
    /// The runtime's liveness words (see `table`): this generation's is at `id.slot`.
    pub(crate) words: Arc<WordTable>,
    pub(crate) key: TimerKey,
    pub(crate) payload: P,
    pub(crate) release: Mutex<Option<ReleaseHook>>,
    pub(crate) end: EndCell,
}

impl<P> TimerCell<P> {
    pub(crate) fn live_word(&self) -> &crate::sync::AtomicU64 {
        self.words
            .get(self.id.slot)
            .expect("a cell's slot was allocated")
    }

    /// SPEC T3: a pending record's tick info is computed when it is delivered. A record
    /// published at the scheduler's wakeup may reach an exchange host much later (the host
    /// was busy or stalled); at hand-over the backlog rule is applied again with the
    /// ticks that came due meanwhile, so `SkipLateTicks` still hands over the newest due
    /// tick. Returns the tick to hand over, and records it for the scheduler's commit.
    pub(crate) fn relabel(&self, tick: Tick, now: Nanos) -> Tick {
        let spec = self.spec;
        if spec.period == 0 || spec.policy == OverrunPolicy::DelayNextTick {
            return tick;
        }
        // The common case, a record received before its next nominal tick came due, costs
        // a multiply, not `newest_due`'s division.
        let next_tick_due = self
            .t0
            .saturating_add(spec.period.saturating_mul(tick.scheduled_index));
        if now < next_tick_due {
            return tick;
        }
        let previous = tick.scheduled_index - tick.skipped_ticks - 1;
        let newest = newest_due(self.t0, spec.period, now);
        if newest <= tick.scheduled_index {
            return tick;
        }
        let scheduled = next_scheduled(spec.policy, spec.max_catch_up, previous, newest)
            .max(tick.scheduled_index);
        if scheduled == tick.scheduled_index {
            return tick;
        }
        self.handed_index.fetch_max(scheduled, Relaxed);
        Tick {
            scheduled_index: scheduled,
            skipped_ticks: scheduled - previous - 1,
            ..tick
        }
    }

    pub(crate) fn is_live(&self) -> bool {
        crate::table::word_is_live(self.live_word(), self.id.generation)
    }

    pub(crate) fn stats(&self) -> TimerStats {
        TimerStats {
            delivered: self.delivered.load(Relaxed),
            failed: self.failed.load(Relaxed),
            skipped_ticks: self.skipped.load(Relaxed),
            last_scheduled_index: self.last_scheduled.load(Relaxed),
        }
    }
}

/// The host's handle to one generation. Cloning is cheap; every clone cancels the same
/// generation and sees the same terminal result.
pub struct TimerHandle<P: Send + Sync + 'static> {
    pub(crate) rt: Arc<Shared<P>>,
    pub(crate) cell: Arc<TimerCell<P>>,
}

impl<P: Send + Sync + 'static> Clone for TimerHandle<P> {
    fn clone(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            cell: self.cell.clone(),
        }
    }
}

impl<P: Send + Sync + 'static> std::fmt::Debug for TimerHandle<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerHandle")
            .field("id", &self.cell.id)
            .field("owner", &self.cell.owner.id)
            .field("key", &self.cell.key)
            .finish()
    }
}

impl<P: Send + Sync + 'static> TimerHandle<P> {
    pub fn id(&self) -> TimerId {
        self.cell.id
    }
    pub fn owner_id(&self) -> u64 {
        self.cell.owner.id
    }
    pub fn key(&self) -> TimerKey {
        self.cell.key
    }
    pub fn payload(&self) -> &P {
        &self.cell.payload
    }
    /// True while this generation may still start callbacks.
    pub fn is_live(&self) -> bool {
        self.cell.is_live()
    }
    /// The terminal result, once there is one.
    pub fn result(&self) -> Option<EndResult> {
        self.cell.end.get()
    }
    pub fn stats(&self) -> TimerStats {
        self.cell.stats()
    }

    /// Right before starting a callback of this generation from a record the host holds
    /// in its own form (the C ABI's): the same check and thread marking as
    /// [`crate::Runtime::begin`]. `Error::StaleHandle` (cancelled or replaced),
    /// `Error::Revoked` or `Error::LeaseExpired`: don't start it.
    pub fn begin(&self) -> Result<()> {
        self.rt.begin(&self.cell)
    }

    /// Cancels and waits up to `timeout` (forever with `None`) for the terminal result.
    /// From inside this timer's own callback (after [`crate::Runtime::begin`]) or on the
    /// scheduler thread it returns `Error::WouldDeadlock` at once; the cancel still
    /// completes when the callback ends. On timeout it returns `Error::Timeout` and the
    /// cancel goes on.
    pub fn cancel(&self, timeout: Option<Duration>) -> EndResult {
        self.rt.start_cancel(&self.cell, Wake::Now)?;
        if let Some(r) = self.cell.end.get() {
            return r;
        }
        if self.rt.waiting_would_deadlock(&self.cell) {
            return Err(Error::WouldDeadlock);
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.cell.end.wait(deadline).unwrap_or(Err(Error::Timeout))
    }

    /// Cancels without waiting; the ticket yields the terminal result (also as a future).
    /// The scheduler picks the cancel up at its next wakeup (or at once when the ticket
    /// is waited on), so fire-and-forget cancels cost no syscall.
    pub fn cancel_nowait(&self) -> Result<CancelTicket<P>> {
        self.rt.start_cancel(&self.cell, Wake::Lazy)?;
        Ok(CancelTicket {
            rt: self.rt.clone(),
            cell: self.cell.clone(),
        })
    }

    /// Cancels without waiting and delivers the terminal result as a
    /// [`crate::Record::CancelDone`] carrying `tag` in a later batch. Returns the result
    /// directly instead when it is already known.
    pub fn cancel_with_notice(&self, tag: u64) -> Result<Option<EndResult>> {
        self.rt.start_cancel(&self.cell, Wake::Now)?;
        match self.cell.end.notice(tag) {
            Notice::Queued => Ok(None),
            Notice::AlreadyDone(r) => Ok(Some(r)),
        }
    }

    /// Runs `f` with the terminal result: now if known, else on the scheduler thread when
    /// it is published (keep `f` short and non-blocking).
    pub fn on_end(&self, f: impl FnOnce(&EndResult) + Send + 'static) {
        self.cell.end.subscribe(Box::new(f));
        self.rt.wake();
    }
}

/// A pending cancel result.
pub struct CancelTicket<P: Send + Sync + 'static> {
    rt: Arc<Shared<P>>,
    cell: Arc<TimerCell<P>>,
}

impl<P: Send + Sync + 'static> CancelTicket<P> {
    pub fn try_result(&self) -> Option<EndResult> {
        self.cell.end.get()
    }

    /// Waits up to `timeout` (forever with `None`); `Error::Timeout` if it did not end.
    pub fn wait(&self, timeout: Option<Duration>) -> EndResult {
        if let Some(r) = self.cell.end.get() {
            return r;
        }
        self.rt.wake();
        let deadline = timeout.map(|t| Instant::now() + t);
        self.cell.end.wait(deadline).unwrap_or(Err(Error::Timeout))
    }
}

impl<P: Send + Sync + 'static> Future for CancelTicket<P> {
    type Output = EndResult;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<EndResult> {
        if let Some(r) = self.cell.end.get() {
            return Poll::Ready(r);
        }
        let waker = cx.waker().clone();
        self.cell.end.subscribe(Box::new(move |_| waker.wake()));
        self.rt.wake();
        match self.cell.end.get() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}
