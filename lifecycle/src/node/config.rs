//! How a node is built: its configuration and the application's callbacks.

use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::ClockKind;

use crate::error::{LifecycleError, Result};
use crate::kind::{SpotId, SpotKind};
use crate::lane::LaneLimits;
use crate::store::NodeId;
use crate::work::DEFAULT_CREATION_WAIT;

/// Runs once per creation of a Spot (the application builds its object); an error fails
/// the creation and releases its reservation.
pub type Factory = Arc<dyn Fn(SpotId, SpotKind) -> std::result::Result<(), String> + Send + Sync>;

/// Called once for every Spot whose factory ran, when the Spot goes. With `IdleEvicted`,
/// `Closed` and `NodeShutdown` the node still holds the Spot's authority: no new work is
/// admitted meanwhile, no handler of the Spot runs beside it, and its location is released
/// only after it returns — the application saves what it needs here. With `AuthorityLost`
/// and `CreationFailed` the Spot never was, or no longer is, this node's: drop its object
/// and save nothing.
pub type ClosingCallback = Arc<dyn Fn(SpotId, SpotKind, CloseReason) + Send + Sync>;

/// Why a Spot closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Idle past `instance_idle_timeout` (Instance Spots only).
    IdleEvicted,
    /// Closed by an explicit call.
    Closed,
    /// Its node shut down.
    NodeShutdown,
    /// The node's authority over it ended first — its term in the store (the process was
    /// stopped or cut off from the store past its lease) or its owner lease: another node
    /// may own it now. Its state must not be saved.
    AuthorityLost,
    /// Its creation failed after the factory ran (the store refused or could not be
    /// reached): it never became Ready. Nothing of it is to be saved.
    CreationFailed,
}

impl CloseReason {
    /// Every closing reason, in the order of their codes: the one list the bindings' enums
    /// and the C ABI's `SPOT_CLOSE_*` are checked against.
    pub const ALL: [CloseReason; 5] = [
        Self::IdleEvicted,
        Self::Closed,
        Self::NodeShutdown,
        Self::AuthorityLost,
        Self::CreationFailed,
    ];

    /// Its number (the bindings' enums and the C ABI carry the same).
    pub fn code(self) -> u32 {
        match self {
            Self::IdleEvicted => 0,
            Self::Closed => 1,
            Self::NodeShutdown => 2,
            Self::AuthorityLost => 3,
            Self::CreationFailed => 4,
        }
    }

    /// Its name in upper snake case (`"IDLE_EVICTED"`), as every binding spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::IdleEvicted => "IDLE_EVICTED",
            Self::Closed => "CLOSED",
            Self::NodeShutdown => "NODE_SHUTDOWN",
            Self::AuthorityLost => "AUTHORITY_LOST",
            Self::CreationFailed => "CREATION_FAILED",
        }
    }
}

/// How to build a node.
#[derive(Clone)]
pub struct NodeConfig {
    /// This node's id in the cluster.
    pub node: NodeId,
    /// The id of this node's Entry Spot (default `u64::MAX`, out of the way of application
    /// ids; several nodes on one store need different ones).
    pub entry: SpotId,
    /// The clock of the node's timer runtime (manual for tests).
    pub clock: ClockKind,
    /// Limits of each Spot's application lane (default 1,024 items / 64 MiB).
    pub application_lane: LaneLimits,
    /// Limits of each Spot's lifecycle lane (default 128 items / 4 MiB).
    pub lifecycle_lane: LaneLimits,
    /// Payload bytes pending on the whole node (default 1 GiB).
    pub node_inbound_bytes: u64,
    /// Active Spots on this node, the Entry Spot included (default 100,000).
    pub active_cap: u64,
    /// Instance Spots idle this long are evicted (None: never).
    pub instance_idle_timeout: Option<Duration>,
    /// How long a caller waits for another caller's creation of the same id.
    pub creation_wait: Duration,
    /// The Spots' owner lease in the timer runtime (None: none).
    pub owner_lease: Option<Duration>,
    /// Builds a Spot's object.
    pub factory: Option<Factory>,
    /// Told when a Spot closes.
    pub on_close: Option<ClosingCallback>,
    /// Serve the nodes of other processes on this address (port 0: any free port; the
    /// address bound is recorded in the store with the node, see [`Node::address`](super::Node::address)).
    /// None: the node is reached from this process only. A node forwards to other
    /// processes' nodes whether it listens or not.
    pub listen: Option<std::net::SocketAddr>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node: NodeId(1),
            entry: SpotId(u64::MAX),
            clock: ClockKind::Real,
            application_lane: LaneLimits::APPLICATION,
            lifecycle_lane: LaneLimits::LIFECYCLE,
            node_inbound_bytes: 1 << 30,
            active_cap: 100_000,
            instance_idle_timeout: Some(Duration::from_secs(15 * 60)),
            creation_wait: DEFAULT_CREATION_WAIT,
            owner_lease: None,
            factory: None,
            on_close: None,
            listen: None,
        }
    }
}

impl NodeConfig {
    /// Reads a `listen` address as hosts spell it: `""` is none; otherwise `IP:PORT`
    /// (`"127.0.0.1:0"`, `"[::1]:7000"`; port 0: any free port). `what` names the argument
    /// in the error. Every binding parses with this, so a bad address reads the same in
    /// every language.
    ///
    /// Errors: `InvalidArgument` naming `what`, the text and what was wrong.
    pub fn parse_listen(text: &str, what: &str) -> Result<Option<std::net::SocketAddr>> {
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|e| {
            LifecycleError::InvalidArgument(format!(
                "{what} {text:?} is not an address IP:PORT (e.g. \"127.0.0.1:0\" or \"[::1]:0\"): {e}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CloseReason;

    #[test]
    fn close_reasons_are_listed_once_in_code_order() {
        for (i, r) in CloseReason::ALL.iter().enumerate() {
            assert_eq!(r.code() as usize, i, "{r:?}");
        }
    }
}
