//! Owner authorities from the host's side: acquiring one (which ends the previous
//! authority's timers), renewing its lease, revoking or releasing it, registering timers
//! under it, and the host's use of its execution gate.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::duration_to_nanos;
use crate::cold::ReleaseHook;
use crate::end::EndReason;
use crate::error::{Error, Result};
use crate::owner::gate::{self, GateMode};
use crate::owner::{epoch_index, lease_deadline, OwnerId, EXPIRED, NO_DEADLINE};
use crate::runtime::handle::TimerHandle;
use crate::runtime::hold::HeldTimer;
use crate::runtime::shared::{with_work, Shared};
use crate::spec::{TimerId, TimerKey, TimerSpec};

/// Options of an owner authority.
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnerOptions {
    /// `None`: no lease (never expires).
    pub lease: Option<Duration>,
    /// How the owner's timers are admitted to run.
    pub gate: GateMode,
}

impl OwnerOptions {
    /// A serial owner with a lease of `lease`.
    pub fn lease(lease: Duration) -> Self {
        Self {
            lease: Some(lease),
            gate: GateMode::Serial,
        }
    }
}

fn check_lease(lease: Option<Duration>) -> Result<()> {
    if lease.is_some_and(|l| l.is_zero()) {
        return Err(Error::InvalidArgument(
            "lease must be greater than zero".into(),
        ));
    }
    Ok(())
}

impl<P> Shared<P> {
    /// Starts a new authority for owner `id`: the previous authority (if any) is revoked and
    /// its timers end with `Revoked`.
    pub(crate) fn acquire(&self, id: OwnerId, options: OwnerOptions) -> Result<(u32, u64)> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        check_lease(options.lease)?;
        let now = self.now();
        let deadline = lease_deadline(now, options.lease.map(duration_to_nanos));
        let (index, epoch, fence, claims) = {
            let mut ids = self.owners.ids.write();
            // Under the lock `close` passes through: see `close`.
            if self.is_closed() {
                return Err(Error::Closed);
            }
            let id_of = |i| self.owners.id_at(i);
            let index = match ids.get(id, id_of) {
                Some(i) => i,
                None => {
                    let i = self.owners.allocate()?;
                    self.owners.entry(i).id.store(id, Relaxed);
                    ids.insert(id, i, id_of);
                    i
                }
            };
            let entry = self.owners.entry(index);
            let mut book = entry.book.lock();
            let claims = self.claim_all_locked(&mut book, EndReason::Revoked);
            let epoch = self.owners.next_epoch(index);
            gate::set_mode(&entry.gate, options.gate);
            entry.epoch.store(epoch, Release);
            entry.deadline.store(deadline, Release);
            let fence = entry.lease_fence.fetch_add(1, AcqRel) + 1;
            book.set_released(false);
            (index, epoch, fence, claims)
        };
        with_work(now, |work| {
            self.finish_claims(claims, work);
            if deadline != NO_DEADLINE {
                self.arm_lease(index, deadline, fence, work);
            }
            self.flush(work);
        });
        Ok((index, epoch))
    }

    /// Ends authority `epoch` (revoke; with `release`, the owner is also forgotten once
    /// its timers have ended).
    fn end_authority(&self, index: u32, epoch: u64, release: bool) -> Result<()> {
        let now = self.now();
        let claims = {
            // Under the id map's lock, like `acquire`: a concurrent acquisition of the same
            // id either precedes this (which then fails: its epoch moved on) or follows it.
            let _ids = release.then(|| self.owners.ids.write());
            let entry = self.owners.entry(index);
            let mut book = entry.book.lock();
            if entry.epoch.load(Acquire) != epoch {
                return Err(Error::Revoked);
            }
            let claims = self.claim_all_locked(&mut book, EndReason::Revoked);
            // A fresh epoch nobody holds: every handle of the old authority is stale.
            entry.epoch.store(self.owners.next_epoch(index), Release);
            entry.deadline.store(EXPIRED, Release);
            if release {
                book.set_released(true);
            }
            claims
        };
        with_work(now, |work| {
            self.finish_claims(claims, work);
            self.flush(work);
        });
        if release && self.owners.entry(index).book.lock().live() == 0 {
            self.forget_owner(index);
        }
        Ok(())
    }

    /// Forgets a released owner whose timers have all ended: its id leaves the map and its
    /// index becomes free for a new owner. Its lease entries and authorities can never match
    /// the index's next owner (fence and epochs only grow).
    pub(crate) fn forget_owner(&self, index: u32) {
        let mut ids = self.owners.ids.write();
        let entry = self.owners.entry(index);
        let mut book = entry.book.lock();
        let id = entry.id.load(Relaxed);
        if !book.released()
            || book.live() != 0
            || ids.get(id, |i| self.owners.id_at(i)) != Some(index)
        {
            return; // acquired again meanwhile, or still ending timers
        }
        ids.remove(id, |i| self.owners.id_at(i));
        entry.lease_fence.fetch_add(1, AcqRel);
        entry.epoch.store(self.owners.next_epoch(index), Release);
        entry.deadline.store(EXPIRED, Release);
        book.clear();
        drop(book);
        drop(ids);
        self.owners.release(index);
    }
}

