//! `spot_timer._native`: the pyo3 layer over `spot-timer-core` (module wiring only).
//!
//! `spot_timer/__init__.py` re-exports `Runtime`, `ManualClock`, `Owner`, `Timer` and
//! `Tick` from here and keeps the parts that are Python by nature (enums and dataclasses).
//! Ground rules:
//!
//! * Python callables (handlers, release hooks, the exception handler) are kept in the
//!   runtime's object table (`objects`), reported to the garbage collector; the core only
//!   carries a `u64` payload per timer.
//! * Registration and cancel run on the calling thread, attached (they never wait).
//!   Blocking waits (cancel, advance, close, gate) detach from the interpreter and wait in
//!   short slices so Ctrl-C stays responsive.
//! * One GIL entry per delivered batch, never one per record (`dispatch`).
//! * The Spot lifecycle (`spot-lifecycle`) is `lifecycle`: `Store`, `Node` and `SpotRecord`,
//!   re-exported by `spot_timer/lifecycle.py`.

mod args;
mod clock;
mod delivery_modes;
mod dispatch;
mod durations;
mod errors;
mod exceptions;
mod gil_cell;
mod host;
mod inner;
mod keys;
mod lifecycle;
mod live_runtimes;
mod objects;
mod owner;
mod releases;
mod runtime;
mod timer;
mod waiters;

use pyo3::prelude::*;

// The GIL guards the per-record state (`gil_cell`).
#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<clock::PyManualClock>()?;
    m.add_class::<runtime::PyRuntime>()?;
    m.add_class::<owner::NativeOwner>()?;
    m.add_class::<timer::NativeTimer>()?;
    m.add_class::<dispatch::PyTick>()?;
    m.add_function(wrap_pyfunction!(host::configure, m)?)?;
    m.add_function(wrap_pyfunction!(durations::nanos, m)?)?;
    // Every runtime still open is closed before the interpreter finalizes.
    let close_all = wrap_pyfunction!(live_runtimes::close_all_at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (close_all,))?;
    m.add("MAX_TIMERS", spot_timer_core::MAX_TIMERS)?;
    // The core's end reasons by number: `EndReason` is checked against it.
    let reasons: Vec<(u8, &str)> = spot_timer_core::EndReason::ALL
        .iter()
        .map(|r| (r.code(), r.name()))
        .collect();
    m.add("END_REASONS", reasons)?;
    exceptions::register(m)?;
    lifecycle::register(m)?;
    // What the package re-exports with `from ._native import *` (the stub says the same):
    // the timer classes and the exception tree; the rest is the package's plumbing.
    let mut public = vec!["ManualClock", "Runtime", "Owner", "Timer", "Tick"];
    public.extend(exceptions::names());
    m.setattr("__all__", public)?;
    Ok(())
}
