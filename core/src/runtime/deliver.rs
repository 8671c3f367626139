//! Delivery: turning a due timer into a published record (T3, T5, T6, T9), the owner's
//! gate queue, and the end of an owner's lease. Any thread may deliver — the scheduler
//! when an entry comes due, a host when its completion makes the next tick due at once or
//! frees a gate — because every step is a transition of the slot word.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use crate::clock::Nanos;
use crate::end::EndReason;
use crate::hash::hash_u64;
use crate::owner::gate::{self, Take};
use crate::owner::{EXPIRED, NO_DEADLINE};
use crate::policy::{Next, Schedule};
use crate::queue::Entry;
use crate::runtime::ready::Pending;
use crate::runtime::shared::{Shared, Work};
use crate::slot::word::{self, EndClaim};
use crate::slot::{Slot, EXACT};
use crate::stats::C;

impl Slot {
    pub(crate) fn schedule(&self) -> Schedule {
        Schedule {
            period: self.period.load(Relaxed),
            base: self.base.load(Relaxed),
            mode: self.mode.load(Relaxed),
        }
    }

    pub(crate) fn exact(&self) -> bool {
        self.flags() & EXACT != 0
    }
}

/// The ends an owner's lock holder claimed and the kept slots it gave back, finished and
/// returned once the lock is gone.
#[derive(Default)]
pub(crate) struct OwnerClaims {
    ends: Vec<(u32, u64, u64)>,
    freed: Vec<u32>,
}

impl<P> Shared<P> {
    /// Offers slot `index` its next delivery: publishes a record if a tick is due, its
    /// owner's lease runs and the gate is free; otherwise arms it for its next due time or
    /// parks it in the gate queue. Does nothing unless the slot is idle.
    pub(crate) fn try_deliver(&self, index: u32, work: &mut Work) {
        let slot = self.slots.slot(index);
        let w = slot.word.load(Acquire);
        if word::phase(w) != word::IDLE {
            return;
        }
        let owner_index = slot.owner_index();
        let owner = self.owners.entry(owner_index);
        let deadline = owner.deadline.load(Acquire);
        if deadline != NO_DEADLINE && deadline <= work.now {
            self.expire_owner(owner_index, work);
            return;
        }
        let scheduled = match slot.schedule().next(
            work.now,
            slot.last.load(Relaxed),
            slot.delivered.load(Relaxed),
        ) {
            Next::Deliver(s) => s,
            Next::At(due) => {
                work.arm(index, due, w, slot.exact());
                return;
            }
            Next::Never => return,
        };
        let take = gate::take_for_timer(&owner.gate);
        if take == Take::Busy {
            self.park(index, w, owner_index, true, work);
            return;
        }
        // Counted before the record becomes visible: once it is QUEUED, any thread may take
        // it back and count it as not started, and a snapshot that sees that count must
        // see this one (the rules in `crate::stats`).
        self.counters.add(C::records_published, 1);
        let Some(queued) = word::queue(&slot.word, w, take == Take::Taken) else {
            // Ended or moved on meanwhile: nothing was published.
            self.counters.retract_one(C::records_published);
            if take == Take::Taken {
                self.release_gate(owner_index, work);
            }
            return;
        };
        slot.inflight.store(scheduled, Relaxed);
        work.pending.push(Pending {
            slot: index,
            word: queued,
        });
    }

    /// Puts an idle slot into its owner's gate queue. With `self_serve`, serves the queue
    /// at once if the gate turned out to be free (the holder released it before seeing
    /// this waiter); a deferred tick does not (it waits for the next release).
    pub(crate) fn park(
        &self,
        index: u32,
        idle: u64,
        owner_index: u32,
        self_serve: bool,
        work: &mut Work,
    ) {
        let slot = self.slots.slot(index);
        if word::park(&slot.word, idle).is_none() {
            return; // already parked, or no longer idle
        }
        if self_serve {
            work.tally.add(C::gate_waits, 1);
        }
        self.enqueue_waiter(index, owner_index, self_serve, work);
    }

    /// Adds an already parked slot to its owner's gate queue.
    pub(crate) fn enqueue_waiter(
        &self,
        index: u32,
        owner_index: u32,
        self_serve: bool,
        work: &mut Work,
    ) {
        let owner = self.owners.entry(owner_index);
        let before = {
            let mut book = owner.book.lock();
            book.push_waiter(index, |&s| hash_u64(self.slots.slot(s).key.load(Relaxed)));
            owner
                .gate
                .fetch_or(gate::WAITERS, std::sync::atomic::Ordering::AcqRel)
        };
        if self_serve && gate::is_free(before) {
            self.serve_gate(owner_index, work);
        }
    }

