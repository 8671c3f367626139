//! The end of a generation (contract T2): claiming it, finishing it (release hook, payload,
//! accounting, the one terminal result, the key table), and waiting for it. Whichever
//! thread claims the end finishes it: the canceller for an idle timer, the host that
//! completes a record whose end was requested, the scheduler for an expired lease. No end
//! waits for the scheduler.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::time::Instant;

use crate::cold::ColdTable;
use crate::end::{EndReason, EndResult};
use crate::error::Error;
use crate::hash::hash_u64;
use crate::runtime::shared::{Shared, Work};
use crate::slot::succession;
use crate::slot::word::{self, EndClaim};
use crate::slot::{HAS_COLD, HAS_RELEASE, HAS_WAITERS, KEY_INLINE};
use crate::spec::TimerId;
use crate::stats::C;
use crate::tick::CancelNotice;

/// Runs a release function (host code): its error message, or one for a panic.
fn run_release(f: impl FnOnce() -> Result<(), String>) -> Option<String> {
    crate::spin_lock::assert_none_held("a release hook");
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => None,
        Ok(Err(msg)) => Some(msg),
        Err(_) => Some("release hook panicked".to_string()),
    }
}

/// What asking for an end found.
pub(crate) enum Ended {
    /// It has ended with this result.
    Done(EndResult),
    /// It ends once its record completes (or another thread finishes it).
    Later,
}

impl<P> Shared<P> {
    /// Asks to end generation `id` with `reason`; finishes it here if that is possible now.
    pub(crate) fn end(
        &self,
        id: TimerId,
        reason: EndReason,
        work: &mut Work,
    ) -> Result<Ended, Error> {
        let slot = self.slots.get(id.slot()).ok_or(Error::StaleHandle)?;
        if self.end_is_quiet(slot) {
            if let Some((ended, from)) =
                word::end_idle(&slot.word, id.generation(), reason as u8, false)
            {
                self.account_end(id.slot(), reason as u8, from, work);
                self.after_end(id.slot(), ended, from, false, work);
                return Ok(Ended::Done(self.result_of(id.slot(), ended)));
            }
        }
        match word::claim_end(&slot.word, id.generation(), reason as u8, false) {
            EndClaim::Claimed { ending, from } => {
                let ended = self.finish(id.slot(), ending, from, false, work);
                Ok(Ended::Done(self.result_of(id.slot(), ended)))
            }
            EndClaim::Pending | EndClaim::Ending => Ok(Ended::Later),
            EndClaim::Ended(w) => Ok(Ended::Done(self.result_of(id.slot(), w))),
            EndClaim::Stale => self.stale_result(id).map(Ended::Done),
        }
    }

    /// What a generation gets whose slot no longer holds it: `Superseded` when a
    /// re-registration took the slot in place ([`word::superseded_in_place`]), else
    /// `Error::StaleHandle`.
    pub(crate) fn stale_result(&self, id: TimerId) -> Result<EndResult, Error> {
        let current = self
            .slots
            .get(id.slot())
            .map(|s| word::generation(s.word.load(Acquire)));
        if current.is_some_and(|c| word::superseded_in_place(id.generation(), c)) {
            Ok(Ok(EndReason::Superseded))
        } else {
            Err(Error::StaleHandle)
        }
    }

    /// Ends idle generation `id` when its end runs nothing ([`Shared::end_is_quiet`]): one
    /// compare-and-swap, the counts (in counter order, see `crate::stats`), the owner's
    /// key table and the slot's return, without a work context. Returns the ENDED word
    /// (its result: [`Shared::result_of`]); None when the generation is not idle or its
    /// end has work to run: the caller takes [`Shared::end`].
    pub(crate) fn end_quiet_idle(&self, id: TimerId, reason: EndReason) -> Option<u64> {
        self.end_idle_without_work(id, reason, HAS_COLD | HAS_RELEASE)
    }

