//! Delivery: one exchange hands the host every kind of Spot work that became ready —
//! messages (one per doorbell record, taken from the head of the Spot's lanes, the
//! lifecycle lane first) and timer ticks (admitted to the application lane as they are
//! handed over; a tick the lane cannot take is kept, T9) — and applies the completions
//! of the previous batch: each returns its lane reservation and counts as activity.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use spot_timer_core::{Completion, Outcome, Record};

use super::Node;
use crate::error::Result;
use crate::kind::SpotId;
use crate::lane::{LaneKind, ITEM_OVERHEAD_BYTES};
use crate::work::{MessageRecord, SpotCompletion, SpotRecord, SpotTick, Work};

impl Node {
    /// Applies `done` and waits up to `timeout` (None: forever) for ready work; appends
    /// at most `max` records to `out` and returns how many. One crossing for messages and
    /// ticks alike.
    pub fn exchange(
        &self,
        done: &[SpotCompletion],
        out: &mut Vec<SpotRecord>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize> {
        let mut core_done: Vec<Completion> = std::mem::take(&mut *self.deferred.lock());
        core_done.reserve(done.len());
        let now = self.rt.now();
        for c in done {
            self.finish_work(c, now);
            core_done.push(c.core);
        }
        let mut records = Vec::new();
        let r = self.rt.exchange(&core_done, &mut records, max, timeout);
        self.retry_closes();
        r?;
        let mut n = 0;
        for r in records {
            let Record::Tick(core) = r else { continue };
            if let Some(rec) = self.take_over(core) {
                out.push(rec);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Right before running a record's handler: true if it may start (its Spot's
    /// authority is current and its lease runs, and the node's own authority in the
    /// store runs). Complete it `NotStarted` otherwise.
    pub fn begin(&self, record: &SpotRecord) -> bool {
        // A Spot closed since the record was handed over starts nothing more; nor does
        // anything of a node whose authority in the store ended.
        !record.spot_closing() && self.store.authority_runs(self.id) && self.rt.begin(record.core())
    }

    /// Applies completions without receiving (a worker thread finishing work).
    pub fn complete(&self, done: &[SpotCompletion]) -> Result<()> {
        let now = self.rt.now();
        // With the node's own pending completions (records it completed while handing over).
        let mut core: Vec<Completion> = std::mem::take(&mut *self.deferred.lock());
        core.extend(done.iter().map(|c| {
            self.finish_work(c, now);
            c.core
        }));
        let r = self.rt.complete(&core);
        self.retry_closes();
        Ok(r?)
    }

    /// Turns a record of the timer runtime into the Spot work it stands for.
    fn take_over(&self, core: spot_timer_core::TickRecord<Work>) -> Option<SpotRecord> {
        let spot = SpotId(core.owner_id());
        let Some(s) = self.local(spot) else {
            // Closed meanwhile: what it stood for was dropped with the Spot.
            self.not_started(&core);
            return None;
        };
        let mut st = s.state.lock();
        if st.closing {
            // Nothing of a closing Spot starts any more; completed at once, so the gate it
            // took is free for the close that may wait for it.
            drop(st);
            let _ = self.rt.cancel_timer_nowait(core.timer_id());
            let _ = self.rt.complete(&[core.complete(Outcome::NotStarted)]);
            return None;
        }
        match *core.payload() {
            Work::Doorbell => {
                let (lane, item) = match st.lifecycle_queue.pop_front() {
                    Some(i) => (LaneKind::Lifecycle, i),
                    None => match st.application_queue.pop_front() {
                        Some(i) => (LaneKind::Application, i),
                        None => {
                            drop(st);
                            self.not_started(&core);
                            return None;
                        }
                    },
                };
                st.in_flight += 1;
                Some(SpotRecord::Message(MessageRecord {
                    closing: s.closing.clone(),
                    spot,
                    generation: s.generation,
                    lane,
                    payload: item.payload,
                    cost: item.cost,
                    core,
                }))
            }
            Work::Timer(user) => {
                let limits = self.config.application_lane;
                match st.application.reserve(&limits, LaneKind::Application, 0) {
                    Ok(cost) => {
                        st.in_flight += 1;
                        Some(SpotRecord::Tick(SpotTick {
                            closing: s.closing.clone(),
                            spot,
                            generation: s.generation,
                            user,
                            cost,
                            core,
                        }))
                    }
                    Err(_) => {
                        // Kept, not lost: retried when the gate is next free (T9).
                        drop(st);
                        self.counters.ticks_deferred.fetch_add(1, Relaxed);
                        self.deferred.lock().push(core.complete(Outcome::Deferred));
                        None
                    }
                }
            }
        }
    }

    /// Completes a record whose work is gone: a doorbell whose message was dropped (and
    /// counted) when its Spot closed, or a tick of a closed Spot.
    fn not_started(&self, core: &spot_timer_core::TickRecord<Work>) {
        self.deferred
            .lock()
            .push(core.complete(Outcome::NotStarted));
    }

    /// The lifecycle side of one completion: the lane reservation comes back, and the
    /// Spot's last activity is now.
    fn finish_work(&self, c: &SpotCompletion, now: u64) {
        if c.message {
            match c.core.outcome {
                Outcome::Ok | Outcome::Failed => {
                    self.counters.messages_completed.fetch_add(1, Relaxed)
                }
                _ => self.counters.messages_dropped.fetch_add(1, Relaxed),
            };
            self.inbound_bytes
                .fetch_sub(c.cost - ITEM_OVERHEAD_BYTES, Relaxed);
        }
        let Some(s) = self.local(c.spot).filter(|s| s.generation == c.generation) else {
            return; // its activation closed meanwhile, lanes and all
        };
        let mut st = s.state.lock();
        if st.closing {
            // The record's timer ends here rather than coming back for a closing Spot (and
            // taking the gate its close waits for).
            let _ = self.rt.cancel_timer_nowait(c.timer);
        }
        match c.lane {
            LaneKind::Application => st.application.release(c.cost),
            LaneKind::Lifecycle => st.lifecycle.release(c.cost),
        }
        st.in_flight -= 1;
        st.last_finished = now;
    }
}
