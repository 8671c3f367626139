//! # spot-timer-core
//!
//! A timer runtime for hosts that own many objects ("Spots") with repeating and delayed
//! timers: one scheduler thread and one deadline queue for any number of timers, exact
//! tick accounting (generations, overrun policies, owner leases, execution gates) and
//! delivery of all records that became ready at one wakeup in one batch.
//!
//! The contract is SPEC.md (T1–T10). This crate knows nothing of C, Python or .NET; the
//! C ABI and the bindings adapt its one delivery API: [`Runtime::exchange`] (submit
//! completions, receive a batch) or a [`BatchHandler`] called once per batch.
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
//! assert_eq!(*rec.payload(), "hello");
//! assert_eq!(rec.tick().delivery_index, 1);
//! let done = [rec.complete(Outcome::Ok)];
//! batch.clear();
//! rt.exchange(&done, &mut batch, 64, Some(Duration::ZERO)).unwrap();
//! assert_eq!(timer.cancel(None), Ok(EndReason::Cancelled));
//! ```

mod cancel;
mod clock;
mod delivery;
mod error;
mod keymap;
mod owner;
mod policy;
mod queue;
mod runtime;
mod scheduler;
mod stats;
mod sync;
mod table;
mod tick;
mod timer;

pub use cancel::{EndReason, EndResult};
pub use clock::{BootClock, Clock, ClockKind, ManualClock, Nanos};
pub use delivery::{BatchHandler, Sink};
pub use error::{Error, Result};
pub use owner::{GateMode, OwnerId};
pub use policy::OverrunPolicy;
pub use runtime::{Owner, OwnerOptions, Runtime, RuntimeConfig};
pub use stats::Stats;
pub use table::{live_value, MAX_TIMERS};
pub use tick::{CancelNotice, Completion, Outcome, Record, Tick, TickRecord};
pub use timer::{CancelTicket, ReleaseHook, TimerHandle, TimerId, TimerKey, TimerSpec, TimerStats};
