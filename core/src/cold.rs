//! Per-generation state most timers never need — a release hook, waiters for the end,
//! cancel notices, the failure count, a cleanup failure's message — kept out of the slot
//! in a map sharded by slot. A slot's `HAS_COLD` flag says whether to look here at all, so
//! a timer without any of it never touches this table.
//!
//! Ground rules of a shard's lock (a spin lock, `crate::spin_lock`):
//! - Under it runs only work on the shard's map: find, insert, take, read a message. No
//!   host code (release hooks and subscribers are taken out and run after the guard is
//!   dropped), no other lock, and never a second lock of any shard — the result of a
//!   generation whose cleanup failed is read from the shard the caller already holds
//!   ([`result_in`]), never through a path that locks again.
//! - Whoever asks for an end (a subscription, a cancel notice) decides under the shard:
//!   either the slot word already says ENDED (and the result is read there and then), or
//!   the request is filed. The end publishes its word first and takes the filed requests
//!   under the same shard afterwards, so each request is answered exactly once — by the
//!   asker or by the end, never by both and never by neither.

use std::collections::HashMap;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use crate::end::{EndReason, EndResult};
use crate::error::Error;
use crate::hash::U64Hashing;
use crate::slot::word;
use crate::sync::{AtomicU64, Mutex, MutexGuard};

/// Cleans up the host's user data when a generation ends. It may fail; the failure becomes
/// the generation's terminal result (contract T2).
pub type ReleaseHook = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

/// Cleans up a payload when its generation ends, told why it ended (so a host can keep the
/// result with its own handle): configured once per runtime (`RuntimeConfig::release`), so
/// a host whose payloads need cleanup (a C host's user data) pays nothing per registration.
/// A failure becomes the generation's terminal result.
pub type PayloadRelease<P> =
    Box<dyn Fn(&P, crate::end::EndReason) -> std::result::Result<(), String> + Send + Sync>;

/// Called once with a generation's terminal result.
pub(crate) type Subscriber = Box<dyn FnOnce(&EndResult) + Send>;

/// The cold state of one generation.
#[derive(Default)]
pub(crate) struct Cold {
    pub generation: u64,
    pub hook: Option<ReleaseHook>,
    pub failed: u64,
    pub subscribers: Vec<Subscriber>,
    pub notices: Vec<u64>,
    pub message: Option<Arc<str>>,
}

/// What an end hands to those who asked for it: run the subscribers and queue the notices
/// after the shard's guard is gone.
pub(crate) struct Waiting {
    pub subscribers: Vec<Subscriber>,
    pub notices: Vec<u64>,
    pub result: EndResult,
}

const SHARDS: usize = 64;

pub(crate) type ColdShard = HashMap<u32, Cold, U64Hashing>;

pub(crate) struct ColdTable {
    shards: Box<[Mutex<ColdShard>]>,
}

impl Default for ColdTable {
    fn default() -> Self {
        Self::with_shards(SHARDS)
    }
}

/// The terminal result an ENDED word of `slot` records; the message of a failed cleanup
/// is read from `shard`, which the caller holds.
pub(crate) fn result_in(shard: &ColdShard, slot: u32, ended: u64) -> EndResult {
    // Every code but `REASON_CLEANUP_FAILED` is an end reason.
    match EndReason::from_code(word::reason(ended)) {
        Some(reason) => Ok(reason),
        None => {
            let msg = shard
                .get(&slot)
                .filter(|e| e.generation == word::generation(ended))
                .and_then(|e| e.message.clone())
                .unwrap_or_else(|| Arc::from("release hook failed"));
            Err(Error::CleanupFailed(msg))
        }
    }
}

impl ColdTable {
    fn with_shards(n: usize) -> Self {
        Self {
            shards: (0..n)
                .map(|_| Mutex::new(HashMap::with_hasher(U64Hashing)))
                .collect(),
        }
    }

