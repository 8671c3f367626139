//! What a record of the timer runtime stands for in the lifecycle: a Spot's doorbell (its
//! queued messages are ready), a tick of one of its timers, or the node's own idle scan.

/// The payload of a lifecycle timer in the timer runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work {
    /// The Spot's lanes hold messages: its record hands the host a burst of them.
    Doorbell,
    /// A tick of one of the Spot's timers, with the host's value for it.
    Timer(u64),
    /// The node's idle-eviction scan (a timer of the Entry Spot's owner; never handed to
    /// the host).
    Scan,
}

/// Keys of doorbells have this bit set; the host's timer keys must not.
pub(crate) const DOORBELL_KEY: u64 = 1 << 63;

/// The key of the node's idle scan (a doorbell key's bit, and one no doorbell has).
pub(crate) const SCAN_KEY: u64 = DOORBELL_KEY | (1 << 62);
