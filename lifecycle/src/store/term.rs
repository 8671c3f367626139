//! A node's term of authority: from its registration in the store until its lease ends.
//!
//! Everything a node does for its Spots — admitting a message, starting a record, running
//! a closing callback, committing a creation — belongs to one term, and nothing of a term
//! that ended starts again: not after the process was stopped past its lease, not after
//! the store expired it, not beside the node that owns its Spots now. A node whose term
//! ended gives up its Spots and registers again: a new term, new authorities.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// One term of a node's authority, as its store grants it.
pub trait NodeTerm: Send + Sync {
    /// True while the term runs; once false, false for ever. Asked before every start and
    /// admission: it must be cheap (no request).
    fn runs(&self) -> bool;
    /// The latest moment the term is known to run until, when it has a deadline of its
    /// own (a lease the store keeps alive); None when only the store can end it.
    fn known_until(&self) -> Option<Instant>;
    /// Waits until the term ends or `timeout` passes; true once it has ended.
    fn wait_end(&self, timeout: Duration) -> bool;
    /// This term's number: distinct for every term the store granted the node.
    fn number(&self) -> u64;
    /// Calls `wake` once the term has ended (at once if it has), when the store ends terms
    /// by a call rather than by a deadline: a node that has nothing to renew then waits for
    /// it instead of polling. A term with a deadline of its own may ignore it (the node looks
    /// at the term whenever it renews).
    fn on_end(&self, wake: Box<dyn FnOnce() + Send>) {
        let _ = wake;
    }
}

/// A term the store ends by a call (the embedded store's `expire_node`): a flag and a
/// condition variable for whoever waits for its end.
pub struct TermFlag {
    number: u64,
    ended: AtomicBool,
    /// Whoever asked to be told of the end (`on_end`).
    waiting: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    cv: Condvar,
}

impl TermFlag {
    /// A running term with `number`.
    pub fn new(number: u64) -> Self {
        Self {
            number,
            ended: AtomicBool::new(false),
            waiting: Mutex::new(Vec::new()),
            cv: Condvar::new(),
        }
    }

    /// Ends the term (idempotent) and wakes whoever waits for its end.
    pub fn end(&self) {
        let waiting = {
            let mut w = self.waiting.lock();
            self.ended.store(true, Ordering::Release);
            self.cv.notify_all();
            std::mem::take(&mut *w)
        };
        for wake in waiting {
            wake();
        }
    }
}

impl NodeTerm for TermFlag {
    fn runs(&self) -> bool {
        !self.ended.load(Ordering::Acquire)
    }

    fn known_until(&self) -> Option<Instant> {
        None
    }

    fn wait_end(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        let mut g = self.waiting.lock();
        while self.runs() {
            if self.cv.wait_until(&mut g, until).timed_out() {
                break;
            }
        }
        !self.runs()
    }

    fn number(&self) -> u64 {
        self.number
    }

    fn on_end(&self, wake: Box<dyn FnOnce() + Send>) {
        let mut w = self.waiting.lock();
        if self.runs() {
            w.push(wake);
            return;
        }
        drop(w);
        wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_flag_term_ends_once_and_wakes_its_waiter() {
        let t = Arc::new(TermFlag::new(3));
        assert!(t.runs());
        assert!(!t.wait_end(Duration::from_millis(1)));
        let waiter = {
            let t = t.clone();
            std::thread::spawn(move || t.wait_end(Duration::from_secs(30)))
        };
        std::thread::sleep(Duration::from_millis(5));
        t.end();
        t.end();
        assert!(waiter.join().unwrap(), "woken by the end");
        let told = Arc::new(AtomicBool::new(false));
        let t2 = told.clone();
        t.on_end(Box::new(move || t2.store(true, Ordering::SeqCst)));
        assert!(told.load(Ordering::SeqCst), "told at once after the end");
        assert!(!t.runs());
        assert_eq!(t.number(), 3);
        assert!(t.known_until().is_none());
    }
}
