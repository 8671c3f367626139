//! The scheduler thread's loop: the only place that touches the deadline queue and the
//! per-timer schedule state, so neither needs a lock.
//!
//! One wakeup: drain commands (registrations, cancels, completions, owner changes), pop
//! every due entry, drop what is stale, apply the gate (T9), the overrun policy (T5) and
//! the tick info (T4), and hand the whole batch over in one step (T10).

use std::collections::VecDeque;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::cancel::{EndReason, EndResult};
use crate::clock::Nanos;
use crate::delivery::Sink;
use crate::error::Error;
use crate::owner::OwnerShared;
use crate::policy::{due_of, newest_due, next_scheduled, OverrunPolicy};
use crate::queue::{DeadlineHeap, Entry, OWNER_BIT};
use crate::runtime::{end_reason_for, mark_scheduler_thread, Shared};
use crate::stats::Counters;
use crate::table::{begin_cancel, claim, live_value, word_is_live, RECEIVED};
use crate::tick::{
    make_token, split_token, CancelNotice, Completion, Outcome, Record, Tick, TickRecord,
};
use crate::timer::TimerCell;

/// Most commands handled before the queue is looked at again, so a flood of commands
/// cannot starve due timers.
const COMMANDS_PER_TURN: usize = 65_536;
/// `Shared::sleep_until` while the scheduler is awake.
pub(crate) const AWAKE: Nanos = 0;
/// `Shared::sleep_until` when only a host can wake the scheduler.
const NEVER: Nanos = u64::MAX;
/// The queue is rebuilt when stale entries exceed half of it and this many.
const COMPACT_MIN_STALE: usize = 1024;

pub(crate) enum Command<P> {
    Register { slot: u32, cell: Arc<TimerCell<P>> },
    Cancel { slot: u32, generation: u64 },
    Complete(Vec<Completion>),
    GateReleased(Arc<OwnerShared>),
    OwnerChanged(Arc<OwnerShared>),
    Sync(Sender<()>),
    Shutdown,
}

struct InFlight {
    seq: u32,
    generation: u64,
    tick: Tick,
    holds_gate: bool,
}

/// Schedule state of one slot, owned by the scheduler thread.
struct TimerState<P> {
    /// The live generation, if any.
    cell: Option<Arc<TimerCell<P>>>,
    /// DelayNextTick and one-shots: due time of the next tick.
    next_due: Nanos,
    arm_seq: u32,
    armed: bool,
    waiting_gate: bool,
    /// Last delivery sequence number (tokens), kept across generations.
    seq: u32,
    in_flight: Option<InFlight>,
    /// A generation that ends as soon as its running callback completes.
    /// (with the nominal ticks that had come due when it ended).
    ending: Option<(Arc<TimerCell<P>>, EndReason, u64)>,
}

impl<P> Default for TimerState<P> {
    fn default() -> Self {
        Self {
            cell: None,
            next_due: 0,
            arm_seq: 0,
            armed: false,
            waiting_gate: false,
            seq: 0,
            in_flight: None,
            ending: None,
        }
    }
}

struct OwnerState {
    shared: Arc<OwnerShared>,
    lease_seq: u32,
    gate_waiters: VecDeque<u32>,
}

enum Delivery<P> {
    Queue,
    Callback(Box<dyn crate::delivery::BatchHandler<P>>),
}

pub(crate) struct Scheduler<P> {
    shared: Arc<Shared<P>>,
    rx: Receiver<Command<P>>,
    heap: DeadlineHeap,
    timers: Vec<TimerState<P>>,
    /// Indexed by `OwnerShared::index` (dense).
    owners: Vec<Option<OwnerState>>,
    stale_in_heap: usize,
    batch: Vec<Record<P>>,
    delivery: Delivery<P>,
    completions: Vec<Completion>,
    syncs: Vec<Sender<()>>,
    /// Wakeups happen on multiples of this many nanoseconds (at least 1).
    resolution: Nanos,
    /// Slots whose generation ended, to return to the free list at the end of the turn.
    releases: Vec<u32>,
    /// `flush_releases`'s working buffer, kept so that a turn ending 100k timers does not
    /// allocate (and free) a multi-MiB buffer: freeing one raises glibc's mmap threshold
    /// and its next copy stays resident in the heap arena.
    ended: Vec<(u32, u32, Arc<TimerCell<P>>)>,
    /// Records go to a batch callback (received as soon as they are made).
    callback: bool,
    /// The clock reading registrations and cancels of this turn use, and how many more
    /// may use it (see `command_now`).
    command_now: Nanos,
    command_now_uses: u32,
    /// Owners the host released, forgotten once their timers have ended.
    released_owners: Vec<Arc<OwnerShared>>,
}

