//! Registration on the calling thread: a slot from the thread's free queue, the owner's
//! key table under the owner's lock, one entry in the thread's shard of the deadline
//! queue. The scheduler hears of it only if the new deadline is earlier than its sleep; a
//! timer already due when it is registered is delivered by the registering thread itself
//! (`Shared::try_deliver`, which any thread may run), and the scheduler hears nothing.

use std::sync::atomic::Ordering::{Relaxed, Release, SeqCst};

use crate::clock::Nanos;
use crate::cold::{ColdTable, ReleaseHook};
use crate::end::EndReason;
use crate::error::{Error, Result};
use crate::hash::hash_u64;
use crate::queue::Entry;
use crate::runtime::shared::{next_generation, with_work, Here, Shared};
use crate::slot::{succession, word};
use crate::slot::{EXACT, HAS_COLD, HAS_RELEASE, KEY_INLINE};
use crate::spec::{TimerId, TimerKey, TimerSpec};
use crate::stats::C;

impl<P: Send + Sync + 'static> Shared<P> {
    /// Registers (owner, key) for authority `epoch` of the owner at `owner_index`. An
    /// existing generation of the key is superseded (T1); if its callback is running, the
    /// new one waits for it (T3). What few registrations need (a hook, a cold entry left
    /// by the slot's last generation, a superseded generation to finish, a timer due at
    /// once) is out of line, so the common path stays short. With `hold`, the slot is
    /// held for the caller (see `slot`): the generation's result stays readable until the
    /// caller gives the hold back.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn register(
        &self,
        owner_index: u32,
        epoch: u64,
        key: TimerKey,
        spec: &TimerSpec,
        payload: P,
        hook: Option<ReleaseHook>,
        hold: bool,
    ) -> Result<TimerId> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let now = self.now();
        let schedule = spec.schedule(now)?;
        // (The authority is checked under the owner's lock below: a registration that
        // lost it gives its slot back unpublished.)
        let here = self.here();
        let (index, fresh) = self.slots.allocate(here.thread, here.shard, |end| {
            self.pretouch.request(&self.me, end)
        })?;
        let slot = self.slots.slot(index);
        // A fresh slot is not read before it is written: its page may not exist yet, and a
        // read would map the shared zero page only to have the write replace it (a TLB
        // flush on every CPU running the process).
        if !fresh && slot.flags() & HAS_COLD != 0 {
            self.forget_cold(index);
        }
        let generation = next_generation();
        let exact = self.is_exact(&schedule);
        slot.key.store(key, Relaxed);
        slot.mode.store(schedule.mode, Relaxed);
        slot.base.store(schedule.base, Relaxed);
        slot.period.store(schedule.period, Relaxed);
        slot.last.store(0, Relaxed);
        slot.delivered.store(0, Relaxed);
        slot.inflight.store(0, Relaxed);
        let mut flags = owner_index | if exact { EXACT } else { 0 };
        if self.release_payload.is_some() && self.release_needed.is_none_or(|f| f(&payload)) {
            flags |= HAS_RELEASE;
        }
        if let Some(hook) = hook {
            flags |= self.attach_hook(index, generation, hook);
        }
        slot.owner.store(flags, Relaxed);
        // SAFETY: the slot is ours and unpublished; its previous payload was dropped when
        // its previous generation ended.
        unsafe { self.slots.write_payload(index, payload) };

        let hash = hash_u64(key);
        let owner = self.owners.entry(owner_index);
        let (published, superseded, closed, freed) = {
            let mut book = owner.book.lock();
            if let Err(e) = owner.check(epoch, || now) {
                drop(book);
                self.abandon_registration(here, index, generation);
                return Err(e);
            }
            // Slots of kept ends this registration gives back, returned after the lock.
            let mut freed = [None; 3];
            let mut given_up = 0;
            // One probe finds the key's slot or the place for it.
            let old = book.upsert_key(
                hash,
                index,
                |s| self.slots.slot(s).key.load(Relaxed) == key,
                |&s| hash_u64(self.slots.slot(s).key.load(Relaxed)),
                &self.owners.key_sizes,
                |s| match self.take_kept_hold(s) {
                    Some(free) => {
                        freed[given_up] = free;
                        given_up += 1;
                        true
                    }
                    None => false,
                },
            );
            let (superseded, wait_for) = match old {
                None => (None, None),
                Some(old) => {
                    let s = self.supersede_locked(old, index, owner_index, key);
                    // A kept end's slot: the table names the new one now.
                    freed[2] = self.give_back_kept(&mut book, old, false);
                    s
                }
            };
            book.add_live();
            if book.holds_inline(index) {
                slot.owner.fetch_or(KEY_INLINE, Relaxed);
            }
            if hold {
                // Before the publication, past the last way back (`abandon_registration`):
                // no end can reach the slot before its hold is counted.
                let held = self.slots.hold(index);
                debug_assert!(held, "a fresh slot takes a hold");
            }
            let w = word::fresh(generation, wait_for.is_some());
            slot.word.store(w, Release);
            // `close` sets `closed`, then takes and releases every owner's lock, then looks
            // at every slot: it sees this generation, or this sees `closed` (the lock
            // orders the two).
            let closed = self.closed.load(Relaxed);
            (w, superseded, closed, freed)
        };
        if freed != [None; 3] {
            self.return_slots(freed.into_iter().flatten());
        }
        let id = TimerId::new(index, generation);

        let first_due = schedule.first_due();
        let first_exact = self.first_is_exact(exact, first_due, now);
        if superseded.is_some() || closed {
            self.finish_registration(
                id,
                now,
                published,
                first_due,
                first_exact,
                superseded,
                closed,
            );
            return Ok(id);
        }
        // The common case needs no work context: arm, count, done.
        if word::phase(published) == word::IDLE {
            self.arm_first(here, index, now, published, first_due, first_exact);
        }
        self.counters.add_for(here.thread, C::registered, 1);
        Ok(id)
    }

    /// Is a timer of `schedule` armed to the nanosecond (its period is below the wakeup
    /// resolution)?
    #[inline]
    pub(crate) fn is_exact(&self, schedule: &crate::policy::Schedule) -> bool {
        self.manual.is_none() && schedule.period != 0 && schedule.period < self.resolution
    }

    /// A first deadline less than one resolution away (work armed for "now", a short
    /// delay) is woken for to the nanosecond: the wheel would hold it until its tick
    /// boundary, up to a whole resolution late — all of its delay, for work armed to
    /// run at once. Later deadlines of the timer follow its period's rule (`exact`).
    #[inline]
    pub(crate) fn first_is_exact(&self, exact: bool, first_due: Nanos, now: Nanos) -> bool {
        exact || (self.manual.is_none() && first_due < now.saturating_add(self.resolution))
    }

    /// Arms the first deadline of the IDLE generation just published in `index` (its
    /// word `published`) in the calling thread's shard, or delivers it here when it is
    /// already due, without a work context.
    #[inline]
    pub(crate) fn arm_first(
        &self,
        here: Here,
        index: u32,
        now: Nanos,
        published: u64,
        first_due: Nanos,
        first_exact: bool,
    ) {
        // (On the manual clock nothing is delivered before the next `advance`.)
        if self.manual.is_none() && first_due <= now {
            self.deliver_at_registration(index, now);
            return;
        }
        let entry = Entry {
            due: first_due,
            target: index,
            tag: word::tag(published),
        };
        let armed = self.shards.arm_one(here.shard, entry, first_exact);
        if let Some(wake_at) = armed.earlier {
            if self.wake_for(wake_at) {
                self.counters
                    .add_for(here.thread, C::scheduler_wakes_by_hosts, 1);
            }
        }
        if armed.grown {
            self.compact_grown(here.shard);
        }
    }

    /// Drops what an earlier generation of slot `index` left in the cold table.
    #[cold]
    fn forget_cold(&self, index: u32) {
        self.cold.lock(index).remove(&index);
    }

    /// Files generation `generation`'s release hook in the cold table; returns the slot
    /// flag that says so.
    #[cold]
    fn attach_hook(&self, index: u32, generation: u64, hook: ReleaseHook) -> u32 {
        let mut cold = self.cold.lock(index);
        ColdTable::entry(&mut cold, index, generation).hook = Some(hook);
        HAS_COLD
    }

    /// Supersedes the key's generation in slot `old` for the new one in `index` (under
    /// the owner's lock): returns the end this thread claimed, if any, and the slot whose
    /// callback the new generation must wait for (T3), which its `inflight` then names.
    #[allow(clippy::type_complexity)]
    fn supersede_locked(
        &self,
        old: u32,
        index: u32,
        owner_index: u32,
        key: TimerKey,
    ) -> (Option<(u32, u64, u64)>, Option<u32>) {
        let old_slot = self.slots.slot(old);
        let s = succession::supersede(old, &old_slot.word, old_slot.inflight.load(Relaxed), |p| {
            self.still_ending(p, owner_index, key)
        });
        if let Some(p) = s.wait_for {
            self.slots
                .slot(index)
                .inflight
                .store(succession::waits_for(p), Relaxed);
        }
        (
            s.claimed.map(|(ending, from)| (old, ending, from)),
            s.wait_for,
        )
    }

    /// A timer due when it is registered (work armed for "now"): delivered here, as the
    /// scheduler's next turn would, without waking it to do so.
    fn deliver_at_registration(&self, index: u32, now: Nanos) {
        with_work(now, |work| {
            self.try_deliver(index, work);
            self.flush(work);
        });
    }

    /// The rest of a registration that superseded a generation this thread must finish, or
    /// that raced the runtime's close (the new generation then ends at once).
    #[cold]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish_registration(
        &self,
        id: TimerId,
        now: Nanos,
        published: u64,
        first_due: Nanos,
        first_exact: bool,
        superseded: Option<(u32, u64, u64)>,
        closed: bool,
    ) {
        with_work(now, |work| {
            if let Some((old, ending, from)) = superseded {
                self.finish(old, ending, from, false, work);
            }
            if word::phase(published) == word::IDLE {
                work.arm(id.slot(), first_due, published, first_exact);
            }
            work.tally.add(C::registered, 1);
            if closed {
                let _ = self.end(id, EndReason::RuntimeClosed, work);
                work.arms.clear();
            }
            self.flush(work);
        });
    }

    /// Undoes a registration that lost its authority before it was published: the hook is
    /// dropped without being called and the payload without being used.
    fn abandon_registration(&self, here: Here, index: u32, generation: u64) {
        let slot = self.slots.slot(index);
        if slot.flags() & HAS_COLD != 0 {
            let mut cold = self.cold.lock(index);
            if ColdTable::find(&mut cold, index, generation).is_some() {
                cold.remove(&index);
            }
        }
        // SAFETY: written above, never published.
        unsafe { self.slots.drop_payload(index) };
        slot.owner.fetch_and(!HAS_COLD, SeqCst);
        self.slots.release(here.thread, here.shard, index);
    }
}
