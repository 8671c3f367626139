//! Where a Spot's close stands, in one byte outside its mutex: whether a close is in
//! progress (read without the lock by the start check of every record of the Spot),
//! whether it closes because its authority ended, the reason of a close waiting for the
//! record that holds the Spot's gate to complete, and whether the close has taken the Spot
//! out of the eviction catalog (its place may then be another Spot's). The node changes it
//! with the Spot's lock held, so it agrees with what the lock guards.

use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

use super::config::CloseReason;

/// The bit set while a close is in progress.
const CLOSING: u8 = 1;
/// The bits of the waiting close's reason (0: none).
const PENDING: u8 = 0b1110;
/// The bit set once the Spot has left the eviction catalog.
const LEFT_CATALOG: u8 = 0b1_0000;
/// The bit set when the close is for an authority that ended (`CloseReason::AuthorityLost`).
const LOST: u8 = 0b10_0000;

fn encode(reason: CloseReason) -> u8 {
    let n = match reason {
        CloseReason::IdleEvicted => 1,
        CloseReason::Closed => 2,
        CloseReason::NodeShutdown => 3,
        CloseReason::AuthorityLost => 4,
        CloseReason::CreationFailed => 5,
    };
    n << PENDING.trailing_zeros()
}

fn decode(bits: u8) -> Option<CloseReason> {
    match (bits & PENDING) >> PENDING.trailing_zeros() {
        0 => None,
        1 => Some(CloseReason::IdleEvicted),
        2 => Some(CloseReason::Closed),
        3 => Some(CloseReason::NodeShutdown),
        4 => Some(CloseReason::AuthorityLost),
        _ => Some(CloseReason::CreationFailed),
    }
}

/// A Spot's close state.
#[derive(Default)]
pub(super) struct CloseState(AtomicU8);

impl CloseState {
    /// A close is in progress: nothing more is admitted or started.
    pub(super) fn closing(&self) -> bool {
        self.0.load(Acquire) & CLOSING != 0
    }

    pub(super) fn set_closing(&self, closing: bool) {
        if closing {
            self.0.fetch_or(CLOSING, AcqRel);
        } else {
            self.0.fetch_and(!CLOSING, AcqRel);
        }
    }

    /// Notes that the close is for an authority that ended: refusals say the lease ran
    /// out, not that the Spot is closing.
    pub(super) fn set_lost(&self) {
        self.0.fetch_or(LOST, AcqRel);
    }

    /// Whether the close is for an authority that ended.
    pub(super) fn lost(&self) -> bool {
        self.0.load(Acquire) & LOST != 0
    }

    /// Notes a close waiting for the record that holds the Spot's gate.
    pub(super) fn set_pending(&self, reason: CloseReason) {
        let _ = self
            .0
            .fetch_update(AcqRel, Acquire, |v| Some((v & !PENDING) | encode(reason)));
    }

    /// The waiting close's reason, which is no longer noted.
    pub(super) fn take_pending(&self) -> Option<CloseReason> {
        decode(self.0.fetch_and(!PENDING, AcqRel))
    }

    /// The Spot no longer writes to its catalog place.
    pub(super) fn left_catalog(&self) -> bool {
        self.0.load(Acquire) & LEFT_CATALOG != 0
    }

    /// Notes that the Spot leaves its catalog place: true the first time only (whoever
    /// gets it frees the place).
    pub(super) fn leave_catalog(&self) -> bool {
        self.0.fetch_or(LEFT_CATALOG, AcqRel) & LEFT_CATALOG == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_bit_and_the_waiting_reason_are_independent() {
        let s = CloseState::default();
        assert!(!s.closing());
        assert_eq!(s.take_pending(), None);
        for reason in [
            CloseReason::IdleEvicted,
            CloseReason::Closed,
            CloseReason::NodeShutdown,
            CloseReason::AuthorityLost,
            CloseReason::CreationFailed,
        ] {
            s.set_closing(true);
            s.set_pending(reason);
            assert!(s.closing());
            assert_eq!(s.take_pending(), Some(reason));
            assert_eq!(s.take_pending(), None);
            assert!(s.closing());
            s.set_closing(false);
            assert!(!s.closing());
        }
        assert!(!s.left_catalog());
        assert!(s.leave_catalog());
        assert!(!s.leave_catalog());
        assert!(s.left_catalog());
        assert!(!s.closing());
        assert_eq!(s.take_pending(), None);
        assert!(!s.lost());
        s.set_lost();
        assert!(s.lost() && s.left_catalog() && !s.closing());
    }
}