/// One authority of an owner: the handle through which timers are registered.
pub struct Owner<P: Send + Sync + 'static> {
    pub(crate) rt: Arc<Shared<P>>,
    pub(crate) id: OwnerId,
    /// Carries the owner's index in the table (`epoch_index`).
    pub(crate) epoch: u64,
}

impl<P: Send + Sync + 'static> Clone for Owner<P> {
    fn clone(&self) -> Self {
        Self {
            rt: self.rt.clone(),
            id: self.id,
            epoch: self.epoch,
        }
    }
}

impl<P: Send + Sync + 'static> std::fmt::Debug for Owner<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("id", &self.id)
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl<P: Send + Sync + 'static> Owner<P> {
    /// The owner's entry in the runtime's table.
    #[inline]
    pub(crate) fn index(&self) -> u32 {
        crate::owner::epoch_index(self.epoch)
    }
}

impl<P: Clone + Send + Sync + 'static> Owner<P> {
    /// The owner's id.
    pub fn id(&self) -> OwnerId {
        self.id
    }

    /// This authority's epoch: larger than every epoch the runtime handed out before.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// `Ok` while this authority is current and its lease running.
    pub fn check(&self) -> Result<()> {
        self.rt
            .owners
            .entry(self.index())
            .check(self.epoch, || self.rt.now())
    }

    /// Extends the lease to `now + lease` (`None`: no deadline). Fails once it expired.
    pub fn renew(&self, lease: Option<Duration>) -> Result<()> {
        check_lease(lease)?;
        let rt = &self.rt;
        let now = rt.now();
        let deadline = lease_deadline(now, lease.map(duration_to_nanos));
        let entry = rt.owners.entry(self.index());
        let before = entry.renew(self.epoch, now, deadline)?;
        if deadline < before {
            // An earlier deadline than the armed one (or a lease where there was none).
            let fence = entry.lease_fence.load(Acquire);
            with_work(now, |work| {
                rt.arm_lease(self.index(), deadline, fence, work);
                rt.flush(work);
            });
        }
        Ok(())
    }

    /// Ends this authority like [`Owner::revoke`] and lets the runtime forget the owner:
    /// once its timers have ended (each with `EndReason::Revoked`, after a running callback
    /// completes), everything the runtime kept for it is freed and `stats().owners` drops.
    /// For hosts whose owners come and go (actors, sessions): without it every owner id
    /// ever acquired stays known to the runtime. Acquiring the id again later starts a new
    /// owner whose epochs are above every epoch of the released one.
    pub fn release(&self) -> Result<()> {
        self.rt.end_authority(self.index(), self.epoch, true)
    }

    /// Ends this authority: its timers end with `EndReason::Revoked` and never run again.
    pub fn revoke(&self) -> Result<()> {
        self.rt.end_authority(self.index(), self.epoch, false)
    }

    /// Registers timer `key` of this owner. An existing registration of the key is
    /// superseded: its generation ends (`EndReason::Superseded`) and none of its pending
    /// ticks run (T1); if its callback is running, the new generation's first callback
    /// waits for it to end (T3). `payload` is handed back (cloned) in every record;
    /// `release` runs once when the generation ends, on the thread that ends it. The
    /// handle and its clones keep the generation's result readable as long as one lives.
    pub fn register(
        &self,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerHandle<P>> {
        let id = self
            .rt
            .register(self.index(), self.epoch, key, &spec, payload, release, true)?;
        Ok(TimerHandle::holding(self.rt.clone(), id))
    }

    /// [`Owner::register`] for a host that keeps its handles by id: the generation's
    /// result stays readable by id ([`crate::Runtime::timer_result`]) until the host gives
    /// the hold back ([`crate::Runtime::release_hold`]).
    pub fn register_held(
        &self,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<HeldTimer> {
        let id = self
            .rt
            .register(self.index(), self.epoch, key, &spec, payload, release, true)?;
        Ok(HeldTimer::new(&self.rt, id))
    }

    /// [`Owner::register`], returning the generation's id instead of a handle: nothing is
    /// reference-counted, so a host that keeps many timers stores 8 bytes per timer and
    /// cancels by id ([`crate::Runtime::cancel_timer_nowait`], [`crate::Runtime::cancel_timer`]).
    pub fn register_id(
        &self,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerId> {
        self.rt.register(
            self.index(),
            self.epoch,
            key,
            &spec,
            payload,
            release,
            false,
        )
    }

    /// [`Owner::register_id`], naming `previous`: the id of the key's current generation
    /// as the host knows it (a timeout it resets, a reminder it moves). The outcome is the
    /// same — a new generation supersedes the key's current one (T1) — and when
    /// `previous` is that generation, idle, and its end runs nothing (no release hook or
    /// release work, nobody waiting for it, a payload without drop glue), the new
    /// generation takes its slot in place: nothing but the timer's own line, its payload
    /// and one deadline entry is written. `previous`'s result stays `Superseded`. A
    /// `previous` that is stale or names another key only costs the look.
    pub fn rearm(
        &self,
        previous: TimerId,
        key: TimerKey,
        spec: TimerSpec,
        payload: P,
        release: Option<ReleaseHook>,
    ) -> Result<TimerId> {
        self.rt.rearm(
            self.index(),
            self.epoch,
            previous,
            key,
            &spec,
            payload,
            release,
        )
    }

    /// Takes the owner's execution gate for the host's own work, waiting up to `timeout`
    /// (`None`: forever). While held, none of the owner's timer callbacks start; due
    /// ticks wait and are delivered after [`Owner::leave_gate`] (T9). False on timeout or
    /// when the runtime closes meanwhile.
    pub fn enter_gate(&self, timeout: Option<Duration>) -> bool {
        let rt = &self.rt;
        let entry = rt.owners.entry(self.index());
        if gate::try_take_for_host(&entry.gate) {
            return true;
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        entry.host_waiters.fetch_add(1, AcqRel);
        entry.gate.fetch_or(gate::HOST_WAITING, AcqRel);
        let (lock, freed) = &rt.gate_freed;
        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
        let taken = loop {
            if rt.is_closed() {
                break false;
            }
            if gate::try_take_for_host(&entry.gate) {
                break true;
            }
            let wait = match deadline {
                None => Duration::from_millis(100),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break gate::try_take_for_host(&entry.gate);
                    }
                    (d - now).min(Duration::from_millis(100))
                }
            };
            g = freed
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(g);
        if entry.host_waiters.fetch_sub(1, AcqRel) == 1 {
            entry.gate.fetch_and(!gate::HOST_WAITING, AcqRel);
        }
        taken
    }

    /// Takes the gate if it is free right now.
    pub fn try_enter_gate(&self) -> bool {
        gate::try_take_for_host(&self.rt.owners.entry(self.index()).gate)
    }

    /// Releases the gate taken by `enter_gate` and lets waiting ticks run.
    pub fn leave_gate(&self) -> Result<()> {
        let rt = &self.rt;
        let entry = rt.owners.entry(self.index());
        let before = gate::release_from_host(&entry.gate).ok_or_else(|| {
            Error::InvalidArgument("the owner's gate is not held by the host".into())
        })?;
        if before & gate::HOST_WAITING != 0 {
            rt.notify_gate_freed();
        }
        with_work(rt.now(), |work| {
            rt.serve_gate(self.index(), work);
            rt.flush(work);
        });
        Ok(())
    }

    /// Tells the runtime the host's own gate for this owner is free again, so ticks the
    /// host completed as `Outcome::Deferred` are retried now.
    pub fn retry_deferred(&self) -> Result<()> {
        let rt = &self.rt;
        if rt.is_closed() {
            return Err(Error::Closed);
        }
        with_work(rt.now(), |work| {
            rt.serve_gate(self.index(), work);
            rt.flush(work);
        });
        Ok(())
    }
}

/// The owner `id` as the host knows it: (index, epoch) of its current authority. A
/// released owner is unknown, also while its last timers are still ending.
pub(crate) fn authority_of<P>(rt: &Shared<P>, id: OwnerId) -> Result<(u32, u64)> {
    let index = rt
        .owners
        .ids
        .read()
        .get(id, |i| rt.owners.id_at(i))
        .ok_or(Error::UnknownOwner(id))?;
    let entry = rt.owners.entry(index);
    if entry.book.lock().released() {
        return Err(Error::UnknownOwner(id));
    }
    Ok((index, entry.epoch.load(Acquire)))
}

/// Resolves an (id, epoch) pair a host kept (the C ABI's authority) without a map lookup:
/// the epoch names the owner's index.
#[inline]
pub(crate) fn authority_by_epoch<P>(rt: &Shared<P>, id: OwnerId, epoch: u64) -> Result<u32> {
    let index = epoch_index(epoch);
    let current = rt
        .owners
        .get(index)
        .is_some_and(|e| e.id.load(Relaxed) == id && e.epoch.load(Acquire) == epoch);
    if !current {
        // Not this id's current authority: an older one of it, a released one, or none.
        return match authority_of(rt, id) {
            Ok(_) => Err(Error::Revoked),
            Err(e) => Err(e),
        };
    }
    Ok(index)
}
