//! The one error type of the runtime. Every fallible call returns it; the C ABI and the
//! bindings map each variant to a status code or exception class one-to-one.

use std::sync::Arc;

/// Everything that can go wrong when calling the runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An argument is outside its documented domain (zero period, out-of-range
    /// `max_catch_up_ticks`, zero buffer capacity, ...). The message names the argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// No owner with this id has been acquired on this runtime.
    #[error("unknown owner {0}")]
    UnknownOwner(u64),
    /// The owner's lease deadline has passed; the authority is over and must be re-acquired.
    #[error("owner lease expired")]
    LeaseExpired,
    /// The owner authority this handle belongs to was revoked or replaced by a newer one.
    #[error("owner authority revoked or superseded")]
    Revoked,
    /// The timer handle does not name a live or recorded generation of this runtime.
    #[error("stale or unknown timer handle")]
    StaleHandle,
    /// A completion token does not match a record that is still awaiting completion.
    #[error("invalid completion token {0:#x}")]
    InvalidCompletion(u64),
    /// A blocking wait ran out of time; the operation it waited for still goes on.
    #[error("timed out")]
    Timeout,
    /// Waiting here would wait for this very thread (cancelling a timer from inside its own
    /// callback, or blocking on the scheduler thread). The cancel still takes effect and
    /// completes once the callback ends; use the non-blocking form to observe it.
    #[error("would deadlock: the wait depends on the calling thread")]
    WouldDeadlock,
    /// The timer's cleanup (the host's release hook) failed. This is the generation's
    /// terminal result: every canceller sees the same message.
    #[error("timer cleanup failed: {0}")]
    CleanupFailed(Arc<str>),
    /// The runtime has been closed.
    #[error("runtime is closed")]
    Closed,
    /// The operation needs a manual clock (advance) but the runtime runs on the real clock.
    #[error("runtime does not use a manual clock")]
    NotManualClock,
    /// The runtime's timer table is full.
    #[error("timer table is full ({0} timers)")]
    CapacityExhausted(u32),
    /// An operating-system call failed.
    #[error("os error: {0}")]
    Os(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
