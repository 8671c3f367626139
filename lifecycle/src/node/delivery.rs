//! Delivery: one exchange hands the host every kind of Spot work that became ready —
//! messages (a doorbell's record brings a burst of its Spot's queued messages, the
//! lifecycle lane first, one host record each) and timer ticks (admitted to the
//! application lane as they are handed over; a tick the lane cannot take is kept, T9) —
//! and applies the completions of the previous batch: each returns its lane reservation
//! and counts as activity, and the last message of a burst completes its doorbell.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::{Completion, Outcome, Record, TickRecord};

use super::{LocalSpot, Node, SpotState};
use crate::burst::{Burst, BURST_LIMIT};
use crate::error::{LifecycleError, Result};
use crate::kind::SpotId;
use crate::lane::{LaneKind, ITEM_OVERHEAD_BYTES};
use crate::timer_work::Work;
use crate::work::{MessageRecord, SpotCompletion, SpotRecord, SpotTick};

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
        if let Some(e) = self.finish_all(done, &mut core_done) {
            // The valid ones are applied; nothing is received (call again to receive).
            let r = self.rt.complete(&core_done);
            self.retry_closes();
            r?;
            return Err(e);
        }
        // The node's own records (its idle scans, work of Spots closed meanwhile) are
        // consumed here: the call goes on receiving until it has something for the host
        // or its time is up, as the runtime's own exchange would.
        let until = timeout.map(|t| std::time::Instant::now() + t);
        let before = out.len();
        let mut records = Vec::new();
        loop {
            records.clear();
            let left = until.map(|u| u.saturating_duration_since(std::time::Instant::now()));
            let r = self.rt.exchange(&core_done, &mut records, max, left);
            core_done.clear();
            self.retry_closes();
            r?;
            let total = records.len();
            for (i, r) in records.drain(..).enumerate() {
                let Record::Tick(core) = r else { continue };
                // Room for this record's burst, leaving one place for each record after it.
                let room = max
                    .saturating_sub(out.len() - before)
                    .saturating_sub(total - i - 1)
                    .max(1);
                self.take_over(core, room, out);
            }
            let timed_out = until.is_some_and(|u| std::time::Instant::now() >= u);
            if out.len() > before || total == 0 || timed_out || self.closed.load(Acquire) {
                break;
            }
            core_done = std::mem::take(&mut *self.deferred.lock());
        }
        Ok(out.len() - before)
    }

    /// Right before running a record's handler: true if it may start (its Spot's
    /// authority is current and its lease runs, and the node's own authority in the store
    /// runs; a message only after the earlier messages of its burst). Complete it
    /// `NotStarted` otherwise.
    pub fn begin(&self, record: &SpotRecord) -> bool {
        // Nothing of a term that ended starts.
        if !self.term_runs() {
            return false;
        }
        match record {
            SpotRecord::Message(m) => m.burst.begin(&self.rt, m.index),
            // A Spot closed since the record was handed over starts nothing more.
            SpotRecord::Tick(t) => !t.standing.closing() && self.rt.begin(&t.core),
        }
    }

    /// Applies completions without receiving (a worker thread finishing work).
    pub fn complete(&self, done: &[SpotCompletion]) -> Result<()> {
        // With the node's own pending completions (records it completed while handing over).
        let mut core: Vec<Completion> = std::mem::take(&mut *self.deferred.lock());
        let invalid = self.finish_all(done, &mut core);
        let r = self.rt.complete(&core);
        self.retry_closes();
        if let Some(e) = invalid {
            r?;
            return Err(e);
        }
        Ok(r?)
    }

    /// Turns a record of the timer runtime into the Spot work it stands for: a doorbell
    /// into a burst of at most `room` messages, a tick into one record.
    fn take_over(&self, core: TickRecord<Work>, room: usize, out: &mut Vec<SpotRecord>) {
        if let Work::Scan = core.payload() {
            // Not the host's: it runs here, with no Spot's lock held.
            self.run_scan(core);
            return;
        }
        let spot = SpotId(core.owner_id());
        let Some(s) = self.local(spot) else {
            // Closed meanwhile: what it stood for was dropped with the Spot.
            self.deferred
                .lock()
                .push(core.complete(Outcome::NotStarted));
            return;
        };
        let mut st = s.state.lock();
        if let Some(p) = st.pending.as_mut() {
            if p.queues.doorbell == Some(core.timer_id()) {
                p.queues.doorbell = None;
            }
        }
        st.settle();
        if s.close.closing() {
            // Nothing of a closing Spot starts any more; completed at once, so the gate it
            // took is free for the close that may wait for it.
            drop(st);
            let _ = self.rt.cancel_timer_nowait(core.timer_id());
            let _ = self.rt.complete(&[core.complete(Outcome::NotStarted)]);
            return;
        }
        match *core.payload() {
            Work::Scan => unreachable!("taken over above"),
            Work::Doorbell => self.hand_burst(&s, &mut st, core, room, out),
            Work::Timer(user) => {
                let limits = self.config.application_lane;
                let pending = st.pending();
                match pending
                    .application
                    .reserve(&limits, LaneKind::Application, 0)
                {
                    Ok(cost) => {
                        pending.in_flight += 1;
                        pending.in_hand = core.token();
                        s.mark_busy(&st, &self.catalog);
                        out.push(SpotRecord::Tick(SpotTick {
                            standing: s.clone(),
                            spot,
                            generation: s.generation,
                            user,
                            cost,
                            core,
                        }));
                    }
                    Err(_) => {
                        // Kept, not lost: retried when the gate is next free (T9).
                        st.settle();
                        drop(st);
                        self.counters.ticks_deferred.fetch_add(1, Relaxed);
                        self.deferred.lock().push(core.complete(Outcome::Deferred));
                    }
                }
            }
        }
    }

    /// A doorbell's hand-over: up to `room` (at most `BURST_LIMIT`) messages from the head
    /// of the Spot's lanes, the lifecycle lane first, one host record each, sharing the
    /// doorbell's record; the doorbell is rung again for what stays queued.
    fn hand_burst(
        &self,
        s: &Arc<LocalSpot>,
        st: &mut SpotState,
        core: TickRecord<Work>,
        room: usize,
        out: &mut Vec<SpotRecord>,
    ) {
        let queued = st.queues().map_or(0, |q| q.len());
        let take = queued.min(room).min(BURST_LIMIT);
        if take == 0 {
            // Its messages were dropped meanwhile: the doorbell ends, its gate is free.
            self.deferred.lock().push(core.complete(Outcome::Ok));
            return;
        }
        let pending = st.pending();
        pending.in_hand = core.token();
        pending.burst_done = 0;
        let burst = Arc::new(Burst::new(s.clone(), core));
        out.reserve(take);
        let q = &mut pending.queues;
        for index in 0..take as u32 {
            let (lane, item) = match q.lifecycle.pop_front() {
                Some(i) => (LaneKind::Lifecycle, i),
                None => match q.application.pop_front() {
                    Some(i) => (LaneKind::Application, i),
                    None => unreachable!("counted above"),
                },
            };
            out.push(SpotRecord::Message(MessageRecord {
                burst: burst.clone(),
                index,
                spot: s.id(),
                generation: s.generation,
                lane,
                payload: item.payload,
                cost: item.cost,
            }));
        }
        pending.in_flight += take as u32;
        pending.burst_left = take as u32;
        if take < queued && pending.queues.doorbell.is_none() {
            // Waits behind this burst's gate. If the authority ended, the messages stay
            // until the Spot's close drops them (counted).
            let _ = super::admission::ring(s, st);
        }
    }

    /// Applies the lifecycle side of completions, appending the runtime's completions to
    /// hand on: a tick's own, and a burst's doorbell once its last message completed.
    /// Consecutive completions of one Spot (a burst's) take its lock once.
    /// Applies the lifecycle side of `done`; the runtime's completions go to `core`. Each
    /// completion stands alone: one that names no record in the host's hands (a second
    /// completion of a record, or a made-up one) is skipped, and the first such is
    /// returned as the error after the others were applied.
    fn finish_all(
        &self,
        done: &[SpotCompletion],
        core: &mut Vec<Completion>,
    ) -> Option<LifecycleError> {
        let now = self.rt.now();
        let mut invalid = None;
        let mut i = 0;
        while i < done.len() {
            let c = &done[i];
            let run = done[i..]
                .iter()
                .take_while(|d| d.spot == c.spot && d.generation == c.generation)
                .count();
            let group = &done[i..i + run];
            i += run;
            let Some(s) = self.local(c.spot).filter(|s| s.generation == c.generation) else {
                // Its activation closed meanwhile, lanes and all (only at the node's
                // shutdown can a burst's Spot go before its doorbell completed).
                for c in group.iter().filter(|c| c.message) {
                    self.count_message_end(c);
                }
                core.extend(group.iter().filter(|c| !c.message).map(|c| c.core));
                continue;
            };
            let mut st = s.state.lock();
            for c in group {
                if !self.finish_one(&s, &mut st, c, core) && invalid.is_none() {
                    invalid = Some(LifecycleError::InvalidArgument(format!(
                        "a completion of Spot {} names no record in the host's hands (given \
                         twice, or made up); the others were applied",
                        c.spot
                    )));
                }
            }
            st.settle();
            s.note_finished(&st, &self.catalog, now);
        }
        invalid
    }

    /// Counts a message's end: completed (its handler ran) or dropped (it never started),
    /// and its bytes leave the node's inbound budget.
    fn count_message_end(&self, c: &SpotCompletion) {
        match c.core.outcome {
            Outcome::Ok | Outcome::Failed => self.counters.messages_completed.fetch_add(1, Relaxed),
            _ => self.counters.messages_dropped.fetch_add(1, Relaxed),
        };
        self.inbound_bytes
            .fetch_sub(c.cost - ITEM_OVERHEAD_BYTES, Relaxed);
    }

    /// The lifecycle side of one completion, its Spot's lock held: the lane reservation
    /// comes back (the caller notes the Spot's activity). False (and nothing done) when it
    /// names no record in the host's hands.
    fn finish_one(
        &self,
        s: &LocalSpot,
        st: &mut SpotState,
        c: &SpotCompletion,
        core: &mut Vec<Completion>,
    ) -> bool {
        if st.in_hand() != c.core.token {
            return false;
        }
        let closing = s.close.closing();
        let pending = st.pending();
        if c.message {
            let bit = 1u64 << c.index;
            if pending.burst_done & bit != 0 {
                return false;
            }
            pending.burst_done |= bit;
            self.count_message_end(c);
        }
        if closing {
            // The record's timer ends here rather than coming back for a closing Spot (and
            // taking the gate its close waits for).
            let _ = self.rt.cancel_timer_nowait(c.timer);
        }
        pending.lane(c.lane).release(c.cost);
        pending.in_flight -= 1;
        if !c.message {
            pending.in_hand = super::NOTHING_IN_HAND;
            core.push(c.core);
            return true;
        }
        pending.burst_left -= 1;
        if pending.burst_left == 0 {
            // The doorbell is delivered (it ends) whether or not its messages started.
            pending.in_hand = super::NOTHING_IN_HAND;
            core.push(Completion::new(c.core.token, Outcome::Ok));
        }
        true
    }
}
