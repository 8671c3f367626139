//! The scheduler thread: sleeps until the earliest deadline of any shard (or until a host
//! wakes it for an earlier one), then polls the due entries, delivers what is due, and
//! hands the batch over in one step (T10) — to the ready queue, or to the batch callback.
//! It is the only thread that polls the deadline queue; registration, cancel and
//! completion never wait for it.

use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::queue::{Entry, OWNER_TARGET};
use crate::runtime::shards::COMPACT_SLACK;
use crate::runtime::shared::{Shared, Work, AWAKE, NEVER, SCHEDULER_OF};
use crate::runtime::sink::BatchHandler;
use crate::slot::word;
use crate::stats::C;
use crate::tick::{Completion, Record};

/// Rounds of inline completions a batch callback may trigger per turn.
const CALLBACK_ROUNDS: usize = 4;

pub(crate) struct Scheduler<P: Send + Sync + 'static> {
    shared: Arc<Shared<P>>,
    callback: Option<Box<dyn BatchHandler<P>>>,
    due: Vec<Entry>,
    work: Work,
    records: Vec<Record<P>>,
    completions: Vec<Completion>,
}

impl<P: Clone + Send + Sync + 'static> Scheduler<P> {
    pub fn new(shared: Arc<Shared<P>>, callback: Option<Box<dyn BatchHandler<P>>>) -> Self {
        Self {
            shared,
            callback,
            due: Vec::new(),
            work: Work::default(),
            records: Vec::new(),
            completions: Vec::new(),
        }
    }

    pub fn run(mut self) {
        SCHEDULER_OF.with(|s| s.set(self.shared.id));
        // Deadlines are exact to the nanosecond; don't let the kernel's default 50 us
        // timer slack add lateness to every timed sleep of this thread. (Not under Miri,
        // which cannot call it; the slack only affects lateness.)
        // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer argument.
        #[cfg(not(miri))]
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong)
        };
        while !self.shared.is_closed() {
            let requested = self.shared.scheduler.turns_requested.load(Acquire);
            self.turn();
            self.finish_turn(requested);
            self.sleep(requested);
        }
        // Dropped here, on this thread, after the last batch (a C host's finalizer).
        drop(self.callback.take());
        let link = &self.shared.scheduler;
        link.running.store(false, Release);
        let _g = link.turns_done.lock().unwrap_or_else(|e| e.into_inner());
        link.turn_finished.notify_all();
    }

    fn turn(&mut self) {
        let shared = &*self.shared;
        self.work.now = shared.now();
        shared.observe(self.work.now);
        for i in 0..shared.shards.len() {
            shared.shards.poll(i, self.work.now, &mut self.due);
        }
        for e in self.due.drain(..) {
            if e.target & OWNER_TARGET != 0 {
                shared.lease_due(e, &mut self.work);
                continue;
            }
            let w = shared.slots.slot(e.target).word.load(Acquire);
            if word::tag(w) != e.tag {
                self.work.tally.add(C::stale_entries_dropped, 1);
                continue;
            }
            shared.try_deliver(e.target, &mut self.work);
        }
        crate::trim::trim_vec(&mut self.due);
        self.maybe_compact();
        self.shared.flush(&mut self.work);
        if self.callback.is_some() {
            self.call_back();
        }
        self.work.trim();
    }

    /// Drops stale entries (cancelled and re-armed timers) once they clearly outnumber the
    /// live timers, so register/cancel churn cannot grow the queue without bound (T8).
    /// (Arming threads also compact their own shard as it grows: `Shared::compact_shard`.)
    fn maybe_compact(&mut self) {
        let shared = &*self.shared;
        if shared.shards.total_len() <= 2 * shared.live_estimate() + COMPACT_SLACK {
            return;
        }
        let dropped = (0..shared.shards.len())
            .map(|i| shared.retain_live(i))
            .sum::<usize>();
        self.work
            .tally
            .add(C::stale_entries_dropped, dropped as u64);
        self.work.tally.add(C::compactions, 1);
    }

    /// Hands everything in the ready queue to the batch callback, one call per batch, and
    /// applies the completions it made inline.
    fn call_back(&mut self) {
        let shared = self.shared.clone();
        for _ in 0..CALLBACK_ROUNDS {
            {
                let mut q = shared.ready.lock();
                while let Some(n) = q.notices.pop_front() {
                    self.records.push(Record::CancelDone(n));
                }
                let ticks: Vec<_> = q.ticks.drain(..).collect();
                shared.ready.after_take(&mut q);
                drop(q);
                self.work.now = shared.now();
                for p in ticks {
                    if let Some(r) = shared.hand_over(p, &mut self.work) {
                        self.records.push(Record::Tick(r));
                    }
                }
            }
            if self.records.is_empty() {
                break;
            }
            let n = self.records.len() as u64;
            self.work.tally.add(C::host_crossings, 1);
            self.work.tally.add(C::records_received, n);
            let cb = self.callback.as_mut().expect("callback runtime");
            let records = &self.records;
            let completions = &mut self.completions;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cb.on_batch(records, completions)
            }));
            if r.is_err() {
                // The host's callback panicked: it completed nothing reliably.
                self.completions.clear();
            }
            self.records.clear();
            self.work.now = shared.now();
            let completions = std::mem::take(&mut self.completions);
            shared.submit(&completions, &mut self.work);
            self.completions = completions;
            self.completions.clear();
            crate::trim::trim_vec(&mut self.records);
            crate::trim::trim_vec(&mut self.completions);
            shared.flush(&mut self.work);
        }
    }

    fn finish_turn(&self, requested: u64) {
        let link = &self.shared.scheduler;
        let mut done = link.turns_done.lock().unwrap_or_else(|e| e.into_inner());
        if *done < requested {
            *done = requested;
            link.turn_finished.notify_all();
        }
    }

    /// Sleeps until the earliest deadline, or until a host wakes it.
    fn sleep(&mut self, served: u64) {
        let shared = &*self.shared;
        let link = &shared.scheduler;
        // On a manual clock the queue never wakes the scheduler by itself: only `advance`
        // (a requested turn) moves time.
        let needed = |shared: &Shared<P>, at: u64| {
            (shared.manual.is_none() && shared.shards.next_wake() < at)
                || shared.is_closed()
                || link.turns_requested.load(SeqCst) > served
                || (shared.callback_sink && shared.ready.len() > 0)
        };
        let wake_at = if shared.manual.is_some() {
            NEVER
        } else {
            shared.shards.next_wake()
        };
        let now = shared.now();
        if wake_at <= now {
            return;
        }
        // A swap (a full barrier on x86), pairing with the shards' swap of `min_wake`: an
        // entry armed before this point is seen by `needed`; one armed after sees
        // `sleep_until` and wakes this thread.
        link.sleep_until.swap(wake_at, SeqCst);
        if !needed(shared, wake_at) {
            if wake_at == NEVER {
                std::thread::park();
            } else {
                std::thread::park_timeout(Duration::from_nanos(wake_at - now));
            }
            self.work.tally.add(C::wakeups, 1);
        }
        link.sleep_until.store(AWAKE, SeqCst);
    }
}
