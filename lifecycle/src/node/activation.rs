//! Creation (L3): only an explicit intent creates; the factory runs once however many
//! callers race; Ready is published to the admission view in the same continuation as the
//! store's commit; a failed creation releases its reservation.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{LocalSpot, Node};
use crate::error::{LifecycleError, Queue, Result};
use crate::kind::{SpotId, SpotKind};
use crate::resolver::{resolve, Resolution};
use crate::store::Reserved;

/// The first message of a Spot being created: its lane and payload.
pub(crate) type First = (crate::lane::LaneKind, Box<[u8]>);

impl crate::cluster::Peer for Node {
    fn accept(
        &self,
        spot: SpotId,
        lane: crate::lane::LaneKind,
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
    ) -> Result<u64> {
        Node::accept(self, spot, lane, payload, create)
    }

    fn activate_here(
        &self,
        spot: SpotId,
        kind: SpotKind,
        first: &mut Option<First>,
    ) -> Result<Option<u64>> {
        Ok(self
            .activate(spot, kind, first, &mut None)?
            .map(|s| s.generation))
    }
}

/// One creation attempt of this process; callers that lose the race wait on it.
#[derive(Default)]
pub(crate) struct Attempt {
    outcome: Mutex<Option<Result<()>>>,
    done: Condvar,
}

impl Attempt {
    fn finish(&self, r: Result<()>) {
        *self.outcome.lock() = Some(r);
        self.done.notify_all();
    }

    fn wait(&self, until: Instant) -> Option<Result<()>> {
        let mut o = self.outcome.lock();
        while o.is_none() {
            if self.done.wait_until(&mut o, until).timed_out() {
                break;
            }
        }
        o.clone()
    }
}

impl Node {
    /// Makes sure Spot `id` of `kind` exists somewhere: creates it when the store says
    /// Missing (placing it on a live node below its cap, this one first), waits for a
    /// creation in progress, refuses Unavailable. Returns the owner node and the Spot's
    /// object generation. A creation that happens here admits `first` as the Spot's first
    /// message (and takes it out of the option). `seen`: a read of the store the caller
    /// just made (its first look is not repeated: a remote store pays a round trip per
    /// read).
    pub(crate) fn create(
        &self,
        id: SpotId,
        kind: SpotKind,
        first: &mut Option<First>,
        mut seen: Option<crate::store::StoreView>,
    ) -> Result<(crate::store::NodeId, u64)> {
        let until = Instant::now() + self.config.creation_wait;
        // Nothing known of the id yet: when it would be created here, reserving at once
        // finds an existing record in the same round trip as a read would.
        let mut reserve_first = seen.is_none();
        loop {
            self.check_open()?;
            if let Some(s) = self.local(id) {
                return self.same_kind(&s, kind).map(|_| (self.id, s.generation));
            }
            let view = match seen.take() {
                Some(v) => v,
                None if std::mem::take(&mut reserve_first)
                    && self.store.place(self.id) == Some(self.id) =>
                {
                    match self.activate(id, kind, first, &mut seen)? {
                        Some(s) => return Ok((self.id, s.generation)),
                        None => continue,
                    }
                }
                None => self.store.read(id)?,
            };
            match resolve(&view) {
                Resolution::Ready {
                    authority,
                    kind: actual,
                } => {
                    if actual != kind {
                        return Err(LifecycleError::WrongKind {
                            spot: id,
                            expected: kind,
                            actual,
                        });
                    }
                    let generation = view.record.map_or(0, |r| r.object_generation);
                    return Ok((authority.node, generation));
                }
                Resolution::Creating { revision } => {
                    if self.take_over_orphan(id, &view) {
                        continue;
                    }
                    if Instant::now() >= until {
                        return Err(LifecycleError::unavailable(
                            id,
                            "another creation of it did not finish in time",
                        ));
                    }
                    self.wait_creation(id, revision, until)?;
                }
                Resolution::Unavailable { evidence, .. } => {
                    return Err(LifecycleError::unavailable(id, evidence))
                }
                Resolution::Missing => {
                    let Some(target) = self.store.place(self.id) else {
                        self.counters.reject(Queue::Activation);
                        return Err(LifecycleError::CapacityExceeded {
                            queue: Queue::Activation,
                        });
                    };
                    if target == self.id {
                        match self.activate(id, kind, first, &mut seen)? {
                            Some(s) => return Ok((self.id, s.generation)),
                            // Created elsewhere meanwhile: `seen` holds where (or the
                            // next round reads it).
                            None => continue,
                        }
                    }
                    let remote = self.peer(target, id).map_err(|e| match e {
                        LifecycleError::StaleRoute { .. } => {
                            LifecycleError::unavailable(id, "the node chosen for it has left")
                        }
                        e => e,
                    })?;
                    match remote.activate_here(id, kind, first)? {
                        Some(generation) => return Ok((target, generation)),
                        None => continue,
                    }
                }
            }
        }
    }