/// Registrations and cancels that share one clock reading: reading CLOCK_BOOTTIME per
/// command was 8% of the scheduler's time under churn. A reading stays at most this many
/// commands old (tens of microseconds); deliveries and completions read the clock anew.
const COMMANDS_PER_CLOCK_READ: u32 = 64;

impl<P: Send + Sync + 'static> Scheduler<P> {
    pub fn new(
        shared: Arc<Shared<P>>,
        rx: Receiver<Command<P>>,
        sink: Sink<P>,
        resolution: Nanos,
    ) -> Self {
        let callback = matches!(sink, Sink::Callback(_));
        Self {
            shared,
            rx,
            heap: DeadlineHeap::default(),
            timers: Vec::new(),
            owners: Vec::new(),
            stale_in_heap: 0,
            batch: Vec::new(),
            delivery: match sink {
                Sink::Exchange => Delivery::Queue,
                Sink::Callback(cb) => Delivery::Callback(cb),
            },
            completions: Vec::new(),
            syncs: Vec::new(),
            resolution,
            releases: Vec::new(),
            ended: Vec::new(),
            callback,
            command_now: 0,
            command_now_uses: 0,
            released_owners: Vec::new(),
        }
    }

    pub fn run(mut self) {
        mark_scheduler_thread(self.shared.id);
        // Deadlines are exact to the nanosecond; don't let the kernel's default 50 us
        // timer slack add lateness to every timed sleep of this thread.
        // (Not under Miri, which cannot call it; the slack only affects lateness.)
        // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer argument.
        #[cfg(not(miri))]
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong)
        };
        let manual = self.shared.manual.is_some();
        loop {
            self.shared.pending_commands.store(0, Ordering::Relaxed);
            self.command_now_uses = 0;
            for _ in 0..COMMANDS_PER_TURN {
                match self.rx.try_recv() {
                    Ok(cmd) => {
                        if self.handle(cmd) {
                            self.shutdown();
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            self.fire_due(self.shared.now());
            self.flush();
            self.flush_releases();
            self.forget_released_owners();
            self.shared
                .queue_len
                .store(self.heap.len() as u64, Ordering::Relaxed);
            for s in self.syncs.drain(..) {
                let _ = s.send(());
            }
            self.sleep(manual);
        }
    }

    /// Sleeps until the earliest deadline or until a host wakes it (see `Shared::send`).
    fn sleep(&mut self, manual: bool) {
        let wake_at = match self.heap.peek() {
            // Waking on a resolution boundary gathers every timer due within it into
            // one batch: one crossing into the host instead of one per distinct deadline.
            Some(e) if !manual => e
                .due
                .div_ceil(self.resolution)
                .saturating_mul(self.resolution),
            _ => NEVER,
        };
        let now = self.shared.now();
        if wake_at <= now {
            return;
        }
        self.shared.sleep_until.store(wake_at, Ordering::SeqCst);
        // Pairs with the fence in `Shared::send`: a command sent before this point is
        // seen here; one sent after sees `sleep_until` and decides whether to wake us.
        fence(Ordering::SeqCst);
        if self.rx.is_empty() {
            if wake_at == NEVER {
                std::thread::park();
            } else {
                std::thread::park_timeout(Duration::from_nanos(wake_at - now));
            }
            Counters::add(&self.shared.counters.wakeups, 1);
        }
        self.shared.sleep_until.store(AWAKE, Ordering::SeqCst);
    }

    /// Handles one command; true on shutdown.
    fn handle(&mut self, cmd: Command<P>) -> bool {
        match cmd {
            Command::Register { slot, cell } => self.register(slot, cell),
            Command::Cancel { slot, generation } => {
                let live = self.state(slot).cell.as_ref().map(|c| c.id.generation);
                if live == Some(generation) {
                    self.end_generation(slot, EndReason::Cancelled);
                }
            }
            Command::Complete(list) => {
                let now = self.shared.now();
                for &c in &list {
                    self.complete(c, now);
                }
                self.shared.recycle_completion_list(list);
            }
            Command::GateReleased(owner) => {
                let now = self.shared.now();
                self.serve_gate(owner.index, now);
            }
            Command::OwnerChanged(owner) => self.owner_changed(owner),
            Command::Sync(tx) => self.syncs.push(tx),
            Command::Shutdown => return true,
        }
        false
    }

    fn state(&mut self, slot: u32) -> &mut TimerState<P> {
        let i = slot as usize;
        if i >= self.timers.len() {
            let want = (i + 1).max(self.shared.slots.high_water() as usize);
            self.timers.resize_with(want, TimerState::default);
        }
        &mut self.timers[i]
    }

    fn register(&mut self, slot: u32, cell: Arc<TimerCell<P>>) {
        self.state(slot);
        if let Some(old) = self.timers[slot as usize].cell.take() {
            self.disarm(slot);
            self.retire_generation(slot, old, EndReason::Superseded);
        }
        let st = &mut self.timers[slot as usize];
        st.next_due = cell.t0;
        st.waiting_gate = false;
        st.cell = Some(cell);
        self.shared.live_timers.fetch_add(1, Ordering::Relaxed);
        let now = self.command_now();
        self.try_deliver(slot, now);
    }

    /// The time for a registration or cancel: a reading of this turn at most
    /// `COMMANDS_PER_CLOCK_READ` commands old. Being that little behind only delays what
    /// is due to this turn's `fire_due`, which reads the clock again. A manual clock is
    /// read every time (it is cheap, and tests expect every command to see `advance`).
    fn command_now(&mut self) -> Nanos {
        if self.command_now_uses == 0 || self.shared.manual.is_some() {
            self.command_now = self.shared.now();
            self.command_now_uses = COMMANDS_PER_CLOCK_READ;
        }
        self.command_now_uses -= 1;
        self.command_now
    }

    /// Ends a generation that is no longer the slot's live one: at once, or when its
    /// running callback completes.
    fn retire_generation(&mut self, slot: u32, cell: Arc<TimerCell<P>>, reason: EndReason) {
        let now = self.command_now();
        let due = self.ticks_due(slot, &cell, now);
        let st = &mut self.timers[slot as usize];
        let running = st
            .in_flight
            .as_ref()
            .is_some_and(|f| f.generation == cell.id.generation);
        if !running {
            self.finish(cell, reason, due);
            return;
        }
        st.ending = Some((cell, reason, due));
        // A record the host has not received yet will never start: take it back now, so
        // that the end does not wait for a host that may be the one waiting for it.
        let seq = st.in_flight.as_ref().map_or(0, |f| f.seq);
        if self
            .shared
            .slots
            .get(slot)
            .is_some_and(|s| claim(&s.inflight, seq))
        {
            let now = self.shared.now();
            self.complete(
                Completion::new(make_token(slot, seq), Outcome::NotStarted),
                now,
            );
        }
    }

    fn arm(&mut self, slot: u32, due: Nanos) {
        self.disarm(slot);
        let st = &mut self.timers[slot as usize];
        st.arm_seq = st.arm_seq.wrapping_add(1);
        st.armed = true;
        self.heap.push(Entry {
            due,
            target: slot,
            seq: st.arm_seq,
        });
    }

    fn disarm(&mut self, slot: u32) {
        let st = &mut self.timers[slot as usize];
        if st.armed {
            st.armed = false;
            st.arm_seq = st.arm_seq.wrapping_add(1);
            self.stale_in_heap += 1;
        }
    }

    fn fire_due(&mut self, now: Nanos) {
        while let Some(e) = self.heap.peek().copied() {
            if e.due > now {
                break;
            }
            self.heap.pop();
            if e.target & OWNER_BIT != 0 {
                self.lease_due(e, now);
                continue;
            }
            let st = &mut self.timers[e.target as usize];
            if !st.armed || st.arm_seq != e.seq {
                self.stale_in_heap = self.stale_in_heap.saturating_sub(1);
                Counters::add(&self.shared.counters.stale_entries_dropped, 1);
                continue;
            }
            st.armed = false;
            self.try_deliver(e.target, now);
        }
        self.maybe_compact();
    }

    fn maybe_compact(&mut self) {
        if self.stale_in_heap < COMPACT_MIN_STALE || self.stale_in_heap * 2 < self.heap.len() {
            return;
        }
        let before = self.heap.len();
        let timers = &self.timers;
        let owners = &self.owners;
        self.heap.retain(|e| {
            if e.target & OWNER_BIT != 0 {
                matches!(owners.get((e.target & !OWNER_BIT) as usize),
                    Some(Some(o)) if o.lease_seq == e.seq)
            } else {
                let st = &timers[e.target as usize];
                st.armed && st.arm_seq == e.seq
            }
        });
        Counters::add(
            &self.shared.counters.stale_entries_dropped,
            (before - self.heap.len()) as u64,
        );
        Counters::add(&self.shared.counters.compactions, 1);
        self.stale_in_heap = 0;
    }

    /// Starts the slot's next callback if one is due and allowed, else arms or parks it.
    fn try_deliver(&mut self, slot: u32, now: Nanos) {
        let st = &self.timers[slot as usize];
        let Some(cell) = st.cell.as_ref() else { return };
        // The slot's word straight from the table: going through the cell would load
        // its `words` pointer, one more cache line per delivery.
        if st.in_flight.is_some() || !word_is_live(self.shared.slots.word(slot), cell.id.generation)
        {
            // A completion re-evaluates; a cancel in progress ends the generation.
            return;
        }
        if let Err(e) = cell.owner.check(cell.epoch, now) {
            self.end_generation(slot, end_reason_for(&e));
            return;
        }
        let last = cell.last_scheduled.load(Ordering::Relaxed);
        let delivered = cell.delivered.load(Ordering::Relaxed);
        let (spec, t0) = (cell.spec, cell.t0);
        let scheduled = if spec.period == 0 {
            (now >= t0).then_some(1)
        } else if spec.policy == OverrunPolicy::DelayNextTick {
            (now >= st.next_due).then_some(delivered + 1)
        } else {
            let newest = newest_due(t0, spec.period, now);
            (newest > last).then(|| next_scheduled(spec.policy, spec.max_catch_up, last, newest))
        };
        let Some(scheduled) = scheduled else {
            let due = if spec.period == 0 || spec.policy == OverrunPolicy::DelayNextTick {
                st.next_due
            } else {
                due_of(t0, spec.period, last + 1)
            };
            self.arm(slot, due);
            return;
        };
        let serial = cell.owner.serial();
        if serial && !cell.owner.gate.try_take_for_timer() {
            let owner = cell.owner.index;
            self.park_on_gate(slot, owner);
            return;
        }
        self.disarm(slot);
        let st = &mut self.timers[slot as usize];
        let cell = st.cell.clone().expect("checked above");
        st.seq = (st.seq.wrapping_add(1) & !RECEIVED).max(1);
        let tick = Tick {
            delivery_index: delivered + 1,
            scheduled_index: scheduled,
            skipped_ticks: scheduled - last - 1,
        };
        st.in_flight = Some(InFlight {
            seq: st.seq,
            generation: cell.id.generation,
            tick,
            holds_gate: serial,
        });
        let token = make_token(slot, st.seq);
        if let Some(s) = self.shared.slots.get(slot) {
            // A batch callback receives the record the moment it is made.
            let received = if self.callback { RECEIVED } else { 0 };
            s.inflight.store(st.seq | received, Ordering::Release);
        }
        self.batch.push(Record::Tick(TickRecord {
            timer: cell,
            tick,
            token,
        }));
    }

    fn park_on_gate(&mut self, slot: u32, owner_index: u32) {
        let st = &mut self.timers[slot as usize];
        if st.waiting_gate {
            return;
        }
        st.waiting_gate = true;
        Counters::add(&self.shared.counters.gate_waits, 1);
        if let Some(Some(o)) = self.owners.get_mut(owner_index as usize) {
            o.gate_waiters.push_back(slot);
        }
    }

    /// The scheduler's state of an owner; created by the `OwnerChanged` command that every
    /// acquisition sends before the owner can register anything.
    fn owner_state(&mut self, owner: &Arc<OwnerShared>) -> &mut OwnerState {
        let i = owner.index as usize;
        if i >= self.owners.len() {
            self.owners.resize_with(i + 1, || None);
        }
        self.owners[i].get_or_insert_with(|| OwnerState {
            shared: owner.clone(),
            lease_seq: 0,
            gate_waiters: VecDeque::new(),
        })
    }

    /// Offers the owner's gate to the timers waiting for it, oldest first.
    fn serve_gate(&mut self, owner_index: u32, now: Nanos) {
        loop {
            let Some(Some(o)) = self.owners.get_mut(owner_index as usize) else {
                return;
            };
            if !o.shared.gate.is_free() {
                return;
            }
            let Some(slot) = o.gate_waiters.pop_front() else {
                return;
            };
            let st = &mut self.timers[slot as usize];
            if !st.waiting_gate {
                continue;
            }
            st.waiting_gate = false;
            self.try_deliver(slot, now);
        }
    }

    fn complete(&mut self, c: Completion, now: Nanos) {
        let (slot, seq) = split_token(c.token);
        let counters = &self.shared.counters;
        let Some(st) = self.timers.get_mut(slot as usize) else {
            Counters::add(&counters.invalid_completions, 1);
            return;
        };
        let Some(f) = st.in_flight.take_if(|f| f.seq == seq) else {
            Counters::add(&counters.invalid_completions, 1);
            return;
        };
        // The running generation is the ending one if there is one, else the live one;
        // both belong to the slot's (owner, key), so either names the owner. Looked at only
        // when the gate or a deferral needs it: the owner is one more cache line.
        let owner_index = if f.holds_gate || c.outcome == Outcome::Deferred {
            st.ending
                .as_ref()
                .map(|(c, _, _)| &c.owner)
                .or(st.cell.as_ref().map(|c| &c.owner))
                .map(|o| {
                    if f.holds_gate {
                        o.gate.release_from_timer();
                    }
                    o.index
                })
        } else {
            None
        };
        let mut park_deferred = None;
        if let Some((cell, reason, due)) = st.ending.take() {
            match c.outcome {
                Outcome::Ok | Outcome::Failed => commit(&cell, f.tick, c.outcome, counters),
                Outcome::NotStarted => Counters::add(&counters.not_started, 1),
                Outcome::Deferred => Counters::add(&counters.completed_deferred, 1),
            }
            self.finish(cell, reason, due);
            if self.timers[slot as usize].cell.is_none() {
                self.release_slot(slot);
            }
        } else if let Some(cell) = st.cell.as_ref().filter(|c| c.id.generation == f.generation) {
            match c.outcome {
                Outcome::Ok | Outcome::Failed => {
                    commit(cell, f.tick, c.outcome, counters);
                    if cell.spec.period == 0 {
                        self.end_generation(slot, EndReason::Completed);
                    } else if cell.spec.policy == OverrunPolicy::DelayNextTick {
                        st.next_due = now.saturating_add(cell.spec.period);
                    }
                }
                Outcome::Deferred => {
                    Counters::add(&counters.completed_deferred, 1);
                    park_deferred = Some((cell.spec, cell.t0));
                }
                Outcome::NotStarted => Counters::add(&counters.not_started, 1),
            }
        }
        if f.holds_gate {
            if let Some(index) = owner_index {
                self.serve_gate(index, now);
            }
        }
        if let Some((spec, t0)) = park_deferred {
            // Retry when the owner's gate is next released, or at the next nominal tick.
            if let Some(index) = owner_index {
                self.park_on_gate(slot, index);
            }
            let retry_at = if spec.period == 0 {
                None
            } else if spec.policy == OverrunPolicy::DelayNextTick {
                Some(now.saturating_add(spec.period))
            } else {
                Some(due_of(
                    t0,
                    spec.period,
                    newest_due(t0, spec.period, now) + 1,
                ))
            };
            if let Some(t) = retry_at {
                self.arm(slot, t);
            }
        } else {
            self.try_deliver(slot, now);
        }
    }

    /// Ends the slot's live generation: no new start from now on; the result is
    /// published at once or when its running callback completes.
    fn end_generation(&mut self, slot: u32, reason: EndReason) {
        let Some(cell) = self.timers[slot as usize].cell.take() else {
            return;
        };
        self.disarm(slot);
        self.timers[slot as usize].waiting_gate = false;
        begin_cancel(cell.live_word(), cell.id.generation);
        let running = self.timers[slot as usize]
            .in_flight
            .as_ref()
            .is_some_and(|f| f.generation == cell.id.generation);
        self.retire_generation(slot, cell, reason);
        if !running {
            self.release_slot(slot);
        }
    }

    /// Queues the slot for return to the free list (see `flush_releases`).
    fn release_slot(&mut self, slot: u32) {
        let st = &self.timers[slot as usize];
        if st.cell.is_some() || st.in_flight.is_some() {
            return;
        }
        self.releases.push(slot);
    }

    /// Returns ended slots to the free list unless (owner, key) was registered again.
    /// Batched per turn and grouped by owner, so the owner's key map — which registering
    /// host threads also lock — is taken once per owner per turn, not once per cancel.
    fn flush_releases(&mut self) {
        if self.releases.is_empty() {
            return;
        }
        let mut releases = std::mem::take(&mut self.releases);
        let slots = &self.shared.slots;
        let mut ended = std::mem::take(&mut self.ended);
        ended.extend(releases.drain(..).filter_map(|slot| {
            let cell = slots.get(slot)?.cell.lock().clone()?;
            Some((cell.owner.index, slot, cell))
        }));
        ended.sort_unstable_by_key(|e| e.0);
        // `releases` is empty here; it collects the slots that really go back.
        for group in ended.chunk_by(|a, b| a.0 == b.0) {
            let mut keys = group[0].2.owner.keys.lock();
            for (_, slot, cell) in group {
                let st = &self.timers[*slot as usize];
                let Some(s) = slots.get(*slot) else { continue };
                let word = slots.word(*slot).load(Ordering::Acquire);
                if st.cell.is_some()
                    || st.in_flight.is_some()
                    || word >> 1 != cell.id.generation
                    || keys.get(&cell.key) != Some(slot)
                {
                    // Registered again meanwhile: the slot stays bound to its key.
                    continue;
                }
                keys.remove(&cell.key);
                *s.cell.lock() = None;
                releases.push(*slot);
            }
        }
        slots.release(&releases);
        releases.clear();
        ended.clear();
        self.ended = ended;
        self.releases = releases;
    }

    /// Nominal ticks of the slot's generation `cell` that have come due by `now`.
    fn ticks_due(&self, slot: u32, cell: &TimerCell<P>, now: Nanos) -> u64 {
        let st = &self.timers[slot as usize];
        let delivered = cell.delivered.load(Ordering::Relaxed);
        let last = cell.last_scheduled.load(Ordering::Relaxed);
        let in_flight = st
            .in_flight
            .as_ref()
            .filter(|f| f.generation == cell.id.generation)
            .map_or(0, |f| f.tick.scheduled_index);
        let due = if cell.spec.period == 0 {
            u64::from(now >= cell.t0)
        } else if cell.spec.policy == OverrunPolicy::DelayNextTick {
            delivered + u64::from(now >= st.next_due)
        } else {
            newest_due(cell.t0, cell.spec.period, now)
        };
        let handed = cell.handed_index.load(Ordering::Relaxed);
        due.max(last).max(in_flight).max(handed)
    }

    /// Publishes a generation's terminal result after its cleanup, and accounts for the
    /// `due` ticks it had: every one was delivered, skipped by policy, or is counted here
    /// as dropped (authority ended) or discarded (cancelled, superseded, closed).
    fn finish(&mut self, cell: Arc<TimerCell<P>>, reason: EndReason, due: u64) {
        let counters = &self.shared.counters;
        // A record handed over after `due` was taken may carry a later tick (relabelled
        // at hand-over with the host's clock reading): it came due too.
        let last = cell.last_scheduled.load(Ordering::Relaxed);
        let due = due.max(last);
        let undelivered = due - last;
        Counters::add(&counters.ticks_due, due);
        match reason {
            EndReason::LeaseExpired | EndReason::Revoked => {
                Counters::add(&counters.ticks_dropped_authority, undelivered)
            }
            _ => Counters::add(&counters.ticks_discarded, undelivered),
        }
        let hook = cell.release.lock().take();
        let result: EndResult = match hook {
            None => Ok(reason),
            Some(h) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(h)) {
                Ok(Ok(())) => Ok(reason),
                Ok(Err(msg)) => Err(Error::CleanupFailed(msg.into())),
                Err(_) => Err(Error::CleanupFailed("release hook panicked".into())),
            },
        };
        if result.is_err() {
            Counters::add(&self.shared.counters.cleanup_failures, 1);
        }
        Counters::add(&self.shared.counters.ended, 1);
        self.shared.live_timers.fetch_sub(1, Ordering::Relaxed);
        for tag in cell.end.finish(result.clone()) {
            self.batch.push(Record::CancelDone(CancelNotice {
                timer: cell.id,
                owner: cell.owner.id,
                key: cell.key,
                tag,
                result: result.clone(),
            }));
        }
    }

    fn owner_changed(&mut self, owner: Arc<OwnerShared>) {
        if owner.forgotten.load(Ordering::Acquire) {
            // Queued before the owner was forgotten; its index may be another owner's now.
            return;
        }
        let now = self.shared.now();
        let deadline = owner.lease_deadline.load(Ordering::Acquire);
        let o = self.owner_state(&owner);
        o.lease_seq = o.lease_seq.wrapping_add(1);
        let seq = o.lease_seq;
        if deadline != crate::owner::NO_DEADLINE && deadline > now {
            self.heap.push(Entry {
                due: deadline,
                target: OWNER_BIT | owner.index,
                seq,
            });
        }
        // End the timers of any authority that is no longer valid.
        let epoch = owner.epoch.load(Ordering::Acquire);
        let slots: Vec<u32> = owner.keys.lock().values().copied().collect();
        for slot in slots {
            let Some(cell) = self.timers.get(slot as usize).and_then(|s| s.cell.clone()) else {
                continue;
            };
            if let Err(e) = cell.owner.check(cell.epoch, now) {
                if cell.epoch != epoch || deadline <= now {
                    self.end_generation(slot, end_reason_for(&e));
                }
            }
        }
        if owner.released.load(Ordering::Acquire)
            && !self.released_owners.iter().any(|o| Arc::ptr_eq(o, &owner))
        {
            self.released_owners.push(owner);
        }
    }

    /// Forgets the released owners whose timers have all ended (their keys are gone once
    /// the slots are released, at the end of the turn): out of the runtime's owner map,
    /// scheduler state dropped, index free for the next new owner. One the host acquired
    /// again meanwhile is kept.
    fn forget_released_owners(&mut self) {
        if self.released_owners.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.released_owners);
        pending.retain(|owner| {
            if !owner.keys.lock().is_empty() {
                return true; // timers still ending
            }
            let mut map = self.shared.owners.write();
            let current = map.get(&owner.id).is_some_and(|o| Arc::ptr_eq(o, owner));
            // Checked under the write lock that acquisitions take to clear it.
            if current && owner.released.load(Ordering::Acquire) {
                // The floor first, still under the lock: the next acquisition of the id
                // builds its owner from it.
                self.shared
                    .epoch_floor
                    .fetch_max(owner.epoch.load(Ordering::Acquire) + 1, Ordering::AcqRel);
                map.remove(&owner.id);
                drop(map);
                owner.forgotten.store(true, Ordering::Release);
                if let Some(state) = self.owners.get_mut(owner.index as usize) {
                    *state = None;
                }
                self.shared.free_owner_indexes.lock().push(owner.index);
            }
            false
        });
        self.released_owners = pending;
    }

    fn lease_due(&mut self, e: Entry, now: Nanos) {
        let index = e.target & !OWNER_BIT;
        let Some(Some(o)) = self.owners.get(index as usize) else {
            return;
        };
        if o.lease_seq != e.seq {
            return;
        }
        let owner = o.shared.clone();
        let deadline = owner.lease_deadline.load(Ordering::Acquire);
        if deadline > now && deadline != crate::owner::NO_DEADLINE {
            self.heap.push(Entry {
                due: deadline,
                target: e.target,
                seq: e.seq,
            });
            return;
        }
        if owner.expire_if_due(now) {
            let slots: Vec<u32> = owner.keys.lock().values().copied().collect();
            for slot in slots {
                if self
                    .timers
                    .get(slot as usize)
                    .is_some_and(|s| s.cell.is_some())
                {
                    self.end_generation(slot, EndReason::LeaseExpired);
                }
            }
        }
    }

    /// Hands the batch over: one ready-queue publish or one callback call.
    fn flush(&mut self) {
        // A callback that completes synchronously can free gates and make more ticks
        // startable at once; deliver those too, a bounded number of rounds.
        for _ in 0..4 {
            if self.batch.is_empty() {
                return;
            }
            let n = self.batch.len() as u64;
            let c = &self.shared.counters;
            Counters::add(&c.batches, 1);
            Counters::add(&c.records_published, n);
            match &mut self.delivery {
                Delivery::Queue => {
                    self.shared.ready.publish(&mut self.batch);
                    return;
                }
                Delivery::Callback(cb) => {
                    Counters::add(&c.host_crossings, 1);
                    Counters::add(&c.records_received, n);
                    let batch = std::mem::take(&mut self.batch);
                    let mut completions = std::mem::take(&mut self.completions);
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        cb.on_batch(&batch, &mut completions)
                    }));
                    drop(batch);
                    if r.is_err() {
                        // The host's callback panicked: it completed nothing reliably.
                        completions.clear();
                    }
                    let now = self.shared.now();
                    for comp in completions.drain(..) {
                        let (slot, seq) = split_token(comp.token);
                        let claimed = self
                            .shared
                            .slots
                            .get(slot)
                            .is_some_and(|s| claim(&s.inflight, seq | RECEIVED));
                        if claimed {
                            self.complete(comp, now);
                        } else {
                            Counters::add(&self.shared.counters.invalid_completions, 1);
                        }
                    }
                    self.completions = completions;
                }
            }
        }
    }

    fn shutdown(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        let now = self.shared.now();
        for slot in 0..self.timers.len() as u32 {
            if let Some((cell, _, due)) = self.timers[slot as usize].ending.take() {
                self.finish(cell, EndReason::RuntimeClosed, due);
            }
            if let Some(cell) = self.timers[slot as usize].cell.take() {
                let live = live_value(cell.id.generation);
                cell.live_word().store(live | 1, Ordering::Release);
                let due = self.ticks_due(slot, &cell, now);
                self.finish(cell, EndReason::RuntimeClosed, due);
            }
        }
        self.batch.clear();
        self.shared
            .scheduler_running
            .store(false, Ordering::Release);
        self.shared.ready.wake_all();
        for s in self.syncs.drain(..) {
            let _ = s.send(());
        }
        // Anything still queued (commands sent while closing) is dropped with `self.rx`.
        while let Ok(cmd) = self.rx.try_recv() {
            if let Command::Sync(s) = cmd {
                let _ = s.send(());
            }
        }
    }
}

fn commit<P>(cell: &TimerCell<P>, tick: Tick, outcome: Outcome, counters: &crate::stats::Counters) {
    // The host may have received the record relabelled to a later tick (see
    // `TimerCell::relabel`): commit what it received.
    let handed = cell.handed_index.load(Ordering::Relaxed);
    let tick = if handed > tick.scheduled_index {
        Tick {
            skipped_ticks: tick.skipped_ticks + (handed - tick.scheduled_index),
            scheduled_index: handed,
            ..tick
        }
    } else {
        tick
    };
    cell.delivered.store(tick.delivery_index, Ordering::Relaxed);
    cell.last_scheduled
        .store(tick.scheduled_index, Ordering::Relaxed);
    if tick.skipped_ticks != 0 {
        cell.skipped
            .fetch_add(tick.skipped_ticks, Ordering::Relaxed);
        Counters::add(&counters.ticks_skipped, tick.skipped_ticks);
    }
    if outcome == Outcome::Failed {
        cell.failed.fetch_add(1, Ordering::Relaxed);
        Counters::add(&counters.completed_failed, 1);
    } else {
        Counters::add(&counters.completed_ok, 1);
    }
}
