//! `spot_timer.lifecycle.SpotRecord`: one piece of Spot work as a handler sees it — a
//! message (its payload, copied into `bytes`) or a timer tick (its key and value). A plain
//! value: it stays valid after the handler returned.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use spot_lifecycle::{LaneKind, SpotRecord};

use super::types::types;

#[pyclass(module = "spot_timer.lifecycle", name = "SpotRecord", frozen)]
pub struct PySpotRecord {
    spot_id: u64,
    lane: LaneKind,
    /// A message's payload; None for a tick.
    payload: Option<Py<PyBytes>>,
    /// A tick's timer key and value; None for a message.
    tick: Option<(u64, u64)>,
}

impl PySpotRecord {
    pub fn new(py: Python<'_>, rec: &SpotRecord) -> Self {
        match rec {
            SpotRecord::Message(m) => Self {
                spot_id: m.spot().0,
                lane: m.lane(),
                payload: Some(PyBytes::new(py, m.payload()).unbind()),
                tick: None,
            },
            SpotRecord::Tick(t) => Self {
                spot_id: t.spot().0,
                lane: LaneKind::Application,
                payload: None,
                tick: Some((t.key(), t.value())),
            },
        }
    }
}

#[pymethods]
impl PySpotRecord {
    /// The Spot the work belongs to.
    #[getter]
    fn spot_id(&self) -> u64 {
        self.spot_id
    }

    /// `"message"` or `"tick"`.
    #[getter]
    fn kind(&self) -> &'static str {
        if self.tick.is_some() {
            "tick"
        } else {
            "message"
        }
    }

    /// The lane the work came from (ticks: `Lane.APPLICATION`).
    #[getter]
    fn lane<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(types(py)?.lane(py, self.lane))
    }

    /// A message's payload (None for a tick).
    #[getter]
    fn payload(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.payload.as_ref().map(|p| p.clone_ref(py))
    }

    /// A tick's timer key (None for a message).
    #[getter]
    fn key(&self) -> Option<u64> {
        self.tick.map(|t| t.0)
    }

    /// A tick's value, as given to `Node.every` (None for a message).
    #[getter]
    fn value(&self) -> Option<u64> {
        self.tick.map(|t| t.1)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match (&self.payload, self.tick) {
            (Some(p), _) => {
                let shown = p.bind(py).repr().map(|r| r.to_string()).unwrap_or_default();
                let lane = match self.lane {
                    LaneKind::Application => "application",
                    LaneKind::Lifecycle => "lifecycle",
                };
                format!(
                    "SpotRecord(message, spot_id={}, lane={lane}, payload={shown})",
                    self.spot_id
                )
            }
            (None, Some((key, value))) => format!(
                "SpotRecord(tick, spot_id={}, key={key}, value={value})",
                self.spot_id
            ),
            (None, None) => format!("SpotRecord(spot_id={})", self.spot_id),
        }
    }
}
