//! The node as a source of the delivery driver (`spot_timer_core::driver`): a host runs
//! Spot work — messages and ticks in one batch — through the same driver as timer records,
//! and writes no loop of its own.
//!
//! Ground rules:
//! - A record's completion is built the moment the driver writes its outcome
//!   ([`SpotRecord::complete`]), so the next message of its burst may start at once in the
//!   same batch; the completions go back with the next exchange, a flush, or the drop.
//! - Records the batch never reached (the driver was dropped after a stop) complete
//!   `NotStarted`: their messages count as dropped, their ticks come back.
//! - A kept record is a payload-less copy completed later through the node. A kept
//!   message lets the next one of its burst start on this thread: the node's serial order
//!   covers handlers that end before they return (no host keeps node records today).
//! - Under a manual clock each receive first lets the timer runtime deliver what is due.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::driver::{CompleteHeld, Source};
use spot_timer_core::{ClockKind, Outcome};

use super::Node;
use crate::error::{LifecycleError, Result};
use crate::work::{SpotCompletion, SpotRecord};

const PENDING: u8 = 0;
const FINISHED: u8 = 1;
const KEPT: u8 = 2;

/// A node's records for one driver (see the module's ground rules).
pub struct NodeSource {
    node: Arc<Node>,
    manual: bool,
    records: Vec<SpotRecord>,
    state: Vec<Cell<u8>>,
    done: RefCell<Vec<SpotCompletion>>,
}

impl NodeSource {
    /// A source over `node`.
    pub fn new(node: Arc<Node>) -> Self {
        let manual = matches!(node.config.clock, ClockKind::Manual(_));
        Self {
            node,
            manual,
            records: Vec::new(),
            state: Vec::new(),
            done: RefCell::new(Vec::new()),
        }
    }

    /// The node it delivers for.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Completes what the batch did not reach as not started and lets the records go
    /// (their payloads and lane reservations with them) before the completions are sent.
    fn settle(&mut self) -> Vec<SpotCompletion> {
        let mut done = std::mem::take(self.done.get_mut());
        for (r, s) in self.records.iter().zip(&self.state) {
            if s.get() == PENDING {
                done.push(r.complete(Outcome::NotStarted));
            }
        }
        self.records.clear();
        self.state.clear();
        done
    }
}

/// Completes kept node records (see [`NodeSource`]).
#[derive(Clone)]
pub struct NodeCompleter(Arc<Node>);

impl CompleteHeld<SpotRecord> for NodeCompleter {
    type Error = LifecycleError;
    fn complete(&self, held: SpotRecord, outcome: Outcome) -> Result<()> {
        self.0.complete(&[held.complete(outcome)])
    }
}

impl Source for NodeSource {
    type Record = SpotRecord;
    type Held = SpotRecord;
    type Completer = NodeCompleter;
    type Error = LifecycleError;

    fn receive(
        &mut self,
        timeout: Option<Duration>,
        max: usize,
        window: Duration,
    ) -> Result<usize> {
        let mut done = self.settle();
        if self.manual {
            if let Err(e) = self.node.advance(Duration::ZERO) {
                let _ = self.node.complete(&done);
                return Err(e);
            }
        }
        let r = self.node.exchange(&done, &mut self.records, max, timeout);
        done.clear();
        *self.done.get_mut() = done;
        let mut n = r?;
        if n > 0 && n < max && !window.is_zero() {
            // Let records that come due within the window join this batch.
            std::thread::sleep(window);
            n += self
                .node
                .exchange(&[], &mut self.records, max - n, Some(Duration::ZERO))
                .unwrap_or(0);
        }
        self.state
            .resize_with(self.records.len(), || Cell::new(PENDING));
        Ok(n)
    }

    fn records(&self) -> &[SpotRecord] {
        &self.records
    }

    fn is_pending(&self, i: usize) -> bool {
        self.state[i].get() == PENDING
    }

    fn set_position(&self, _i: usize) {}

    fn is_notice(&self, _i: usize) -> bool {
        false
    }

    fn begin(&self, i: usize) -> bool {
        self.node.begin(&self.records[i])
    }

    fn finish(&self, i: usize, outcome: Outcome) {
        self.state[i].set(FINISHED);
        self.done
            .borrow_mut()
            .push(self.records[i].complete(outcome));
    }

    fn hold(&self, i: usize) -> SpotRecord {
        self.state[i].set(KEPT);
        self.records[i].detached_copy()
    }

    fn completer(&self) -> NodeCompleter {
        NodeCompleter(self.node.clone())
    }

    fn flush(&mut self) -> Result<()> {
        let done = self.settle();
        let r = if done.is_empty() {
            Ok(())
        } else {
            self.node.complete(&done)
        };
        *self.done.get_mut() = done;
        self.done.get_mut().clear();
        r
    }
}

impl Drop for NodeSource {
    fn drop(&mut self) {
        let done = self.settle();
        if !done.is_empty() {
            let _ = self.node.complete(&done);
        }
    }
}
