//! The runtime: the host-facing API. Host threads validate, touch only their owner's key
//! map and atomics, and hand every queue operation to the scheduler thread through one
//! MPSC channel, so registrations from many threads never serialise on a queue lock (T7).

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};

use crate::cancel::{EndCell, EndReason};
use crate::clock::{Clock, ClockKind, ManualClock};
use crate::delivery::{ReadyQueue, Sink};
use crate::error::{Error, Result};
use crate::owner::{lease_deadline, GateMode, OwnerId, OwnerShared};
use crate::scheduler::{Command, Scheduler, AWAKE};
use crate::stats::{Counters, Stats};
use crate::table::{
    begin_cancel, claim, hand_over, live_value, next_generation, publish_generation, word_is_live,
    SlotTable, RECEIVED,
};
use crate::tick::{split_token, Completion, Record, TickRecord};
use crate::timer::{NormalSpec, ReleaseHook, TimerCell, TimerHandle, TimerId, TimerKey, TimerSpec};

static NEXT_RUNTIME_ID: AtomicU64 = AtomicU64::new(1);

/// Commands that may pile up before a sleeping scheduler is woken regardless.
const WAKE_BATCH: u32 = 1024;

/// Whether a command must wake a sleeping scheduler.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wake {
    Now,
    /// Only if the scheduler sleeps past this time (a new deadline).
    IfDueBefore(u64),
    /// It can wait for the scheduler's next wakeup (or the batch limit).
    Lazy,
}

