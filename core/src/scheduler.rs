//! The scheduler thread's loop: the only place that touches the deadline queue and the
//! per-timer schedule state, so neither needs a lock.
//!
//! One wakeup: drain commands (registrations, cancels, completions, owner changes), pop
//! every due entry, drop what is stale, apply the gate (T9), the overrun policy (T5) and
//! the tick info (T4), and hand the whole batch over in one step (T10).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::cancel::{EndReason, EndResult};
use crate::clock::Nanos;
use crate::delivery::Sink;
use crate::error::Error;
use crate::owner::OwnerShared;
use crate::policy::{due_of, newest_due, next_scheduled, OverrunPolicy};
use crate::queue::{DeadlineHeap, Entry, OWNER_BIT};
use crate::runtime::{end_reason_for, mark_scheduler_thread, Shared};
use crate::stats::Counters;
use crate::table::live_value;
use crate::tick::{
    make_token, split_token, CancelNotice, Completion, Outcome, Record, Tick, TickRecord,
};
use crate::timer::{NormalSpec, TimerCell};

/// Most commands handled before the queue is looked at again, so a flood of commands
/// cannot starve due timers.
const COMMANDS_PER_TURN: usize = 65_536;
/// The queue is rebuilt when stale entries exceed half of it and this many.
const COMPACT_MIN_STALE: usize = 1024;

pub(crate) enum Command<P> {
    Register {
        slot: u32,
        cell: Arc<TimerCell<P>>,
        spec: NormalSpec,
        at: Nanos,
    },
    Cancel {
        slot: u32,
        generation: u64,
    },
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
    spec: NormalSpec,
    /// First nominal due time.
    t0: Nanos,
    /// DelayNextTick: due time of the next tick.
    next_due: Nanos,
    arm_seq: u32,
    armed: bool,
    waiting_gate: bool,
    /// Last delivery sequence number (tokens), kept across generations.
    seq: u32,
    in_flight: Option<InFlight>,
    /// A generation that ends as soon as its running callback completes.
    ending: Option<(Arc<TimerCell<P>>, EndReason)>,
}

