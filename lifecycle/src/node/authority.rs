//! The node's term of authority in the store, and the keeper that keeps it.
//!
//! Ground rules:
//! - The term is asked (`Node::term_runs`) before every admission and every start, so
//!   nothing of a term that ended starts, however the process learns of the end — also
//!   the instant it resumes from a stop past its lease.
//! - A Spot's owner lease in the timer runtime never runs past what the store confirmed
//!   of the term (`Node::spot_lease`): min(`owner_lease`, the term's known deadline). The
//!   timer runtime then drops the ticks of a node that stopped renewing on its own (T6),
//!   with no burst on resume.
//! - The keeper is one thread per node, holding the node weakly. Each round it renews the
//!   owner lease of every Spot while the term runs; a Spot whose owner lease ran out
//!   meanwhile (the keeper was kept from running) is given up and its location released,
//!   so the next intent creates it again — never dead for ever. When the term has ended,
//!   every Spot is given up (`CloseReason::AuthorityLost`: no state saved, its location is
//!   left to the store's end of the term) and the node registers again: a new term, its
//!   Entry Spot created again. While the store cannot be reached it tries again each
//!   round; meanwhile the node creates nothing and admits nothing.
//! - The keeper runs no host code but the closing callbacks of the Spots it gives up.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{CloseReason, LocalSpot, Node};
use crate::error::{LifecycleError, Result};
use crate::kind::SpotId;

/// How long a keeper waits before it tries again to take a new term (the store could not
/// be reached).
const TERM_RETRY: Duration = Duration::from_millis(200);
/// The longest a keeper sleeps when nothing needs renewing: the term's end wakes it
/// (`NodeTerm::on_end`), so this is only a backstop.
const IDLE_ROUND: Duration = Duration::from_secs(3600);
/// The longest round while Spot leases need renewing (a quarter of the lease otherwise).
const MAX_ROUND: Duration = Duration::from_secs(2);
/// The shortest round.
const MIN_ROUND: Duration = Duration::from_millis(2);

/// The keeper's wake-up: shutdown and a Spot found expired on a request path wake it.
#[derive(Default)]
struct Signal {
    state: Mutex<SignalState>,
    cv: Condvar,
}

#[derive(Default)]
struct SignalState {
    stop: bool,
    woken: bool,
}

impl Signal {
    fn wake(&self) {
        let mut s = self.state.lock();
        s.woken = true;
        self.cv.notify_all();
    }
}

/// The keeper of one node.
#[derive(Default)]
pub(super) struct Keeper {
    signal: Arc<Signal>,
}

impl Keeper {
    /// Starts the keeper's thread for `node`.
    pub(super) fn start(&self, node: &Arc<Node>) {
        node.watch_term();
        let weak = Arc::downgrade(node);
        let signal = self.signal.clone();
        let _ = std::thread::Builder::new()
            .name(format!("spot-node-{}-keeper", node.id.0))
            .spawn(move || run(weak, signal));
    }

    /// Makes the keeper run a round now.
    pub(super) fn wake(&self) {
        self.signal.wake();
    }

    /// Ends the keeper (it leaves at its next wake-up; it never keeps the node alive).
    pub(super) fn stop(&self) {
        let mut s = self.signal.state.lock();
        s.stop = true;
        self.signal.cv.notify_all();
    }
}

fn run(node: Weak<Node>, signal: Arc<Signal>) {
    loop {
        let wait = match node.upgrade() {
            Some(n) => n.keep(),
            None => return,
        };
        let mut s = signal.state.lock();
        if !s.stop && !s.woken {
            let _ = signal.cv.wait_for(&mut s, wait);
        }
        if s.stop {
            return;
        }
        s.woken = false;
    }
}

impl Node {
    /// True while the node's current term runs.
    pub(super) fn term_runs(&self) -> bool {
        self.term.read().runs()
    }

    /// `Unavailable` (the request did not run) while the node has no running term.
    pub(super) fn check_term(&self, spot: SpotId) -> Result<()> {
        if self.term_runs() {
            return Ok(());
        }
        Err(LifecycleError::unavailable(
            spot,
            format!(
                "node {}'s term of authority in the location store has ended and it has not \
                 taken a new one yet (the store cannot be reached, or the process was stopped \
                 past its lease)",
                self.id.0
            ),
        ))
    }

    /// The owner lease a Spot's owner is acquired and renewed with: `owner_lease`, and
    /// never past what the store has confirmed of the term. None: no deadline.
    pub(super) fn spot_lease(&self) -> Option<Duration> {
        let confirmed = self
            .term
            .read()
            .known_until()
            .map(|u| u.saturating_duration_since(Instant::now()));
        let lease = match (self.config.owner_lease, confirmed) {
            (None, None) => return None,
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("one is set"),
        };
        Some(lease.max(Duration::from_millis(1)))
    }

