//! The Spot lifecycle (`spot-lifecycle`) for Python: the classes of
//! `spot_timer.lifecycle` (`Store`, `Node`, `SpotRecord`), a thin adapter over the crate —
//! every rule lives there.
//!
//! Modules, each importing only those listed before it: `types` (the Python enums and
//! value classes of `spot_timer/lifecycle.py`), `args` (argument checks), `errors` (the
//! exception of each lifecycle error), `callbacks` (the factory, closing callback and
//! exception handler), `record`, `etcd` (the etcd store's arguments and connect), `store`,
//! `dispatch` (one exchange into Python) and `node`.

pub mod args;
pub mod callbacks;
pub mod dispatch;
pub mod errors;
pub mod etcd;
pub mod node;
pub mod record;
pub mod store;
pub mod types;

use pyo3::prelude::*;

/// Adds the lifecycle's classes and constants to `_native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::PyStore>()?;
    m.add_class::<node::PyNode>()?;
    m.add_class::<record::PySpotRecord>()?;
    m.add(
        "LIFECYCLE_ITEM_OVERHEAD_BYTES",
        spot_lifecycle::ITEM_OVERHEAD_BYTES,
    )?;
    m.add("LIFECYCLE_SCAN_LIMIT", spot_lifecycle::SCAN_LIMIT)?;
    let (app, life) = (
        spot_lifecycle::LaneLimits::APPLICATION,
        spot_lifecycle::LaneLimits::LIFECYCLE,
    );
    m.add("LIFECYCLE_APPLICATION_LANE", (app.items, app.bytes))?;
    m.add("LIFECYCLE_LIFECYCLE_LANE", (life.items, life.bytes))?;
    // The lifecycle's closing reasons by number: `CloseReason` is checked against it.
    let reasons: Vec<(u32, &str)> = spot_lifecycle::CloseReason::ALL
        .iter()
        .map(|r| (r.code(), r.name()))
        .collect();
    m.add("CLOSE_REASONS", reasons)?;
    Ok(())
}
