//! Owners (Spots): lease deadline, authority epoch (SPEC T6) and execution gate (T9).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::{duration_to_nanos, Nanos};
use crate::error::{Error, Result};
use crate::keymap::{new_key_map, KeyMap};
use crate::sync::{AtomicU64, AtomicU8};

/// The host's id of an owner.
pub type OwnerId = u64;

/// Lease deadline meaning "no lease: never expires".
pub(crate) const NO_DEADLINE: Nanos = u64::MAX;
/// Lease deadline after the scheduler declared the authority expired.
pub(crate) const EXPIRED: Nanos = 0;

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
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Serial),
            1 => Some(Self::Concurrent),
            _ => None,
        }
    }
}

const GATE_FREE: u8 = 0;
const GATE_HOST: u8 = 1;
const GATE_TIMER: u8 = 2;

/// The execution gate of one owner.
pub(crate) struct Gate {
    state: AtomicU8,
    host_waiters: AtomicU32,
    /// Set when the runtime closes: hosts waiting to enter give up.
    closed: std::sync::atomic::AtomicBool,
    lock: Mutex<()>,
    released: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            state: AtomicU8::new(GATE_FREE),
            host_waiters: AtomicU32::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            lock: Mutex::new(()),
            released: Condvar::new(),
        }
    }
}

