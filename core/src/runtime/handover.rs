//! The host's side of a record: receiving it (hand-over, with the tick info computed at
//! that moment, T3), starting its callback (the start check of T1/T2/T6), and applying
//! its completion — all on the host's own thread, with no round trip to the scheduler.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};

use crate::cold::ColdTable;
use crate::end::EndReason;
use crate::error::{Error, Result};
use crate::owner::NO_DEADLINE;
use crate::runtime::ready::Pending;
use crate::runtime::shared::{Shared, Work, CURRENT_CALLBACK};
use crate::slot::word::{self, CompletionClaim};
use crate::slot::{FAILURES_SATURATED, HAS_COLD};
use crate::spec::TimerId;
use crate::stats::C;
use crate::tick::{Completion, Outcome, Tick, TickRecord};

impl<P: Clone> Shared<P> {
    /// Hands a published record to a host (QUEUED → HANDED) and builds what the host sees.
    /// None when it was taken back meanwhile (its generation ended: the ender accounted
    /// for it) or its owner's lease has just run out.
    pub(crate) fn hand_over(&self, p: Pending, work: &mut Work) -> Option<TickRecord<P>> {
        let slot = self.slots.slot(p.slot);
        let owner_index = slot.owner_index();
        let owner = self.owners.entry(owner_index);
        let deadline = owner.deadline.load(Acquire);
        if deadline != NO_DEADLINE && deadline <= work.now {
            // The lease ran out while the record waited: it never reaches the host (T6).
            self.expire_owner(owner_index, work);
            return None;
        }
        let handed = word::hand_over(&slot.word, p.word)?;
        let last = slot.last.load(Relaxed);
        let published = slot.inflight.load(Relaxed);
        let schedule = slot.schedule();
        let scheduled = schedule.relabel(published, last, work.now);
        if scheduled != published {
            slot.inflight.store(scheduled, Relaxed);
        }
        self.lateness
            .record(work.now.saturating_sub(schedule.due_time(scheduled)));
        let tick = Tick {
            delivery_index: slot.delivered.load(Relaxed) + 1,
            scheduled_index: scheduled,
            skipped_ticks: scheduled - last - 1,
        };
        Some(TickRecord {
            // SAFETY: this thread holds the record's hand-over (HANDED); the payload is
            // dropped only by an end, which waits for the record's completion.
            payload: unsafe { self.slots.payload(p.slot) }.clone(),
            tick,
            token: word::token(p.slot, handed),
            timer: TimerId::new(p.slot, word::generation(handed)),
            owner: owner.id.load(Relaxed),
            key: slot.key.load(Relaxed),
            runtime: self.id,
            queued: handed,
            // An AtomicU64 has the layout of a u64: its address is the word's.
            word: &slot.word as *const _ as usize,
            lease: &owner.deadline as *const _ as usize,
        })
    }
}

impl<P> Shared<P> {
    /// The start check (T1, T2, T6) and claim of a handed-over record: its generation is
    /// still current and not cancelled, its owner's lease runs, and nobody started it yet.
    /// Marks this thread as running it until it completes it.
    pub(crate) fn start(&self, timer: TimerId, handed: u64) -> Result<()> {
        let slot = self.slots.get(timer.slot()).ok_or(Error::StaleHandle)?;
        if word::generation(handed) != timer.generation() {
            return Err(Error::StaleHandle);
        }
        let owner = self.owners.entry(slot.owner_index());
        let deadline = owner.deadline.load(Acquire);
        if deadline != NO_DEADLINE && deadline <= self.now() {
            return Err(Error::LeaseExpired);
        }
        if !word::start(&slot.word, handed) {
            return Err(Error::StaleHandle);
        }
        CURRENT_CALLBACK.with(|c| c.set((self.id, timer.slot(), timer.generation())));
        Ok(())
    }

    /// Whether a handed-over record could still start (see [`crate::Runtime::startable`]).
    pub(crate) fn startable(&self, timer: TimerId, handed: u64) -> bool {
        let Some(slot) = self.slots.get(timer.slot()) else {
            return false;
        };
        if slot.word.load(Acquire) != handed || word::generation(handed) != timer.generation() {
            return false;
        }
        let deadline = self.owners.entry(slot.owner_index()).deadline.load(Acquire);
        deadline == NO_DEADLINE || deadline > self.now()
    }