    /// One keeper round; returns how long to wait before the next.
    fn keep(&self) -> Duration {
        if self.closed.load(Acquire) {
            return IDLE_ROUND;
        }
        if !self.term_runs() {
            return match self.take_new_term() {
                Ok(()) => {
                    self.watch_term();
                    MIN_ROUND
                }
                Err(_) => TERM_RETRY,
            };
        }
        let lease = self.spot_lease();
        if let Some(lease) = lease {
            self.renew_spots(lease);
        }
        let aborts_left = self.retry_aborts();
        match lease {
            Some(l) => (l / 4).clamp(MIN_ROUND, MAX_ROUND),
            None if aborts_left => TERM_RETRY,
            None => IDLE_ROUND,
        }
    }

    /// Asks the current term to wake the keeper when it ends.
    fn watch_term(&self) {
        let signal = self.keeper.signal.clone();
        self.term.read().on_end(Box::new(move || signal.wake()));
    }

    /// Renews every Spot's owner lease; gives up those whose lease had run out.
    fn renew_spots(&self, lease: Duration) {
        let spots: Vec<Arc<LocalSpot>> = self.spots.read().iter().cloned().collect();
        let mut expired = Vec::new();
        for s in spots {
            if s.close.closing() {
                continue;
            }
            if let Err(spot_timer_core::Error::LeaseExpired) = s.owner.renew(Some(lease)) {
                expired.push(s);
            }
        }
        for s in expired {
            self.give_up(&s);
        }
    }

    /// A Spot found with its owner lease over on a request path: the keeper gives it up.
    pub(super) fn note_expired(&self) {
        self.keeper.wake();
    }

    /// The term has ended: gives up every Spot, then registers again (a new term) and
    /// creates the Entry Spot again. Activations that began in the ended term finish before
    /// the Spots are marked (none can commit: the store refuses an ended term's writes), and
    /// the closing callbacks run after every lock is released — a callback may send.
    fn take_new_term(&self) -> Result<()> {
        let lost: Vec<Arc<LocalSpot>> = {
            let _no_activation = self.activations.write();
            if self.closed.load(Acquire) {
                return Ok(());
            }
            let all: Vec<Arc<LocalSpot>> = self.spots.read().iter().cloned().collect();
            all.into_iter().filter(|s| self.mark_lost(s)).collect()
        };
        for s in &lost {
            self.finish_lost(s);
        }
        let term = self
            .store
            .register_node(self.id, self.config.active_cap, self.address)?;
        *self.term.write() = term;
        self.counters.terms.fetch_add(1, Relaxed);
        self.create_entry()
    }

    /// Gives a Spot up because its authority ended (its owner lease, or the node's term):
    /// it admits and starts nothing from now on, leaves the admission view at once (so
    /// its id can be created again), its queued messages are dropped (counted), and its
    /// close finishes as `CloseReason::AuthorityLost` once no record of it holds its gate.
    pub(super) fn give_up(&self, s: &Arc<LocalSpot>) {
        if self.mark_lost(s) {
            self.finish_lost(s);
        }
    }

    /// The first half of [`Node::give_up`], which takes no other lock than the Spot's and
    /// the admission view's: marks the Spot lost and closing, takes it out of the admission
    /// view and drops its queued messages. False when it was marked before, or a close of
    /// it was already under way (that close finishes as `AuthorityLost`: `finish_close`
    /// looks).
    fn mark_lost(&self, s: &Arc<LocalSpot>) -> bool {
        let was_closing = {
            let _st = s.state.lock();
            if s.close.lost() {
                return false;
            }
            let was = s.close.closing();
            s.close.set_lost();
            s.close.set_closing(true);
            was
        };
        self.spots.write().remove_same(s);
        if was_closing {
            return false;
        }
        self.drop_queued(s);
        true
    }

    /// The second half of [`Node::give_up`]: the close, now if the Spot's gate is free,
    /// else once the record that holds it completes. Runs the closing callback (host code):
    /// call it with no lock held.
    fn finish_lost(&self, s: &Arc<LocalSpot>) {
        if s.owner.try_enter_gate() {
            self.finish_close(s, CloseReason::AuthorityLost, true);
            return;
        }
        {
            let _st = s.state.lock();
            s.close.set_pending(CloseReason::AuthorityLost);
        }
        self.closing.lock().push(s.clone());
        self.retry_closes();
    }
}

impl Node {
    /// Drops a failed creation's reservation; remembered for the keeper when the store
    /// cannot be asked now.
    pub(super) fn abort_reservation(&self, r: crate::store::Reservation) {
        if self.store.abort(&r).is_err() {
            self.failed_aborts.lock().push(r);
            self.keeper.wake();
        }
    }

    /// Tries again the aborts the store did not confirm; true when some are still left.
    fn retry_aborts(&self) -> bool {
        let pending = std::mem::take(&mut *self.failed_aborts.lock());
        for r in pending {
            self.abort_reservation(r);
        }
        !self.failed_aborts.lock().is_empty()
    }
}
