//! What a Spot holds only while it has work (`Pending`): its lanes' use, its queued
//! messages and their doorbell, and the bookkeeping of the record in the host's hands. An
//! idle Spot holds none of it — its `SpotState` keeps the box empty — so idle Spots cost
//! the node only their identity and place.

use std::collections::VecDeque;

use crate::lane::{LaneKind, LaneUse};

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

/// `Pending::in_hand` when no record is (a token names a slot below 2^24 in its top
/// half, so it is never this).
pub(super) const NOTHING_IN_HAND: u64 = u64::MAX;

/// The work of a Spot: admitted, queued or handed to the host, and not completed.
pub(super) struct Pending {
    pub(super) application: LaneUse,
    pub(super) lifecycle: LaneUse,
    pub(super) queues: Queues,
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
}

impl Default for Pending {
    fn default() -> Self {
        Self {
            application: LaneUse::default(),
            lifecycle: LaneUse::default(),
            queues: Queues::default(),
            in_flight: 0,
            burst_left: 0,
            in_hand: NOTHING_IN_HAND,
            burst_done: 0,
        }
    }
}

impl Pending {
    pub(super) fn lane(&mut self, lane: LaneKind) -> &mut LaneUse {
        match lane {
            LaneKind::Application => &mut self.application,
            LaneKind::Lifecycle => &mut self.lifecycle,
        }
    }

    /// No work admitted, queued or handed over, and no doorbell rung: the box holds
    /// nothing a fresh one would not (`burst_done` is reset by every hand-over and read
    /// only while a record is in hand).
    pub(super) fn is_empty(&self) -> bool {
        self.in_flight == 0
            && self.application.items == 0
            && self.lifecycle.items == 0
            && self.queues.len() == 0
            && self.queues.doorbell.is_none()
            && self.in_hand == NOTHING_IN_HAND
    }
}
