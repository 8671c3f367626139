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
    /// Every end reason, in the order of their codes: the one list the bindings' enums
    /// and the C ABI's `SPOT_END_*` are checked against.
    pub const ALL: [EndReason; 6] = [
        Self::Cancelled,
        Self::Superseded,
        Self::Completed,
        Self::LeaseExpired,
        Self::Revoked,
        Self::RuntimeClosed,
    ];

    /// Its number (the bindings' enums and the C ABI carry the same).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Its name in upper snake case (`"LEASE_EXPIRED"`), as every binding spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cancelled => "CANCELLED",
            Self::Superseded => "SUPERSEDED",
            Self::Completed => "COMPLETED",
            Self::LeaseExpired => "LEASE_EXPIRED",
            Self::Revoked => "REVOKED",
            Self::RuntimeClosed => "RUNTIME_CLOSED",
        }
    }

    /// The end reason of number `code`, if there is one.
    #[inline]
    pub fn from_code(code: u8) -> Option<Self> {
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

#[cfg(test)]
mod tests {
    use super::EndReason;

    #[test]
    fn all_lists_every_code_once_in_order() {
        for (i, r) in EndReason::ALL.iter().enumerate() {
            assert_eq!(r.code() as usize, i);
            assert_eq!(EndReason::from_code(i as u8), Some(*r));
        }
        assert_eq!(EndReason::from_code(EndReason::ALL.len() as u8), None);
    }
}
