//! Succession of one key's generations (contract T1 and T3 across generations): a new
//! registration ends the key's current generation, and if that one's callback is still
//! running, the new generation waits (BLOCKED) until it completes. These rules run under
//! the owner's lock, on the registering thread and on whichever thread ends a generation;
//! keeping them here, as functions of slot words, lets the loom model below check them as
//! the runtime runs them.

use std::sync::atomic::Ordering::Acquire;

use crate::slot::word::{self, EndClaim};
use crate::sync::AtomicU64;

/// A BLOCKED slot's `inflight` names the slot it waits for, marked with this bit (a
/// scheduled index never has it), so that a slot ended from BLOCKED still says whom its
/// successor must wait for.
const PREDECESSOR: u64 = 1 << 63;

/// The `inflight` value of a generation waiting for `predecessor`.
pub(crate) fn waits_for(predecessor: u32) -> u64 {
    PREDECESSOR | u64::from(predecessor)
}

/// The slot an `inflight` value waits for, if it names one.
pub(crate) fn predecessor(inflight: u64) -> Option<u32> {
    (inflight & PREDECESSOR != 0).then_some(inflight as u32)
}

/// What superseding a key's current generation found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Superseded {
    /// The end this thread claimed (ENDING word, word it replaced), to finish once the
    /// owner's lock is released.
    pub claimed: Option<(u64, u64)>,
    /// The slot whose callback the new generation must wait for.
    pub wait_for: Option<u32>,
}

/// Ends the generation in slot `old` (word `old_word`; its `inflight` field names its own
/// predecessor while it is BLOCKED) because its key is registered again. `still_ending`
/// tells whether a slot holds a generation of the same key whose callback is still
/// running or finishing.
pub(crate) fn supersede(
    old: u32,
    old_word: &AtomicU64,
    old_inflight: u64,
    still_ending: impl Fn(u32) -> bool,
) -> Superseded {
    let w = old_word.load(Acquire);
    let reason = crate::end::EndReason::Superseded as u8;
    match word::claim_end(old_word, word::generation(w), reason, false) {
        EndClaim::Claimed { ending, from } => Superseded {
            claimed: Some((ending, from)),
            // It was itself waiting behind a running callback: so does its successor.
            wait_for: if word::phase(from) == word::BLOCKED {
                predecessor(old_inflight)
            } else {
                None
            },
        },
        // Its callback runs (or its completion is being applied): wait for it.
        EndClaim::Pending => Superseded {
            claimed: None,
            wait_for: Some(old),
        },
        // Being ended by another thread: if it was waiting behind a running callback, its
        // `inflight` still names that one.
        EndClaim::Ending => Superseded {
            claimed: None,
            wait_for: predecessor(old_inflight).filter(|&p| p != old && still_ending(p)),
        },
        EndClaim::Ended(_) | EndClaim::Stale => Superseded {
            claimed: None,
            wait_for: None,
        },
    }
}

/// What the key's table entry becomes when the generation it names ends (the ended
/// generation left its phase `from`; `inflight` is its `inflight`). While it was waiting
/// behind a running callback, the key names that one again, so a later registration still
/// waits for it; otherwise the key is free.
pub(crate) fn key_after_end(
    from: u64,
    inflight: u64,
    still_ending: impl Fn(u32) -> bool,
) -> Option<u32> {
    if word::phase(from) != word::BLOCKED {
        return None;
    }
    predecessor(inflight).filter(|&p| still_ending(p))
}

/// When generation `ended` finished after its callback and its key already names a newer
/// generation: unblocks that one if it waits for `ended`. True if it did.
pub(crate) fn release_successor(
    ended: u32,
    successor: &AtomicU64,
    successor_inflight: u64,
) -> bool {
    let w = successor.load(Acquire);
    word::phase(w) == word::BLOCKED
        && predecessor(successor_inflight) == Some(ended)
        && word::unblock(successor, w).is_some()
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use crate::slot::word::{
        claim_completion, finish_completion, fresh, hand_over, publish_end, queue, start, token,
        CompletionClaim,
    };
    use crate::sync::Mutex;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::Ordering::{Relaxed, SeqCst};

    const NONE: u32 = u32::MAX;

    /// "End generation" racing "register the same key": slot 0's callback is running when
    /// the key is registered again (slot 1) on another thread, while the host completes
    /// slot 0's record. Whatever the interleaving: the new generation never becomes
    /// runnable while the old callback runs, it is never left waiting for ever, and the
    /// key ends up naming exactly the new generation.
    #[test]
    fn end_racing_reregistration_neither_overlaps_nor_strands() {
        loom::model(|| {
            let old = Arc::new(AtomicU64::new(fresh(1, false)));
            let new = Arc::new(AtomicU64::new(word::FREE));
            let new_inflight = Arc::new(loom::sync::atomic::AtomicU64::new(0));
            let key = Arc::new(Mutex::new(0u32)); // the owner's lock and the key's entry
            let running = Arc::new(AtomicBool::new(true));
            let queued = queue(&old, old.load(SeqCst), false).unwrap();
            let handed = hand_over(&old, queued).unwrap();
            assert!(start(&old, handed));
            let tok = token(0, queued);

            // The host completes slot 0's record; if an end was requested meanwhile it
            // finishes the end, then looks at the key (as `Shared::finish` does).
            let completer = {
                let (old, new, new_inflight, key, running) = (
                    old.clone(),
                    new.clone(),
                    new_inflight.clone(),
                    key.clone(),
                    running.clone(),
                );
                thread::spawn(move || {
                    let CompletionClaim::Claimed { completing, .. } = claim_completion(&old, tok)
                    else {
                        panic!("the record awaits completion")
                    };
                    running.store(false, SeqCst); // the callback has returned
                    if let Err((ending, r)) = finish_completion(&old, completing, false) {
                        publish_end(&old, ending, r, false);
                        let mut k = key.lock();
                        if *k == 0 {
                            *k = key_after_end(completing, 0, |_| false).unwrap_or(NONE);
                        } else {
                            release_successor(0, &new, new_inflight.load(Relaxed));
                        }
                    }
                })
            };

            // Another thread registers the key again (as `Shared::register` does).
            let claimed = {
                let mut k = key.lock();
                let s = if *k == 0 {
                    supersede(0, &old, 0, |_| false)
                } else {
                    Superseded {
                        claimed: None,
                        wait_for: None,
                    }
                };
                if let Some(p) = s.wait_for {
                    new_inflight.store(waits_for(p), Relaxed);
                }
                new.store(fresh(2, s.wait_for.is_some()), SeqCst);
                if s.wait_for.is_none() {
                    assert!(
                        !running.load(SeqCst),
                        "runnable while the old callback runs"
                    );
                }
                *k = 1;
                s.claimed
            };
            if let Some((ending, _)) = claimed {
                // Won from IDLE: the old callback had completed; finish without a lock.
                publish_end(&old, ending, 1, false);
            }
            completer.join().unwrap();
            assert_eq!(word::phase(old.load(SeqCst)), word::ENDED);
            assert_eq!(
                word::phase(new.load(SeqCst)),
                word::IDLE,
                "stranded behind an ended callback"
            );
            assert_eq!(*key.lock(), 1);
        });
    }
}