    /// [`Shared::end_quiet_idle`] for a caller that keeps the payload: a payload release
    /// (`HAS_RELEASE`) does not keep the end off this path, and does not run — the caller,
    /// which knows the payload, releases it itself.
    pub(crate) fn end_idle_keeping_payload(&self, id: TimerId, reason: EndReason) -> Option<u64> {
        self.end_idle_without_work(id, reason, HAS_COLD)
    }

    /// Ends idle generation `id` with one compare-and-swap when its slot has none of
    /// `work_flags` and its payload no drop glue. A generation registered as one of its
    /// owner's inline keys (`KEY_INLINE`) ends kept: its owner is not touched at all — the
    /// key table goes on naming the ended slot, which stays out of use until the owner's
    /// next registration of that key, its release or the end of its authority gives it
    /// back (`Shared::give_back_kept`). A cancel in random order over many owners then
    /// touches one line of the runtime's, not two.
    fn end_idle_without_work(
        &self,
        id: TimerId,
        reason: EndReason,
        work_flags: u32,
    ) -> Option<u64> {
        let slot = self.slots.get(id.slot())?;
        let flags = slot.flags();
        if std::mem::needs_drop::<P>() || flags & work_flags != 0 {
            return None;
        }
        let keep = flags & KEY_INLINE != 0;
        let (ended, from) = word::end_idle(&slot.word, id.generation(), reason as u8, keep)?;
        let here = self.here();
        let last = slot.last.load(Relaxed);
        let due =
            slot.schedule()
                .ticks_due(self.observed_now(), last, slot.delivered.load(Relaxed));
        self.counters.add_for(here.thread, C::ticks_due, due);
        let undelivered = match reason {
            EndReason::LeaseExpired | EndReason::Revoked => C::ticks_dropped_authority,
            _ => C::ticks_discarded,
        };
        self.counters.add_for(here.thread, undelivered, due - last);
        if slot.flags() & HAS_WAITERS != 0 {
            self.unpark_waiters(slot);
        }
        if keep {
            self.counters.add_for(here.thread, C::ended, 1);
            if word::finish_kept_end(&slot.word, ended) {
                self.slots.release(here.thread, here.shard, id.slot());
            }
            return Some(ended);
        }
        // Not after a callback: no successor to release, nothing pushed.
        self.forget_key(id.slot(), from, false, &mut Vec::new());
        self.counters.add_for(here.thread, C::ended, 1);
        self.slots.release(here.thread, here.shard, id.slot());
        Some(ended)
    }

    /// Gives back slot `index`, which the key table of the owner whose lock the caller
    /// holds (`book`) names, if it holds a kept end: takes it out of the table (unless the
    /// caller already put another slot in its place, `in_table` false) and out of the
    /// owner's count. Returns the slot when the caller must return it to the free slots,
    /// once the owner's lock is gone (no spin lock nests in another); None when the slot
    /// held no kept end, or its ender still works on it (and returns it then).
    pub(crate) fn give_back_kept(
        &self,
        book: &mut crate::owner::OwnerBook,
        index: u32,
        in_table: bool,
    ) -> Option<u32> {
        let free = self.take_kept_hold(index)?;
        if in_table {
            let key = self.slots.slot(index).key.load(Relaxed);
            book.replace_key_slot(hash_u64(key), index, None);
        }
        // A released owner is forgotten by whoever gives back its last slot's hold: the
        // callers (registration, the end of an authority) check the count themselves.
        book.end_live();
        free
    }

    /// Takes slot `index` out of its key table's hold if it holds a kept end (the caller
    /// holds the owner's lock and takes the slot out of the table and the live count):
    /// None if it does not; else the slot when the caller must return it once the lock
    /// is gone, None inside when its ender still works on it (and returns it then).
    pub(crate) fn take_kept_hold(&self, index: u32) -> Option<Option<u32>> {
        let free_now = word::take_kept(&self.slots.slot(index).word)?;
        Some(free_now.then_some(index))
    }

    /// Returns slots that [`Shared::give_back_kept`] gave back.
    pub(crate) fn return_slots(&self, slots: impl IntoIterator<Item = u32>) {
        let here = self.here();
        for index in slots {
            self.slots.release(here.thread, here.shard, index);
        }
    }

