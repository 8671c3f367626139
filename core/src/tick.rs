//! What the host sees of one callback start: tick info, records and completions.

use std::sync::Arc;

use crate::cancel::EndResult;
use crate::timer::{TimerCell, TimerId, TimerKey};
use crate::OwnerId;

/// Tick info (SPEC T4): the only timing contract the host observes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tick {
    /// 1 for the first callback started in this generation, then +1 per started callback.
    pub delivery_index: u64,
    /// The nominal tick this callback represents (first nominal due = 1).
    pub scheduled_index: u64,
    /// Nominal ticks between the previous delivery and this one that got no callback.
    pub skipped_ticks: u64,
}

/// How a host reports the end of a delivered record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Outcome {
    /// The callback ran and returned normally.
    Ok = 0,
    /// The callback ran and failed (raised, threw, returned an error). It still counts as
    /// delivered: the tick is not retried.
    Failed = 1,
    /// The host could not get the owner's execution permission; the tick is kept, not
    /// counted as delivered, and retried at the next opportunity (SPEC T9).
    Deferred = 2,
    /// The host did not start the callback because the record went stale (cancelled,
    /// re-registered, lease over). Nothing is counted as delivered.
    NotStarted = 3,
}

impl Outcome {
    /// Decodes a wire value; unknown values are rejected.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Ok),
            1 => Some(Self::Failed),
            2 => Some(Self::Deferred),
            3 => Some(Self::NotStarted),
            _ => None,
        }
    }
}

/// A completion: the token of a delivered record and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Completion {
    pub token: u64,
    pub outcome: Outcome,
}

impl Completion {
    pub fn new(token: u64, outcome: Outcome) -> Self {
        Self { token, outcome }
    }
}

pub(crate) fn make_token(slot: u32, seq: u32) -> u64 {
    (u64::from(slot) << 32) | u64::from(seq)
}

pub(crate) fn split_token(token: u64) -> (u32, u32) {
    ((token >> 32) as u32, token as u32)
}

/// One callback start handed to the host.
///
/// Clones share the timer; completing any of them completes the record.
pub struct TickRecord<P> {
    pub(crate) timer: Arc<TimerCell<P>>,
    pub(crate) tick: Tick,
    pub(crate) token: u64,
}

impl<P> Clone for TickRecord<P> {
    fn clone(&self) -> Self {
        Self {
            timer: self.timer.clone(),
            tick: self.tick,
            token: self.token,
        }
    }
}

impl<P> TickRecord<P> {
    pub fn tick(&self) -> Tick {
        self.tick
    }
    /// The token to hand back in a [`Completion`].
    pub fn token(&self) -> u64 {
        self.token
    }
    pub fn timer_id(&self) -> TimerId {
        self.timer.id
    }
    pub fn owner_id(&self) -> OwnerId {
        self.timer.owner.id
    }
    pub fn key(&self) -> TimerKey {
        self.timer.key
    }
    /// The host's payload given at registration (its handler, user data, ...).
    pub fn payload(&self) -> &P {
        &self.timer.payload
    }
    /// Completion for this record.
    pub fn complete(&self, outcome: Outcome) -> Completion {
        Completion::new(self.token, outcome)
    }
    /// The slot's atomic liveness word and the value it holds while this record's
    /// generation may start callbacks. A host that cannot call back cheaply (a managed
    /// runtime) re-checks T1 by reading the word right before starting the handler.
    pub fn live_word(&self) -> (&crate::sync::AtomicU64, u64) {
        (
            self.timer.live_word(),
            crate::table::live_value(self.timer.id.generation),
        )
    }
}

impl<P> std::fmt::Debug for TickRecord<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickRecord")
            .field("timer", &self.timer.id)
            .field("owner", &self.timer.owner.id)
            .field("key", &self.timer.key)
            .field("tick", &self.tick)
            .field("token", &format_args!("{:#x}", self.token))
            .finish()
    }
}

/// The result of a non-blocking cancel, delivered as a record (`cancel_with_notice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelNotice {
    pub timer: TimerId,
    pub owner: OwnerId,
    pub key: TimerKey,
    /// The tag the host passed when it asked for the notice.
    pub tag: u64,
    pub result: EndResult,
}

/// What a batch carries.
#[derive(Debug)]
pub enum Record<P> {
    Tick(TickRecord<P>),
    CancelDone(CancelNotice),
}

impl<P> Record<P> {
    pub fn as_tick(&self) -> Option<&TickRecord<P>> {
        match self {
            Record::Tick(t) => Some(t),
            Record::CancelDone(_) => None,
        }
    }
}
