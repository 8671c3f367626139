//! The runtime: the host-facing API over the timer table, the owner table and the
//! deadline queue.
//!
//! # Ground rules: who may touch what
//!
//! - **A slot's word** (`crate::slot::word`) is the truth about its generation and is only
//!   ever changed by compare-and-swap, by whichever thread is acting: a registering thread
//!   publishes a generation; the scheduler or any host moves IDLE → QUEUED (delivery); a
//!   host moves QUEUED → HANDED (it received the record) and sets STARTED (start check);
//!   the thread that completes a record moves HANDED → COMPLETING → IDLE; any thread may
//!   claim an end (→ ENDING) and then alone finishes it. The other fields of a slot are
//!   written only by the thread that holds the phase that owns them: the registering
//!   thread before publication, the delivering thread right after winning QUEUED
//!   (`inflight`), the receiving thread in HANDED (`inflight`, relabelled), the completing
//!   thread in COMPLETING (`last`, `delivered`, `base`).
//! - **The payload** is written before publication, cloned only by the thread that won
//!   QUEUED → HANDED, dropped only by the thread that holds ENDING.
//! - **An owner's lock** guards its key table and gate queue. Registrations, revocations,
//!   expiries and ends take it; nothing that runs host code (release hooks, subscribers)
//!   runs under it. Lock order: the owner-id map, then an owner's lock, then a shard's or
//!   the cold table's lock, which are leaves.
//! - **The deadline queue** is sharded per thread; any thread arms entries in its shard,
//!   only the scheduler polls and compacts. Entries are hints ("look at this slot then"),
//!   checked against the slot word when they surface; a stale one is dropped.
//! - **The scheduler thread** owns nothing exclusively: it polls the queue, delivers what
//!   is due, ends expired leases and calls the batch callback. Nobody waits for it except
//!   `sync`/`advance`.
//! - **The pretouch helper** (`pretouch`), started once the slot table grows past its
//!   first chunk, only faults in the pages of slots not handed out yet, by writes that
//!   change nothing; no registration waits for it.
//! - **Release hooks** run on the thread that ends the generation: the canceller, the
//!   registering thread (superseding an idle timer), the revoking thread, the host thread
//!   completing the last record of an ending timer, the scheduler (lease expiry), or the
//!   thread that closes the runtime.

mod compact;
mod deliver;
mod end;
mod exchange;
mod handle;
mod handover;
mod hold;
mod owner_api;
mod pretouch;
mod ready;
mod rearm;
mod register;
mod scheduler;
mod session;
mod shards;
mod shared;
mod sink;

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use crate::clock::{duration_to_nanos, ClockKind, ManualClock, Nanos};
use crate::cold::{ColdTable, PayloadRelease, ReleaseHook};
use crate::end::{EndReason, EndResult};
use crate::error::{Error, Result};
use crate::owner::{OwnerId, OwnerTable};
use crate::slot::word::{self, EndClaim};
use crate::slot::SlotTable;
use crate::spec::{TimerId, TimerKey, TimerSpec};
use crate::stats::{Counters, Stats};
use crate::tick::{Completion, Record, TickRecord};

pub use handle::{CancelTicket, Cancelled, TimerHandle};
pub use hold::HeldTimer;
pub use owner_api::{Owner, OwnerOptions};
pub use rearm::{Reset, Swap};
pub use session::{Batch, Completer, DeliverySession, BATCH_KEPT, BATCH_PENDING};
pub use sink::{BatchHandler, Sink};

use end::Ended;
pub(crate) use owner_api::{authority_by_epoch, authority_of};
use scheduler::Scheduler;
use shared::{with_work, SchedulerLink, Shared, SCHEDULER_OF};

static NEXT_RUNTIME_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// How to build a runtime.
pub struct RuntimeConfig<P> {
    /// The clock (real `CLOCK_BOOTTIME`, or manual for tests).
    pub clock: ClockKind,
    /// Where batches go.
    pub sink: Sink<P>,
    /// Wakeup resolution of the real clock, rounded down to a power of two of
    /// nanoseconds (default 2^19 ns = 524.288 µs): the scheduler wakes on multiples of
    /// it, so every timer due within one step is delivered in one batch, at most one step
    /// late. Smaller means less lateness and smaller batches. Timers whose period is
    /// shorter are woken for to the nanosecond, so the resolution never makes them skip
    /// ticks. Zero is treated as 1 ns.
    pub resolution: Duration,
    /// Runs for every generation's payload when the generation ends (before the payload
    /// is dropped), on the thread that ends it, with the reason it ended; its failure
    /// becomes the terminal result.
    pub release: Option<PayloadRelease<P>>,
    /// Which payloads `release` has work for, asked once at registration (`None`: all).
    /// A generation whose payload it rejects ends without calling `release`, and an idle
    /// one then ends in a single compare-and-swap.
    pub release_needed: Option<fn(&P) -> bool>,
}

