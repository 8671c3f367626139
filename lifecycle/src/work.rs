//! Spot work as the host sees it: a message or a timer tick, each a record of the timer
//! runtime underneath, handed over in the same batch and completed the same way.

use std::time::Duration;

use spot_timer_core::{Completion, Outcome, Tick, TickRecord};

use crate::kind::SpotId;
use crate::lane::LaneKind;

/// What a record of the timer runtime stands for (its payload there).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work {
    /// One admitted message: the record's Spot runs the head of its lanes.
    Doorbell,
    /// A tick of one of the Spot's timers, with the host's value for it.
    Timer(u64),
}

/// Keys of doorbells have this bit set; the host's timer keys must not.
pub(crate) const DOORBELL_KEY: u64 = 1 << 63;

/// One message taken from a Spot's lane.
#[derive(Debug)]
pub struct MessageRecord {
    /// The Spot's closing flag (a record of a Spot that closed since it was handed over
    /// does not start).
    pub(crate) closing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) spot: SpotId,
    pub(crate) generation: u64,
    pub(crate) lane: LaneKind,
    pub(crate) payload: Box<[u8]>,
    pub(crate) cost: u64,
    pub(crate) core: TickRecord<Work>,
}

impl MessageRecord {
    /// The Spot the message was sent to.
    pub fn spot(&self) -> SpotId {
        self.spot
    }
    /// The lane it came from.
    pub fn lane(&self) -> LaneKind {
        self.lane
    }
    /// The message.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }
    /// The completion to hand back once the handler ended (or did not start). A message
    /// cannot be deferred: `Deferred` ends it as not started (counted as dropped).
    pub fn complete(&self, outcome: Outcome) -> SpotCompletion {
        let outcome = match outcome {
            Outcome::Deferred => Outcome::NotStarted,
            o => o,
        };
        SpotCompletion {
            core: self.core.complete(outcome),
            timer: self.core.timer_id(),
            spot: self.spot,
            generation: self.generation,
            lane: self.lane,
            cost: self.cost,
            message: true,
        }
    }
}

/// One tick of a Spot's timer.
#[derive(Debug)]
pub struct SpotTick {
    /// The Spot's closing flag (a record of a Spot that closed since it was handed over
    /// does not start).
    pub(crate) closing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) spot: SpotId,
    pub(crate) generation: u64,
    pub(crate) user: u64,
    pub(crate) cost: u64,
    pub(crate) core: TickRecord<Work>,
}

impl SpotTick {
    /// The Spot the timer belongs to.
    pub fn spot(&self) -> SpotId {
        self.spot
    }
    /// The timer's key.
    pub fn key(&self) -> u64 {
        self.core.key()
    }
    /// The value given when the timer was registered.
    pub fn value(&self) -> u64 {
        self.user
    }
    /// Tick information (T4).
    pub fn tick(&self) -> Tick {
        self.core.tick()
    }
    /// The completion to hand back.
    pub fn complete(&self, outcome: Outcome) -> SpotCompletion {
        SpotCompletion {
            core: self.core.complete(outcome),
            timer: self.core.timer_id(),
            spot: self.spot,
            generation: self.generation,
            lane: LaneKind::Application,
            cost: self.cost,
            message: false,
        }
    }
}

/// A unit of Spot work handed to the host.
#[derive(Debug)]
pub enum SpotRecord {
    /// A message (from `send` or `send_or_create`).
    Message(MessageRecord),
    /// A timer tick.
    Tick(SpotTick),
}

impl SpotRecord {
    /// The Spot the work belongs to.
    pub fn spot(&self) -> SpotId {
        match self {
            SpotRecord::Message(m) => m.spot,
            SpotRecord::Tick(t) => t.spot,
        }
    }
    /// The completion to hand back.
    pub fn complete(&self, outcome: Outcome) -> SpotCompletion {
        match self {
            SpotRecord::Message(m) => m.complete(outcome),
            SpotRecord::Tick(t) => t.complete(outcome),
        }
    }
    /// The record's token: unique among the records awaiting completion.
    pub fn token(&self) -> u64 {
        self.core().token()
    }
    pub(crate) fn spot_closing(&self) -> bool {
        let flag = match self {
            SpotRecord::Message(m) => &m.closing,
            SpotRecord::Tick(t) => &t.closing,
        };
        flag.load(std::sync::atomic::Ordering::Acquire)
    }
    pub(crate) fn core(&self) -> &TickRecord<Work> {
        match self {
            SpotRecord::Message(m) => &m.core,
            SpotRecord::Tick(t) => &t.core,
        }
    }
}

/// A host's report that a record's handler ended (or never started).
#[derive(Debug, Clone, Copy)]
pub struct SpotCompletion {
    pub(crate) core: Completion,
    /// The record's timer generation (ended when its Spot is closing).
    pub(crate) timer: spot_timer_core::TimerId,
    pub(crate) spot: SpotId,
    pub(crate) generation: u64,
    pub(crate) lane: LaneKind,
    pub(crate) cost: u64,
    pub(crate) message: bool,
}

/// How long a caller waits for another caller's creation of the same id.
pub(crate) const DEFAULT_CREATION_WAIT: Duration = Duration::from_secs(5);