    /// The shard holding `slot`'s entry, locked.
    pub fn lock(&self, slot: u32) -> MutexGuard<'_, ColdShard> {
        self.shards[slot as usize % self.shards.len()].lock()
    }

    /// `slot`'s entry for `generation`, created (replacing a previous generation's) if
    /// needed.
    pub fn entry(shard: &mut ColdShard, slot: u32, generation: u64) -> &mut Cold {
        let e = shard.entry(slot).or_default();
        if e.generation != generation {
            *e = Cold {
                generation,
                ..Cold::default()
            };
        }
        e
    }

    /// `slot`'s entry if it belongs to `generation`.
    pub fn find(shard: &mut ColdShard, slot: u32, generation: u64) -> Option<&mut Cold> {
        shard.get_mut(&slot).filter(|e| e.generation == generation)
    }

    /// The terminal result an ENDED word of `slot` records (locks the shard only for a
    /// failed cleanup's message). The caller must not hold `slot`'s shard: under a shard,
    /// use [`result_in`].
    #[inline]
    pub fn result(&self, slot: u32, ended: u64) -> EndResult {
        match EndReason::from_code(word::reason(ended)) {
            Some(reason) => Ok(reason),
            None => result_in(&self.lock(slot), slot, ended),
        }
    }

    /// Keeps a failed cleanup's message for everyone who asks for the result. Called by
    /// the thread finishing the end, before it publishes the ENDED word.
    pub fn record_failure(&self, slot: u32, generation: u64, msg: String) {
        let mut shard = self.lock(slot);
        Self::entry(&mut shard, slot, generation).message = Some(msg.into());
    }

    /// Asks for the end of `generation` in `slot`, whose slot word is `word`: decided under
    /// the shard, either its result (the word says ENDED; `StaleHandle` when the slot has
    /// moved on to another generation) or None, and then `file` has put the request in the
    /// generation's entry, where the end takes it ([`ColdTable::take_waiting`]).
    pub fn result_or_file(
        &self,
        slot: u32,
        generation: u64,
        word: &AtomicU64,
        file: impl FnOnce(&mut Cold),
    ) -> Option<EndResult> {
        let mut shard = self.lock(slot);
        // Sequentially consistent, pairing with `word::publish_end`: the asker has flagged
        // the slot (HAS_COLD) before this; either it sees the end, or the end sees its flag.
        let w = word.load(SeqCst);
        if word::generation(w) != generation {
            if word::superseded_in_place(generation, word::generation(w)) {
                return Some(Ok(EndReason::Superseded));
            }
            return Some(Err(Error::StaleHandle));
        }
        if word::phase(w) == word::ENDED {
            return Some(result_in(&shard, slot, w));
        }
        file(Self::entry(&mut shard, slot, generation));
        None
    }

    /// Takes what was filed for the end of the generation in `slot` whose ENDED word
    /// (already published) is `ended`, with its result; None when nobody asked.
    pub fn take_waiting(&self, slot: u32, ended: u64) -> Option<Waiting> {
        let mut shard = self.lock(slot);
        let e = Self::find(&mut shard, slot, word::generation(ended))?;
        if e.subscribers.is_empty() && e.notices.is_empty() {
            return None;
        }
        let subscribers = std::mem::take(&mut e.subscribers);
        let notices = std::mem::take(&mut e.notices);
        Some(Waiting {
            subscribers,
            notices,
            result: result_in(&shard, slot, ended),
        })
    }
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use crate::slot::word::{claim_end, fresh, publish_end, EndClaim, REASON_CLEANUP_FAILED};
    use loom::sync::Arc;
    use loom::thread;

    fn failed(r: &EndResult) -> bool {
        matches!(r, Err(Error::CleanupFailed(m)) if &**m == "hook failed")
    }

    /// A cancel notice and a subscription asked for while an end whose release hook fails
    /// is being finished (the end of a timer with a hook: its slot is flagged HAS_COLD from
    /// its registration). Whatever the interleaving: nothing deadlocks (no path takes a
    /// shard twice), each request is answered exactly once, and with the hook's failure.
    #[test]
    fn notice_and_subscription_race_an_end_whose_hook_fails() {
        loom::model(|| {
            let table = Arc::new(ColdTable::with_shards(1));
            let w = Arc::new(AtomicU64::new(fresh(3, false)));
            let answered = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
            let ender = {
                let (table, w) = (table.clone(), w.clone());
                thread::spawn(move || {
                    let EndClaim::Claimed { ending, .. } = claim_end(&w, 3, 1, false) else {
                        panic!("an idle generation is claimed")
                    };
                    table.record_failure(0, 3, "hook failed".to_string());
                    let ended = publish_end(&w, ending, REASON_CLEANUP_FAILED, false);
                    table.take_waiting(0, ended).map(|waiting| {
                        assert!(failed(&waiting.result));
                        let notices = waiting.notices.len();
                        for s in waiting.subscribers {
                            s(&waiting.result);
                        }
                        notices
                    })
                })
            };
            let subscriber = {
                let (table, w, answered) = (table.clone(), w.clone(), answered.clone());
                thread::spawn(move || {
                    let seen = answered.clone();
                    let f: Subscriber = Box::new(move |r: &EndResult| {
                        assert!(failed(r));
                        seen.fetch_add(1, SeqCst);
                    });
                    let mut f = Some(f);
                    if let Some(r) =
                        table.result_or_file(0, 3, &w, |c| c.subscribers.push(f.take().unwrap()))
                    {
                        (f.take().unwrap())(&r);
                    }
                })
            };
            let noticed_here = table.result_or_file(0, 3, &w, |c| c.notices.push(9));
            if let Some(r) = &noticed_here {
                assert!(failed(r));
            }
            let noticed_by_end = ender.join().unwrap().unwrap_or(0);
            subscriber.join().unwrap();
            assert_eq!(
                usize::from(noticed_here.is_some()) + noticed_by_end,
                1,
                "the notice is answered exactly once"
            );
            assert_eq!(answered.load(SeqCst), 1, "the subscriber runs exactly once");
        });
    }
}
