//! Re-registration in place: a host that holds the id of its key's current generation and
//! registers the key again (a timeout reset, a reminder moved) gets the new generation in
//! the same slot when the old one is idle and its end runs nothing. A reset
//! ([`Shared::reset`]) goes further: the new generation keeps the old one's payload, period
//! and policy, so the old one's end has nothing to release even when its payload has
//! release work. The key table, the
//! owner's count of live generations and the slot's taken mark stay as they are; what is
//! written is the slot's own line, its payload and one deadline entry. Otherwise the
//! registration takes the ordinary path ([`Shared::register`]), with the same outcome.
//!
//! Ground rules:
//! - The old generation is claimed IDLE → ENDING ([`word::claim_idle`]) and the new one
//!   published with one swap, both under the owner's lock, as an ordinary registration
//!   publishes: registrations of the same key, the end of the owner's authority and
//!   `close` see one or the other, never a slot in between.
//! - The new generation is the old one's in-place successor ([`word::in_place_successor`]),
//!   so the old one's result — `Superseded` — stays readable from the slot's word alone
//!   ([`word::superseded_in_place`]); nothing is kept for it.
//! - Whoever asked for the old generation's end while it was being replaced (a waiter, a
//!   subscriber, a cancel notice) flagged the slot first; the swap is sequentially
//!   consistent and the flags are read after it, so each is answered here or saw the
//!   new word and read the result from it.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};

use crate::clock::Nanos;
use crate::cold::ReleaseHook;
use crate::end::EndReason;
use crate::error::{Error, Result};
use crate::policy::Schedule;
use crate::runtime::shared::{with_work, Shared};
use crate::slot::word;
use crate::slot::{Slot, EXACT, HAS_COLD, HAS_RELEASE, HAS_WAITERS, OWNER_INDEX_MASK};
use crate::spec::{TimerId, TimerKey, TimerSpec};
use crate::stats::C;

/// A live generation as a reset finds it.
struct LiveGeneration {
    owner_index: u32,
    epoch: u64,
    key: TimerKey,
    schedule: Schedule,
}

/// What a look at the previous generation's slot decided.
enum InPlace<S, P> {
    /// Registered in place (or refused, with the ordinary path's error).
    Done(Result<TimerId>),
    /// Registered in place with a payload of its own: the previous generation's, handed
    /// back, was neither released nor dropped.
    Swapped(TimerId, P),
    /// Not possible here: the successor goes to an ordinary registration.
    Elsewhere(S),
}

/// What the generation that takes a slot in place carries.
enum Successor<'a, P> {
    /// A registration's spec and payload ([`Shared::rearm`]).
    Registration(&'a TimerSpec, P),
    /// The previous generation's payload, period and policy, its first tick due this long
    /// from now ([`Shared::reset`]).
    Reset(Nanos),
    /// The previous generation's period and policy with a payload of its own, its first
    /// tick due this long from now ([`Shared::reset_swapping`]).
    ResetWith(Nanos, P),
}

/// How an in-place reset that brings its own payload went
/// ([`crate::Runtime::reset_timer_swapping`]).
#[derive(Debug)]
pub enum Swap<P> {
    /// The new generation took the previous one's slot with the payload given; the
    /// previous generation ended `Superseded`, and its payload, handed back here, was
    /// neither released nor dropped.
    Moved {
        /// The new generation.
        id: TimerId,
        /// The previous generation's payload.
        previous: P,
    },
    /// The previous generation could not move in place (its record is with a host,
    /// someone waits for its end, its slot's run of in-place generations is used up, or
    /// the runtime is closing): nothing changed, and the payload given is handed back.
    Refused(P),
}

/// How a reset went ([`crate::Runtime::reset_timer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// The new generation took the previous one's slot and kept its payload: the payload
    /// given to the call was dropped, and the previous generation's end released nothing.
    InPlace(TimerId),
    /// The previous generation could not be replaced in place (its record is with a host,
    /// or someone waits for its end): the payload given to the call was registered as a
    /// new generation of the key, which superseded it; its own payload is released with
    /// its end, as usual.
    Registered(TimerId),
}