thread_local! {
    /// The callback this thread is running: (runtime id, slot, generation). Set by
    /// `Runtime::begin`, cleared when the thread completes it. Lets a blocking cancel from
    /// inside its own callback fail fast instead of waiting for itself.
    static CURRENT_CALLBACK: Cell<(u64, u32, u64)> = const { Cell::new((0, 0, 0)) };
    /// The runtime whose scheduler thread this is (0 on host threads).
    static SCHEDULER_OF: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn mark_scheduler_thread(runtime_id: u64) {
    SCHEDULER_OF.with(|s| s.set(runtime_id));
}

/// How to build a runtime.
pub struct RuntimeConfig<P> {
    pub clock: ClockKind,
    pub sink: Sink<P>,
    /// Wakeup granularity of the real clock (default 1 ms): the scheduler wakes on
    /// multiples of it, so every timer due within one step is delivered in one batch.
    /// Smaller means less lateness and smaller batches; zero is treated as 1 ns.
    pub resolution: Duration,
}

impl<P> Default for RuntimeConfig<P> {
    fn default() -> Self {
        Self {
            clock: ClockKind::Real,
            sink: Sink::Exchange,
            resolution: Duration::from_millis(1),
        }
    }
}

/// Options of an owner authority.
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnerOptions {
    /// `None`: no lease (never expires).
    pub lease: Option<Duration>,
    pub gate: GateMode,
}

impl OwnerOptions {
    pub fn lease(lease: Duration) -> Self {
        Self {
            lease: Some(lease),
            gate: GateMode::Serial,
        }
    }
}

/// State shared by the host-facing API and the scheduler thread.
pub(crate) struct Shared<P> {
    pub id: u64,
    pub clock: Arc<dyn Clock>,
    pub manual: Option<ManualClock>,
    pub tx: Sender<Command<P>>,
    pub slots: SlotTable<P>,
    pub owners: RwLock<HashMap<OwnerId, Arc<OwnerShared>>>,
    pub next_owner_index: AtomicU32,
    /// Indexes of forgotten owners, for reuse: owner churn does not grow the scheduler's
    /// owner table.
    pub free_owner_indexes: Mutex<Vec<u32>>,
    /// Every authority epoch handed out from now on is above this: raised past a forgotten
    /// owner's epochs, so an (id, epoch) kept by a host from before the owner was
    /// forgotten never matches the id's next incarnation.
    pub epoch_floor: AtomicU64,
    pub ready: ReadyQueue<P>,
    pub counters: Counters,
    pub queue_len: CachePadded<AtomicU64>,
    pub live_timers: CachePadded<AtomicU64>,
    pub closed: CachePadded<AtomicBool>,
    pub scheduler_running: AtomicBool,
    pub callback_sink: bool,
    /// The scheduler thread, for unparking it.
    pub scheduler: once_cell::sync::OnceCell<std::thread::Thread>,
    /// The time the sleeping scheduler wakes by itself (`u64::MAX`: never); `AWAKE`
    /// while it runs.
    pub sleep_until: CachePadded<AtomicU64>,
    /// Commands sent since the scheduler last drained its channel. (This and the other
    /// atomics written on every operation sit on their own cache lines: host threads and
    /// the scheduler write them from different cores.)
    pub pending_commands: CachePadded<AtomicU32>,
    /// Emptied completion lists, returned by the scheduler for the next exchange to
    /// reuse: a host completing 64k records per call would otherwise allocate and free a
    /// 1 MiB list each time (see `completion_list`).
    pub spare_lists: Mutex<Vec<Vec<Completion>>>,
}

/// Spare completion lists kept for reuse.
const SPARE_LISTS: usize = 4;

impl<P: Send + Sync + 'static> Shared<P> {
    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Queues a command for the scheduler and wakes it only when `wake` says the command
    /// cannot wait for the scheduler's own next wakeup. Most registrations and
    /// fire-and-forget cancels then cost no syscall: the scheduler drains them when it
    /// wakes for its next deadline, or after `WAKE_BATCH` commands piled up.
    /// An empty completion list with room for `n`, reused when one is spare. Reuse keeps
    /// memory flat under churn: freeing a large list raises glibc's mmap threshold, and
    /// the next one would stay resident in the heap arena.
    pub fn completion_list(&self, n: usize) -> Vec<Completion> {
        let mut list = self.spare_lists.lock().pop().unwrap_or_default();
        list.reserve(n);
        list
    }

    /// Returns a list the scheduler has applied.
    pub fn recycle_completion_list(&self, mut list: Vec<Completion>) {
        list.clear();
        let mut spare = self.spare_lists.lock();
        if spare.len() < SPARE_LISTS {
            spare.push(list);
        }
    }

    pub fn send(&self, cmd: Command<P>, wake: Wake) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.tx.send(cmd).map_err(|_| Error::Closed)?;
        // Pairs with the fence in the scheduler between publishing `sleep_until` and
        // looking at the channel: one of the two sides sees the other.
        fence(Ordering::SeqCst);
        let queued = self.pending_commands.fetch_add(1, Ordering::Relaxed) + 1;
        let sleeping_until = self.sleep_until.load(Ordering::SeqCst);
        if sleeping_until == AWAKE {
            return Ok(());
        }
        let needed = match wake {
            Wake::Now => true,
            // On a manual clock time moves only through `advance`, which wakes it.
            Wake::IfDueBefore(due) => self.manual.is_none() && due < sleeping_until,
            Wake::Lazy => false,
        };
        if needed || queued >= WAKE_BATCH {
            self.wake();
        }
        Ok(())
    }

    /// Wakes the scheduler thread (cheap when it is awake: no syscall).
    pub fn wake(&self) {
        if let Some(t) = self.scheduler.get() {
            t.unpark();
        }
    }

    /// Waits until the scheduler has processed every command sent before this call and
    /// fired everything due.
    pub fn sync(&self) -> Result<()> {
        if SCHEDULER_OF.with(|s| s.get()) == self.id {
            return Err(Error::WouldDeadlock);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Command::Sync(tx), Wake::Now)?;
        rx.recv().map_err(|_| Error::Closed)
    }

    /// Moves the generation to "cancelling" (no new start from here on) and asks the
    /// scheduler to end it. Idempotent; a generation that already ended is left alone.
    pub fn start_cancel(&self, cell: &TimerCell<P>, wake: Wake) -> Result<()> {
        if begin_cancel(cell.live_word(), cell.id.generation) {
            match self.send(
                Command::Cancel {
                    slot: cell.id.slot,
                    generation: cell.id.generation,
                },
                wake,
            ) {
                Ok(()) => {}
                // Closing ends every generation; its result is (or will be) recorded.
                Err(Error::Closed) if cell.end.get().is_some() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn waiting_would_deadlock(&self, cell: &TimerCell<P>) -> bool {
        SCHEDULER_OF.with(|s| s.get()) == self.id
            || CURRENT_CALLBACK.with(|c| c.get()) == (self.id, cell.id.slot, cell.id.generation)
    }

    /// May a callback of this generation start now? (T1 generation, T2 cancel, T6
    /// authority.) The liveness word is read from the runtime's table by slot, not
    /// through the cell: the cell's pointer to the table sits on a line of its own.
    pub fn startable_at(&self, rec: &TickRecord<P>, now: u64) -> bool {
        let cell = &rec.timer;
        self.is_live(cell) && cell.owner.check(cell.epoch, now).is_ok()
    }

    fn is_live(&self, cell: &TimerCell<P>) -> bool {
        self.slots
            .get_word(cell.id.slot)
            .is_some_and(|w| word_is_live(w, cell.id.generation))
    }

    /// The start check, then marks this thread as running `cell`'s callback until it
    /// submits the completion.
    pub fn begin(&self, cell: &TimerCell<P>) -> Result<()> {
        if !self.is_live(cell) {
            return Err(Error::StaleHandle);
        }
        cell.owner.check_with(cell.epoch, || self.now())?;
        CURRENT_CALLBACK.with(|c| c.set((self.id, cell.id.slot, cell.id.generation)));
        Ok(())
    }
}

/// A spot-timer runtime: one scheduler thread, one wakeup primitive, one deadline queue.
///
/// `P` is the host's payload carried by every record of a timer (a handler, user data);
/// it is dropped when the last record and handle of its generation are gone.
pub struct Runtime<P: Send + Sync + 'static = ()> {
    shared: Arc<Shared<P>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<P: Send + Sync + 'static> Runtime<P> {
    /// Starts a runtime and its scheduler thread.
    pub fn new(config: RuntimeConfig<P>) -> Result<Self> {
        let (clock, manual) = config.clock.build();
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            id: NEXT_RUNTIME_ID.fetch_add(1, Ordering::Relaxed),
            clock,
            manual,
            tx,
            slots: SlotTable::new(),
            owners: RwLock::new(HashMap::new()),
            next_owner_index: AtomicU32::new(0),
            free_owner_indexes: Mutex::new(Vec::new()),
            epoch_floor: AtomicU64::new(0),
            ready: ReadyQueue::new(),
            counters: Counters::default(),
            queue_len: CachePadded::new(AtomicU64::new(0)),
            live_timers: CachePadded::new(AtomicU64::new(0)),
            closed: CachePadded::new(AtomicBool::new(false)),
            scheduler_running: AtomicBool::new(true),
            callback_sink: matches!(config.sink, Sink::Callback(_)),
            scheduler: once_cell::sync::OnceCell::new(),
            sleep_until: CachePadded::new(AtomicU64::new(AWAKE)),
            pending_commands: CachePadded::new(AtomicU32::new(0)),
            spare_lists: Mutex::new(Vec::new()),
        });
        let resolution = crate::clock::duration_to_nanos(config.resolution).max(1);
        let scheduler = Scheduler::new(shared.clone(), rx, config.sink, resolution);
        let thread = std::thread::Builder::new()
            .name("spot-timer".into())
            .spawn(move || scheduler.run())
            .map_err(|e| Error::Os(e.to_string()))?;
        let _ = shared.scheduler.set(thread.thread().clone());
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
    pub fn now(&self) -> u64 {
        self.shared.now()
    }

    /// Starts a new authority for owner `id` (epoch + 1): any older authority of the same
    /// id is revoked and its timers end with `EndReason::Revoked`.
    pub fn acquire_owner(&self, id: OwnerId, options: OwnerOptions) -> Result<Owner<P>> {
        self.check_open()?;
        if options.lease.is_some_and(|l| l.is_zero()) {
            return Err(Error::InvalidArgument(
                "lease must be greater than zero".into(),
            ));
        }
        let now = self.now();
        // Under the map's write lock: a concurrent `Owner::release` of the same id either
        // completes before this takes the owner over, or fails on the epoch moved here.
        let (owner, epoch) = {
            let mut owners = self.shared.owners.write();
            let owner = owners
                .entry(id)
                .or_insert_with(|| {
                    let index = self
                        .shared
                        .free_owner_indexes
                        .lock()
                        .pop()
                        .unwrap_or_else(|| {
                            self.shared.next_owner_index.fetch_add(1, Ordering::Relaxed)
                        });
                    let floor = self.shared.epoch_floor.load(Ordering::Acquire);
                    Arc::new(OwnerShared::new(id, index, floor))
                })
                .clone();
            // A released owner not yet forgotten is taken over like any other.
            owner.released.store(false, Ordering::Release);
            owner.gate_mode.store(options.gate as u8, Ordering::Relaxed);
            let epoch = owner.epoch.fetch_add(1, Ordering::AcqRel) + 1;
            owner
                .lease_deadline
                .store(lease_deadline(now, options.lease), Ordering::Release);
            (owner, epoch)
        };
        self.shared
            .send(Command::OwnerChanged(owner.clone()), Wake::Now)?;
        Ok(Owner {
            rt: self.shared.clone(),
            shared: owner,
            epoch,
        })
    }

    /// The current authority of owner `id`, if it is still valid.
    pub fn owner(&self, id: OwnerId) -> Result<Owner<P>> {
        let owner = self
            .shared
            .owners
            .read()
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownOwner(id))?;
        let epoch = owner.epoch.load(Ordering::Acquire);
        owner.check(epoch, self.now())?;
        Ok(Owner {
            rt: self.shared.clone(),
            shared: owner,
            epoch,
        })
    }

    /// Registers (owner, key). An existing registration of the key is superseded: its
    /// generation ends (`EndReason::Superseded`) and none of its pending ticks run (T1).
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

    /// Looks a generation up by id (the C ABI's integer handles). A handle whose slot has
    /// moved on gives `Error::StaleHandle`.
    pub fn timer(&self, id: TimerId) -> Result<TimerHandle<P>> {
        let slot = self.shared.slots.get(id.slot).ok_or(Error::StaleHandle)?;
        let cell = slot.cell.lock().clone().ok_or(Error::StaleHandle)?;
        if cell.id.generation != id.generation {
            return Err(Error::StaleHandle);
        }
        Ok(TimerHandle {
            rt: self.shared.clone(),
            cell,
        })
    }

    /// Submits completions and receives up to `max` records, waiting up to `timeout` for
    /// the first (`None`: until one arrives or the runtime closes; zero: don't wait).
    ///
    /// All completions are checked first; one bad token rejects the whole call with
    /// `Error::InvalidCompletion` and nothing is applied. Records that went stale while
    /// they waited are completed as `NotStarted` here instead of being returned. On a
    /// manual clock the call also waits for the scheduler to apply the completions, so
    /// that what they made due is in the returned batch.
    pub fn exchange(
        &self,
        completions: &[Completion],
        out: &mut Vec<Record<P>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize> {
        if max == 0 {
            return Err(Error::InvalidArgument(
                "record buffer capacity must be at least 1".into(),
            ));
        }
        if self.shared.callback_sink {
            return Err(Error::InvalidArgument(
                "this runtime delivers through a batch callback, not exchange".into(),
            ));
        }
        self.check_open()?;
        self.submit(completions)?;
        if self.shared.manual.is_some() && !completions.is_empty() {
            self.shared.sync()?;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let shared = &*self.shared;
        let mut stale = Vec::new();
        let mut q = shared
            .ready
            .wait_nonempty(deadline, || shared.closed.load(Ordering::Acquire));
        let mut n = 0;
        let now = shared.now();
        while n < max {
            let Some(mut rec) = q.pop_front() else { break };
            if let Record::Tick(t) = &mut rec {
                let (slot, seq) = split_token(t.token);
                let Some(s) = shared.slots.get(slot) else {
                    continue;
                };
                if !shared.startable_at(t, now) {
                    // Stale before it reached the host: complete it here.
                    if claim(&s.inflight, seq) {
                        stale.push(t.complete(crate::tick::Outcome::NotStarted));
                    }
                    continue;
                }
                // Hand it over unless the scheduler already took it back (its generation
                // ended while it waited here).
                if !hand_over(&s.inflight, seq) {
                    continue;
                }
                t.tick = t.timer.relabel(t.tick, now);
            }
            out.push(rec);
            n += 1;
        }
        shared.ready.after_drain(&q);
        drop(q);
        if !stale.is_empty() {
            self.shared.send(Command::Complete(stale), Wake::Now)?;
            if self.shared.manual.is_some() {
                // Deterministic like host completions: their effects are visible on return.
                self.shared.sync()?;
            }
        }
        if n > 0 {
            Counters::add(&shared.counters.host_crossings, 1);
            Counters::add(&shared.counters.records_received, n as u64);
        } else if shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(n)
    }

    /// Submits completions without receiving (batch-callback hosts completing later).
    pub fn complete(&self, completions: &[Completion]) -> Result<()> {
        self.check_open()?;
        self.submit(completions)
    }

    fn submit(&self, completions: &[Completion]) -> Result<()> {
        if completions.is_empty() {
            return Ok(());
        }
        for c in completions {
            let (slot, seq) = split_token(c.token);
            let ok = seq != 0
                && self
                    .shared
                    .slots
                    .get(slot)
                    .is_some_and(|s| s.inflight.load(Ordering::Acquire) == seq | RECEIVED);
            if !ok {
                Counters::add(&self.shared.counters.invalid_completions, 1);
                return Err(Error::InvalidCompletion(c.token));
            }
        }
        let current = CURRENT_CALLBACK.with(|c| c.get());
        let mut claimed = self.shared.completion_list(completions.len());
        for c in completions {
            let (slot, seq) = split_token(c.token);
            let s = self.shared.slots.get(slot).expect("checked above");
            if claim(&s.inflight, seq | RECEIVED) {
                claimed.push(*c);
                if current.0 == self.shared.id && current.1 == slot {
                    CURRENT_CALLBACK.with(|cc| cc.set((0, 0, 0)));
                }
            }
        }
        self.shared.send(Command::Complete(claimed), Wake::Now)
    }

    /// Right before starting a record's handler: re-checks that its generation is current,
    /// not cancelled and its owner authority valid (T1, T2, T6), and marks this thread as
    /// running it. False: don't start it; complete it as `Outcome::NotStarted`.
    pub fn begin(&self, record: &TickRecord<P>) -> bool {
        self.shared.begin(&record.timer).is_ok()
    }

    /// A file descriptor that is readable while records wait for `exchange` (for event
    /// loops). Owned by the runtime: do not close it.
    pub fn wakeup_fd(&self) -> Result<RawFd> {
        self.check_open()?;
        self.shared.ready.fd()
    }

    /// Advances the manual clock and returns once the scheduler fired all that became due.
    pub fn advance(&self, by: Duration) -> Result<()> {
        let clock = self.shared.manual.as_ref().ok_or(Error::NotManualClock)?;
        self.check_open()?;
        clock.advance(by);
        self.shared.sync()
    }

    /// Waits until the scheduler processed every command sent before this call.
    pub fn sync(&self) -> Result<()> {
        self.shared.sync()
    }

    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        let mut out = Stats {
            scheduler_threads: u64::from(s.scheduler_running.load(Ordering::Acquire)),
            wakeup_primitives: 1 + u64::from(s.ready.has_fd()),
            os_timers: 0,
            queue_len: s.queue_len.load(Ordering::Relaxed),
            live_timers: s.live_timers.load(Ordering::Relaxed),
            owners: s.owners.read().len() as u64,
            ..Stats::default()
        };
        s.counters.snapshot_into(&mut out);
        out
    }

    /// Records waiting in the ready queue.
    pub fn pending_records(&self) -> usize {
        self.shared.ready.len()
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Closes the runtime: every live generation ends with `EndReason::RuntimeClosed`
    /// (release hooks run), waiters wake, and the scheduler thread exits. Idempotent.
    pub fn close(&self) {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.shared.tx.send(Command::Shutdown);
        self.shared.wake();
        self.shared.ready.wake_all();
        for owner in self.shared.owners.read().values() {
            owner.gate.close();
        }
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if SCHEDULER_OF.with(|s| s.get()) != self.shared.id {
                let _ = h.join();
            }
        }
        // Records nobody will complete: drop them (and their payloads) now.
        drop(self.shared.ready.take_all());
    }

    fn check_open(&self) -> Result<()> {
        if self.shared.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }
}

