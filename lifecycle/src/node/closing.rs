//! Closing a Spot (L5): a close transaction — merged with other closes of the same id,
//! nothing admitted from its start, the closing callback, the teardown of the activation
//! (its timers end, its owner is released), and only then the release of its location.
//! Idle eviction is a close of an Instance Spot found quiescent by a scan that examines
//! at most 64 Spots and resumes at its cursor.

use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::Arc;

use super::{CloseReason, LocalSpot, Node};
use crate::error::Result;
use crate::kind::{Instance, Spot, User};
use crate::lane::ITEM_OVERHEAD_BYTES;

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

    /// One idle-eviction pass: examines at most 64 Instance Spots from the catalog's
    /// cursor and evicts those idle past `instance_idle_timeout` with no work pending or
    /// running and their gate free. Returns how many it evicted.
    pub fn evict_idle(&self) -> usize {
        let Some(timeout) = self.config.instance_idle_timeout else {
            return 0;
        };
        let timeout = timeout.as_nanos().min(u64::MAX as u128) as u64;
        let mut batch = Vec::new();
        self.catalog.lock().next_batch(&mut batch);
        self.counters.eviction_passes.fetch_add(1, Relaxed);
        self.counters
            .eviction_examined
            .fetch_add(batch.len() as u64, Relaxed);
        let now = self.rt.now();
        let mut evicted = 0;
        for s in batch {
            let idle = {
                let st = s.state.lock();
                !st.closing && st.quiescent() && now.saturating_sub(st.last_finished) >= timeout
            };
            if idle && self.close_spot(&s, CloseReason::IdleEvicted, true) {
                evicted += 1;
            }
        }
        evicted
    }

    /// The close transaction. With `quiescent_only` it closes nothing unless the Spot
    /// has no work pending or running and its gate is free (checked again under its
    /// lock). False when another close of it is in progress or it was not quiescent.
    pub(crate) fn close_spot(
        &self,
        s: &Arc<LocalSpot>,
        reason: CloseReason,
        quiescent_only: bool,
    ) -> bool {
        {
            let mut st = s.state.lock();
            if st.closing || (quiescent_only && !st.quiescent()) {
                return false;
            }
            st.closing = true;
        }
        // No timer callback of the Spot may be running or about to run: its gate.
        let gate = s.owner.try_enter_gate();
        if quiescent_only && !gate {
            s.state.lock().closing = false;
            return false;
        }
        if let Some(cb) = &self.config.on_close {
            // Host code: a panic must not leave the Spot half-closed.
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(s.id, s.kind, reason)));
        }
        // Its timers and doorbells end; the owner is forgotten once they have.
        let _ = s.owner.release();
        if gate {
            let _ = s.owner.leave_gate();
        }
        let drained = {
            let mut st = s.state.lock();
            let mut items = std::mem::take(&mut st.application_queue);
            items.append(&mut st.lifecycle_queue);
            items
        };
        for item in &drained {
            self.inbound_bytes
                .fetch_sub(item.cost - ITEM_OVERHEAD_BYTES, Relaxed);
        }
        let dropped = drained.len() as u64;
        // Their doorbells were taken back by the release (or complete not started):
        // count the messages once, here.
        self.counters.messages_dropped.fetch_add(dropped, Relaxed);
        self.spots.write().remove(&s.id);
        self.occupied.fetch_sub(1, Relaxed);
        self.catalog.lock().remove(s.id);
        self.publish_active();
        let _ = self.store.release(s.id, s.authority);
        match reason {
            CloseReason::IdleEvicted => self.counters.evicted.fetch_add(1, Relaxed),
            _ => self.counters.closed.fetch_add(1, Relaxed),
        };
        true
    }

    /// Closes the node: every Spot closes (`NodeShutdown`), then the timer runtime.
    /// Idempotent.
    pub fn shutdown(&self) {
        if self.closed.swap(true, AcqRel) {
            return;
        }
        // Activations in progress finish (or fail on `closed`) before anything closes.
        drop(self.activations.write());
        let all: Vec<Arc<LocalSpot>> = self.spots.read().values().cloned().collect();
        for s in all {
            self.close_spot(&s, CloseReason::NodeShutdown, false);
        }
        self.rt.close();
        if let Some(c) = &self.cluster {
            c.leave(self.id);
        }
        self.store.remove_node(self.id);
    }
}
