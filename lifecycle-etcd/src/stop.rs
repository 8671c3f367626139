//! A stop signal for the store's background tasks: set once, seen by every task whether
//! it was waiting at that moment or not.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

#[derive(Default)]
pub(crate) struct Stop {
    set: AtomicBool,
    notify: Notify,
}

impl Stop {
    pub fn fire(&self) {
        self.set.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn fired(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Returns once the signal is (or was) fired.
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.fired() {
                return;
            }
            notified.await;
        }
    }
}