    /// Finishes an end this thread holds (the slot word is `ending`): releases the gate a
    /// taken-back record held, accounts for every tick the generation had, runs the release
    /// hook, drops the payload, publishes the result, wakes whoever waits, updates the
    /// owner's key table and frees the slot. `after_callback`: the end follows the
    /// completion of a callback, whose key's next generation may wait for it (T3).
    /// Returns the ENDED word.
    pub(crate) fn finish(
        &self,
        index: u32,
        ending: u64,
        from: u64,
        after_callback: bool,
        work: &mut Work,
    ) -> u64 {
        let slot = self.slots.slot(index);
        let generation = word::generation(ending);
        let reason = word::reason(ending);
        if word::holds_gate(ending) {
            self.release_gate(slot.owner_index(), work);
        }
        self.account_end(index, reason, from, work);

        let mut code = reason;
        if let Some(release) = self
            .release_payload
            .as_ref()
            .filter(|_| slot.flags() & HAS_RELEASE != 0)
        {
            // SAFETY: this thread holds the generation's ENDING; its payload is live.
            let payload = unsafe { self.slots.payload(index) };
            // An ENDING word carries its end reason; a release failure is decided below.
            let why = EndReason::from_code(reason).unwrap_or(EndReason::Cancelled);
            if let Some(msg) = run_release(|| release(payload, why)) {
                self.record_cleanup_failure(index, generation, msg);
                code = word::REASON_CLEANUP_FAILED;
                work.tally.add(C::cleanup_failures, 1);
            }
        }
        if slot.flags() & HAS_COLD != 0 {
            let hook = {
                let mut shard = self.cold.lock(index);
                ColdTable::find(&mut shard, index, generation).and_then(|c| c.hook.take())
            };
            if let Some(msg) = hook.and_then(run_release) {
                if code != word::REASON_CLEANUP_FAILED {
                    self.record_cleanup_failure(index, generation, msg);
                    code = word::REASON_CLEANUP_FAILED;
                    work.tally.add(C::cleanup_failures, 1);
                }
            }
        }
        // A record the host still holds (closing) keeps its payload until the runtime is
        // dropped: the host may be cloning it right now.
        let abandoned = word::phase(from) == word::HANDED;
        if !abandoned {
            // SAFETY: this thread holds the generation's ENDING; its payload is live.
            unsafe { self.slots.drop_payload(index) };
        }
        // Sequentially consistent, pairing with waiters that flag the slot and then look at
        // its word: either they see the result, or this sees their flag.
        let ended = word::publish_end(&slot.word, ending, code, abandoned);
        self.after_end(index, ended, from, after_callback, work);
        ended
    }

    /// Does ending a generation of `slot` from IDLE run nothing — no release work for its
    /// payload, no hook or subscriber, a payload without drop glue — so that it may go
    /// IDLE → ENDED in one step ([`word::end_idle`])?
    fn end_is_quiet(&self, slot: &crate::slot::Slot) -> bool {
        !std::mem::needs_drop::<P>() && slot.flags() & (HAS_COLD | HAS_RELEASE) == 0
    }

    /// Counts every tick the generation had: delivered, skipped by the policy, or counted
    /// here as dropped or discarded; and the record its end took back or abandoned.
    fn account_end(&self, index: u32, reason: u8, from: u64, work: &mut Work) {
        let slot = self.slots.slot(index);
        let taken_back = word::phase(from) == word::QUEUED;
        let abandoned = word::phase(from) == word::HANDED;
        if taken_back {
            work.tally.add(C::not_started, 1);
            work.tally.add(C::records_taken_back, 1);
        }
        if abandoned {
            work.tally.add(C::records_abandoned, 1);
        }
        let last = slot.last.load(Relaxed);
        let mut due = slot
            .schedule()
            .ticks_due(work.now, last, slot.delivered.load(Relaxed));
        if taken_back || abandoned {
            due = due.max(slot.inflight.load(Relaxed));
        }
        work.tally.add(C::ticks_due, due);
        let undelivered = due - last;
        match EndReason::from_code(reason) {
            Some(EndReason::LeaseExpired | EndReason::Revoked) => {
                work.tally.add(C::ticks_dropped_authority, undelivered)
            }
            _ => work.tally.add(C::ticks_discarded, undelivered),
        }
    }