    /// Waits for a creation of `id` in progress: this process's attempt (whose failure is
    /// the waiter's too), or else a change of the store's record.
    pub(crate) fn wait_creation(&self, id: SpotId, revision: u64, until: Instant) -> Result<()> {
        let local = self.attempts.lock().get(&id).cloned();
        match local {
            Some(attempt) => match attempt.wait(until) {
                Some(Err(e)) => Err(self.shared_failure(e)),
                _ => Ok(()),
            },
            None => {
                self.store.wait_change(
                    id,
                    revision,
                    until.saturating_duration_since(Instant::now()),
                );
                Ok(())
            }
        }
    }

    /// A refusal of a creation attempt this caller shared with others: counted for this
    /// caller too (every refusal a caller sees is counted once).
    fn shared_failure(&self, e: LifecycleError) -> LifecycleError {
        if let LifecycleError::CapacityExceeded { queue } = &e {
            self.counters.reject(*queue);
        }
        e
    }

    /// A reservation of this node that no attempt of this process holds (its attempt
    /// ended with neither its commit nor its abort confirmed by the store): dropped, if
    /// the record is still that reservation's Creating, so that this caller creates the
    /// id. True when it was (or the record moved on meanwhile): read again.
    fn take_over_orphan(&self, id: SpotId, view: &crate::store::StoreView) -> bool {
        let Some(record) = view.record else {
            return false;
        };
        if record.authority.node != self.id
            || record.state != crate::store::LocationState::Creating
            || self.attempts.lock().contains_key(&id)
        {
            return false;
        }
        self.store.abort_orphan(id, record.authority).is_ok()
    }

    fn same_kind(&self, s: &LocalSpot, kind: SpotKind) -> Result<()> {
        if s.kind() != kind {
            return Err(LifecycleError::WrongKind {
                spot: s.id(),
                expected: kind,
                actual: s.kind(),
            });
        }
        Ok(())
    }

