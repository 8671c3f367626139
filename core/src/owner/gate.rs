//! An owner's execution gate (contract T9) as one atomic word: who holds it (nobody, the host,
//! a timer record), whether the owner runs its timers concurrently (no gate for them),
//! and whether timers or hosts wait for it.
//!
//! Waiting timers sit in the owner's queue (`OwnerBook`). A thread that parks a
//! timer sets `WAITERS` and then looks at the holder; a thread that releases the gate
//! clears the holder and looks at `WAITERS`. Both are read-modify-writes of this one word,
//! so one of the two always sees the other: no timer is left waiting at a free gate.

use std::sync::atomic::Ordering::{AcqRel, Acquire};

use crate::sync::AtomicU32;

const HOLDER: u32 = 0b11;
const FREE: u32 = 0;
const HOST: u32 = 1;
const TIMER: u32 = 2;
/// The owner's timers do not use the gate (`GateMode::Concurrent`).
pub(crate) const CONCURRENT: u32 = 1 << 2;
/// Timers are parked in the owner's queue.
pub(crate) const WAITERS: u32 = 1 << 3;
/// Hosts are blocked in `enter_gate`.
pub(crate) const HOST_WAITING: u32 = 1 << 4;

/// How an owner's timers are admitted to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[repr(u8)]
pub enum GateMode {
    /// One turn at a time across all of the owner's timers and the host's own work on it.
    #[default]
    Serial = 0,
    /// No gate: the owner's timers run independently (each still never overlaps itself).
    Concurrent = 1,
}

impl GateMode {
    /// Decodes a wire value; unknown values are rejected, never transmuted.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Serial),
            1 => Some(Self::Concurrent),
            _ => None,
        }
    }
}

/// What a timer's attempt to take the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Taken: the record holds the gate until it completes.
    Taken,
    /// The owner is concurrent: no gate needed.
    NotNeeded,
    /// Held by the host or another record.
    Busy,
}

pub(crate) fn take_for_timer(gate: &AtomicU32) -> Take {
    let mut g = gate.load(Acquire);
    loop {
        if g & CONCURRENT != 0 {
            return Take::NotNeeded;
        }
        if g & HOLDER != FREE {
            return Take::Busy;
        }
        match gate.compare_exchange(g, g | TIMER, AcqRel, Acquire) {
            Ok(_) => return Take::Taken,
            Err(actual) => g = actual,
        }
    }
}

/// Frees a gate held by a timer record or the host; returns the word as it was, so the
/// caller sees whether timers (`WAITERS`) or hosts (`HOST_WAITING`) wait.
pub(crate) fn release(gate: &AtomicU32) -> u32 {
    gate.fetch_and(!HOLDER, AcqRel)
}

pub(crate) fn try_take_for_host(gate: &AtomicU32) -> bool {
    let mut g = gate.load(Acquire);
    loop {
        if g & HOLDER != FREE {
            return false;
        }
        match gate.compare_exchange(g, g | HOST, AcqRel, Acquire) {
            Ok(_) => return true,
            Err(actual) => g = actual,
        }
    }
}

/// Releases a gate the host holds; false if the host does not hold it.
pub(crate) fn release_from_host(gate: &AtomicU32) -> Option<u32> {
    let mut g = gate.load(Acquire);
    loop {
        if g & HOLDER != HOST {
            return None;
        }
        match gate.compare_exchange(g, g & !HOLDER, AcqRel, Acquire) {
            Ok(_) => return Some(g),
            Err(actual) => g = actual,
        }
    }
}

pub(crate) fn is_free(g: u32) -> bool {
    g & HOLDER == FREE
}

pub(crate) fn set_mode(gate: &AtomicU32, mode: GateMode) {
    match mode {
        GateMode::Serial => gate.fetch_and(!CONCURRENT, AcqRel),
        GateMode::Concurrent => gate.fetch_or(CONCURRENT, AcqRel),
    };
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The scheduler and a host competing for a serial gate: exactly one holds it.
    #[test]
    fn gate_has_one_holder() {
        loom::model(|| {
            let g = Arc::new(AtomicU32::new(0));
            let host = {
                let g = g.clone();
                thread::spawn(move || {
                    let took = try_take_for_host(&g);
                    if took {
                        assert!(release_from_host(&g).is_some());
                    }
                    took
                })
            };
            if take_for_timer(&g) == Take::Taken {
                release(&g);
            }
            host.join().unwrap();
            assert!(is_free(g.load(Acquire)));
        });
    }

    /// A timer parking at a busy gate races the holder's release: the parker sets
    /// WAITERS then looks at the holder; the releaser clears the holder and looks at
    /// WAITERS. At least one of them sees the other, so someone serves the queue.
    #[test]
    fn a_parked_timer_is_never_left_at_a_free_gate() {
        loom::model(|| {
            let g = Arc::new(AtomicU32::new(TIMER));
            let releaser = {
                let g = g.clone();
                thread::spawn(move || release(&g) & WAITERS != 0)
            };
            let before = g.fetch_or(WAITERS, AcqRel);
            let parker_sees_free = is_free(before) || is_free(g.load(Acquire));
            let releaser_sees_waiter = releaser.join().unwrap();
            assert!(parker_sees_free || releaser_sees_waiter);
        });
    }
}
