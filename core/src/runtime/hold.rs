//! Holds: a host handle that must keep reading its generation's result — a `TimerHandle`,
//! a managed `Timer` object — holds the generation's slot, and the slot serves no other
//! generation until its last hold is gone. Without a hold, an ended generation's result
//! stays readable only while its slot rests among the free ones (a thousand later
//! registrations of the shard, or more); with one, as long as the handle lives, as an
//! asyncio `TimerHandle`, a .NET `Task` or a `JoinHandle` keep theirs.
//!
//! Ground rules:
//! - A hold is taken where no end can release the slot meanwhile (see `slot`): by a
//!   registration before it publishes its generation, by a reset in place after it
//!   claimed the generation it replaces, by a clone of a handle that holds.
//! - The end of a held slot's last generation leaves the slot to the last hold given
//!   back; giving it back returns the slot then (`Shared::unhold`).
//! - A generation superseded in place by a later one of the same slot keeps its result
//!   (`Superseded`) through the slot word alone; a held slot is never taken by another
//!   registration, so that reading stays true for every generation a hold names.

use std::num::NonZeroU64;
use std::sync::atomic::Ordering::Acquire;

use crate::error::{Error, Result};
use crate::runtime::shared::Shared;
use crate::slot::word;
use crate::spec::TimerId;

/// A hold on generation `id`'s result for a host that keeps its handles by id
/// ([`crate::Owner::register_held`], [`crate::Runtime::reset_timer_held`]): while it is
/// not given back ([`crate::Runtime::release_hold`]), `id`'s result stays readable
/// ([`crate::Runtime::timer_result`]). A hold dropped without being given back keeps its
/// slot for the runtime's life (memory, never a wrong result).
#[must_use = "a hold not given back keeps its slot"]
#[derive(Debug, PartialEq, Eq)]
pub struct HeldTimer {
    pub(crate) id: TimerId,
    pub(crate) runtime: NonZeroU64,
}

impl HeldTimer {
    pub(crate) fn new<P>(rt: &Shared<P>, id: TimerId) -> Self {
        Self {
            id,
            runtime: NonZeroU64::new(rt.id).expect("runtime ids start at 1"),
        }
    }

    /// The generation it holds.
    pub fn id(&self) -> TimerId {
        self.id
    }

    /// The hold as a bare id, for a host that keeps it beside other state of its own (a
    /// managed handle object, the C ABI's `spot_timer`): give it back with
    /// [`crate::Runtime::release_hold_of`].
    pub fn into_id(self) -> TimerId {
        self.id
    }
}

impl<P: Send + Sync + 'static> Shared<P> {
    /// Gives back a hold of slot `index`; returns the slot to the free ones when it was
    /// the last hold of an ended generation. False when the slot had no hold.
    pub(crate) fn unhold(&self, index: u32) -> bool {
        match self.slots.unhold(index) {
            Some(last) => {
                if last {
                    let here = self.here();
                    self.slots.give_back(here.thread, here.shard, index);
                }
                true
            }
            None => false,
        }
    }

    /// Gives back a hold of generation `id` that a host kept as a bare id: refused
    /// (`StaleHandle`) unless `id`'s slot still holds `id` (live, ended, or superseded in
    /// place) and has a hold. A host that gives back a hold it does not have takes
    /// another holder's (whose result may then go stale early), never more.
    pub(crate) fn unhold_id(&self, id: TimerId) -> Result<()> {
        let slot = self.slots.get(id.slot()).ok_or(Error::StaleHandle)?;
        let w = slot.word.load(Acquire);
        let g = word::generation(w);
        let named = word::phase(w) != word::FREE
            && (g == id.generation() || word::superseded_in_place(id.generation(), g));
        if !named || !self.unhold(id.slot()) {
            return Err(Error::StaleHandle);
        }
        Ok(())
    }
}