impl<P: Send + Sync + 'static> Drop for Runtime<P> {
    fn drop(&mut self) {
        self.close();
    }
}

/// One authority of an owner: the handle through which timers are registered.
pub struct Owner<P: Send + Sync + 'static> {
    rt: Arc<Shared<P>>,
    shared: Arc<OwnerShared>,
    epoch: u64,
}

impl<P: Send + Sync + 'static> Clone for Owner<P> {
    fn clone(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            shared: self.shared.clone(),
            epoch: self.epoch,
        }
    }
}

impl<P: Send + Sync + 'static> Owner<P> {
    pub fn id(&self) -> OwnerId {
        self.shared.id
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// `Ok` while this authority is current and its lease running.
    pub fn check(&self) -> Result<()> {
        self.shared.check(self.epoch, self.rt.now())
    }

    /// Extends the lease to `now + lease` (`None`: no deadline). Fails once it expired.
    pub fn renew(&self, lease: Option<Duration>) -> Result<()> {
        if lease.is_some_and(|l| l.is_zero()) {
            return Err(Error::InvalidArgument(
                "lease must be greater than zero".into(),
            ));
        }
        let now = self.rt.now();
        self.shared.renew(self.epoch, now, lease)?;
        self.rt.send(
            Command::OwnerChanged(self.shared.clone()),
            Wake::IfDueBefore(lease_deadline(now, lease)),
        )
    }

    /// Ends this authority like [`Owner::revoke`] and lets the runtime forget the owner:
    /// once its timers have ended (each with `EndReason::Revoked`, after a running callback
    /// completes), its entry, key map and scheduler state are freed and `stats().owners`
    /// drops. For hosts whose owners come and go (actors, sessions): without it every owner
    /// id ever acquired stays known to the runtime. Acquiring the id again later starts a
    /// new owner whose epochs are above every epoch of the released one.
    pub fn release(&self) -> Result<()> {
        {
            // Under the map's write lock, like `acquire_owner`, so a concurrent acquisition
            // of the same id either precedes this (and this fails: its epoch moved on) or
            // follows it (and takes the owner over again, clearing `released`).
            let _owners = self.rt.owners.write();
            if !self.shared.revoke(self.epoch) {
                return Err(Error::Revoked);
            }
            self.shared.released.store(true, Ordering::Release);
        }
        self.rt
            .send(Command::OwnerChanged(self.shared.clone()), Wake::Now)
    }

    /// Ends this authority: its timers end with `EndReason::Revoked` and never run again.
    pub fn revoke(&self) -> Result<()> {
        if !self.shared.revoke(self.epoch) {
            return Err(Error::Revoked);
        }
        self.rt
            .send(Command::OwnerChanged(self.shared.clone()), Wake::Now)
    }

    /// See [`Runtime::register`].
    pub fn register(
        &self,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerHandle<P>> {
        let spec: NormalSpec = spec.validate()?;
        let rt = &self.rt;
        let now = rt.now();
        self.shared.check(self.epoch, now)?;
        let mut keys = self.shared.keys.lock();
        let (slot_index, fresh) = match keys.get(&key) {
            Some(&s) => (s, false),
            None => (rt.slots.allocate()?, true),
        };
        let slot = rt.slots.get(slot_index).expect("allocated slot exists");
        let generation = next_generation();
        let cell = Arc::new(TimerCell {
            id: TimerId {
                slot: slot_index,
                generation,
            },
            owner: self.shared.clone(),
            epoch: self.epoch,
            key,
            payload,
            spec,
            t0: now.saturating_add(spec.delay),
            handed_index: AtomicU64::new(0),
            end: EndCell::default(),
            release: Mutex::new(release),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            last_scheduled: AtomicU64::new(0),
            words: rt.slots.words().clone(),
        });
        *slot.cell.lock() = Some(cell.clone());
        publish_generation(rt.slots.word(slot_index), generation);
        if fresh {
            keys.insert(key, slot_index);
        }
        let sent = rt.send(
            Command::Register {
                slot: slot_index,
                cell: cell.clone(),
            },
            Wake::IfDueBefore(now.saturating_add(spec.delay)),
        );
        drop(keys);
        if let Err(e) = sent {
            rt.slots
                .word(slot_index)
                .store(live_value(generation) | 1, Ordering::Release);
            return Err(e);
        }
        Counters::add(&rt.counters.registered, 1);
        Ok(TimerHandle {
            rt: rt.clone(),
            cell,
        })
    }

    /// Takes the owner's execution gate for the host's own work, waiting up to `timeout`
    /// (`None`: forever). While held, none of the owner's timer callbacks start; due
    /// ticks wait and are delivered after [`Owner::leave_gate`] (T9). False on timeout or
    /// when the runtime closes meanwhile.
    pub fn enter_gate(&self, timeout: Option<Duration>) -> bool {
        self.shared.host_enter(timeout)
    }

    /// Takes the gate if it is free right now.
    pub fn try_enter_gate(&self) -> bool {
        self.shared.host_try_enter()
    }

    /// Releases the gate taken by `enter_gate` and lets waiting ticks run.
    pub fn leave_gate(&self) -> Result<()> {
        if !self.shared.host_leave() {
            return Err(Error::InvalidArgument(
                "the owner's gate is not held by the host".into(),
            ));
        }
        self.rt
            .send(Command::GateReleased(self.shared.clone()), Wake::Now)
    }

    /// Tells the runtime the host's own gate for this owner is free again, so ticks the
    /// host completed as `Outcome::Deferred` are retried now.
    pub fn retry_deferred(&self) -> Result<()> {
        self.rt
            .send(Command::GateReleased(self.shared.clone()), Wake::Now)
    }
}

impl<P: Send + Sync + 'static> std::fmt::Debug for Owner<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("id", &self.shared.id)
            .field("epoch", &self.epoch)
            .finish()
    }
}

pub(crate) fn end_reason_for(err: &Error) -> EndReason {
    match err {
        Error::LeaseExpired => EndReason::LeaseExpired,
        _ => EndReason::Revoked,
    }
}