    /// What follows the publication of an end (`ended`, replacing `from` earlier): waking
    /// whoever waits, the owner's key table, the count, and the slot's return (unless a
    /// host still holds a record of it).
    fn after_end(&self, index: u32, ended: u64, from: u64, after_callback: bool, work: &mut Work) {
        let slot = self.slots.slot(index);
        if slot.flags() & (HAS_COLD | HAS_WAITERS) != 0 {
            self.notify_end(index, word::generation(ended), ended, work);
        }
        self.forget_key(index, from, after_callback, &mut work.retry);
        work.tally.add(C::ended, 1);
        if !word::payload_live(ended) {
            let here = self.here();
            self.slots.release(here.thread, here.shard, index);
        }
    }

    /// Keeps a failed cleanup's message for everyone who asks for the result.
    fn record_cleanup_failure(&self, index: u32, generation: u64, msg: String) {
        self.slots.slot(index).owner.fetch_or(HAS_COLD, SeqCst);
        self.cold.record_failure(index, generation, msg);
    }

    /// Wakes threads parked for the end, runs subscribers, queues cancel notices.
    pub(crate) fn notify_end(&self, index: u32, generation: u64, ended: u64, work: &mut Work) {
        let slot = self.slots.slot(index);
        if slot.flags() & HAS_COLD != 0 {
            if let Some(waiting) = self.cold.take_waiting(index, ended) {
                crate::spin_lock::assert_none_held("a subscriber");
                for s in waiting.subscribers {
                    // A subscriber is host code; one that panics must not take this thread down.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        s(&waiting.result)
                    }));
                }
                for tag in waiting.notices {
                    work.notices.push(CancelNotice {
                        timer: TimerId::new(index, generation),
                        owner: self.owners.entry(slot.owner_index()).id.load(Relaxed),
                        key: slot.key.load(Relaxed),
                        tag,
                        result: waiting.result.clone(),
                    });
                }
            }
        }
        if slot.flags() & HAS_WAITERS != 0 {
            self.unpark_waiters(slot);
        }
    }

    /// Wakes the threads parked for the end of `slot`'s generation.
    fn unpark_waiters(&self, slot: &crate::slot::Slot) {
        // SAFETY (of the key): the slot's address identifies it for as long as the runtime
        // lives; waiters park on the same address.
        unsafe {
            parking_lot_core::unpark_all(
                slot as *const _ as usize,
                parking_lot_core::DEFAULT_UNPARK_TOKEN,
            )
        };
    }

    /// Takes an ended generation out of its owner's key table. When the key already names
    /// a newer generation that waits for this one's callback (T3), that one may run now.
    /// When this generation itself was waiting behind a running one, the key names that
    /// one again, so a later registration still waits for it.
    fn forget_key(&self, index: u32, from: u64, after_callback: bool, retry: &mut Vec<u32>) {
        let slot = self.slots.slot(index);
        let owner_index = slot.owner_index();
        let owner = self.owners.entry(owner_index);
        let key = slot.key.load(Relaxed);
        let hash = hash_u64(key);
        let forget_owner = {
            let mut book = owner.book.lock();
            let inflight = slot.inflight.load(Relaxed);
            let to = succession::key_after_end(from, inflight, |p| {
                p != index && self.still_ending(p, owner_index, key)
            });
            // The key named this generation: it now names `to` (or nothing). Otherwise a
            // newer generation has the key, which may wait for this one's callback.
            if !book.replace_key_slot(hash, index, to) && after_callback {
                let successor =
                    book.find_key(hash, |s| self.slots.slot(s).key.load(Relaxed) == key);
                if let Some(s) = successor {
                    let next = self.slots.slot(s);
                    if succession::release_successor(index, &next.word, next.inflight.load(Relaxed))
                    {
                        retry.push(s);
                    }
                }
            }
            book.end_live()
        };
        if forget_owner {
            self.forget_owner(owner_index);
        }
    }

    /// Is slot `index` a generation of (owner, key) whose end is in progress (its record's
    /// callback running or completing, or its end being finished)?
    pub(crate) fn still_ending(&self, index: u32, owner_index: u32, key: u64) -> bool {
        let Some(s) = self.slots.get(index) else {
            return false;
        };
        let w = s.word.load(Acquire);
        s.owner_index() == owner_index
            && s.key.load(Relaxed) == key
            && matches!(
                word::phase(w),
                word::HANDED | word::COMPLETING | word::ENDING
            )
            && !word::is_live(w)
    }

    /// The terminal result recorded in an ENDED word of slot `index`.
    #[inline]
    pub(crate) fn result_of(&self, index: u32, ended: u64) -> EndResult {
        self.cold.result(index, ended)
    }

    /// The result of generation `id` if it has ended; `Err(StaleHandle)` when its slot
    /// has since been reused.
    pub(crate) fn end_result(&self, id: TimerId) -> Option<EndResult> {
        let Some(slot) = self.slots.get(id.slot()) else {
            return Some(Err(Error::StaleHandle));
        };
        let w = slot.word.load(Acquire);
        if word::generation(w) != id.generation() {
            if word::superseded_in_place(id.generation(), word::generation(w)) {
                return Some(Ok(EndReason::Superseded));
            }
            return Some(Err(Error::StaleHandle));
        }
        (word::phase(w) == word::ENDED).then(|| self.result_of(id.slot(), w))
    }

    /// Parks the calling thread until generation `id` has ended or `deadline` passes.
    /// None on timeout.
    pub(crate) fn wait_end(&self, id: TimerId, deadline: Option<Instant>) -> Option<EndResult> {
        let slot = self.slots.get(id.slot())?;
        // Sequentially consistent, pairing with `publish_end`: see `finish`.
        slot.owner.fetch_or(HAS_WAITERS, SeqCst);
        loop {
            if let Some(r) = self.end_result(id) {
                return Some(r);
            }
            let key = slot as *const _ as usize;
            let validate = || {
                let w = slot.word.load(SeqCst);
                word::generation(w) == id.generation() && word::phase(w) != word::ENDED
            };
            // SAFETY: the key is the slot's address (see `notify_end`); the callbacks do not
            // call into parking_lot.
            let r = unsafe {
                parking_lot_core::park(
                    key,
                    validate,
                    || {},
                    |_, _| {},
                    parking_lot_core::DEFAULT_PARK_TOKEN,
                    deadline,
                )
            };
            if matches!(r, parking_lot_core::ParkResult::TimedOut) {
                return self.end_result(id);
            }
        }
    }

    /// Registers `f` to run with the result of generation `id` (now, if it has ended).
    pub(crate) fn subscribe(&self, id: TimerId, f: crate::cold::Subscriber) {
        let Some(slot) = self.slots.get(id.slot()) else {
            f(&Err(Error::StaleHandle));
            return;
        };
        // Sequentially consistent, pairing with `publish_end`: see `finish`.
        slot.owner.fetch_or(HAS_COLD, SeqCst);
        let mut f = Some(f);
        let ended = self
            .cold
            .result_or_file(id.slot(), id.generation(), &slot.word, |c| {
                c.subscribers.extend(f.take())
            });
        if let (Some(r), Some(f)) = (ended, f) {
            f(&r);
        }
    }

    /// Asks for a cancel notice with `tag` when generation `id` ends; the result when it
    /// already has.
    pub(crate) fn notice(&self, id: TimerId, tag: u64) -> Option<EndResult> {
        let Some(slot) = self.slots.get(id.slot()) else {
            return Some(Err(Error::StaleHandle));
        };
        // Sequentially consistent, pairing with `publish_end`: see `finish`.
        slot.owner.fetch_or(HAS_COLD, SeqCst);
        self.cold
            .result_or_file(id.slot(), id.generation(), &slot.word, |c| {
                c.notices.push(tag)
            })
    }
}