impl Reset {
    /// The new generation's id.
    pub fn id(self) -> TimerId {
        match self {
            Reset::InPlace(id) | Reset::Registered(id) => id,
        }
    }
}

impl<P: Send + Sync + 'static> Shared<P> {
    /// Registers (owner, key) as [`Shared::register`] does; `previous` names the key's
    /// current generation as the caller knows it, whose slot the new one takes when it can.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rearm(
        &self,
        owner_index: u32,
        epoch: u64,
        previous: TimerId,
        key: TimerKey,
        spec: &TimerSpec,
        payload: P,
        hook: Option<ReleaseHook>,
    ) -> Result<TimerId> {
        if hook.is_some() {
            return self.register(owner_index, epoch, key, spec, payload, hook, false);
        }
        let successor = Successor::Registration(spec, payload);
        match self.take_in_place(owner_index, epoch, previous, key, successor, false) {
            InPlace::Done(r) => r,
            InPlace::Elsewhere(Successor::Registration(_, payload)) => {
                self.register(owner_index, epoch, key, spec, payload, None, false)
            }
            InPlace::Swapped(..) | InPlace::Elsewhere(_) => {
                unreachable!("a registration came back as another successor")
            }
        }
    }

    /// Moves live generation `previous` to a new generation of the same owner authority and
    /// key, with the same period and policy, its first tick due `delay` from now: in place
    /// keeping the payload when `previous` is idle and nobody waits for its end, else as a
    /// registration of `payload` that supersedes it. `StaleHandle` once `previous` ended.
    /// With `hold`, the new generation's slot is held for the caller, either way.
    pub(crate) fn reset(
        &self,
        previous: TimerId,
        delay: Nanos,
        payload: P,
        hold: bool,
    ) -> Result<Reset> {
        let live = self.live_generation(previous)?;
        match self.take_in_place(
            live.owner_index,
            live.epoch,
            previous,
            live.key,
            Successor::Reset(delay),
            hold,
        ) {
            InPlace::Done(r) => r.map(Reset::InPlace),
            InPlace::Swapped(..) => unreachable!("a reset keeps its payload"),
            InPlace::Elsewhere(_) => {
                let spec = TimerSpec::of_schedule(&live.schedule, delay);
                let (index, epoch, key) = (live.owner_index, live.epoch, live.key);
                self.register(index, epoch, key, &spec, payload, None, hold)
                    .map(Reset::Registered)
            }
        }
    }

    /// [`Shared::reset`] in place only, the new generation carrying `payload`; the
    /// previous generation's payload is handed back instead of released.
    pub(crate) fn reset_swapping(
        &self,
        previous: TimerId,
        delay: Nanos,
        payload: P,
    ) -> Result<Swap<P>> {
        let live = self.live_generation(previous)?;
        let successor = Successor::ResetWith(delay, payload);
        match self.take_in_place(
            live.owner_index,
            live.epoch,
            previous,
            live.key,
            successor,
            false,
        ) {
            InPlace::Swapped(id, previous) => Ok(Swap::Moved { id, previous }),
            InPlace::Done(Err(e)) => Err(e),
            InPlace::Done(Ok(_)) => unreachable!("a swapping reset hands the old payload back"),
            InPlace::Elsewhere(Successor::ResetWith(_, payload)) => Ok(Swap::Refused(payload)),
            InPlace::Elsewhere(_) => unreachable!("another successor came back"),
        }
    }

    /// What a reset needs of live generation `previous`: its owner, authority, key and
    /// schedule. `StaleHandle` once it ended.
    fn live_generation(&self, previous: TimerId) -> Result<LiveGeneration> {
        let slot = self.slots.get(previous.slot()).ok_or(Error::StaleHandle)?;
        let live = |w: u64| {
            word::generation(w) == previous.generation()
                && !matches!(word::phase(w), word::FREE | word::ENDING | word::ENDED)
        };
        if !live(slot.word.load(Acquire)) {
            return Err(Error::StaleHandle);
        }
        // Read between two looks at the word: they are `previous`'s when both see it live.
        let (owner_index, key, schedule) =
            (slot.owner_index(), slot.key.load(Relaxed), slot.schedule());
        if !live(slot.word.load(Acquire)) {
            return Err(Error::StaleHandle);
        }
        // A live generation's authority is the owner's current one (its end ends them all).
        let epoch = self.owners.entry(owner_index).epoch.load(Acquire);
        Ok(LiveGeneration {
            owner_index,
            epoch,
            key,
            schedule,
        })
    }

    /// Can generation `previous` in `slot` be superseded in place by a generation of
    /// (`owner_index`, `key`)? Its end must run nothing (no hook, subscriber or waiter; no
    /// release work and no drop glue for its payload unless the successor `keeps_payload`)
    /// and it must be idle. A look without the lock; the claim under it decides.
    #[inline]
    fn may_take_in_place(
        &self,
        slot: &Slot,
        owner_index: u32,
        key: TimerKey,
        previous: TimerId,
        keeps_payload: bool,
    ) -> bool {
        let owner = slot.owner.load(Relaxed);
        let w = slot.word.load(Relaxed);
        let ends_with_work = if keeps_payload {
            HAS_COLD | HAS_WAITERS
        } else {
            HAS_COLD | HAS_RELEASE | HAS_WAITERS
        };
        (keeps_payload || !std::mem::needs_drop::<P>())
            && owner & OWNER_INDEX_MASK == owner_index
            && owner & ends_with_work == 0
            && word::generation(w) == previous.generation()
            && word::phase(w) == word::IDLE
            && slot.key.load(Relaxed) == key
    }

    fn take_in_place<'s>(
        &self,
        owner_index: u32,
        epoch: u64,
        previous: TimerId,
        key: TimerKey,
        successor: Successor<'s, P>,
        hold: bool,
    ) -> InPlace<Successor<'s, P>, P> {
        let (Some(slot), Some(generation)) = (
            self.slots.get(previous.slot()),
            word::in_place_successor(previous.generation()),
        ) else {
            return InPlace::Elsewhere(successor);
        };
        // Neither kind of reset lets the old generation's end release or drop its payload.
        let keeps_payload = matches!(successor, Successor::Reset(_) | Successor::ResetWith(..));
        if self.is_closed()
            || !self.may_take_in_place(slot, owner_index, key, previous, keeps_payload)
            || (hold && !self.slots.may_hold_in_place(previous.slot()))
        {
            return InPlace::Elsewhere(successor);
        }
        let now = self.now();
        let schedule = match &successor {
            Successor::Registration(spec, _) => match spec.schedule(now) {
                Ok(s) => s,
                Err(e) => return InPlace::Done(Err(e)),
            },
            // The slot's period and mode are `previous`'s until its claim succeeds (only a
            // claim's holder writes them); if the claim fails, this is not used.
            Successor::Reset(delay) | Successor::ResetWith(delay, _) => Schedule {
                period: slot.period.load(Relaxed),
                mode: slot.mode.load(Relaxed),
                base: now.saturating_add(*delay),
            },
        };
        let index = previous.slot();
        let exact = self.is_exact(&schedule);
        let release = match &successor {
            Successor::Registration(_, payload) | Successor::ResetWith(_, payload) => {
                self.release_payload.is_some() && self.release_needed.is_none_or(|f| f(payload))
            }
            Successor::Reset(_) => slot.owner.load(Relaxed) & HAS_RELEASE != 0,
        };
        let here = self.here();
        let owner = self.owners.entry(owner_index);
        let (ending, published, closed, handed_back) = {
            let _book = owner.book.lock();
            if let Err(e) = owner.check(epoch, || now) {
                return InPlace::Done(Err(e));
            }
            let Some(ending) = word::claim_idle(
                &slot.word,
                previous.generation(),
                EndReason::Superseded as u8,
            ) else {
                // Delivered or ended meanwhile: the ordinary path supersedes it.
                return InPlace::Elsewhere(successor);
            };
            // The slot is ours until the swap below (ENDING): nothing reads its schedule
            // or payload, and no end can release it, so it takes the new generation's hold.
            if hold {
                let held = self.slots.hold(index);
                debug_assert!(held, "`may_hold_in_place` leaves room for one more hold");
            }
            self.account_superseded_in_place(here.thread, slot);
            slot.mode.store(schedule.mode, Relaxed);
            slot.base.store(schedule.base, Relaxed);
            slot.period.store(schedule.period, Relaxed);
            slot.last.store(0, Relaxed);
            slot.delivered.store(0, Relaxed);
            slot.inflight.store(0, Relaxed);
            let wanted = if exact { EXACT } else { 0 } | if release { HAS_RELEASE } else { 0 };
            if slot.owner.load(Relaxed) & (EXACT | HAS_RELEASE) != wanted {
                // Flags others may set meanwhile (HAS_COLD, HAS_WAITERS) are kept.
                slot.owner.fetch_and(!(EXACT | HAS_RELEASE), Relaxed);
                slot.owner.fetch_or(wanted, Relaxed);
            }
            let handed_back = match successor {
                Successor::Registration(_, payload) => {
                    // SAFETY: this thread holds the old generation's ENDING and its payload
                    // has no drop glue (`may_take_in_place`); nobody reads it before the swap.
                    unsafe { self.slots.write_payload(index, payload) };
                    None
                }
                Successor::ResetWith(_, payload) => {
                    // SAFETY: this thread holds the old generation's ENDING, and its payload
                    // is live (an idle generation's is); nobody reads it before the swap.
                    let previous = unsafe { self.slots.take_payload(index) };
                    // SAFETY: as above; the cell was emptied just now.
                    unsafe { self.slots.write_payload(index, payload) };
                    Some(previous)
                }
                Successor::Reset(_) => None,
            };
            let published = word::fresh(generation, false);
            // Sequentially consistent: see the module's ground rules.
            slot.word.swap(published, SeqCst);
            (ending, published, self.closed.load(Relaxed), handed_back)
        };
        if slot.owner.load(SeqCst) & (HAS_COLD | HAS_WAITERS) != 0 {
            self.answer_superseded_in_place(index, ending);
        }
        let id = TimerId::new(index, generation);
        let first_due = schedule.first_due();
        let first_exact = self.first_is_exact(exact, first_due, now);
        if closed {
            self.finish_registration(id, now, published, first_due, first_exact, None, true);
        } else {
            self.arm_first(here, index, now, published, first_due, first_exact);
            self.counters.add_for(here.thread, C::registered, 1);
        }
        // The old generation's end, after the new one's registration (counter order).
        self.counters.add_for(here.thread, C::ended, 1);
        match handed_back {
            Some(previous) => InPlace::Swapped(id, previous),
            None => InPlace::Done(Ok(id)),
        }
    }

    /// Counts the ticks of the idle generation in `slot` superseded in place (as a quiet
    /// end counts them, see `end_quiet_idle`): those due, the undelivered ones discarded.
    fn account_superseded_in_place(&self, thread: usize, slot: &Slot) {
        let last = slot.last.load(Relaxed);
        let due =
            slot.schedule()
                .ticks_due(self.observed_now(), last, slot.delivered.load(Relaxed));
        self.counters.add_for(thread, C::ticks_due, due);
        self.counters
            .add_for(thread, C::ticks_discarded, due - last);
    }

    /// Answers whoever asked for the end of the generation superseded in place (its
    /// ENDING word `ending`) while it was being replaced.
    #[cold]
    fn answer_superseded_in_place(&self, index: u32, ending: u64) {
        with_work(self.observed_now(), |work| {
            self.notify_end(
                index,
                word::generation(ending),
                word::ended_of(ending),
                work,
            );
            self.flush(work);
        });
    }
}
