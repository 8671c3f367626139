//! This node's owner lease: an etcd lease that a task of the store keeps alive.
//!
//! The lease is known valid until `deadline` = the moment the last answered keep-alive was
//! *sent* plus the TTL etcd answered — never later than etcd's own expiry, whose clock
//! starts when the request arrives. A process stopped (SIGSTOP) past that moment finds the
//! deadline passed the instant it resumes, before any keep-alive could answer: the lease
//! is then lost for good (`lost`), and the store refuses every fenced write of it. Once
//! etcd answers TTL 0 the lease is lost too. A lost lease is never renewed: the term of
//! authority it carried is over. A node whose term ended registers again, and the store
//! then grants a new lease (a new term), after revoking the old one so that nothing it
//! carried outlives it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stop::Stop;
use etcd_client::Client;
use parking_lot::{Mutex, RwLock};
use spot_lifecycle::NodeTerm;

/// The store's current lease: replaced when a lost one is followed by a new term.
pub(crate) type CurrentLease = Arc<RwLock<Arc<LeaseState>>>;

/// The state of one owner lease, shared by the store and its keep-alive task.
pub(crate) struct LeaseState {
    pub id: i64,
    pub ttl: Duration,
    deadline: Mutex<Instant>,
    lost: AtomicBool,
    /// Keep-alive round trips (not on any request path).
    pub keep_alives: AtomicU64,
}

impl LeaseState {
    pub fn new(id: i64, ttl: Duration, granted_at: Instant) -> Self {
        Self {
            id,
            ttl,
            deadline: Mutex::new(granted_at + ttl),
            lost: AtomicBool::new(false),
            keep_alives: AtomicU64::new(0),
        }
    }

    /// True while this node may act under its lease.
    pub fn valid(&self) -> bool {
        if self.lost.load(Ordering::Acquire) {
            return false;
        }
        if Instant::now() >= *self.deadline.lock() {
            self.lost.store(true, Ordering::Release);
            return false;
        }
        true
    }

    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
    }

    /// The latest moment the lease is known to run until.
    pub fn deadline(&self) -> Instant {
        *self.deadline.lock()
    }

    fn extend(&self, sent: Instant, ttl: Duration) {
        let mut d = self.deadline.lock();
        if sent + ttl > *d {
            *d = sent + ttl;
        }
    }
}

/// A lease is a node's term of authority: it runs while valid.
impl NodeTerm for LeaseState {
    fn runs(&self) -> bool {
        self.valid()
    }

    fn known_until(&self) -> Option<Instant> {
        Some(self.deadline())
    }

    fn wait_end(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while self.valid() {
            let now = Instant::now();
            if now >= until {
                return false;
            }
            // The deadline moves only forward; sleep to the nearer of the two, in steps so
            // that a loss etcd reported is seen soon.
            let step = until
                .min(self.deadline())
                .saturating_duration_since(now)
                .min(Duration::from_millis(50));
            std::thread::sleep(step.max(Duration::from_millis(1)));
        }
        true
    }

    fn number(&self) -> u64 {
        self.id as u64
    }
}

/// Keeps the lease alive every TTL/3 until `stop` fires or the lease is lost.
pub(crate) async fn keep_alive(mut client: Client, lease: Arc<LeaseState>, stop: Arc<Stop>) {
    let period = lease.ttl / 3;
    loop {
        if !lease.valid() || stop.fired() {
            return;
        }
        let (mut keeper, mut stream) = match client.lease_keep_alive(lease.id).await {
            Ok(s) => s,
            Err(_) => {
                tokio::select! {
                    _ = stop.wait() => return,
                    _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                }
            }
        };
        loop {
            if !lease.valid() || stop.fired() {
                return;
            }
            let sent = Instant::now();
            if keeper.keep_alive().await.is_err() {
                break;
            }
            lease.keep_alives.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(period, stream.message()).await {
                Ok(Ok(Some(answer))) if answer.ttl() > 0 => {
                    lease.extend(sent, Duration::from_secs(answer.ttl() as u64));
                }
                Ok(Ok(Some(_))) => {
                    // etcd says the lease is over.
                    lease.mark_lost();
                    return;
                }
                _ => break,
            }
            let rest = period.saturating_sub(sent.elapsed());
            tokio::select! {
                _ = stop.wait() => return,
                _ = tokio::time::sleep(rest) => {}
            }
        }
        tokio::select! {
            _ = stop.wait() => return,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}
