//! Status codes: the one integer every fallible function returns, and the mapping from
//! the core's error type to it.

use spot_timer_core::Error;

/// Status code returned by every fallible `spot_*` function (`int32_t`). 0 is success.
pub type spot_status = i32;

/// Success.
pub const SPOT_OK: spot_status = 0;
/// A required pointer argument was NULL (or misaligned for its type).
pub const SPOT_E_NULL_ARGUMENT: spot_status = 1;
/// A value is outside its domain (zero period, max_catch_up_ticks 0, capacity 0, non-zero
/// reserved field, ...). The last-error message names the argument.
pub const SPOT_E_INVALID_ARGUMENT: spot_status = 2;
/// An enum value this ABI version does not know.
pub const SPOT_E_UNKNOWN_ENUM: spot_status = 3;
/// A `struct_size` field is smaller than the version-1 size, absurdly large, or covers
/// non-zero fields this library version does not know.
pub const SPOT_E_BAD_STRUCT_SIZE: spot_status = 4;
/// The runtime handle is 0, freed, double-freed or was never valid.
pub const SPOT_E_INVALID_HANDLE: spot_status = 5;
/// The timer handle does not name a live or recorded generation of this runtime.
pub const SPOT_E_STALE_TIMER: spot_status = 6;
/// No owner with this id was acquired on this runtime.
pub const SPOT_E_UNKNOWN_OWNER: spot_status = 7;
/// The owner's lease has expired; the authority is over.
pub const SPOT_E_LEASE_EXPIRED: spot_status = 8;
/// The owner authority (epoch) was revoked or replaced by a newer one.
pub const SPOT_E_REVOKED: spot_status = 9;
/// A completion token matches no outstanding record; nothing of the call was applied.
pub const SPOT_E_INVALID_COMPLETION: spot_status = 10;
/// A blocking wait ran out of time; the operation it waited for goes on.
pub const SPOT_E_TIMEOUT: spot_status = 11;
/// Waiting would wait for the calling thread itself (own callback, scheduler thread).
pub const SPOT_E_WOULD_DEADLOCK: spot_status = 12;
/// The generation's release hook failed: this is its terminal result, the same for
/// every canceller.
pub const SPOT_E_CLEANUP_FAILED: spot_status = 13;
/// The runtime is closed.
pub const SPOT_E_CLOSED: spot_status = 14;
/// The call needs a runtime on the manual clock.
pub const SPOT_E_NOT_MANUAL_CLOCK: spot_status = 15;
/// The runtime's timer table is full.
pub const SPOT_E_CAPACITY_EXHAUSTED: spot_status = 16;
/// An operating-system call failed.
pub const SPOT_E_OS: spot_status = 17;
/// A Rust panic was caught at the boundary (a bug in the library; please report it).
pub const SPOT_E_PANIC: spot_status = 18;
/// The call does not fit the runtime's delivery mode (exchange on a callback runtime, ...).
pub const SPOT_E_WRONG_DELIVERY_MODE: spot_status = 19;

/// No Spot with this id exists (an ordinary send never creates one).
pub const SPOT_E_NOT_FOUND: spot_status = 20;
/// The message reached a node that does not own the Spot, or whose lease ran out, or the
/// Spot is closing; it did not run and is not retried.
pub const SPOT_E_STALE_ROUTE: spot_status = 21;
/// The Spot's authority exists but its owner cannot be used; no creation was started.
pub const SPOT_E_UNAVAILABLE: spot_status = 22;
/// The Spot's factory failed; its reservation was released.
pub const SPOT_E_CREATION_FAILED: spot_status = 23;
/// The id names a Spot of another kind (or the call is not allowed for its kind).
pub const SPOT_E_WRONG_KIND: spot_status = 24;
/// The Spot's application lane is full (count or bytes).
pub const SPOT_E_APPLICATION_LANE_FULL: spot_status = 25;
/// The Spot's lifecycle lane is full (count or bytes).
pub const SPOT_E_LIFECYCLE_LANE_FULL: spot_status = 26;
/// The node's inbound byte budget is used up.
pub const SPOT_E_NODE_INBOUND_FULL: spot_status = 27;
/// The node is at its active-Spot cap (and no other node could take the Spot).
pub const SPOT_E_ACTIVE_CAP: spot_status = 28;
/// The Location Store could not be used.
pub const SPOT_E_STORE: spot_status = 29;

