//! What a record of the timer runtime stands for in the lifecycle: a Spot's doorbell (its
//! queued messages are ready) or a tick of one of its timers.

/// The payload of a lifecycle timer in the timer runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work {
    /// The Spot's lanes hold messages: its record hands the host a burst of them.
    Doorbell,
    /// A tick of one of the Spot's timers, with the host's value for it.
    Timer(u64),
}

/// Keys of doorbells have this bit set; the host's timer keys must not.
pub(crate) const DOORBELL_KEY: u64 = 1 << 63;
