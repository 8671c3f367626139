//! Closing a Spot (L5): a close transaction — merged with other closes of the same id,
//! nothing admitted from its start, queued work dropped, the closing callback once no work
//! of the Spot runs (after the running record completes), the teardown of the activation
//! (its timers end, its owner is released), and only then the release of its location.
//! Idle eviction is a close of an Instance Spot found quiescent by a scan that examines
//! at most 64 Spots and resumes at its cursor.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::Arc;

use super::{CloseReason, LocalSpot, Node};
use crate::error::{LifecycleError, Result};
use crate::kind::{Instance, Spot, SpotId, SpotKind, User};
use crate::lane::ITEM_OVERHEAD_BYTES;

thread_local! {
    /// The Spot whose closing callback runs on this thread, if any.
    static CLOSING_HERE: std::cell::Cell<Option<SpotId>> = const { std::cell::Cell::new(None) };
}

/// True when this thread is inside the closing callback of `spot`.
pub(super) fn closing_here(spot: SpotId) -> bool {
    CLOSING_HERE.with(|c| c.get() == Some(spot))
}

impl Node {
    /// Closes User Spot `spot`: its closing callback runs (`Closed`), its timers end, its
    /// queued messages are dropped (counted), its location is released.
    pub fn close_user_spot(&self, spot: Spot<User>) -> Result<bool> {
        let s = self.current(&spot)?;
        Ok(self.close_spot(&s, CloseReason::Closed, false))
    }

    /// Closes Instance Spot `spot` (as `close_user_spot`).
    pub fn close_instance(&self, spot: Spot<Instance>) -> Result<bool> {
        let s = self.current(&spot)?;
        Ok(self.close_spot(&s, CloseReason::Closed, false))
    }

    /// One idle-eviction pass now, beside the node's own (see `idle_scan`): examines at
    /// most 64 Instance Spots from the catalog's cursor and evicts those idle past
    /// `instance_idle_timeout` with no work pending or running and their gate free.
    /// Returns how many it evicted.
    pub fn evict_idle(&self) -> usize {
        self.scan_pass().0
    }

    /// One idle-eviction pass: how many it evicted, and whether the cursor came round to
    /// the catalog's start (a sweep over every place ended).
    pub(super) fn scan_pass(&self) -> (usize, bool) {
        let Some(timeout) = self.config.instance_idle_timeout else {
            return (0, true);
        };
        let timeout = timeout.as_nanos().min(u64::MAX as u128) as u64;
        let now = self.rt.now();
        let mut batch = Vec::new();
        // Reads the activity words of the places it passes over; only candidates are taken
        // further.
        let scan = self
            .catalog
            .next_batch(&mut batch, |since| now.saturating_sub(since) >= timeout);
        let examined = scan.examined;
        self.counters.eviction_passes.fetch_add(1, Relaxed);
        self.counters
            .eviction_examined
            .fetch_add(examined as u64, Relaxed);
        let mut evicted = 0;
        for s in batch {
            let idle = {
                let st = s.state.lock();
                !s.close.closing()
                    && st.quiescent()
                    && s.idle_for(&st, &self.catalog, now)
                        .is_some_and(|d| d >= timeout)
            };
            if idle && self.close_spot(&s, CloseReason::IdleEvicted, true) {
                evicted += 1;
            }
        }
        (evicted, scan.wrapped)
    }

    /// The close transaction. With `quiescent_only` it closes nothing unless the Spot
    /// has no work pending or running and its gate is free (checked again under its
    /// lock). Otherwise queued work is dropped at once and, when a record of the Spot holds
    /// its gate (a handler is running), the rest of the close — the closing callback, the
    /// teardown, the release — happens when that record completes, never beside it (at a
    /// node's shutdown it does not wait). False when another close of it is in progress or
    /// it was not quiescent.
    pub(crate) fn close_spot(
        &self,
        s: &Arc<LocalSpot>,
        reason: CloseReason,
        quiescent_only: bool,
    ) -> bool {
        {
            let st = s.state.lock();
            if s.close.closing() || (quiescent_only && !st.quiescent()) {
                return false;
            }
            s.close.set_closing(true);
        }
        // No work of the Spot may be running or about to run: its gate.
        let gate = s.owner.try_enter_gate();
        if !gate {
            if quiescent_only {
                let _st = s.state.lock();
                s.close.set_closing(false);
                return false;
            }
            if !self.closed.load(Acquire) {
                self.drop_queued(s);
                {
                    let _st = s.state.lock();
                    s.close.set_pending(reason);
                }
                self.closing.lock().push(s.clone());
                // The record may have completed before the close was marked pending.
                self.retry_closes();
                return true;
            }
        }
        self.finish_close(s, reason, gate);
        true
    }

    /// Finishes the closes that waited for a record of their Spot to complete (called
    /// after every completion the node applies).
    pub(crate) fn retry_closes(&self) {
        let waiting: Vec<Arc<LocalSpot>> = {
            let c = self.closing.lock();
            if c.is_empty() {
                return;
            }
            c.clone()
        };
        for s in waiting {
            if !s.owner.try_enter_gate() {
                continue; // still running: its completion comes back here
            }
            let reason = {
                let _st = s.state.lock();
                s.close.take_pending()
            };
            self.closing.lock().retain(|x| !Arc::ptr_eq(x, &s));
            match reason {
                Some(r) => self.finish_close(&s, r, true),
                None => {
                    let _ = s.owner.leave_gate();
                }
            }
        }
    }

