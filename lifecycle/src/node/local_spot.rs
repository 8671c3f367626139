//! A Spot active on this node (`LocalSpot`) and what its mutex guards (`SpotState`): its
//! work — lanes' use, queued messages and their doorbell, the record in the host's hands.
//! The ground rules are the node's (see `node`).

use std::sync::atomic::AtomicU16;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::Mutex;
use spot_timer_core::{Nanos, Owner};

use super::close_state::CloseState;
use super::pending::{Pending, Queues, NOTHING_IN_HAND};
use crate::catalog::{Catalog, Place, BUSY};
use crate::kind::{SpotId, SpotKind};
use crate::lane::{LaneKind, LaneUse};
use crate::timer_work::Work;

/// What a Spot holds, under its mutex.
pub(crate) struct SpotState {
    /// Its work; none while it has none (an idle Spot keeps no lanes, queues or burst).
    pub(super) pending: Option<Box<Pending>>,
}

impl SpotState {
    /// The Spot's work, made present (empty) if it had none.
    pub(super) fn pending(&mut self) -> &mut Pending {
        self.pending.get_or_insert_with(Box::default)
    }

    /// Lets go of the Spot's work once it holds none, so an idle Spot keeps no box.
    /// Called after every change that can empty it.
    pub(super) fn settle(&mut self) {
        if self.pending.as_ref().is_some_and(|p| p.is_empty()) {
            self.pending = None;
        }
    }

    /// The token of the runtime's record in the host's hands (`NOTHING_IN_HAND`: none).
    pub(super) fn in_hand(&self) -> u64 {
        self.pending.as_ref().map_or(NOTHING_IN_HAND, |p| p.in_hand)
    }

    /// The queued messages (none when the Spot has no work).
    pub(super) fn queues(&self) -> Option<&Queues> {
        self.pending.as_ref().map(|p| &p.queues)
    }

    pub(super) fn lane_use(&self, lane: LaneKind) -> LaneUse {
        self.pending
            .as_ref()
            .map_or_else(LaneUse::default, |p| match lane {
                LaneKind::Application => p.application,
                LaneKind::Lifecycle => p.lifecycle,
            })
    }

    pub(super) fn quiescent(&self) -> bool {
        self.pending
            .as_ref()
            .is_none_or(|p| p.in_flight == 0 && p.application.items == 0 && p.lifecycle.items == 0)
    }
}

/// A Spot active on this node.
pub(crate) struct LocalSpot {
    pub(super) generation: u64,
    /// The epoch of its authority (the authority's node is this node: a reservation is
    /// made for the node that asks, see `Node::activate_once`).
    pub(super) epoch: u64,
    /// Its owner in the timer runtime, whose id is the Spot's (`LocalSpot::id`).
    pub(super) owner: Owner<Work>,
    pub(super) state: Mutex<SpotState>,
    /// Its place in the eviction catalog (evictable Spots), where its activity is noted
    /// under `state`'s lock until it leaves the catalog (`CloseState::leave_catalog`).
    pub(super) place: Option<Place>,
    /// Doorbells rung so far: the next one's key. Only a couple of a Spot's doorbells
    /// live at once (one rung, one in the host's hands), so 16 bits never give a live
    /// one's key again.
    doorbells: AtomicU16,
    /// Its kind's ABI number (see `LocalSpot::kind`): one byte where `SpotKind` takes
    /// four.
    kind: u8,
    /// Whether a close is in progress (changed under `state`'s lock; read without it by
    /// the start check, which records of the Spot reach through `Standing`), the reason
    /// of a close waiting for the Spot's gate, and whether it left the catalog.
    pub(super) close: CloseState,
}

impl std::fmt::Debug for LocalSpot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSpot")
            .field("id", &self.id())
            .field("kind", &self.kind())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl crate::burst::Standing for LocalSpot {
    fn closing(&self) -> bool {
        self.close.closing()
    }

    fn authority_holds(&self) -> bool {
        self.owner.check().is_ok()
    }
}

impl LocalSpot {
    pub(super) fn new(
        kind: SpotKind,
        generation: u64,
        epoch: u64,
        owner: Owner<Work>,
        place: Option<Place>,
    ) -> Self {
        Self {
            generation,
            epoch,
            owner,
            state: Mutex::new(SpotState { pending: None }),
            place,
            doorbells: AtomicU16::new(0),
            kind: kind as u8,
            close: CloseState::default(),
        }
    }

    /// The Spot's id (its owner's in the timer runtime).
    pub(super) fn id(&self) -> SpotId {
        SpotId(self.owner.id())
    }

    pub(super) fn kind(&self) -> SpotKind {
        SpotKind::from_u32(self.kind.into()).expect("set from a SpotKind")
    }

    /// The key of the next doorbell.
    pub(super) fn next_doorbell(&self) -> u16 {
        self.doorbells.fetch_add(1, Relaxed)
    }

    /// The Spot has work queued or handed over (noted in `catalog`, the node's; `_st`: its
    /// state, its lock held).
    pub(super) fn mark_busy(&self, _st: &SpotState, catalog: &Catalog<Arc<LocalSpot>>) {
        if let Some(p) = self.catalog_place() {
            catalog.set(p, BUSY);
        }
    }

    /// Work of the Spot completed at `now`: idle from now if none is left (`st`: its
    /// state, its lock held).
    pub(super) fn note_finished(
        &self,
        st: &SpotState,
        catalog: &Catalog<Arc<LocalSpot>>,
        now: Nanos,
    ) {
        if let Some(p) = self.catalog_place().filter(|_| st.quiescent()) {
            catalog.set(p, now);
        }
    }

    /// How long the Spot has been quiescent at `now` (None: busy, or not evictable; `_st`:
    /// its state, its lock held).
    pub(super) fn idle_for(
        &self,
        _st: &SpotState,
        catalog: &Catalog<Arc<LocalSpot>>,
        now: Nanos,
    ) -> Option<Nanos> {
        let since = catalog.get(self.catalog_place()?);
        (since != BUSY).then(|| now.saturating_sub(since))
    }

    /// Its place, while it has not left the catalog.
    fn catalog_place(&self) -> Option<&Place> {
        self.place.as_ref().filter(|_| !self.close.left_catalog())
    }

    /// Takes the Spot out of the catalog, once (`_st`: its state, its lock held, so no
    /// activity is noted in the place after it is freed).
    pub(super) fn leave_catalog(&self, _st: &SpotState, catalog: &Catalog<Arc<LocalSpot>>) {
        if let Some(p) = &self.place {
            if self.close.leave_catalog() {
                catalog.remove(p);
            }
        }
    }

    pub(super) fn lane_use(&self, lane: LaneKind) -> LaneUse {
        self.state.lock().lane_use(lane)
    }
}

// An idle Spot costs the node this object (plus the Arc's two counters): keep it from
// growing back.
const _: () = assert!(std::mem::size_of::<LocalSpot>() <= 64);
const _: () = assert!(std::mem::size_of::<SpotState>() <= 8);
