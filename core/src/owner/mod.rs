//! Owners (Spots): each owner's authority (epoch), lease deadline (contract T6), execution gate
//! (T9) and the table of its timers' keys, in a dense table indexed by a small integer.
//!
//! Entries never move (records and C hosts point at an owner's lease deadline) and are
//! reused once an owner is forgotten. Nothing an old incarnation left behind can match a
//! new one: every authority gets an epoch no other authority of the runtime ever had
//! (`OwnerTable::next_epoch`), and every lease entry carries `lease_fence`, which only ever
//! grows for an index.

mod book;
pub(crate) mod gate;
mod ids;
mod key_sizes;

pub(crate) use key_sizes::KeyTableSizes;

pub(crate) use book::OwnerBook;
pub(crate) use ids::OwnerIds;

use std::collections::VecDeque;
use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

use parking_lot::RwLock;

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::paged::PagedArray;
use crate::sync::{AtomicU32, AtomicU64, Mutex};

/// The host's id of an owner.
pub type OwnerId = u64;

/// Lease deadline meaning "no lease: never expires".
pub(crate) const NO_DEADLINE: Nanos = u64::MAX;
/// Lease deadline of an authority that is over (expired or revoked).
pub(crate) const EXPIRED: Nanos = 0;

/// Most owners a runtime can know at once (the index is 24 bits in a slot).
pub(crate) const MAX_OWNERS: u32 = 1 << 24;
const _: () = assert!(MAX_OWNERS as usize <= crate::paged::CAPACITY);
const INDEX_BITS: u32 = 24;

/// One owner, in one cache line: what the hot paths read, and the lock with what it
/// guards (see `book`).
#[repr(C, align(64))]
pub(crate) struct OwnerEntry {
    /// The current authority's epoch (see `OwnerTable::next_epoch`).
    pub epoch: AtomicU64,
    /// Lease deadline of that authority on the runtime's clock (`NO_DEADLINE`, `EXPIRED`).
    pub deadline: AtomicU64,
    /// The host's id of the owner living here.
    pub id: StdAtomicU64,
    /// See `gate`.
    pub gate: AtomicU32,
    /// Tag of this entry's lease entries in the deadline queue.
    pub lease_fence: StdAtomicU32,
    /// Hosts blocked in `enter_gate` (they wait on the runtime's gate condition).
    pub host_waiters: StdAtomicU32,
    pub book: Mutex<OwnerBook>,
}

impl Default for OwnerEntry {
    fn default() -> Self {
        Self {
            epoch: AtomicU64::new(0),
            deadline: AtomicU64::new(EXPIRED),
            id: StdAtomicU64::new(0),
            gate: AtomicU32::new(0),
            lease_fence: StdAtomicU32::new(0),
            host_waiters: StdAtomicU32::new(0),
            book: Mutex::new(OwnerBook::default()),
        }
    }
}

impl OwnerEntry {
    /// Is authority `epoch` current and its lease still running at `now`? The clock is
    /// read only when the owner has a lease.
    #[inline]
    pub fn check(&self, epoch: u64, now: impl FnOnce() -> Nanos) -> Result<()> {
        if self.epoch.load(Acquire) != epoch {
            return Err(Error::Revoked);
        }
        let deadline = self.deadline.load(Acquire);
        if deadline != NO_DEADLINE && deadline <= now() {
            return Err(Error::LeaseExpired);
        }
        Ok(())
    }

