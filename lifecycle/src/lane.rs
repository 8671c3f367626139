//! Execution lanes (L6): a Spot's two FIFO lanes, each bounded by a count and by bytes.
//! Work reserves `payload bytes + ITEM_OVERHEAD_BYTES` when admitted and returns it at its
//! terminal completion; whichever limit would be passed first refuses the admission.

use crate::error::{LifecycleError, Queue, Result};

/// The fixed retained cost of one work item (envelope, metadata, queue node): an empty
/// payload is not free.
pub const ITEM_OVERHEAD_BYTES: u64 = 256;

/// Which of a Spot's two lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaneKind {
    /// Application work: messages and timer ticks.
    Application,
    /// Lifecycle work (served before application work).
    Lifecycle,
}

impl LaneKind {
    /// The queue named when this lane refuses work.
    pub fn queue(self) -> Queue {
        match self {
            LaneKind::Application => Queue::ApplicationLane,
            LaneKind::Lifecycle => Queue::LifecycleLane,
        }
    }
}

/// The two limits of a lane. Both are always set: no lane is unbounded (L6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneLimits {
    /// Items admitted and not yet completed.
    pub items: u64,
    /// Bytes reserved (`payload + ITEM_OVERHEAD_BYTES` per item).
    pub bytes: u64,
}

impl LaneLimits {
    /// The application lane's default: 1,024 items, 64 MiB.
    pub const APPLICATION: Self = Self {
        items: 1024,
        bytes: 64 << 20,
    };
    /// The lifecycle lane's default: 128 items, 4 MiB.
    pub const LIFECYCLE: Self = Self {
        items: 128,
        bytes: 4 << 20,
    };

    pub(crate) fn validate(&self, what: &str) -> Result<()> {
        if self.items == 0 || self.bytes < ITEM_OVERHEAD_BYTES {
            return Err(LifecycleError::InvalidArgument(format!(
                "{what}: a lane needs at least 1 item and {ITEM_OVERHEAD_BYTES} bytes \
                 (got {} items, {} bytes)",
                self.items, self.bytes
            )));
        }
        Ok(())
    }
}

/// What a lane holds now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LaneUse {
    /// Items reserved.
    pub items: u64,
    /// Bytes reserved.
    pub bytes: u64,
}

impl LaneUse {
    /// Reserves one item of `payload_len` bytes; the cost to return later, or the queue
    /// that refused.
    pub(crate) fn reserve(
        &mut self,
        limits: &LaneLimits,
        lane: LaneKind,
        payload_len: u64,
    ) -> Result<u64> {
        let cost = payload_len.saturating_add(ITEM_OVERHEAD_BYTES);
        if self.items >= limits.items || cost > limits.bytes - self.bytes.min(limits.bytes) {
            return Err(LifecycleError::CapacityExceeded {
                queue: lane.queue(),
            });
        }
        self.items += 1;
        self.bytes += cost;
        Ok(cost)
    }

    /// Returns one item's reservation.
    pub(crate) fn release(&mut self, cost: u64) {
        self.items -= 1;
        self.bytes -= cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_limit_reached_refuses_and_release_gives_back() {
        let limits = LaneLimits {
            items: 3,
            bytes: 1000,
        };
        let mut lane = LaneUse::default();
        assert_eq!(
            lane.reserve(&limits, LaneKind::Application, 100).unwrap(),
            356
        );
        // 356 + 656 > 1000: the byte limit refuses while items remain.
        assert!(lane.reserve(&limits, LaneKind::Application, 400).is_err());
        assert_eq!(lane.reserve(&limits, LaneKind::Lifecycle, 0).unwrap(), 256);
        assert_eq!(lane.reserve(&limits, LaneKind::Lifecycle, 0).unwrap(), 256);
        // Three items: the count refuses.
        assert!(matches!(
            lane.reserve(&limits, LaneKind::Lifecycle, 0),
            Err(LifecycleError::CapacityExceeded {
                queue: Queue::LifecycleLane
            })
        ));
        lane.release(356);
        assert_eq!(
            lane,
            LaneUse {
                items: 2,
                bytes: 512
            }
        );
    }
}
