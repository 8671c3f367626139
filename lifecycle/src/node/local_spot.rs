//! A Spot active on this node (`LocalSpot`) and what its mutex guards (`SpotState`): its
//! lanes' use, its queued messages and their doorbell, the record in the host's hands and
//! its place in the eviction catalog. The ground rules are the node's (see `node`).

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;
use spot_timer_core::{Nanos, Owner};

use super::config::CloseReason;
use crate::catalog::{Place, BUSY};
use crate::kind::{SpotId, SpotKind};
use crate::lane::{LaneKind, LaneUse};
use crate::store::Authority;
use crate::timer_work::Work;

/// One queued message.
pub(super) struct Item {
    pub(super) payload: Box<[u8]>,
    pub(super) cost: u64,
}

/// A Spot's queued messages, one FIFO per lane, and the doorbell rung for them.
#[derive(Default)]
pub(super) struct Queues {
    pub(super) application: VecDeque<Item>,
    pub(super) lifecycle: VecDeque<Item>,
    /// The doorbell rung for the queued messages and not handed over yet (cancelled when
    /// they are dropped).
    pub(super) doorbell: Option<spot_timer_core::TimerId>,
}

impl Queues {
    pub(super) fn len(&self) -> usize {
        self.application.len() + self.lifecycle.len()
    }
}

/// What a Spot holds, under its mutex.
pub(crate) struct SpotState {
    pub(super) application: LaneUse,
    pub(super) lifecycle: LaneUse,
    /// The queued messages; none while nothing is queued (an idle Spot keeps no queue).
    pub(super) queues: Option<Box<Queues>>,
    /// Records of this Spot handed to the host and not yet completed.
    pub(super) in_flight: u32,
    /// Messages of the burst in flight not yet completed: its doorbell's record completes
    /// (and frees the gate) with the last of them.
    pub(super) burst_left: u32,
    /// The token of the runtime's record in the host's hands (a tick, or the doorbell of
    /// a burst; `NOTHING_IN_HAND`: none): the Spot's serial gate lets only one be out at a
    /// time. A completion for any other record, or a second one for a message
    /// (`burst_done`), is refused.
    pub(super) in_hand: u64,
    /// The messages of the burst in hand that have completed (bit = place in the burst).
    pub(super) burst_done: u64,
    /// Doorbells rung so far (their keys).
    pub(super) doorbells: u32,
    /// A close is in progress: nothing more is admitted.
    pub(super) closing: bool,
    /// A close waiting for the record that holds the Spot's gate to complete.
    pub(super) close_pending: Option<CloseReason>,
    /// Its place in the eviction catalog (evictable Spots), where its activity is noted
    /// under this lock; taken out when it leaves the catalog.
    pub(super) place: Option<Place>,
}

/// `SpotState::in_hand` when no record is (a token names a slot below 2^24 in its top
/// half, so it is never this).
pub(super) const NOTHING_IN_HAND: u64 = u64::MAX;

impl SpotState {
    pub(super) fn quiescent(&self) -> bool {
        self.in_flight == 0 && self.application.items == 0 && self.lifecycle.items == 0
    }

    /// The Spot has work queued or handed over.
    pub(super) fn mark_busy(&self) {
        if let Some(p) = &self.place {
            p.set(BUSY);
        }
    }

    /// Work of the Spot completed at `now`: idle from now if none is left.
    pub(super) fn note_finished(&self, now: Nanos) {
        if let Some(p) = self.place.as_ref().filter(|_| self.quiescent()) {
            p.set(now);
        }
    }

    /// How long the Spot has been quiescent at `now` (None: busy, or not evictable).
    pub(super) fn idle_for(&self, now: Nanos) -> Option<Nanos> {
        let since = self.place.as_ref()?.get();
        (since != BUSY).then(|| now.saturating_sub(since))
    }
}

/// A Spot active on this node.
pub(crate) struct LocalSpot {
    pub(super) id: SpotId,
    pub(super) kind: SpotKind,
    pub(super) generation: u64,
    pub(super) authority: Authority,
    pub(super) owner: Owner<Work>,
    pub(super) state: Mutex<SpotState>,
    /// Mirrors `state.closing` for the start check, which takes no lock (records of the
    /// Spot reach it through `Standing`).
    pub(super) closing: AtomicBool,
}

impl std::fmt::Debug for LocalSpot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSpot")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl crate::burst::Standing for LocalSpot {
    fn closing(&self) -> bool {
        self.closing.load(std::sync::atomic::Ordering::Acquire)
    }

    fn authority_holds(&self) -> bool {
        self.owner.check().is_ok()
    }
}

impl LocalSpot {
    pub(super) fn lane_use(&self, lane: LaneKind) -> LaneUse {
        let st = self.state.lock();
        match lane {
            LaneKind::Application => st.application,
            LaneKind::Lifecycle => st.lifecycle,
        }
    }

    pub(super) fn set_closing(&self, st: &mut SpotState, closing: bool) {
        st.closing = closing;
        self.closing
            .store(closing, std::sync::atomic::Ordering::Release);
    }
}
