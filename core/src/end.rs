//! The one terminal result of a timer generation (contract T2).

use crate::error::Error;

/// Why a generation ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EndReason {
    /// Cancelled by the host.
    Cancelled = 0,
    /// Replaced by a newer registration of the same (owner, key).
    Superseded = 1,
    /// A one-shot timer delivered its callback.
    Completed = 2,
    /// The owner's lease ran out.
    LeaseExpired = 3,
    /// The owner authority was revoked, moved or released.
    Revoked = 4,
    /// The runtime was closed.
    RuntimeClosed = 5,
}

impl EndReason {
    #[inline]
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Cancelled,
            1 => Self::Superseded,
            2 => Self::Completed,
            3 => Self::LeaseExpired,
            4 => Self::Revoked,
            5 => Self::RuntimeClosed,
            _ => return None,
        })
    }
}

/// The terminal result of a generation: an end reason, or `Error::CleanupFailed` when the
/// release hook failed. Every caller sees the same value.
pub type EndResult = Result<EndReason, Error>;
