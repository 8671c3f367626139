//! Every error of the lifecycle layer, each naming what refused.

use std::fmt;
use std::sync::Arc;

use crate::kind::{SpotId, SpotKind};

/// The queue that refused an admission (L6): never one merged error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Queue {
    /// The Spot's application lane (messages and timer ticks).
    ApplicationLane,
    /// The Spot's lifecycle lane.
    LifecycleLane,
    /// The node's inbound byte budget (payload bytes pending on the whole node).
    NodeInbound,
    /// The node's active-Spot cap (a new activation).
    Activation,
}

impl fmt::Display for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Queue::ApplicationLane => "application lane",
            Queue::LifecycleLane => "lifecycle lane",
            Queue::NodeInbound => "node inbound",
            Queue::Activation => "activation",
        })
    }
}

/// Why a route was stale (L4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleReason {
    /// The receiving node is not the Spot's owner (any more).
    NotOwner,
    /// The owner's lease has run out.
    LeaseExpired,
    /// The Spot is closing (eviction or an explicit close is in progress).
    Closing,
}

impl fmt::Display for StaleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StaleReason::NotOwner => "the receiving node does not own it",
            StaleReason::LeaseExpired => "its owner's lease has run out",
            StaleReason::Closing => "it is closing",
        })
    }
}

/// An error of the lifecycle layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LifecycleError {
    /// No Spot with this id exists; an ordinary send or lookup never creates one (L3).
    #[error("spot {0} not found (an ordinary send never creates a spot)")]
    NotFound(SpotId),
    /// The message reached a node that cannot run it; it did not run and is not retried
    /// (L4).
    #[error("stale route to spot {spot}: {reason}")]
    StaleRoute {
        /// The Spot addressed.
        spot: SpotId,
        /// What the receiving node found.
        reason: StaleReason,
    },
    /// A bounded queue refused the work (L5, L6).
    #[error("capacity exceeded: {queue}")]
    CapacityExceeded {
        /// Which queue refused.
        queue: Queue,
    },
    /// The Spot's owner cannot be used or reached now (an authority exists but its node is
    /// down, the store cannot be reached, the request's answer was lost); no creation was
    /// started (L3). Says whether the request may have run: a request that did not run
    /// may be made again; one that may have run is the application's to judge.
    #[error("spot {spot} is unavailable: {evidence}; {}", ran_text(*may_have_run))]
    Unavailable {
        /// The Spot addressed.
        spot: SpotId,
        /// Why the owner is known to be unusable.
        evidence: Arc<str>,
        /// False: the request did not run anywhere. True: it may have run (its answer was
        /// lost on the way back).
        may_have_run: bool,
    },
    /// The Spot's factory failed; the creation's reservation was released.
    #[error("creating spot {spot} failed: {message}")]
    CreationFailed {
        /// The Spot being created.
        spot: SpotId,
        /// The factory's message.
        message: Arc<str>,
    },
    /// The id names a Spot of another kind.
    #[error("spot {spot} is of kind {actual:?}, not {expected:?}")]
    WrongKind {
        /// The Spot addressed.
        spot: SpotId,
        /// The kind the call is for.
        expected: SpotKind,
        /// The Spot's kind.
        actual: SpotKind,
    },
    /// A kind number that is not Entry (1), User (2) or Instance (3).
    #[error("invalid spot kind {0} (1 = Entry, 2 = User, 3 = Instance)")]
    InvalidKind(u32),
    /// A bad argument, with what was wrong.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The Location Store could not be used.
    #[error("location store: {0}")]
    Store(Arc<str>),
    /// The node has been closed.
    #[error("the node is closed")]
    Closed,
    /// An error of the timer runtime underneath.
    #[error(transparent)]
    Timer(#[from] spot_timer_core::Error),
}

fn ran_text(may_have_run: bool) -> &'static str {
    if may_have_run {
        "the request may have run (its answer was lost) and is not retried"
    } else {
        "the request did not run"
    }
}

impl LifecycleError {
    /// `Unavailable`: the request did not run.
    pub fn unavailable(spot: SpotId, evidence: impl Into<Arc<str>>) -> Self {
        LifecycleError::Unavailable {
            spot,
            evidence: evidence.into(),
            may_have_run: false,
        }
    }

    /// True when the request certainly did not run: a refusal a route refresh may follow.
    pub(crate) fn did_not_run(&self) -> bool {
        match self {
            LifecycleError::Unavailable { may_have_run, .. } => !may_have_run,
            LifecycleError::StaleRoute { .. } => true,
            _ => false,
        }
    }
}

impl From<crate::kind::InvalidKindNumber> for LifecycleError {
    fn from(e: crate::kind::InvalidKindNumber) -> Self {
        LifecycleError::InvalidKind(e.0)
    }
}

/// The lifecycle layer's result.
pub type Result<T, E = LifecycleError> = std::result::Result<T, E>;