    /// Creates Spot `id` on this node (local activation). Concurrent callers in this
    /// process share one attempt; across nodes, the store's reservation picks one. None
    /// when another node created it meanwhile; `seen` then holds the store's view of it
    /// when the attempt read one.
    pub(crate) fn activate(
        &self,
        id: SpotId,
        kind: SpotKind,
        first: &mut Option<First>,
        seen: &mut Option<crate::store::StoreView>,
    ) -> Result<Option<Arc<LocalSpot>>> {
        let until = Instant::now() + self.config.creation_wait;
        loop {
            self.check_open()?;
            if let Some(s) = self.local(id) {
                self.same_kind(&s, kind)?;
                return Ok(Some(s));
            }
            let (attempt, mine) = {
                let mut attempts = self.attempts.lock();
                match attempts.get(&id) {
                    Some(a) => (a.clone(), false),
                    None => {
                        let a = Arc::new(Attempt::default());
                        attempts.insert(id, a.clone());
                        (a, true)
                    }
                }
            };
            if !mine {
                match attempt.wait(until) {
                    Some(Ok(())) => continue,
                    Some(Err(e)) => return Err(self.shared_failure(e)),
                    None => {
                        return Err(LifecycleError::unavailable(
                            id,
                            "its creation did not finish in time",
                        ))
                    }
                }
            }
            let r = self.activate_once(id, kind, first);
            self.attempts.lock().remove(&id);
            attempt.finish(r.as_ref().map(|_| ()).map_err(Clone::clone));
            match r {
                Ok(Ok(s)) => return Ok(Some(s)),
                // Someone else holds the reservation: go round and wait for it.
                Ok(Err(view)) => {
                    if self.take_over_orphan(id, &view) {
                        continue;
                    }
                    if Instant::now() >= until {
                        return Err(LifecycleError::unavailable(
                            id,
                            "another creation of it did not finish in time",
                        ));
                    }
                    match resolve(&view) {
                        Resolution::Creating { revision } => self.store.wait_change(
                            id,
                            revision,
                            until.saturating_duration_since(Instant::now()),
                        ),
                        Resolution::Ready { authority, .. } if authority.node != self.id => {
                            *seen = Some(view);
                            return Ok(None);
                        }
                        Resolution::Unavailable { evidence, .. } => {
                            return Err(LifecycleError::unavailable(id, evidence))
                        }
                        _ => {}
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt holding this process's attempt slot for `id`: reserve, run the
    /// factory, start the owner, publish and commit Ready, admit `first`. `Ok(Err(view))`:
    /// another creator holds the reservation, as the attempt found it.
    fn activate_once(
        &self,
        id: SpotId,
        kind: SpotKind,
        first: &mut Option<First>,
    ) -> Result<std::result::Result<Arc<LocalSpot>, crate::store::StoreView>> {
        let _running = self.activations.read();
        self.check_open()?;
        self.check_term(id)?;
        if let Some((lane, payload)) = first.as_ref() {
            self.check_fits(*lane, payload.len() as u64)?;
        }
        // Take a place under the cap before anything else (given back unless the Spot is
        // published; a close gives it back later).
        if self.occupied.fetch_add(1, Relaxed) >= self.config.active_cap {
            self.occupied.fetch_sub(1, Relaxed);
            self.counters.reject(Queue::Activation);
            return Err(LifecycleError::CapacityExceeded {
                queue: Queue::Activation,
            });
        }
        let reservation = match self.store.reserve_or_read(id, kind, self.id) {
            Ok(Reserved::Won(r)) => r,
            other => {
                self.occupied.fetch_sub(1, Relaxed);
                return match other? {
                    Reserved::Taken(view) => Ok(Err(view)),
                    Reserved::Won(_) => unreachable!("matched above"),
                };
            }
        };
        let factory_ran = std::cell::Cell::new(false);
        let fail = |e: LifecycleError| {
            self.abort_reservation(reservation);
            self.occupied.fetch_sub(1, Relaxed);
            self.counters.creation_failures.fetch_add(1, Relaxed);
            // A factory that ran is always followed by a closing callback.
            if factory_ran.get() {
                self.closing_callback(id, kind, super::CloseReason::CreationFailed);
            }
            e
        };
        // The Spot keeps only its authority's epoch: the node is this one.
        if reservation.authority.node != self.id {
            return Err(fail(LifecycleError::Store(
                format!(
                    "spot {id}: the store reserved it for node {} when node {} asked",
                    reservation.authority.node.0, self.id.0
                )
                .into(),
            )));
        }
        if let Some(factory) = &self.config.factory {
            self.counters.factory_runs.fetch_add(1, Relaxed);
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| factory(id, kind)))
                .unwrap_or_else(|_| Err("the factory panicked".to_string()));
            factory_ran.set(made.is_ok());
            if let Err(msg) = made {
                return Err(fail(LifecycleError::CreationFailed {
                    spot: id,
                    message: msg.into(),
                }));
            }
        }
        let owner = self
            .rt
            .acquire_owner(id.0, self.owner_options())
            .map_err(|e| fail(e.into()))?;
        let now = self.rt.now();
        let place = if crate::kind::evictable(kind) {
            let Some(p) = self.catalog.reserve(now) else {
                let _ = owner.release();
                self.counters.reject(Queue::Activation);
                return Err(fail(LifecycleError::CapacityExceeded {
                    queue: Queue::Activation,
                }));
            };
            Some(p)
        } else {
            None
        };
        let spot = Arc::new(LocalSpot::new(
            kind,
            reservation.generation,
            reservation.authority.epoch,
            owner,
            place,
        ));
        // Publication (L3): the Spot enters the admission view with its lock held, then
        // Ready is committed, then the creating call's message is admitted, then the lock
        // opens. Whoever finds the Spot meanwhile — here, or a node that read Ready from
        // the store — waits on that lock: nothing is admitted before the commit, and the
        // creator's message is the first.
        let mut st = spot.state.lock();
        self.spots.write().insert(spot.clone());
        if let Err(e) = self.store.commit_ready(&reservation) {
            spot.close.set_closing(true);
            spot.leave_catalog(&st, &self.catalog);
            drop(st);
            self.spots.write().remove_same(&spot);
            let _ = spot.owner.release();
            return Err(fail(e));
        }
        if let Some(p) = &spot.place {
            self.catalog.fill(p, spot.clone());
        }
        self.counters.created.fetch_add(1, Relaxed);
        let mut admitted = Ok(());
        if let Some((lane, payload)) = first.take() {
            let mut payload = Some(payload);
            admitted = self.admit_locked(&spot, &mut st, lane, &mut payload);
            if let Some(p) = payload {
                *first = Some((lane, p));
            }
        }
        drop(st);
        self.publish_active();
        if spot.place.is_some() {
            self.arm_scan(Duration::ZERO);
        }
        admitted.map(|_| Ok(spot))
    }
}