    /// Offers a free gate to the owner's waiting timers, oldest first.
    pub(crate) fn serve_gate(&self, owner_index: u32, work: &mut Work) {
        let owner = self.owners.entry(owner_index);
        loop {
            let g = owner.gate.load(Acquire);
            if !gate::is_free(g) && g & gate::CONCURRENT == 0 {
                return; // the holder serves the queue when it releases the gate
            }
            let next = {
                let mut book = owner.book.lock();
                match book.pop_waiter() {
                    Some(s) => s,
                    None => {
                        owner
                            .gate
                            .fetch_and(!gate::WAITERS, std::sync::atomic::Ordering::AcqRel);
                        return;
                    }
                }
            };
            let slot = self.slots.slot(next);
            let w = slot.word.load(Acquire);
            if slot.owner_index() != owner_index || !word::is_parked(w) {
                continue; // ended or served meanwhile
            }
            if word::unpark(&slot.word, w).is_some() {
                self.try_deliver(next, work);
            }
        }
    }

    /// Releases the gate a record of owner `owner_index` held, and serves whoever waits.
    pub(crate) fn release_gate(&self, owner_index: u32, work: &mut Work) {
        let owner = self.owners.entry(owner_index);
        let before = gate::release(&owner.gate);
        if before & gate::HOST_WAITING != 0 {
            self.notify_gate_freed();
        }
        if before & gate::WAITERS != 0 {
            self.serve_gate(owner_index, work);
        }
    }

    pub(crate) fn notify_gate_freed(&self) {
        let _g = self.gate_freed.0.lock().unwrap_or_else(|e| e.into_inner());
        self.gate_freed.1.notify_all();
    }

    /// The lease of owner `owner_index` may have run out at `work.now`: if so, marks it
    /// expired and ends every timer of that authority with `LeaseExpired` (T6). Safe to
    /// call from any thread, any number of times.
    ///
    /// The caller may have read the deadline of an authority that is gone: a record of a
    /// released owner whose index a new owner has taken since. Ends are claimed under the
    /// owner lock, which an acquisition holds while it sets the new authority's deadline,
    /// and only while the index's authority is the expired one; they are finished after
    /// the lock (release hooks are host code).
    pub(crate) fn expire_owner(&self, owner_index: u32, work: &mut Work) {
        let owner = self.owners.entry(owner_index);
        if !owner.expire_if_due(work.now) {
            return;
        }
        let claims = {
            let mut book = owner.book.lock();
            if owner.deadline.load(Acquire) != EXPIRED {
                return; // acquired again since: its timers are a new authority's
            }
            self.claim_all_locked(&mut book, EndReason::LeaseExpired)
        };
        self.finish_claims(claims, work);
    }

    /// Claims the end of every generation in an owner's key table (the caller holds the
    /// owner lock) and gives back the slots of its kept ends; returns what this thread
    /// must finish once the lock is gone ([`Shared::finish_claims`]). Afterwards the table
    /// holds no idle generation, so no kept end can follow.
    pub(crate) fn claim_all_locked(
        &self,
        book: &mut crate::owner::OwnerBook,
        reason: EndReason,
    ) -> OwnerClaims {
        let mut claims = OwnerClaims::default();
        for s in book.key_slots() {
            let w = self.slots.slot(s).word.load(Acquire);
            if word::is_live(w) {
                if let EndClaim::Claimed { ending, from } = word::claim_end(
                    &self.slots.slot(s).word,
                    word::generation(w),
                    reason as u8,
                    false,
                ) {
                    claims.ends.push((s, ending, from));
                    continue;
                }
            }
            // Ended, perhaps by a kept end just now.
            claims.freed.extend(self.give_back_kept(book, s, true));
        }
        claims
    }

    /// Finishes what [`Shared::claim_all_locked`] claimed (after the owner's lock).
    pub(crate) fn finish_claims(&self, claims: OwnerClaims, work: &mut Work) {
        self.return_slots(claims.freed);
        for (slot, ending, from) in claims.ends {
            self.finish(slot, ending, from, false, work);
        }
    }

    /// A lease entry came due: expire the owner if its lease really ended, re-arm if it was
    /// renewed. Entries of an authority that is gone (a new acquisition, a forgotten owner
    /// whose index another owner reuses) carry an old fence and are dropped.
    pub(crate) fn lease_due(&self, e: Entry, work: &mut Work) {
        let index = e.target & !crate::queue::OWNER_TARGET;
        let Some(owner) = self.owners.get(index) else {
            return;
        };
        if owner.lease_fence.load(Acquire) != e.tag {
            work.tally.add(C::stale_entries_dropped, 1);
            return;
        }
        let deadline = owner.deadline.load(Acquire);
        if deadline == NO_DEADLINE || deadline == EXPIRED {
            return;
        }
        if deadline > work.now {
            self.arm_lease(index, deadline, e.tag, work);
        } else {
            self.expire_owner(index, work);
        }
    }

    pub(crate) fn arm_lease(&self, owner_index: u32, deadline: Nanos, fence: u32, work: &mut Work) {
        work.arms.push((
            Entry {
                due: deadline,
                target: owner_index | crate::queue::OWNER_TARGET,
                tag: fence,
            },
            false,
        ));
    }
}
