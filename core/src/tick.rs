//! What the host sees of one callback start: tick info, records and completions.

use crate::end::EndResult;
use crate::owner::OwnerId;
use crate::spec::{TimerId, TimerKey};

/// Tick info (contract T4): the only timing contract the host observes.
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
    /// counted as delivered, and retried at the next opportunity (contract T9).
    Deferred = 2,
    /// The host did not start the callback because the record went stale (cancelled,
    /// re-registered, lease over). Nothing is counted as delivered. Only for that: a record
    /// completed so while its generation is still live is offered again at once.
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
    /// The record's token ([`TickRecord::token`]).
    pub token: u64,
    /// How its callback ended.
    pub outcome: Outcome,
}

impl Completion {
    /// A completion of the record with `token`.
    pub fn new(token: u64, outcome: Outcome) -> Self {
        Self { token, outcome }
    }
}

/// Everything a host needs to decide, without calling the runtime, whether a record may
/// still start, and to claim its start: the record may start while `*word == handed`
/// and the lease has not passed (`now < *lease_deadline` on the runtime's clock); the
/// start is claimed by a compare-and-swap of `*word` from `handed` to `started`.
///
/// The pointers stay valid until the runtime is dropped (C: freed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartCheck {
    /// The slot's word.
    pub word: *const u64,
    /// Its value while this record waits to start.
    pub handed: u64,
    /// Its value once the record has started.
    pub started: u64,
    /// The owner's lease deadline (nanoseconds on the runtime's clock; `u64::MAX`: none).
    pub lease_deadline: *const u64,
}

/// One callback start handed to the host. It owns a clone of the timer's payload and
/// refers to the timer by index and generation: holding it keeps nothing else alive.
#[derive(Clone)]
pub struct TickRecord<P> {
    pub(crate) payload: P,
    pub(crate) tick: Tick,
    pub(crate) token: u64,
    pub(crate) timer: TimerId,
    pub(crate) owner: OwnerId,
    pub(crate) key: TimerKey,
    /// The runtime it belongs to (`Runtime::begin` ignores other runtimes' records).
    pub(crate) runtime: u64,
    pub(crate) queued: u64,
    pub(crate) word: usize,
    pub(crate) lease: usize,
}

impl<P> TickRecord<P> {
    /// The tick info (contract T4).
    pub fn tick(&self) -> Tick {
        self.tick
    }
    /// The token to hand back in a [`Completion`].
    pub fn token(&self) -> u64 {
        self.token
    }
    /// The generation this record belongs to.
    pub fn timer_id(&self) -> TimerId {
        self.timer
    }
    /// The owner's id.
    pub fn owner_id(&self) -> OwnerId {
        self.owner
    }
    /// The timer's key.
    pub fn key(&self) -> TimerKey {
        self.key
    }
    /// The host's payload given at registration (its handler, user data, ...).
    pub fn payload(&self) -> &P {
        &self.payload
    }
    /// Completion for this record.
    pub fn complete(&self, outcome: Outcome) -> Completion {
        Completion::new(self.token, outcome)
    }
    /// The call-free start check (see [`StartCheck`]), for hosts that cannot call into the
    /// runtime cheaply. Rust hosts use [`crate::Runtime::begin`].
    pub fn start_check(&self) -> StartCheck {
        StartCheck {
            word: self.word as *const u64,
            handed: self.queued,
            started: crate::slot::word::started_value(self.queued),
            lease_deadline: self.lease as *const u64,
        }
    }
}

impl<P> std::fmt::Debug for TickRecord<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickRecord")
            .field("timer", &self.timer)
            .field("owner", &self.owner)
            .field("key", &self.key)
            .field("tick", &self.tick)
            .field("token", &format_args!("{:#x}", self.token))
            .finish()
    }
}

/// The result of a non-blocking cancel, delivered as a record (`cancel_with_notice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelNotice {
    /// The generation that ended.
    pub timer: TimerId,
    /// Its owner's id.
    pub owner: OwnerId,
    /// Its key.
    pub key: TimerKey,
    /// The tag the host passed when it asked for the notice.
    pub tag: u64,
    /// Its terminal result.
    pub result: EndResult,
}

/// What a batch carries.
#[derive(Debug, Clone)]
pub enum Record<P> {
    /// A callback to start.
    Tick(TickRecord<P>),
    /// A cancel's terminal result.
    CancelDone(CancelNotice),
}

impl<P> Record<P> {
    /// The tick record, if this is one.
    pub fn as_tick(&self) -> Option<&TickRecord<P>> {
        match self {
            Record::Tick(t) => Some(t),
            Record::CancelDone(_) => None,
        }
    }
}
