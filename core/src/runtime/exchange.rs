//! The hand-over loop of `exchange`: completions applied first (each on its own), then up
//! to `max` records received, waiting for the first one when asked to.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::runtime::shared::{with_work, Shared};
use crate::stats::C;
use crate::tick::{Completion, Record};

impl<P: Clone + Send + Sync + 'static> Shared<P> {
    /// See [`crate::Runtime::exchange`].
    pub(crate) fn exchange(
        &self,
        completions: &[Completion],
        out: &mut Vec<Record<P>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize> {
        if max == 0 {
            return Err(Error::InvalidArgument(
                "record buffer capacity must be at least 1".into(),
            ));
        }
        let shared = self;
        if shared.callback_sink {
            return Err(Error::InvalidArgument(
                "this runtime delivers through a batch callback, not exchange".into(),
            ));
        }
        if shared.is_closed() {
            return Err(Error::Closed);
        }
        let invalid = with_work(shared.now(), |work| {
            let invalid = shared.submit(completions, work);
            shared.flush(work);
            invalid
        });
        if let Some(token) = invalid {
            return Err(Error::InvalidCompletion(token));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut n = 0;
        let mut taken = Vec::new();
        with_work(0, |work| {
            let mut q = shared
                .ready
                .wait_nonempty(deadline, || shared.closed.load(Ordering::Acquire));
            loop {
                while n < max {
                    let Some(notice) = q.notices.pop_front() else {
                        break;
                    };
                    out.push(Record::CancelDone(notice));
                    n += 1;
                }
                let want = max - n;
                let take = want.min(q.ticks.len());
                taken.extend(q.ticks.drain(..take));
                shared.ready.after_take(&mut q);
                if taken.is_empty() {
                    break;
                }
                drop(q);
                work.now = shared.now();
                shared.observe(work.now);
                for p in taken.drain(..) {
                    if let Some(r) = shared.hand_over(p, work) {
                        out.push(Record::Tick(r));
                        n += 1;
                    }
                }
                if n >= max {
                    break;
                }
                q = shared.ready.lock();
                if q.is_empty() {
                    break;
                }
            }
            shared.flush(work);
        });
        if n > 0 {
            shared.counters.add(C::host_crossings, 1);
            shared.counters.add(C::records_received, n as u64);
        } else if shared.is_closed() {
            return Err(Error::Closed);
        }
        Ok(n)
    }
}