    /// Drops what waits in the Spot's lanes (counted), returning its inbound bytes.
    pub(super) fn drop_queued(&self, s: &LocalSpot) {
        let (drained, doorbell) = {
            let mut st = s.state.lock();
            let dropped = st.pending.as_mut().map_or((0, None), |p| {
                let q = std::mem::take(&mut p.queues);
                for item in q.application.iter().chain(&q.lifecycle) {
                    self.inbound_bytes
                        .fetch_sub(item.cost - ITEM_OVERHEAD_BYTES, Relaxed);
                }
                (q.len(), q.doorbell)
            });
            st.settle();
            dropped
        };
        // The doorbell rung for them must not take the gate any more (a close may wait
        // for it).
        if let Some(d) = doorbell {
            let _ = self.rt.cancel_timer_nowait(d);
        }
        // Counted once, here.
        self.counters
            .messages_dropped
            .fetch_add(drained as u64, Relaxed);
    }

    /// The rest of a close, its gate held (`gate`) or the node shutting down: the closing
    /// callback, the teardown of the activation, then the release of its location. A Spot
    /// whose authority ended meanwhile (given up, or the node's term is over) closes as
    /// `AuthorityLost` — its callback is told to save nothing — and its location is not
    /// released by a term that is over (the store's end of the term releases it).
    pub(super) fn finish_close(&self, s: &Arc<LocalSpot>, reason: CloseReason, gate: bool) {
        let term_runs = self.term_runs();
        let lost = s.close.lost() || !term_runs;
        let reason = match reason {
            CloseReason::CreationFailed => CloseReason::CreationFailed,
            _ if lost => CloseReason::AuthorityLost,
            r => r,
        };
        if lost {
            let _st = s.state.lock();
            s.close.set_lost();
        }
        self.closing_callback(s.id(), s.kind(), reason);
        // Its timers and doorbells end; the owner is forgotten once they have.
        let _ = s.owner.release();
        if gate {
            let _ = s.owner.leave_gate();
        }
        self.drop_queued(s);
        self.spots.write().remove_same(s);
        self.occupied.fetch_sub(1, Relaxed);
        s.leave_catalog(&s.state.lock(), &self.catalog);
        self.publish_active();
        // A shutdown that found the store unreachable leaves the rest to the term's end.
        if term_runs && !self.releases_failing.load(Acquire) {
            let authority = crate::store::Authority {
                node: self.id,
                epoch: s.epoch,
            };
            // A store that cannot be reached answers `Unavailable` (a fenced-off release,
            // `Store`: nothing to do).
            let r = self.store.release(s.id(), authority);
            if matches!(r, Err(LifecycleError::Unavailable { .. })) && self.closed.load(Acquire) {
                self.releases_failing
                    .store(true, std::sync::atomic::Ordering::Release);
            }
        }
        match reason {
            CloseReason::IdleEvicted => self.counters.evicted.fetch_add(1, Relaxed),
            CloseReason::AuthorityLost => self.counters.lost.fetch_add(1, Relaxed),
            _ => self.counters.closed.fetch_add(1, Relaxed),
        };
    }

    /// Runs the application's closing callback (host code: a panic must not leave the
    /// Spot half-closed). While it runs, an intent for the same Spot on this thread is
    /// refused at once instead of waiting for this close.
    pub(super) fn closing_callback(&self, id: SpotId, kind: SpotKind, reason: CloseReason) {
        if let Some(cb) = &self.config.on_close {
            let outer = CLOSING_HERE.with(|c| c.replace(Some(id)));
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(id, kind, reason)));
            CLOSING_HERE.with(|c| c.set(outer));
        }
    }

    /// Closes the node: every Spot closes (`NodeShutdown`), then the timer runtime.
    /// Idempotent.
    pub fn shutdown(&self) {
        self.shut_down(false);
    }

    /// A graceful shutdown that hands the node's Spots over (L2): lists its relocation
    /// targets — its User and Instance Spots and the actors of its Entry Spot, never the
    /// Entry Spot — once no activation runs any more, then shuts down as
    /// [`Node::shutdown`]: each Spot's closing callback (`NodeShutdown`) runs before its
    /// location is released, so the next explicit intent re-creates it on another node.
    /// Empty when the node was closed already.
    pub fn drain(&self) -> Vec<super::RelocationTarget> {
        self.shut_down(true)
    }

    fn shut_down(&self, list: bool) -> Vec<super::RelocationTarget> {
        if self.closed.swap(true, AcqRel) {
            return Vec::new();
        }
        self.keeper.stop();
        // Activations in progress finish (or fail on `closed`) before anything closes.
        drop(self.activations.write());
        // No Spot is created here any more: the list is complete.
        let targets = if list {
            self.relocation_targets()
        } else {
            Vec::new()
        };
        // Closes still waiting for a running record end now, as every other Spot.
        let waiting = std::mem::take(&mut *self.closing.lock());
        for s in waiting {
            let pending = {
                let _st = s.state.lock();
                s.close.take_pending()
            };
            if let Some(r) = pending {
                self.finish_close(&s, r, false);
            }
        }
        let all: Vec<Arc<LocalSpot>> = self.spots.read().iter().cloned().collect();
        for s in all {
            self.close_spot(&s, CloseReason::NodeShutdown, false);
        }
        self.rt.close();
        if let Some(c) = &self.cluster {
            c.leave(self.id);
        }
        if let Some(mut server) = self.server.lock().take() {
            server.stop();
        }
        let term = self.term.read().number();
        self.store.remove_node(self.id, term);
        targets
    }
}
