//! Spot work as the host sees it: a message or a timer tick, handed over in the same batch
//! and completed the same way. A tick is one record of the timer runtime; the messages of
//! a burst share one (see `burst`).

use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::{Completion, Outcome, Tick, TickRecord};

use crate::burst::{Burst, Standing};
use crate::kind::SpotId;
use crate::lane::LaneKind;
use crate::timer_work::Work;

/// One message taken from a Spot's lane.
#[derive(Debug)]
pub struct MessageRecord {
    /// The burst it was handed over in, and its place there.
    pub(crate) burst: Arc<Burst>,
    pub(crate) index: u32,
    pub(crate) spot: SpotId,
    pub(crate) generation: u64,
    pub(crate) lane: LaneKind,
    pub(crate) payload: Box<[u8]>,
    pub(crate) cost: u64,
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
    /// cannot be deferred: `Deferred` ends it as not started (counted as dropped). The
    /// next message of its burst may start from here on, on any thread.
    pub fn complete(&self, outcome: Outcome) -> SpotCompletion {
        let outcome = match outcome {
            Outcome::Deferred => Outcome::NotStarted,
            o => o,
        };
        self.burst.ended(self.index);
        let core = self.burst.core();
        SpotCompletion {
            core: core.complete(outcome),
            timer: core.timer_id(),
            spot: self.spot,
            generation: self.generation,
            lane: self.lane,
            cost: self.cost,
            message: true,
            index: self.index,
        }
    }
}

/// One tick of a Spot's timer.
#[derive(Debug)]
pub struct SpotTick {
    /// Its Spot (a tick of a Spot that closed since it was handed over does not start).
    pub(crate) standing: Arc<dyn Standing>,
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
            index: 0,
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
    /// A copy without the message's bytes, to complete the record later (a record a host
    /// keeps past its handler's return): completing either completes the record; complete
    /// it once.
    pub fn detached_copy(&self) -> SpotRecord {
        match self {
            SpotRecord::Message(m) => SpotRecord::Message(MessageRecord {
                burst: m.burst.clone(),
                index: m.index,
                spot: m.spot,
                generation: m.generation,
                lane: m.lane,
                payload: Box::default(),
                cost: m.cost,
            }),
            SpotRecord::Tick(t) => SpotRecord::Tick(SpotTick {
                standing: t.standing.clone(),
                spot: t.spot,
                generation: t.generation,
                user: t.user,
                cost: t.cost,
                core: t.core.clone(),
            }),
        }
    }

    /// The record's token: unique among the records awaiting completion (the messages of
    /// a burst share the runtime's record, whose token they vary by their place).
    pub fn token(&self) -> u64 {
        match self {
            SpotRecord::Message(m) => m.burst.core().token() ^ u64::from(m.index),
            SpotRecord::Tick(t) => t.core.token(),
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
    /// A message's place in its burst.
    pub(crate) index: u32,
}

/// How long a caller waits for another caller's creation of the same id.
pub(crate) const DEFAULT_CREATION_WAIT: Duration = Duration::from_secs(5);
