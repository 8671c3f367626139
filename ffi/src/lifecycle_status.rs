//! The C status of each error of the lifecycle layer (`spot_node_*`, `spot_store_*`).

use spot_lifecycle::{LifecycleError, Queue};

use crate::boundary::{Failure, FfiResult};
use crate::status::*;

pub(crate) fn failure(e: LifecycleError) -> Failure {
    let status = match &e {
        LifecycleError::NotFound(_) => SPOT_E_NOT_FOUND,
        LifecycleError::StaleRoute { .. } => SPOT_E_STALE_ROUTE,
        LifecycleError::CapacityExceeded { queue } => match queue {
            Queue::ApplicationLane => SPOT_E_APPLICATION_LANE_FULL,
            Queue::LifecycleLane => SPOT_E_LIFECYCLE_LANE_FULL,
            Queue::NodeInbound => SPOT_E_NODE_INBOUND_FULL,
            Queue::Activation => SPOT_E_ACTIVE_CAP,
        },
        LifecycleError::Unavailable { .. } => SPOT_E_UNAVAILABLE,
        LifecycleError::CreationFailed { .. } => SPOT_E_CREATION_FAILED,
        LifecycleError::WrongKind { .. } => SPOT_E_WRONG_KIND,
        LifecycleError::InvalidKind(_) => SPOT_E_UNKNOWN_ENUM,
        LifecycleError::InvalidArgument(_) => SPOT_E_INVALID_ARGUMENT,
        LifecycleError::Store(_) => SPOT_E_STORE,
        LifecycleError::Closed => SPOT_E_CLOSED,
        LifecycleError::Timer(t) => status_of(t),
    };
    Failure::new(status, e.to_string())
}

pub(crate) fn lf<T>(r: Result<T, LifecycleError>) -> FfiResult<T> {
    r.map_err(failure)
}