    /// Extends the lease of authority `epoch` to `deadline`, unless it already ended. A
    /// compare-and-swap, so a renewal racing an expiry either wins or sees the expiry.
    /// Returns the deadline it replaced.
    pub fn renew(&self, epoch: u64, now: Nanos, deadline: Nanos) -> Result<Nanos> {
        let mut cur = self.deadline.load(Acquire);
        loop {
            if self.epoch.load(Acquire) != epoch {
                return Err(Error::Revoked);
            }
            if cur <= now {
                return Err(Error::LeaseExpired);
            }
            match self
                .deadline
                .compare_exchange(cur, deadline, AcqRel, Acquire)
            {
                Ok(_) => return Ok(cur),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Marks the lease expired if its deadline has passed at `now`. True if the authority
    /// is over (now or before); false if it runs (or was renewed meanwhile).
    pub fn expire_if_due(&self, now: Nanos) -> bool {
        let mut cur = self.deadline.load(Acquire);
        loop {
            if cur > now {
                return false;
            }
            if cur == EXPIRED {
                return true;
            }
            match self
                .deadline
                .compare_exchange(cur, EXPIRED, AcqRel, Acquire)
            {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }
}

pub(crate) fn lease_deadline(now: Nanos, lease: Option<Nanos>) -> Nanos {
    match lease {
        None => NO_DEADLINE,
        Some(d) => now.saturating_add(d).clamp(EXPIRED + 1, NO_DEADLINE - 1),
    }
}

/// The index an epoch was handed out for.
pub(crate) fn epoch_index(epoch: u64) -> u32 {
    (epoch & ((1 << INDEX_BITS) - 1)) as u32
}

pub(crate) struct OwnerTable {
    /// One page at a time, so the table holds little room beyond its owners.
    entries: PagedArray<OwnerEntry>,
    /// Owner id -> index of the owners the runtime knows.
    pub ids: RwLock<OwnerIds>,
    /// How large the owners' key tables grow (see `key_sizes`).
    pub key_sizes: KeyTableSizes,
    free: parking_lot::Mutex<VecDeque<u32>>,
    fresh: StdAtomicU32,
    epochs: StdAtomicU64,
}

impl Default for OwnerTable {
    fn default() -> Self {
        Self {
            entries: PagedArray::default(),
            ids: RwLock::new(OwnerIds::default()),
            key_sizes: KeyTableSizes::default(),
            free: parking_lot::Mutex::new(VecDeque::new()),
            fresh: StdAtomicU32::new(0),
            epochs: StdAtomicU64::new(1),
        }
    }
}

impl OwnerTable {
    /// The entry at an index handed out by this table.
    #[inline]
    pub fn entry(&self, index: u32) -> &OwnerEntry {
        self.entries
            .get(index as usize)
            .expect("owner index handed out by this table")
    }

    #[inline]
    pub fn get(&self, index: u32) -> Option<&OwnerEntry> {
        self.entries.get(index as usize)
    }

    /// A new epoch for the owner at `index`: above every epoch this runtime handed out, and
    /// carrying the index (so an authority names its entry by itself).
    pub fn next_epoch(&self, index: u32) -> u64 {
        (self.epochs.fetch_add(1, Relaxed) << INDEX_BITS) | u64::from(index)
    }

    /// An index for a new owner: a forgotten owner's, or a fresh one.
    pub fn allocate(&self) -> Result<u32> {
        if let Some(i) = self.free.lock().pop_front() {
            return Ok(i);
        }
        let i = self.fresh.fetch_add(1, Relaxed);
        if i >= MAX_OWNERS {
            self.fresh.store(MAX_OWNERS, Relaxed);
            return Err(Error::InvalidArgument(format!(
                "too many owners: a runtime knows at most {MAX_OWNERS} at once (release the ones that are gone)"
            )));
        }
        self.entries.ensure(i as usize);
        Ok(i)
    }

    /// Every entry handed out so far (and a few not yet handed out).
    pub fn for_each(&self, f: impl FnMut(&OwnerEntry)) {
        let mut f = f;
        self.entries.for_each(|_, e| f(e));
    }

    /// Returns a forgotten owner's index for reuse.
    pub fn release(&self, index: u32) {
        self.free.lock().push_back(index);
    }

    /// The id in entry `index` (what the id map compares).
    #[inline]
    pub fn id_at(&self, index: u32) -> OwnerId {
        self.entry(index).id.load(Relaxed)
    }

    pub fn known(&self) -> usize {
        self.ids.read().len()
    }
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::Ordering::SeqCst;

    fn entry_with_lease(epoch: u64, deadline: Nanos) -> OwnerEntry {
        let e = OwnerEntry::default();
        e.epoch.store(epoch, SeqCst);
        e.deadline.store(deadline, SeqCst);
        e
    }

    /// A renewal racing an expiry: either the renewal wins (and the lease is not expired)
    /// or the expiry wins (and the renewal fails) — never both.
    #[test]
    fn renewal_and_expiry_never_both_win() {
        loom::model(|| {
            let o = Arc::new(entry_with_lease(7, 100));
            let host = {
                let o = o.clone();
                thread::spawn(move || o.renew(7, 99, 149).is_ok())
            };
            let expired = o.expire_if_due(100);
            let renewed = host.join().unwrap();
            assert!(!(renewed && expired));
            let deadline = o.deadline.load(SeqCst);
            assert_eq!(deadline, if expired { EXPIRED } else { 149 });
        });
    }

    /// A host's lease check right before a start racing the lease's expiry and a
    /// revocation (which stores EXPIRED): once either has been published, the check fails.
    #[test]
    fn lease_check_after_expiry_or_revoke_fails() {
        loom::model(|| {
            let o = Arc::new(entry_with_lease(7, 100));
            let published = Arc::new(loom::sync::atomic::AtomicU64::new(0));
            let scheduler = {
                let (o, p) = (o.clone(), published.clone());
                thread::spawn(move || {
                    assert!(o.expire_if_due(100));
                    p.fetch_add(1, SeqCst);
                })
            };
            let revoker = {
                let (o, p) = (o.clone(), published.clone());
                thread::spawn(move || {
                    o.epoch.store(8, SeqCst);
                    o.deadline.store(EXPIRED, SeqCst);
                    p.fetch_add(1, SeqCst);
                })
            };
            let seen = published.load(SeqCst);
            let passed = o.check(7, || 99).is_ok();
            assert!(
                !(seen > 0 && passed),
                "a start passed after its authority ended"
            );
            scheduler.join().unwrap();
            revoker.join().unwrap();
            assert!(o.check(7, || 99).is_err());
        });
    }
}

// One cache line per owner (the loom build's lock, and a debug build's with its re-entry
// check, are larger).
#[cfg(not(any(spot_loom, debug_assertions)))]
const _: () = assert!(std::mem::size_of::<OwnerEntry>() == 64);