impl Gate {
    pub fn try_take_for_timer(&self) -> bool {
        self.state
            .compare_exchange(GATE_FREE, GATE_TIMER, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub fn release_from_timer(&self) {
        self.state.store(GATE_FREE, Ordering::Release);
        if self.host_waiters.load(Ordering::Acquire) > 0 {
            let _g = self.lock.lock();
            self.released.notify_all();
        }
    }

    pub fn is_free(&self) -> bool {
        self.state.load(Ordering::Acquire) == GATE_FREE
    }

    fn try_take_for_host(&self) -> bool {
        self.state
            .compare_exchange(GATE_FREE, GATE_HOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn take_for_host(&self, timeout: Option<Duration>) -> bool {
        if self.try_take_for_host() {
            return true;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.host_waiters.fetch_add(1, Ordering::AcqRel);
        let mut g = self.lock.lock();
        let taken = loop {
            if self.try_take_for_host() {
                break true;
            }
            if self.closed.load(Ordering::Acquire) {
                break false;
            }
            match deadline {
                None => self.released.wait(&mut g),
                Some(d) => {
                    if self.released.wait_until(&mut g, d).timed_out() {
                        break self.try_take_for_host();
                    }
                }
            }
        };
        drop(g);
        self.host_waiters.fetch_sub(1, Ordering::AcqRel);
        taken
    }

    /// Wakes every host waiting to enter; they return without the gate.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _g = self.lock.lock();
        self.released.notify_all();
    }

    fn release_from_host(&self) -> bool {
        self.state
            .compare_exchange(GATE_HOST, GATE_FREE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// State of one owner id shared by the host threads and the scheduler.
pub(crate) struct OwnerShared {
    pub id: OwnerId,
    /// Dense index used by the scheduler's owner table and queue entries.
    pub index: u32,
    pub epoch: AtomicU64,
    pub lease_deadline: AtomicU64,
    pub gate_mode: AtomicU8,
    pub gate: Gate,
    /// key -> slot of the timers registered under this owner. Per-owner, so registrations
    /// of different owners never contend.
    pub keys: Mutex<KeyMap>,
    /// The host released the owner: the runtime forgets it once its timers have ended
    /// (changed only under the runtime's owner-map write lock, like a new acquisition).
    pub released: std::sync::atomic::AtomicBool,
    /// The runtime has forgotten it: this object is out of the owner map and its index may
    /// belong to another owner now.
    pub forgotten: std::sync::atomic::AtomicBool,
}

impl OwnerShared {
    /// A new owner whose first authority will be `first_epoch + 1`.
    pub fn new(id: OwnerId, index: u32, first_epoch: u64) -> Self {
        Self {
            id,
            index,
            epoch: AtomicU64::new(first_epoch),
            lease_deadline: AtomicU64::new(EXPIRED),
            gate_mode: AtomicU8::new(GateMode::Serial as u8),
            gate: Gate::default(),
            keys: Mutex::new(new_key_map()),
            released: std::sync::atomic::AtomicBool::new(false),
            forgotten: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn serial(&self) -> bool {
        self.gate_mode.load(Ordering::Relaxed) == GateMode::Serial as u8
    }

    /// Is the authority `epoch` current and its lease still running at `now`?
    pub fn check(&self, epoch: u64, now: Nanos) -> Result<()> {
        self.check_with(epoch, || now)
    }

    /// `check`, reading the clock only when the owner has a lease: a host's start check
    /// runs once per record, and most owners have none.
    pub fn check_with(&self, epoch: u64, now: impl FnOnce() -> Nanos) -> Result<()> {
        if self.epoch.load(Ordering::Acquire) != epoch {
            return Err(Error::Revoked);
        }
        let deadline = self.lease_deadline.load(Ordering::Acquire);
        if deadline != NO_DEADLINE && deadline <= now() {
            return Err(Error::LeaseExpired);
        }
        Ok(())
    }

    /// Extends the lease of authority `epoch`, unless it already ended. A compare-and-swap
    /// so that a renewal racing the scheduler's expiry either wins or sees the expiry.
    pub fn renew(&self, epoch: u64, now: Nanos, lease: Option<Duration>) -> Result<()> {
        let new = lease_deadline(now, lease);
        let mut cur = self.lease_deadline.load(Ordering::Acquire);
        loop {
            if self.epoch.load(Ordering::Acquire) != epoch {
                return Err(Error::Revoked);
            }
            if cur <= now {
                return Err(Error::LeaseExpired);
            }
            match self.lease_deadline.compare_exchange(
                cur,
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Ends authority `epoch` (a newer epoch takes over; the lease is over). False when
    /// `epoch` is no longer current.
    pub fn revoke(&self, epoch: u64) -> bool {
        if self
            .epoch
            .compare_exchange(epoch, epoch + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.lease_deadline.store(EXPIRED, Ordering::Release);
        true
    }

    /// Called by the scheduler when a lease entry surfaces: true if the lease is over (and
    /// now marked expired), false if it was renewed meanwhile.
    pub fn expire_if_due(&self, now: Nanos) -> bool {
        let mut cur = self.lease_deadline.load(Ordering::Acquire);
        loop {
            if cur > now {
                return false;
            }
            if cur == EXPIRED {
                return true;
            }
            match self.lease_deadline.compare_exchange(
                cur,
                EXPIRED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    pub fn host_enter(&self, timeout: Option<Duration>) -> bool {
        self.gate.take_for_host(timeout)
    }

    pub fn host_try_enter(&self) -> bool {
        self.gate.try_take_for_host()
    }

    pub fn host_leave(&self) -> bool {
        self.gate.release_from_host()
    }
}

pub(crate) fn lease_deadline(now: Nanos, lease: Option<Duration>) -> Nanos {
    match lease {
        None => NO_DEADLINE,
        Some(d) => now
            .saturating_add(duration_to_nanos(d))
            .min(NO_DEADLINE - 1),
    }
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A renewal racing the scheduler's expiry: either the renewal wins (and the lease
    /// is not expired) or the expiry wins (and the renewal fails) — never both.
    #[test]
    fn renewal_and_expiry_never_both_win() {
        loom::model(|| {
            let o = Arc::new(OwnerShared::new(1, 0, 0));
            o.epoch.store(1, Ordering::SeqCst);
            o.lease_deadline.store(100, Ordering::SeqCst);
            let host = {
                let o = o.clone();
                thread::spawn(move || o.renew(1, 99, Some(Duration::from_nanos(50))).is_ok())
            };
            let expired = o.expire_if_due(100);
            let renewed = host.join().unwrap();
            assert!(!(renewed && expired));
            let deadline = o.lease_deadline.load(Ordering::SeqCst);
            if expired {
                assert_eq!(deadline, EXPIRED);
            } else {
                assert_eq!(deadline, 149);
            }
        });
    }

    /// A host's start check (`check`, in `begin` right before a handler starts) racing the
    /// scheduler's lease expiry and a revocation: once either has been published to the
    /// host, no callback of the authority starts; a check that passed ran before them (the
    /// scheduler then waits for that callback's completion before ending the generation).
    #[test]
    fn start_check_after_expiry_or_revoke_fails() {
        loom::model(|| {
            let o = Arc::new(OwnerShared::new(1, 0, 0));
            o.epoch.store(1, Ordering::SeqCst);
            o.lease_deadline.store(100, Ordering::SeqCst);
            let published = Arc::new(AtomicU64::new(0));
            let scheduler = {
                let (o, p) = (o.clone(), published.clone());
                thread::spawn(move || {
                    assert!(o.expire_if_due(100));
                    p.fetch_add(1, Ordering::Release);
                })
            };
            let revoker = {
                let (o, p) = (o.clone(), published.clone());
                thread::spawn(move || {
                    let revoked = o.revoke(1);
                    p.fetch_add(1, Ordering::Release);
                    revoked
                })
            };
            let seen = published.load(Ordering::Acquire);
            let passed = o.check(1, 99).is_ok();
            assert!(
                !(seen > 0 && passed),
                "a callback started after its authority ended"
            );
            scheduler.join().unwrap();
            assert!(revoker.join().unwrap());
            assert!(o.check(1, 99).is_err());
        });
    }

    /// The scheduler and a host competing for a serial gate: exactly one holds it.
    #[test]
    fn gate_has_one_holder() {
        loom::model(|| {
            let o = Arc::new(OwnerShared::new(1, 0, 0));
            let host = {
                let o = o.clone();
                thread::spawn(move || {
                    let took = o.host_try_enter();
                    if took {
                        assert!(o.host_leave());
                    }
                    took
                })
            };
            let timer = o.gate.try_take_for_timer();
            if timer {
                o.gate.release_from_timer();
            }
            let _ = host.join().unwrap();
            assert!(o.gate.is_free());
        });
    }
}
