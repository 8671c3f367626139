//! # spot-timer-core
//!
//! A timer runtime for hosts that own many objects ("Spots") with repeating and delayed
//! timers: one scheduler thread and one deadline queue for any number of timers, exact
//! tick accounting (generations, overrun policies, owner leases, execution gates) and
//! delivery of all records that became ready at one wakeup in one batch.
//!
//! The contract is `docs/contract.md` in the repository (T1–T10). This crate knows nothing
//! of C, Python or .NET; the C ABI and the bindings adapt its one delivery API:
//! [`Runtime::exchange`] (submit completions, receive a batch) or a [`BatchHandler`]
//! called once per batch.
//!
//! ```
//! use std::time::Duration;
//! use spot_timer_core::*;
//!
//! let (rt, _clock) = Runtime::<&'static str>::manual().unwrap();
//! let owner = rt.acquire_owner(7, OwnerOptions::default()).unwrap();
//! let timer = owner.register(1, TimerSpec::every(Duration::from_millis(10)), "hello", None).unwrap();
//! rt.advance(Duration::from_millis(10)).unwrap();
//! let mut batch = Vec::new();
//! rt.exchange(&[], &mut batch, 64, Some(Duration::ZERO)).unwrap();
//! let rec = batch[0].as_tick().unwrap();
//! assert!(rt.begin(rec));
//! assert_eq!(*rec.payload(), "hello");
//! assert_eq!(rec.tick().delivery_index, 1);
//! let done = [rec.complete(Outcome::Ok)];
//! batch.clear();
//! rt.exchange(&done, &mut batch, 64, Some(Duration::ZERO)).unwrap();
//! assert_eq!(timer.cancel(None), Ok(EndReason::Cancelled));
//! ```
//!
//! # Layout
//!
//! Data structures, which never see the runtime: [`slot`](crate) (the timer table and the
//! slot word's state machine), `queue` (the deadline wheel and heap), `owner` (owner table
//! and gate), `cold` (rarely used per-generation state), `policy` (every scheduling rule),
//! `chunked`, `hash`, `stats`. The runtime (`runtime/`) drives them, split by role:
//! registration, delivery, hand-over and completion, ends, owners, the scheduler thread.
//! Above the runtime, [`driver`] is the protocol every host runs over a batch (receive,
//! start check, run, complete, kept records, notices, stops), generic over its source so
//! the Spot lifecycle builds on it too; the runtime never imports it.
#![warn(missing_docs)]

// The clock is Linux's CLOCK_BOOTTIME and the host wakeup an eventfd: other systems are
// refused at build time rather than misbehaving at run time.
#[cfg(not(target_os = "linux"))]
compile_error!("spot-timer supports Linux only (it uses CLOCK_BOOTTIME and eventfd)");

mod chunked;
mod clock;
mod cold;
pub mod driver;
mod end;
mod error;
mod exposition;
mod hash;
mod lateness;
mod metric;
mod owner;
mod paged;
mod policy;
mod prefetch;
mod queue;
mod runtime;
mod slot;
mod spec;
#[cfg_attr(spot_loom, allow(dead_code))]
mod spin_lock;
mod stats;
mod sync;
mod thread_index;
mod tick;
mod trim;

pub use clock::{BootClock, Clock, ClockKind, ManualClock, Nanos};
pub use cold::{PayloadRelease, ReleaseHook};
pub use end::{EndReason, EndResult};
pub use error::{Error, Result};
pub use hash::{U64Hasher, U64Hashing};
pub use lateness::{Lateness, LatenessBucket};
pub use metric::{is_metric_prefix, write_prometheus, Metric, MetricKind};
pub use owner::gate::GateMode;
pub use owner::OwnerId;
pub use policy::OverrunPolicy;
pub use runtime::{
    Batch, BatchHandler, CancelTicket, Cancelled, Completer, DeliverySession, HeldTimer, Owner,
    OwnerOptions, Reset, Runtime, RuntimeConfig, Sink, Swap, TimerHandle, BATCH_KEPT,
    BATCH_PENDING,
};
pub use slot::MAX_TIMERS;
pub use spec::{TimerId, TimerKey, TimerSpec, TimerStats};
pub use stats::Stats;
pub use tick::{CancelNotice, Completion, Outcome, Record, StartCheck, Tick, TickRecord};
