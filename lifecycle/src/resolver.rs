//! The resolver (L3): what the store says about an id, turned into exactly one of four
//! closed states, each handed to exactly one next component — so no later stage guesses
//! again from the raw record.

use crate::kind::SpotKind;
use crate::store::{Authority, LocationState, NodeStatus, StoreView};

/// The resolved state of one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// No authority exists (never created, or released by a finished close / an expired
    /// lease). Next: the creation coordinator — the only state that may start a creation.
    Missing,
    /// A creation attempt holds the reservation. Next: that attempt's waiters. Never
    /// cached.
    Creating {
        /// The attempt's fence.
        revision: u64,
    },
    /// A usable route. Next: route admission.
    Ready {
        /// Owner and authority.
        authority: Authority,
        /// The Spot's kind.
        kind: SpotKind,
    },
    /// An authority exists but its owner cannot be used. Next: the terminal completion
    /// of the request. Never a creation.
    Unavailable {
        /// Owner and authority.
        authority: Authority,
        /// What shows the owner is unusable.
        evidence: &'static str,
    },
}

pub(crate) fn resolve(view: &StoreView) -> Resolution {
    let Some(record) = view.record else {
        return Resolution::Missing;
    };
    match (view.owner_status.unwrap_or(NodeStatus::Gone), record.state) {
        (NodeStatus::Alive, LocationState::Ready) => Resolution::Ready {
            authority: record.authority,
            kind: record.kind,
        },
        (NodeStatus::Alive, LocationState::Creating) => Resolution::Creating {
            revision: view.revision,
        },
        (NodeStatus::Down, _) => Resolution::Unavailable {
            authority: record.authority,
            evidence: "its owner node is down (its lease has not run out yet)",
        },
        (NodeStatus::Gone, _) => Resolution::Unavailable {
            authority: record.authority,
            evidence: "its owner node's lease is over and its release has not finished",
        },
    }
}
