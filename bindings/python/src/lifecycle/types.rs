//! The Python values of the lifecycle: the enums (`SpotKind`, `CloseReason`, `Lane`,
//! `Queue`, `StaleReason`), the named tuples, the `NodeStats` dataclass and the default
//! exception handler, all defined in `spot_timer/lifecycle.py`.
//!
//! Looked up once, on first use, by importing that module: it imports `_native` at its top,
//! `_native` never imports it while loading, so there is no import cycle.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use spot_lifecycle::{CloseReason, LaneKind, Queue, SpotKind, StaleReason};

pub struct Types {
    spot_kind: [Py<PyAny>; 3],
    close_reason: [Py<PyAny>; CloseReason::ALL.len()],
    lane: [Py<PyAny>; 2],
    queue: [Py<PyAny>; 4],
    stale_reason: [Py<PyAny>; 3],
    /// `NodeStats(**counters)`.
    pub node_stats: Py<PyAny>,
    /// `LaneUse(items, bytes)`.
    pub lane_use: Py<PyAny>,
    /// `RelocationTarget(what, id, kind)`.
    pub relocation_target: Py<PyAny>,
    /// `Location(node_id, kind, state, generation)`.
    pub location: Py<PyAny>,
    /// `_default_exception_handler(exc, record)`: logs to the `spot_timer` logger.
    pub default_exception_handler: Py<PyAny>,
}

static TYPES: PyOnceLock<Types> = PyOnceLock::new();

fn members<const N: usize>(cls: &Bound<'_, PyAny>, first: u32) -> PyResult<[Py<PyAny>; N]> {
    let v = (0..N as u32)
        .map(|i| cls.call1((first + i,)).map(Bound::unbind))
        .collect::<PyResult<Vec<_>>>()?;
    v.try_into().map_err(|_| {
        pyo3::exceptions::PyRuntimeError::new_err("spot_timer.lifecycle: an enum lost members")
    })
}

fn load(py: Python<'_>) -> PyResult<Types> {
    let m = py.import("spot_timer.lifecycle")?;
    let get = |name: &str| m.getattr(name);
    Ok(Types {
        spot_kind: members(&get("SpotKind")?, 1)?,
        close_reason: members(&get("CloseReason")?, 0)?,
        lane: members(&get("Lane")?, 0)?,
        queue: members(&get("Queue")?, 0)?,
        stale_reason: members(&get("StaleReason")?, 0)?,
        node_stats: get("NodeStats")?.unbind(),
        lane_use: get("LaneUse")?.unbind(),
        relocation_target: get("RelocationTarget")?.unbind(),
        location: get("Location")?.unbind(),
        default_exception_handler: get("_default_exception_handler")?.unbind(),
    })
}

/// The lifecycle's Python values (imports `spot_timer.lifecycle` the first time).
pub fn types(py: Python<'_>) -> PyResult<&Types> {
    TYPES.get_or_try_init(py, || load(py))
}

impl Types {
    pub fn spot_kind<'py>(&self, py: Python<'py>, k: SpotKind) -> Bound<'py, PyAny> {
        let i = match k {
            SpotKind::Entry => 0,
            SpotKind::User => 1,
            SpotKind::Instance => 2,
        };
        self.spot_kind[i].bind(py).clone()
    }

    pub fn close_reason<'py>(&self, py: Python<'py>, r: CloseReason) -> Bound<'py, PyAny> {
        self.close_reason[r.code() as usize].bind(py).clone()
    }

    pub fn lane<'py>(&self, py: Python<'py>, l: LaneKind) -> Bound<'py, PyAny> {
        let i = match l {
            LaneKind::Application => 0,
            LaneKind::Lifecycle => 1,
        };
        self.lane[i].bind(py).clone()
    }

    pub fn queue<'py>(&self, py: Python<'py>, q: Queue) -> Bound<'py, PyAny> {
        let i = match q {
            Queue::ApplicationLane => 0,
            Queue::LifecycleLane => 1,
            Queue::NodeInbound => 2,
            Queue::Activation => 3,
        };
        self.queue[i].bind(py).clone()
    }

    pub fn stale_reason<'py>(&self, py: Python<'py>, r: StaleReason) -> Bound<'py, PyAny> {
        let i = match r {
            StaleReason::NotOwner => 0,
            StaleReason::LeaseExpired => 1,
            StaleReason::Closing => 2,
        };
        self.stale_reason[i].bind(py).clone()
    }
}