impl<P> Default for RuntimeConfig<P> {
    fn default() -> Self {
        Self {
            clock: ClockKind::Real,
            sink: Sink::Exchange,
            resolution: Duration::from_nanos(1 << 19),
            release: None,
            release_needed: None,
        }
    }
}

/// A spot-timer runtime: one scheduler thread, one wakeup primitive, one deadline queue
/// (sharded per host thread) for any number of timers.
///
/// `P` is the host's payload carried by every record of a timer (a handler, user data);
/// each record carries a clone, so make it cheap to clone (an index, a pointer, an `Arc`).
pub struct Runtime<P: Send + Sync + 'static = ()> {
    shared: Arc<Shared<P>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<P: Clone + Send + Sync + 'static> Runtime<P> {
    /// Starts a runtime and its scheduler thread.
    pub fn new(config: RuntimeConfig<P>) -> Result<Self> {
        let manual = match &config.clock {
            ClockKind::Manual(m) => Some(m.clone()),
            ClockKind::Real => None,
        };
        // The wheel's tick: a power of two, so filing an entry is a shift. A manual clock
        // is exact to the nanosecond.
        let shift = if manual.is_some() {
            0
        } else {
            63 - duration_to_nanos(config.resolution).max(1).leading_zeros()
        };
        let resolution = 1u64 << shift;
        // One shard per exclusive thread number: up to that many registering threads never
        // share a shard lock, whatever order they got their numbers in (the scheduler's
        // turn looks at every shard's earliest deadline, one load each).
        let shards = crate::thread_index::EXCLUSIVE;
        let now = match &manual {
            Some(m) => crate::clock::Clock::now(m),
            None => crate::clock::Clock::now(&crate::clock::BootClock),
        };
        let (callback_sink, callback) = match config.sink {
            Sink::Exchange => (false, None),
            Sink::Callback(cb) => (true, Some(cb)),
        };
        let shared = Arc::new_cyclic(|me| Shared {
            id: NEXT_RUNTIME_ID.fetch_add(1, Ordering::Relaxed),
            manual,
            resolution,
            slots: SlotTable::new(shards),
            owners: OwnerTable::default(),
            cold: ColdTable::default(),
            shards: shards::Shards::new(shards, shift, now),
            ready: ready::ReadyQueue::default(),
            counters: Counters::default(),
            lateness: Default::default(),
            closed: Default::default(),
            observed: crossbeam_utils::CachePadded::new(std::sync::atomic::AtomicU64::new(now)),
            callback_sink,
            scheduler: SchedulerLink::default(),
            gate_freed: Default::default(),
            release_payload: config.release,
            release_needed: config.release_needed,
            pretouch: Default::default(),
            me: me.clone(),
        });
        let scheduler = Scheduler::new(shared.clone(), callback);
        let thread = std::thread::Builder::new()
            .name("spot-timer".into())
            .spawn(move || scheduler.run())
            .map_err(|e| Error::Os(e.to_string()))?;
        let _ = shared.scheduler.thread.set(thread.thread().clone());
        Ok(Self {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A runtime on a fresh manual clock, delivering through `exchange`; returns the clock.
    pub fn manual() -> Result<(Self, ManualClock)> {
        let clock = ManualClock::new();
        let rt = Self::new(RuntimeConfig {
            clock: ClockKind::Manual(clock.clone()),
            ..RuntimeConfig::default()
        })?;
        Ok((rt, clock))
    }

    /// Current time on the runtime's clock, in nanoseconds.
    pub fn now(&self) -> Nanos {
        self.shared.now()
    }

    /// The wakeup resolution: the configured one rounded down to a power of two of
    /// nanoseconds (1 ns on a manual clock).
    pub fn resolution(&self) -> Duration {
        Duration::from_nanos(self.shared.resolution)
    }

    /// Starts a new authority for owner `id`: any older authority of the same id is
    /// revoked and its timers end with `EndReason::Revoked`.
    pub fn acquire_owner(&self, id: OwnerId, options: OwnerOptions) -> Result<Owner<P>> {
        let (index, epoch) = self.shared.acquire(id, options)?;
        debug_assert_eq!(crate::owner::epoch_index(epoch), index);
        Ok(Owner {
            rt: self.shared.clone(),
            id,
            epoch,
        })
    }

    /// The current authority of owner `id`, if it is still valid.
    pub fn owner(&self, id: OwnerId) -> Result<Owner<P>> {
        let (index, epoch) = authority_of(&self.shared, id)?;
        debug_assert_eq!(crate::owner::epoch_index(epoch), index);
        let owner = Owner {
            rt: self.shared.clone(),
            id,
            epoch,
        };
        owner.check()?;
        Ok(owner)
    }

    /// The current authority of owner `id` whatever its lease (the host's own use of the
    /// owner's gate needs no valid lease). `Error::UnknownOwner` for an id never acquired
    /// or released.
    pub fn known_owner(&self, id: OwnerId) -> Result<Owner<P>> {
        let (index, epoch) = authority_of(&self.shared, id)?;
        debug_assert_eq!(crate::owner::epoch_index(epoch), index);
        Ok(Owner {
            rt: self.shared.clone(),
            id,
            epoch,
        })
    }

    /// The authority (`id`, `epoch`) a host kept, if it is still the current one (the C
    /// ABI's owners).
    pub fn authority(&self, id: OwnerId, epoch: u64) -> Result<Owner<P>> {
        let index = authority_by_epoch(&self.shared, id, epoch)?;
        debug_assert_eq!(crate::owner::epoch_index(epoch), index);
        Ok(Owner {
            rt: self.shared.clone(),
            id,
            epoch,
        })
    }

    /// Registers (owner, key); see [`Owner::register`].
    pub fn register(
        &self,
        owner: &Owner<P>,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerHandle<P>> {
        owner.register(key, spec, payload, release)
    }

    /// A handle to generation `id`, while its slot holds it (live or ended). A handle whose
    /// slot has moved on gives `Error::StaleHandle`.
    pub fn timer(&self, id: TimerId) -> Result<TimerHandle<P>> {
        let slot = self.shared.slots.get(id.slot()).ok_or(Error::StaleHandle)?;
        let w = slot.word.load(Ordering::Acquire);
        let held = word::generation(w) == id.generation()
            || word::superseded_in_place(id.generation(), word::generation(w));
        if word::phase(w) == word::FREE || !held {
            return Err(Error::StaleHandle);
        }
        Ok(TimerHandle::new(self.shared.clone(), id))
    }

    /// Registers `key` under the authority (`owner_id`, `epoch`) a host kept (the C ABI's
    /// form of [`Owner::register`]; the epoch names the owner, so nothing is looked up).
    #[inline]
    pub fn register_for(
        &self,
        owner_id: OwnerId,
        epoch: u64,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerId> {
        self.register_by_epoch(owner_id, epoch, key, spec, payload, release, false)
    }

    /// [`Runtime::register_for`] and [`Runtime::register_held_for`] alike.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn register_by_epoch(
        &self,
        owner_id: OwnerId,
        epoch: u64,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
        hold: bool,
    ) -> Result<TimerId> {
        let index = authority_by_epoch(&self.shared, owner_id, epoch)?;
        self.shared
            .register(index, epoch, key, &spec, payload, release, hold)
    }

    /// [`Owner::register_held`] under the authority (`owner_id`, `epoch`) a host kept (the
    /// C ABI's form, as [`Runtime::register_for`] is of [`Owner::register_id`]).
    pub fn register_held_for(
        &self,
        owner_id: OwnerId,
        epoch: u64,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<HeldTimer> {
        let id = self.register_by_epoch(owner_id, epoch, key, spec, payload, release, true)?;
        Ok(HeldTimer::new(&self.shared, id))
    }

    /// [`Owner::rearm`] under the authority (`owner_id`, `epoch`) a host kept (the C
    /// ABI's form, as [`Runtime::register_for`] is of [`Owner::register_id`]).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn rearm_for(
        &self,
        owner_id: OwnerId,
        epoch: u64,
        previous: TimerId,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerId> {
        let index = authority_by_epoch(&self.shared, owner_id, epoch)?;
        self.shared
            .rearm(index, epoch, previous, key, &spec, payload, release)
    }

    /// Moves live generation `id` — a timeout that is reset, a reminder that is moved — to
    /// a new generation of the same owner authority and key, with its period and policy,
    /// its first tick due `delay` from now; `id` ends `Superseded` (T1). When `id` is idle
    /// and nobody waits for its end, the new generation takes its slot and keeps its
    /// payload: nothing is released, the `payload` given is dropped, and nothing but the
    /// timer's own line and one deadline entry is written ([`Reset::InPlace`]). Otherwise
    /// (its record is with a host, a cancel waits for it) `payload` is registered as the
    /// key's new generation ([`Reset::Registered`]), and `id` releases its own payload when
    /// it ends, as any superseded generation does. `Error::StaleHandle` once `id` ended;
    /// the owner's lease and authority are checked as a registration checks them.
    pub fn reset_timer(&self, id: TimerId, delay: Duration, payload: P) -> Result<Reset> {
        self.shared
            .reset(id, crate::clock::duration_to_nanos(delay), payload, false)
    }

    /// [`Runtime::reset_timer`] for a host that keeps its handles by id
    /// ([`Owner::register_held`]): the new generation comes with its hold, either way.
    pub fn reset_timer_held(
        &self,
        id: TimerId,
        delay: Duration,
        payload: P,
    ) -> Result<(Reset, HeldTimer)> {
        let reset = self
            .shared
            .reset(id, crate::clock::duration_to_nanos(delay), payload, true)?;
        Ok((reset, HeldTimer::new(&self.shared, reset.id())))
    }

    /// Gives back a hold ([`Owner::register_held`]): once the generation has ended and
    /// its last hold is gone, its slot may serve another generation and its result is no
    /// longer known. A hold of another runtime is refused (`Error::StaleHandle`), and
    /// nothing changes.
    pub fn release_hold(&self, held: HeldTimer) -> Result<()> {
        if held.runtime.get() != self.shared.id {
            return Err(Error::StaleHandle);
        }
        let gave_back = self.shared.unhold(held.id.slot());
        debug_assert!(gave_back, "a HeldTimer has its hold");
        Ok(())
    }

    /// [`Runtime::release_hold`] of a hold kept as a bare id ([`HeldTimer::into_id`]).
    /// `Error::StaleHandle` when `id`'s slot no longer holds `id` or has no hold; a host
    /// that gives back a hold it does not have takes another holder's (whose result may
    /// then go stale early), never more: a slot serves a new generation only after its
    /// last one ended.
    pub fn release_hold_of(&self, id: TimerId) -> Result<()> {
        self.shared.unhold_id(id)
    }

    /// [`Runtime::reset_timer`] in place only, the new generation carrying `payload`:
    /// [`Swap::Moved`] when `id` was idle and nobody waited for its end — `id` ends
    /// `Superseded` and its payload is handed back, neither released nor dropped — else
    /// [`Swap::Refused`], and nothing changed (the host registers the key again, which
    /// supersedes `id` the ordinary way). For hosts that name each generation's payload
    /// apart (the C ABI's `spot_timer_reset`: one user data per generation, whose release
    /// hook runs once). Errors as [`Runtime::reset_timer`].
    pub fn reset_timer_swapping(
        &self,
        id: TimerId,
        delay: Duration,
        payload: P,
    ) -> Result<Swap<P>> {
        self.shared
            .reset_swapping(id, crate::clock::duration_to_nanos(delay), payload)
    }

    /// [`TimerHandle::cancel`] by id.
    pub fn cancel_timer(&self, id: TimerId, timeout: Option<Duration>) -> EndResult {
        self.shared.cancel_blocking(id, timeout)
    }

    /// Cancels generation `id` without waiting and without a ticket: its terminal result
    /// when it ended here and now, `None` when it ends later (its record is with a host;
    /// the generation ends when that record completes). For hosts that keep many timers by
    /// id (see [`Owner::register_id`]).
    #[inline]
    pub fn cancel_timer_nowait(&self, id: TimerId) -> Result<Option<EndResult>> {
        match self.shared.cancel_now(id)? {
            Ended::Done(r) => Ok(Some(r)),
            Ended::Later => Ok(None),
        }
    }

    /// [`Runtime::cancel_timer_nowait`] for a host that keeps its payloads itself (an id into
    /// its own table): an idle generation whose end has no other work ends with one
    /// compare-and-swap and its payload release does not run ([`Cancelled::PayloadKept`]:
    /// the host releases the payload it knows); otherwise the end is the ordinary one.
    #[inline]
    pub fn cancel_timer_keeping_payload(&self, id: TimerId) -> Result<Cancelled> {
        self.shared.cancel_now_keeping_payload(id)
    }

    /// The terminal result of generation `id`, once there is one (`Some(Err(StaleHandle))`
    /// once its slot holds a later generation).
    pub fn timer_result(&self, id: TimerId) -> Option<EndResult> {
        self.shared.end_result(id)
    }

    /// [`TimerHandle::cancel_with_notice`] by id.
    #[inline]
    pub fn cancel_timer_with_notice(&self, id: TimerId, tag: u64) -> Result<Option<EndResult>> {
        self.shared.cancel_with_notice(id, tag)
    }

    /// [`TimerHandle::try_stats`] by id: `Error::StaleHandle` once its slot was reused.
    pub fn timer_stats(&self, id: TimerId) -> Result<crate::spec::TimerStats> {
        self.shared.timer_stats(id).ok_or(Error::StaleHandle)
    }

    /// Submits completions and receives up to `max` records, waiting up to `timeout` for
    /// the first (`None`: until one arrives or the runtime closes; zero: don't wait).
    ///
    /// Each completion is applied on its own, on the calling thread: the next tick of a
    /// timer that is already due comes back in this very call. A completion whose token
    /// matches no outstanding record is skipped and counted; after applying the others
    /// the call returns `Error::InvalidCompletion` naming the first such token, and
    /// receives nothing (call again to receive).
    pub fn exchange(
        &self,
        completions: &[Completion],
        out: &mut Vec<Record<P>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize> {
        self.shared.exchange(completions, out, max, timeout)
    }

    /// A delivery session over this runtime for the calling thread: receives up to
    /// `capacity` records per exchange, hands out one record at a time with its start
    /// already checked, collects the completions, and lets a blocking cancel made on this
    /// thread (from a handler, or between handlers) complete this thread's records instead
    /// of waiting for them. Exchange delivery only.
    pub fn session(&self, capacity: usize) -> Result<DeliverySession<P>> {
        DeliverySession::new(self.shared.clone(), capacity)
    }

    /// Submits completions without receiving (batch-callback hosts completing later, or
    /// worker threads). Each completion stands alone; `Error::InvalidCompletion` names the
    /// first one that matched no record, after the others were applied.
    pub fn complete(&self, completions: &[Completion]) -> Result<()> {
        self.shared.complete(completions)
    }

    /// Right before starting a record's handler: re-checks that its generation is current,
    /// not cancelled and its owner's lease running (T1, T2, T6), claims the start, and
    /// marks this thread as running it. False: don't start it; complete it as
    /// `Outcome::NotStarted`.
    pub fn begin(&self, record: &TickRecord<P>) -> bool {
        record.runtime == self.shared.id && self.shared.start(record.timer, record.queued).is_ok()
    }

    /// Whether a record could still start (its generation current and not cancelled, its
    /// owner's lease running), without claiming the start: for a host deciding what to do
    /// with records it holds. [`Runtime::begin`] is the check that starts one.
    pub fn startable(&self, record: &TickRecord<P>) -> bool {
        record.runtime == self.shared.id && self.shared.startable(record.timer, record.queued)
    }

    /// The start check of a record the host holds in its own form (the C ABI's): its
    /// generation and the word it was handed over with. `Error::StaleHandle` (cancelled,
    /// replaced, ended, already started) or `Error::LeaseExpired`: don't start it.
    pub fn start(&self, timer: TimerId, handed: u64) -> Result<()> {
        self.shared.start(timer, handed)
    }

    /// A file descriptor that is readable while records wait for `exchange`, and for good
    /// once the runtime closed (`exchange` then answers `Error::Closed`): for event loops
    /// and for hosts that wait in `poll`. Owned by the runtime: do not close it.
    pub fn wakeup_fd(&self) -> Result<RawFd> {
        self.check_open()?;
        self.shared.ready.fd()
    }

    /// Advances the manual clock and returns once the scheduler fired all that became due.
    pub fn advance(&self, by: Duration) -> Result<()> {
        let clock = self.shared.manual.as_ref().ok_or(Error::NotManualClock)?;
        self.check_open()?;
        clock.advance(by);
        self.sync()
    }

    /// Waits until the scheduler has completed a turn that started after this call (so
    /// everything due by now has been delivered).
    pub fn sync(&self) -> Result<()> {
        let shared = &*self.shared;
        if SCHEDULER_OF.with(|s| s.get()) == shared.id {
            return Err(Error::WouldDeadlock);
        }
        self.check_open()?;
        let link = &shared.scheduler;
        let target = link.turns_requested.fetch_add(1, Ordering::SeqCst) + 1;
        link.wake();
        let mut done = link.turns_done.lock().unwrap_or_else(|e| e.into_inner());
        while *done < target {
            if !link.running.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            done = link
                .turn_finished
                .wait_timeout(done, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Ok(())
    }

    /// A snapshot of the counters and gauges.
    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        let mut out = Stats {
            scheduler_threads: u64::from(s.scheduler.running.load(Ordering::Acquire)),
            wakeup_primitives: 1 + u64::from(s.ready.has_fd()),
            os_timers: 0,
            queue_len: s.shards.total_len() as u64,
            owners: s.owners.known() as u64,
            ..Stats::default()
        };
        s.counters.snapshot_into(&mut out);
        out.live_timers = out.registered.saturating_sub(out.ended);
        out
    }

    /// How late records were handed to the host: hand-over time minus the nominal due time
    /// of the tick each stands for (T3's tick, after the overrun policy), in fixed
    /// log-linear buckets.
    pub fn lateness(&self) -> crate::lateness::Lateness {
        self.shared.lateness.snapshot()
    }

    /// The runtime's stats and lateness histogram in the Prometheus text format (0.0.4),
    /// every name prefixed with `prefix` (e.g. `"spot_timer"`): serve it on `/metrics`.
    pub fn prometheus(&self, prefix: &str) -> String {
        crate::exposition::prometheus(&self.stats(), &self.lateness(), prefix)
    }

    /// Records waiting in the ready queue.
    pub fn pending_records(&self) -> usize {
        self.shared.ready.len()
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Closes the runtime: every live generation ends with `EndReason::RuntimeClosed`
    /// (release hooks run on this thread; a callback still running is not waited for),
    /// waiters wake, and the scheduler thread exits. Idempotent.
    pub fn close(&self) {
        close(&self.shared, &self.thread);
    }

    fn check_open(&self) -> Result<()> {
        if self.shared.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }
}

impl<P: Send + Sync + 'static> Drop for Runtime<P> {
    fn drop(&mut self) {
        close(&self.shared, &self.thread);
    }
}

fn close<P: Send + Sync + 'static>(shared: &Shared<P>, thread: &Mutex<Option<JoinHandle<()>>>) {
    if shared.closed.swap(true, Ordering::SeqCst) {
        return;
    }
    // Pass through the locks that registrations publish under: every registration after
    // this sees `closed` (and ends its own generation); every one before it is in the
    // slots looked at below. Acquisitions check `closed` under the id map's lock.
    drop(shared.owners.ids.write());
    shared.owners.for_each(|entry| drop(entry.book.lock()));
    shared.scheduler.wake();
    shared.pretouch.stop();
    if let Some(h) = thread.lock().take() {
        if SCHEDULER_OF.with(|s| s.get()) != shared.id {
            let _ = h.join();
        }
    }
    with_work(shared.now(), |work| {
        shared.slots.for_each(|index, slot| {
            let w = slot.word.load(Ordering::Acquire);
            if !matches!(word::phase(w), word::FREE | word::ENDED) {
                if let EndClaim::Claimed { ending, from } = word::claim_end(
                    &slot.word,
                    word::generation(w),
                    EndReason::RuntimeClosed as u8,
                    true,
                ) {
                    shared.finish(index, ending, from, false, work);
                }
            }
        });
        work.pending.clear();
        work.notices.clear();
        work.arms.clear();
        work.retry.clear();
        shared.counters.add_tally(&mut work.tally);
    });
    shared.ready.close();
    shared.notify_gate_freed();
    let _g = shared
        .scheduler
        .turns_done
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    shared.scheduler.turn_finished.notify_all();
}

impl<P> Drop for Shared<P> {
    fn drop(&mut self) {
        // Payloads `close` left to records a host still held.
        let slots = &self.slots;
        slots.for_each(|index, slot| {
            if word::payload_live(slot.word.load(Ordering::Acquire)) {
                // SAFETY: the last reference to the runtime is going; nothing reads it.
                unsafe { slots.drop_payload(index) };
            }
        });
    }
}