    /// Applies one completion; false when its token matches no record awaiting completion
    /// (counted in `invalid_completions`). Each completion stands alone: a bad one rejects
    /// nothing else.
    pub(crate) fn complete_one(&self, c: Completion, work: &mut Work) -> bool {
        let index = word::token_slot(c.token);
        let Some(slot) = self
            .slots
            .get(index)
            .filter(|_| index < self.slots.high_water())
        else {
            work.tally.add(C::invalid_completions, 1);
            return false;
        };
        let CompletionClaim::Claimed { completing, .. } =
            word::claim_completion(&slot.word, c.token)
        else {
            work.tally.add(C::invalid_completions, 1);
            return false;
        };
        CURRENT_CALLBACK.with(|cc| {
            let (rt, s, _) = cc.get();
            if rt == self.id && s == index {
                cc.set((0, 0, 0));
            }
        });
        let owner_index = slot.owner_index();
        let schedule = slot.schedule();
        let now = work.now;
        let mut deferred_retry = None;
        let delivered = matches!(c.outcome, Outcome::Ok | Outcome::Failed);
        match c.outcome {
            Outcome::Ok | Outcome::Failed => {
                let scheduled = slot.inflight.load(Relaxed);
                let last = slot.last.load(Relaxed);
                slot.last.store(scheduled, Relaxed);
                slot.delivered.fetch_add(1, Relaxed);
                work.tally.add(C::ticks_skipped, scheduled - last - 1);
                if c.outcome == Outcome::Failed {
                    work.tally.add(C::completed_failed, 1);
                    self.count_failure(index, word::generation(completing));
                } else {
                    work.tally.add(C::completed_ok, 1);
                }
                let next = schedule.after_completion(now);
                if next.base != schedule.base {
                    slot.base.store(next.base, Relaxed);
                }
            }
            Outcome::Deferred => {
                work.tally.add(C::completed_deferred, 1);
                deferred_retry = Some(schedule.retry_after_deferral(now));
            }
            Outcome::NotStarted => work.tally.add(C::not_started, 1),
        }
        let holds_gate = word::holds_gate(completing);
        if delivered && schedule.is_one_shot() {
            let (ending, _) =
                word::end_completed(&slot.word, completing, EndReason::Completed as u8);
            if holds_gate {
                self.release_gate(owner_index, work);
            }
            self.finish(index, ending, completing, true, work);
            return true;
        }
        match word::finish_completion(&slot.word, completing, deferred_retry.is_some()) {
            Ok(idle) => {
                // The gate goes to the owner's waiting timers first (oldest first), then
                // this timer is offered its next tick.
                if holds_gate {
                    self.release_gate(owner_index, work);
                }
                match deferred_retry {
                    Some(retry_at) => {
                        // Retried when the owner's gate is next released, or at the next
                        // nominal tick (T9).
                        self.enqueue_waiter(index, owner_index, false, work);
                        if let Some(t) = retry_at {
                            work.arm(index, t, idle, slot.exact());
                        }
                    }
                    None => self.try_deliver(index, work),
                }
            }
            Err((ending, _)) => {
                if holds_gate {
                    self.release_gate(owner_index, work);
                }
                self.finish(index, ending, completing, true, work);
            }
        }
        true
    }

    fn count_failure(&self, index: u32, generation: u64) {
        if self.slots.add_failure(index, generation) {
            return;
        }
        // A generation that failed 16 million times: the rest is counted in the cold table.
        self.slots.slot(index).owner.fetch_or(HAS_COLD, SeqCst);
        let mut shard = self.cold.lock(index);
        ColdTable::entry(&mut shard, index, generation).failed += 1;
    }

    /// Failed callbacks of generation `generation` in slot `index`.
    pub(crate) fn failures(&self, index: u32, generation: u64) -> u64 {
        let counted = self.slots.failures(index, generation);
        if counted < FAILURES_SATURATED || self.slots.slot(index).flags() & HAS_COLD == 0 {
            return counted;
        }
        let mut shard = self.cold.lock(index);
        counted + ColdTable::find(&mut shard, index, generation).map_or(0, |c| c.failed)
    }

    /// Applies completions one by one; returns the first token that matched no record.
    pub(crate) fn submit(&self, completions: &[Completion], work: &mut Work) -> Option<u64> {
        let mut invalid = None;
        for c in completions {
            if !self.complete_one(*c, work) && invalid.is_none() {
                invalid = Some(c.token);
            }
        }
        invalid
    }
}