impl<P> Default for TimerState<P> {
    fn default() -> Self {
        Self {
            cell: None,
            spec: NormalSpec::default(),
            t0: 0,
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
    owners: HashMap<u32, OwnerState>,
    stale_in_heap: usize,
    batch: Vec<Record<P>>,
    delivery: Delivery<P>,
    completions: Vec<Completion>,
    syncs: Vec<Sender<()>>,
}

impl<P: Send + Sync + 'static> Scheduler<P> {
    pub fn new(shared: Arc<Shared<P>>, rx: Receiver<Command<P>>, sink: Sink<P>) -> Self {
        Self {
            shared,
            rx,
            heap: DeadlineHeap::default(),
            timers: Vec::new(),
            owners: HashMap::new(),
            stale_in_heap: 0,
            batch: Vec::new(),
            delivery: match sink {
                Sink::Exchange => Delivery::Queue,
                Sink::Callback(cb) => Delivery::Callback(cb),
            },
            completions: Vec::new(),
            syncs: Vec::new(),
        }
    }

    pub fn run(mut self) {
        mark_scheduler_thread(self.shared.id);
        let manual = self.shared.manual.is_some();
        'outer: loop {
            let first = if manual {
                self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                match self.heap.peek().map(|e| e.due) {
                    None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(due) => {
                        let now = self.shared.now();
                        if due <= now {
                            self.rx.try_recv().map_err(|e| match e {
                                TryRecvError::Empty => RecvTimeoutError::Timeout,
                                TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                            })
                        } else {
                            self.rx.recv_timeout(Duration::from_nanos(due - now))
                        }
                    }
                }
            };
            Counters::add(&self.shared.counters.wakeups, 1);
            match first {
                Ok(cmd) => {
                    if self.handle(cmd) {
                        break 'outer;
                    }
                    for _ in 0..COMMANDS_PER_TURN {
                        match self.rx.try_recv() {
                            Ok(cmd) => {
                                if self.handle(cmd) {
                                    break 'outer;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.fire_due(self.shared.now());
            self.flush();
            self.shared
                .queue_len
                .store(self.heap.len() as u64, Ordering::Relaxed);
            for s in self.syncs.drain(..) {
                let _ = s.send(());
            }
        }
        self.shutdown();
    }

    /// Handles one command; true on shutdown.
    fn handle(&mut self, cmd: Command<P>) -> bool {
        match cmd {
            Command::Register {
                slot,
                cell,
                spec,
                at,
            } => self.register(slot, cell, spec, at),
            Command::Cancel { slot, generation } => {
                let live = self.state(slot).cell.as_ref().map(|c| c.id.generation);
                if live == Some(generation) {
                    self.end_generation(slot, EndReason::Cancelled);
                }
            }
            Command::Complete(list) => {
                let now = self.shared.now();
                for c in list {
                    self.complete(c, now);
                }
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

    fn register(&mut self, slot: u32, cell: Arc<TimerCell<P>>, spec: NormalSpec, at: Nanos) {
        self.state(slot);
        if let Some(old) = self.timers[slot as usize].cell.take() {
            self.disarm(slot);
            self.retire_generation(slot, old, EndReason::Superseded);
        }
        let st = &mut self.timers[slot as usize];
        st.spec = spec;
        st.t0 = at.saturating_add(spec.delay);
        st.next_due = st.t0;
        st.waiting_gate = false;
        st.cell = Some(cell);
        self.shared.live_timers.fetch_add(1, Ordering::Relaxed);
        let now = self.shared.now();
        self.try_deliver(slot, now);
    }

    /// Ends a generation that is no longer the slot's live one: at once, or when its
    /// running callback completes.
    fn retire_generation(&mut self, slot: u32, cell: Arc<TimerCell<P>>, reason: EndReason) {
        let st = &mut self.timers[slot as usize];
        let running = st
            .in_flight
            .as_ref()
            .is_some_and(|f| f.generation == cell.id.generation);
        if running {
            st.ending = Some((cell, reason));
        } else {
            self.finish(cell, reason);
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
                owners
                    .get(&(e.target & !OWNER_BIT))
                    .is_some_and(|o| o.lease_seq == e.seq)
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
        let st = &mut self.timers[slot as usize];
        let Some(cell) = st.cell.clone() else { return };
        if st.in_flight.is_some() || !cell.is_live() {
            // A completion re-evaluates; a cancel in progress ends the generation.
            return;
        }
        if let Err(e) = cell.owner.check(cell.epoch, now) {
            Counters::add(&self.shared.counters.ticks_dropped_authority, 1);
            self.end_generation(slot, end_reason_for(&e));
            return;
        }
        let last = cell.last_scheduled.load(Ordering::Relaxed);
        let delivered = cell.delivered.load(Ordering::Relaxed);
        let spec = st.spec;
        let scheduled = if spec.period == 0 {
            (now >= st.t0).then_some(1)
        } else if spec.policy == OverrunPolicy::DelayNextTick {
            (now >= st.next_due).then_some(delivered + 1)
        } else {
            let newest = newest_due(st.t0, spec.period, now);
            (newest > last).then(|| next_scheduled(spec.policy, spec.max_catch_up, last, newest))
        };
        let Some(scheduled) = scheduled else {
            let due = if spec.period == 0 || spec.policy == OverrunPolicy::DelayNextTick {
                st.next_due
            } else {
                due_of(st.t0, spec.period, last + 1)
            };
            self.arm(slot, due);
            return;
        };
        let serial = cell.owner.serial();
        if serial && !cell.owner.gate.try_take_for_timer() {
            self.park_on_gate(slot, &cell.owner);
            return;
        }
        self.disarm(slot);
        let st = &mut self.timers[slot as usize];
        st.seq = st.seq.wrapping_add(1).max(1);
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
            s.inflight.store(st.seq, Ordering::Release);
        }
        self.batch.push(Record::Tick(TickRecord {
            timer: cell,
            tick,
            token,
        }));
    }

    fn park_on_gate(&mut self, slot: u32, owner: &Arc<OwnerShared>) {
        let st = &mut self.timers[slot as usize];
        if st.waiting_gate {
            return;
        }
        st.waiting_gate = true;
        Counters::add(&self.shared.counters.gate_waits, 1);
        self.owner_state(owner).gate_waiters.push_back(slot);
    }

    fn owner_state(&mut self, owner: &Arc<OwnerShared>) -> &mut OwnerState {
        self.owners
            .entry(owner.index)
            .or_insert_with(|| OwnerState {
                shared: owner.clone(),
                lease_seq: 0,
                gate_waiters: VecDeque::new(),
            })
    }

    /// Offers the owner's gate to the timers waiting for it, oldest first.
    fn serve_gate(&mut self, owner_index: u32, now: Nanos) {
        loop {
            let Some(o) = self.owners.get_mut(&owner_index) else {
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
        let owner = st
            .cell
            .as_ref()
            .map(|c| c.owner.clone())
            .or_else(|| st.ending.as_ref().map(|(c, _)| c.owner.clone()));
        if f.holds_gate {
            if let Some(o) = &owner {
                o.gate.release_from_timer();
            }
        }
        let mut park_deferred = false;
        if let Some((cell, reason)) = st.ending.take() {
            if c.outcome == Outcome::Ok || c.outcome == Outcome::Failed {
                commit(&cell, f.tick, c.outcome, counters);
            }
            self.finish(cell, reason);
            if self.timers[slot as usize].cell.is_none() {
                self.release_slot(slot);
            }
        } else if let Some(cell) = st.cell.clone().filter(|c| c.id.generation == f.generation) {
            match c.outcome {
                Outcome::Ok | Outcome::Failed => {
                    commit(&cell, f.tick, c.outcome, counters);
                    if st.spec.period == 0 {
                        self.end_generation(slot, EndReason::Completed);
                    } else if st.spec.policy == OverrunPolicy::DelayNextTick {
                        st.next_due = now.saturating_add(st.spec.period);
                    }
                }
                Outcome::Deferred => {
                    Counters::add(&counters.completed_deferred, 1);
                    park_deferred = true;
                }
                Outcome::NotStarted => Counters::add(&counters.not_started, 1),
            }
        }
        if f.holds_gate {
            if let Some(o) = &owner {
                self.serve_gate(o.index, now);
            }
        }
        if park_deferred {
            // Retry when the owner's gate is next released, or at the next nominal tick.
            let cell = self.timers[slot as usize].cell.clone().expect("live");
            self.park_on_gate(slot, &cell.owner);
            let st = &self.timers[slot as usize];
            let retry_at = if st.spec.period == 0 {
                None
            } else if st.spec.policy == OverrunPolicy::DelayNextTick {
                Some(now.saturating_add(st.spec.period))
            } else {
                Some(due_of(
                    st.t0,
                    st.spec.period,
                    newest_due(st.t0, st.spec.period, now) + 1,
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
        let live = live_value(cell.id.generation);
        let _ =
            cell.live_word()
                .compare_exchange(live, live | 1, Ordering::AcqRel, Ordering::Acquire);
        let running = self.timers[slot as usize]
            .in_flight
            .as_ref()
            .is_some_and(|f| f.generation == cell.id.generation);
        self.retire_generation(slot, cell, reason);
        if !running {
            self.release_slot(slot);
        }
    }

    /// Returns the slot to the free list unless (owner, key) was registered again.
    fn release_slot(&mut self, slot: u32) {
        let st = &self.timers[slot as usize];
        if st.cell.is_some() || st.in_flight.is_some() {
            return;
        }
        let Some(s) = self.shared.slots.get(slot) else {
            return;
        };
        let Some(cell) = s.cell.lock().clone() else {
            return;
        };
        let mut keys = cell.owner.keys.lock();
        let word = s.word.load(Ordering::Acquire);
        if word >> 1 != cell.id.generation || keys.get(&cell.key) != Some(&slot) {
            // Re-registered meanwhile: its Register command is on the way.
            return;
        }
        keys.remove(&cell.key);
        *s.cell.lock() = None;
        drop(keys);
        self.shared.slots.release(slot);
    }

    /// Publishes a generation's terminal result after its cleanup.
    fn finish(&mut self, cell: Arc<TimerCell<P>>, reason: EndReason) {
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
    }

    fn lease_due(&mut self, e: Entry, now: Nanos) {
        let index = e.target & !OWNER_BIT;
        let Some(o) = self.owners.get(&index) else {
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
                        let claimed = self.shared.slots.get(slot).is_some_and(|s| {
                            s.inflight
                                .compare_exchange(seq, 0, Ordering::AcqRel, Ordering::Acquire)
                                .is_ok()
                        });
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
        for slot in 0..self.timers.len() as u32 {
            if let Some((cell, reason)) = self.timers[slot as usize].ending.take() {
                let _ = reason;
                self.finish(cell, EndReason::RuntimeClosed);
            }
            if let Some(cell) = self.timers[slot as usize].cell.take() {
                let live = live_value(cell.id.generation);
                cell.live_word().store(live | 1, Ordering::Release);
                self.finish(cell, EndReason::RuntimeClosed);
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
    cell.delivered.store(tick.delivery_index, Ordering::Relaxed);
    cell.last_scheduled
        .store(tick.scheduled_index, Ordering::Relaxed);
    cell.skipped
        .fetch_add(tick.skipped_ticks, Ordering::Relaxed);
    Counters::add(&counters.ticks_skipped, tick.skipped_ticks);
    if outcome == Outcome::Failed {
        cell.failed.fetch_add(1, Ordering::Relaxed);
        Counters::add(&counters.completed_failed, 1);
    } else {
        Counters::add(&counters.completed_ok, 1);
    }
}