/// The status code of a core error.
pub(crate) fn status_of(e: &Error) -> spot_status {
    match e {
        Error::InvalidArgument(_) => SPOT_E_INVALID_ARGUMENT,
        Error::UnknownOwner(_) => SPOT_E_UNKNOWN_OWNER,
        Error::LeaseExpired => SPOT_E_LEASE_EXPIRED,
        Error::Revoked => SPOT_E_REVOKED,
        Error::StaleHandle => SPOT_E_STALE_TIMER,
        Error::InvalidCompletion(_) => SPOT_E_INVALID_COMPLETION,
        Error::Timeout => SPOT_E_TIMEOUT,
        Error::WouldDeadlock => SPOT_E_WOULD_DEADLOCK,
        Error::CleanupFailed(_) => SPOT_E_CLEANUP_FAILED,
        Error::Closed => SPOT_E_CLOSED,
        Error::NotManualClock => SPOT_E_NOT_MANUAL_CLOCK,
        Error::CapacityExhausted(_) => SPOT_E_CAPACITY_EXHAUSTED,
        Error::Os(_) => SPOT_E_OS,
    }
}

pub(crate) fn name_of(status: spot_status) -> &'static [u8] {
    match status {
        SPOT_OK => b"SPOT_OK\0",
        SPOT_E_NULL_ARGUMENT => b"SPOT_E_NULL_ARGUMENT\0",
        SPOT_E_INVALID_ARGUMENT => b"SPOT_E_INVALID_ARGUMENT\0",
        SPOT_E_UNKNOWN_ENUM => b"SPOT_E_UNKNOWN_ENUM\0",
        SPOT_E_BAD_STRUCT_SIZE => b"SPOT_E_BAD_STRUCT_SIZE\0",
        SPOT_E_INVALID_HANDLE => b"SPOT_E_INVALID_HANDLE\0",
        SPOT_E_STALE_TIMER => b"SPOT_E_STALE_TIMER\0",
        SPOT_E_UNKNOWN_OWNER => b"SPOT_E_UNKNOWN_OWNER\0",
        SPOT_E_LEASE_EXPIRED => b"SPOT_E_LEASE_EXPIRED\0",
        SPOT_E_REVOKED => b"SPOT_E_REVOKED\0",
        SPOT_E_INVALID_COMPLETION => b"SPOT_E_INVALID_COMPLETION\0",
        SPOT_E_TIMEOUT => b"SPOT_E_TIMEOUT\0",
        SPOT_E_WOULD_DEADLOCK => b"SPOT_E_WOULD_DEADLOCK\0",
        SPOT_E_CLEANUP_FAILED => b"SPOT_E_CLEANUP_FAILED\0",
        SPOT_E_CLOSED => b"SPOT_E_CLOSED\0",
        SPOT_E_NOT_MANUAL_CLOCK => b"SPOT_E_NOT_MANUAL_CLOCK\0",
        SPOT_E_CAPACITY_EXHAUSTED => b"SPOT_E_CAPACITY_EXHAUSTED\0",
        SPOT_E_OS => b"SPOT_E_OS\0",
        SPOT_E_PANIC => b"SPOT_E_PANIC\0",
        SPOT_E_WRONG_DELIVERY_MODE => b"SPOT_E_WRONG_DELIVERY_MODE\0",
        SPOT_E_NOT_FOUND => b"SPOT_E_NOT_FOUND\0",
        SPOT_E_STALE_ROUTE => b"SPOT_E_STALE_ROUTE\0",
        SPOT_E_UNAVAILABLE => b"SPOT_E_UNAVAILABLE\0",
        SPOT_E_CREATION_FAILED => b"SPOT_E_CREATION_FAILED\0",
        SPOT_E_WRONG_KIND => b"SPOT_E_WRONG_KIND\0",
        SPOT_E_APPLICATION_LANE_FULL => b"SPOT_E_APPLICATION_LANE_FULL\0",
        SPOT_E_LIFECYCLE_LANE_FULL => b"SPOT_E_LIFECYCLE_LANE_FULL\0",
        SPOT_E_NODE_INBOUND_FULL => b"SPOT_E_NODE_INBOUND_FULL\0",
        SPOT_E_ACTIVE_CAP => b"SPOT_E_ACTIVE_CAP\0",
        SPOT_E_STORE => b"SPOT_E_STORE\0",
        _ => b"SPOT_E_UNKNOWN_STATUS\0",
    }
}
