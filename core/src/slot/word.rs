//! The slot word: the one atomic that says which generation owns a slot and where that
//! generation is in its life. Every transition is a compare-and-swap on it, so the threads
//! that race for a generation — the scheduler delivering it, a host receiving, starting or
//! completing its record, any thread cancelling it — agree on exactly one winner without a
//! lock.
//!
//! ```text
//!  63 ........ 24 23 ...... 9  8  7 .. 5  4   3   2 .. 0
//!  generation     sequence    C  reason  B   A   phase
//! ```
//!
//! - generation (40 bits): unique per registration across every runtime of the process
//!   (0 is never handed out). A registration that takes a slot gets one whose low 8 bits
//!   are zero (they wrap after 2^32 of those); a re-registration in place counts up in
//!   them (`IN_PLACE_BITS`).
//! - sequence (15 bits): bumped by every delivery; with the generation's low 16 bits it
//!   names the record in flight (its completion token).
//! - reason: the end reason, once an end is requested (flag A in HANDED / COMPLETING) and
//!   in ENDING / ENDED.
//! - flag A: PARKED in IDLE (waiting in its owner's gate queue), END_REQUESTED in HANDED
//!   and COMPLETING, PAYLOAD_LIVE in ENDED (`close` ended a record the host held; its
//!   payload is dropped with the runtime).
//! - flag B: HOLDS_GATE in QUEUED, HANDED, COMPLETING and ENDING (the record holds its
//!   owner's serial gate).
//! - flag C: STARTED in HANDED and COMPLETING (the host started the callback).
//! - flags B and C in ENDED: KEPT and ENDER_BUSY, the two halves of a kept end
//!   ([`end_idle`] with `keep`): an idle generation ended without a look at its owner, so
//!   the owner's key table still names the slot (KEPT) and the ending thread is still at
//!   work on it (ENDER_BUSY). Whoever takes the slot out of the table clears KEPT
//!   ([`take_kept`], under the owner's lock); the ender clears ENDER_BUSY
//!   ([`finish_kept_end`]); the one that clears the second of the two gives the slot back.
//!
//! Phases and who moves them:
//!
//! | phase | meaning | left by |
//! |---|---|---|
//! | FREE | never used | registration |
//! | IDLE | live, nothing in flight | delivery (→ QUEUED), any ender (→ ENDING) |
//! | BLOCKED | live, waits for the callback of its key's previous generation | that generation's end (→ IDLE), any ender (→ ENDING) |
//! | QUEUED | a record waits in the ready queue | the hand-over to a host (→ HANDED), any ender: taken back, it never reaches the host (→ ENDING) |
//! | HANDED | the host holds the record (STARTED once it started the callback) | the host's completion (→ COMPLETING); an ender only sets END_REQUESTED |
//! | COMPLETING | the completion is being applied (one thread) | that thread (→ IDLE, or → ENDING when an end was requested or the timer is done) |
//! | ENDING | one thread runs the end: release hook, accounting, result | that thread (→ ENDED) |
//! | ENDED | terminal; the result stays readable until the slot is reused | registration of a new generation |
//!
//! The payload is read only by the thread that won QUEUED → HANDED and dropped only by
//! the thread that holds ENDING, which cannot be reached from HANDED except by `close`
//! (which leaves the payload alive): the two never overlap.

use std::sync::atomic::Ordering::{AcqRel, Acquire, SeqCst};

use crate::sync::AtomicU64;

pub(crate) const FREE: u64 = 0;
pub(crate) const IDLE: u64 = 1;
pub(crate) const BLOCKED: u64 = 2;
pub(crate) const QUEUED: u64 = 3;
pub(crate) const HANDED: u64 = 4;
pub(crate) const COMPLETING: u64 = 5;
pub(crate) const ENDING: u64 = 6;
pub(crate) const ENDED: u64 = 7;

const PHASE_MASK: u64 = 0b111;
const FLAG_A: u64 = 1 << 3;
const FLAG_B: u64 = 1 << 4;
const REASON_SHIFT: u32 = 5;
const REASON_MASK: u64 = 0b111 << REASON_SHIFT;
const FLAG_C: u64 = 1 << 8;
const SEQ_SHIFT: u32 = 9;
const SEQ_MASK: u64 = 0x7FFF << SEQ_SHIFT;
pub(crate) const GEN_SHIFT: u32 = 24;
/// Generations are 40-bit numbers.
pub(crate) const GEN_MASK: u64 = (1 << 40) - 1;
/// A registration that takes a slot gets a generation whose low `IN_PLACE_BITS` are zero;
/// the generations a key's re-registrations then give it in the same slot (an idle
/// generation superseded in place, see `runtime::rearm`) count up in those bits. So a slot
/// holding generation `c` proves that every generation of its run below `c` ended
/// superseded ([`superseded_in_place`]): their one result stays readable without a byte
/// kept for it.
pub(crate) const IN_PLACE_BITS: u32 = 8;
const IN_PLACE_MASK: u64 = (1 << IN_PLACE_BITS) - 1;

/// What a deadline entry keeps of the word it was armed with (an entry is current while
/// the word still gives this): the low 24 bits (phase, flags, reason, sequence) and the
/// generation's five bytes folded into one, which differs between a slot's consecutive
/// generations in place (1 apart) and in a run of fresh ones (multiples of 256 apart), and
/// also between two generations a fixed multiple of 256 registrations apart (a workload
/// that reuses each slot after the same number of registrations: with only the run's low
/// byte, every stale entry would match, and compaction could drop none). A match by
/// chance costs a look at the schedule, never a delivery.
pub(crate) fn tag(w: u64) -> u32 {
    let g = generation(w);
    let folded = g ^ (g >> 8) ^ (g >> 16) ^ (g >> 24) ^ (g >> 32);
    let mixed = (folded & 0xFF) as u32;
    (w as u32 & ((1 << GEN_SHIFT) - 1)) | (mixed << GEN_SHIFT)
}

/// The generation that supersedes `generation` in its own slot, while its run has room.
pub(crate) fn in_place_successor(generation: u64) -> Option<u64> {
    (generation & IN_PLACE_MASK != IN_PLACE_MASK).then_some(generation + 1)
}

/// Did generation `asked` of a slot whose word now holds generation `current` end
/// superseded in place (same run, older)? Its result is then `Superseded`.
pub(crate) fn superseded_in_place(asked: u64, current: u64) -> bool {
    asked < current && asked >> IN_PLACE_BITS == current >> IN_PLACE_BITS
}

/// The end reason code of a release hook that failed (the message is kept aside).
pub(crate) const REASON_CLEANUP_FAILED: u8 = 6;

pub(crate) fn generation(w: u64) -> u64 {
    w >> GEN_SHIFT
}

pub(crate) fn phase(w: u64) -> u64 {
    w & PHASE_MASK
}

pub(crate) fn reason(w: u64) -> u8 {
    ((w & REASON_MASK) >> REASON_SHIFT) as u8
}

fn seq(w: u64) -> u64 {
    (w & SEQ_MASK) >> SEQ_SHIFT
}

fn with_phase(w: u64, p: u64) -> u64 {
    (w & !PHASE_MASK) | p
}

/// The word of a new generation: live and idle, or blocked behind the callback of the
/// key's previous generation.
pub(crate) fn fresh(generation: u64, blocked: bool) -> u64 {
    (generation << GEN_SHIFT) | if blocked { BLOCKED } else { IDLE }
}

/// May this generation still start callbacks (not cancelled, superseded or ended)?
pub(crate) fn is_live(w: u64) -> bool {
    match phase(w) {
        IDLE | BLOCKED | QUEUED => true,
        HANDED | COMPLETING => w & FLAG_A == 0,
        _ => false,
    }
}

/// Is the slot parked in its owner's gate queue (IDLE with PARKED)?
pub(crate) fn is_parked(w: u64) -> bool {
    phase(w) == IDLE && w & FLAG_A != 0
}

/// Does the record in flight hold its owner's serial gate?
pub(crate) fn holds_gate(w: u64) -> bool {
    matches!(phase(w), QUEUED | HANDED | COMPLETING | ENDING) && w & FLAG_B != 0
}

/// Did the host start the record's callback?
#[cfg(test)]
pub(crate) fn started(w: u64) -> bool {
    matches!(phase(w), HANDED | COMPLETING) && w & FLAG_C != 0
}

/// In ENDED: was the payload left alive (dropped with the runtime)?
pub(crate) fn payload_live(w: u64) -> bool {
    phase(w) == ENDED && w & FLAG_A != 0
}

/// The completion token of the record in flight in `w` at `slot`.
pub(crate) fn token(slot: u32, w: u64) -> u64 {
    (u64::from(slot) << 32) | ((generation(w) & 0xFFFF) << 16) | seq(w)
}

/// The slot a token names.
pub(crate) fn token_slot(token: u64) -> u32 {
    (token >> 32) as u32
}

fn token_matches(w: u64, token: u64) -> bool {
    (generation(w) & 0xFFFF) == (token >> 16) & 0xFFFF && seq(w) == token & 0xFFFF
}

/// The value a handed-over record's word takes once the host has started it.
pub(crate) fn started_value(handed: u64) -> u64 {
    handed | FLAG_C
}

/// IDLE (parked or not) → QUEUED with the next sequence number: a record is published.
pub(crate) fn queue(word: &AtomicU64, idle: u64, holds_gate: bool) -> Option<u64> {
    debug_assert_eq!(phase(idle), IDLE);
    let next = (seq(idle) + 1) & 0x7FFF;
    let queued = (idle & !(SEQ_MASK | FLAG_A | FLAG_B | FLAG_C | PHASE_MASK))
        | (next << SEQ_SHIFT)
        | if holds_gate { FLAG_B } else { 0 }
        | QUEUED;
    word.compare_exchange(idle, queued, AcqRel, Acquire)
        .ok()
        .map(|_| queued)
}

/// QUEUED → HANDED: a host receives the record. None when it was taken back meanwhile.
pub(crate) fn hand_over(word: &AtomicU64, queued: u64) -> Option<u64> {
    let handed = with_phase(queued, HANDED);
    (phase(queued) == QUEUED
        && word
            .compare_exchange(queued, handed, AcqRel, Acquire)
            .is_ok())
    .then_some(handed)
}

/// The host's start check and claim: HANDED → HANDED with STARTED. False when the record
/// went stale (cancelled, superseded, ended) or already started — then its callback must
/// not start.
pub(crate) fn start(word: &AtomicU64, handed: u64) -> bool {
    phase(handed) == HANDED
        && handed & (FLAG_A | FLAG_C) == 0
        && word
            .compare_exchange(handed, started_value(handed), AcqRel, Acquire)
            .is_ok()
}

/// IDLE → IDLE with PARKED: the slot joins its owner's gate queue. False if it is
/// already parked or no longer idle.
pub(crate) fn park(word: &AtomicU64, idle: u64) -> Option<u64> {
    (phase(idle) == IDLE
        && idle & FLAG_A == 0
        && word
            .compare_exchange(idle, idle | FLAG_A, AcqRel, Acquire)
            .is_ok())
    .then_some(idle | FLAG_A)
}

/// IDLE with PARKED → IDLE: the slot leaves its owner's gate queue to be offered the gate.
pub(crate) fn unpark(word: &AtomicU64, parked: u64) -> Option<u64> {
    let idle = parked & !FLAG_A;
    (is_parked(parked) && word.compare_exchange(parked, idle, AcqRel, Acquire).is_ok())
        .then_some(idle)
}

/// BLOCKED → IDLE: the previous generation of the key finished its callback.
pub(crate) fn unblock(word: &AtomicU64, blocked: u64) -> Option<u64> {
    let idle = with_phase(blocked, IDLE);
    (phase(blocked) == BLOCKED
        && word
            .compare_exchange(blocked, idle, AcqRel, Acquire)
            .is_ok())
    .then_some(idle)
}

/// What a completion found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompletionClaim {
    /// This thread applies it: the word is COMPLETING; `handed` is what it replaced.
    Claimed { handed: u64, completing: u64 },
    /// No record of this token awaits completion (never handed out, already completed).
    Invalid,
}

/// Claims the right to apply the completion of `token`: exactly one thread wins.
pub(crate) fn claim_completion(word: &AtomicU64, token: u64) -> CompletionClaim {
    let mut w = word.load(Acquire);
    loop {
        if !token_matches(w, token) || phase(w) != HANDED {
            return CompletionClaim::Invalid;
        }
        let completing = with_phase(w, COMPLETING);
        match word.compare_exchange(w, completing, AcqRel, Acquire) {
            Ok(_) => {
                return CompletionClaim::Claimed {
                    handed: w,
                    completing,
                }
            }
            Err(actual) => w = actual,
        }
    }
}

/// Leaves COMPLETING for IDLE (PARKED when `parked`): the timer waits for its next tick.
/// When an end was requested meanwhile, it moves to ENDING instead and returns that word
/// and the requested reason for the caller to finish.
pub(crate) fn finish_completion(
    word: &AtomicU64,
    completing: u64,
    parked: bool,
) -> Result<u64, (u64, u8)> {
    let mut w = completing;
    loop {
        let requested = w & FLAG_A != 0;
        // The completer releases the gate itself: the word it hands on holds none.
        let new = if requested {
            with_phase(w & !(FLAG_A | FLAG_B | FLAG_C), ENDING)
        } else {
            (w & !(FLAG_A | FLAG_B | FLAG_C | REASON_MASK | PHASE_MASK))
                | if parked { FLAG_A } else { 0 }
                | IDLE
        };
        match word.compare_exchange(w, new, AcqRel, Acquire) {
            Ok(_) if requested => return Err((new, reason(new))),
            Ok(_) => return Ok(new),
            Err(actual) => w = actual,
        }
    }
}

/// COMPLETING → ENDING because the timer is done (a one-shot delivered). An end requested
/// meanwhile keeps its reason. Returns the ENDING word and the reason it ends with.
pub(crate) fn end_completed(word: &AtomicU64, completing: u64, reason: u8) -> (u64, u8) {
    let mut w = completing;
    loop {
        let r = if w & FLAG_A != 0 {
            self::reason(w)
        } else {
            reason
        };
        let new = with_phase(
            (w & !(FLAG_A | FLAG_B | FLAG_C | REASON_MASK)) | (u64::from(r) << REASON_SHIFT),
            ENDING,
        );
        match word.compare_exchange(w, new, AcqRel, Acquire) {
            Ok(_) => return (new, r),
            Err(actual) => w = actual,
        }
    }
}

/// What asking to end a generation found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndClaim {
    /// This thread ends it now: the word is ENDING. `from` is the word it replaced (its
    /// phase tells whether a published record was taken back).
    Claimed { ending: u64, from: u64 },
    /// The host holds its record (or applies its completion): the end is recorded and the
    /// thread that completes the record finishes the end.
    Pending,
    /// Another thread is finishing its end right now.
    Ending,
    /// It has ended; the word holds the result.
    Ended(u64),
    /// The slot holds another generation (or none).
    Stale,
}

/// Asks to end generation `generation` with `reason`. From IDLE, BLOCKED or QUEUED the
/// caller wins the end at once (a QUEUED record is taken back: it never reaches a host);
/// from HANDED or COMPLETING the end is requested and completes with the record. With
/// `force` (closing the runtime) a HANDED record ends at once too.
pub(crate) fn claim_end(word: &AtomicU64, generation: u64, reason: u8, force: bool) -> EndClaim {
    let mut w = word.load(Acquire);
    loop {
        if self::generation(w) != generation || phase(w) == FREE {
            return EndClaim::Stale;
        }
        let reason_bits = u64::from(reason) << REASON_SHIFT;
        let new = match phase(w) {
            IDLE | BLOCKED | QUEUED => {
                with_phase((w & !(REASON_MASK | FLAG_A | FLAG_C)) | reason_bits, ENDING)
            }
            HANDED if force => {
                with_phase((w & !(REASON_MASK | FLAG_A | FLAG_C)) | reason_bits, ENDING)
            }
            HANDED | COMPLETING if w & FLAG_A != 0 => return EndClaim::Pending,
            HANDED | COMPLETING => w | FLAG_A | reason_bits,
            ENDING => return EndClaim::Ending,
            _ => return EndClaim::Ended(w),
        };
        match word.compare_exchange(w, new, AcqRel, Acquire) {
            Ok(_) if phase(new) == ENDING => {
                return EndClaim::Claimed {
                    ending: new,
                    from: w,
                }
            }
            Ok(_) => return EndClaim::Pending,
            Err(actual) => w = actual,
        }
    }
}

/// IDLE → ENDED in one step, for an end that has nothing to run between the two (no
/// release function or hook, no subscriber, a payload without drop glue): the caller does
/// the end's bookkeeping afterwards, as after [`publish_end`]. With `keep`, the end is a
/// kept one (KEPT and ENDER_BUSY, see the module documentation): the caller leaves the
/// owner's key table alone and ends with [`finish_kept_end`]. Returns (ENDED word, the
/// word it replaced); None when the word is not IDLE in `generation` — the caller then
/// takes [`claim_end`]'s path. Sequentially consistent for the same reason as
/// `publish_end`.
pub(crate) fn end_idle(
    word: &AtomicU64,
    generation: u64,
    reason: u8,
    keep: bool,
) -> Option<(u64, u64)> {
    let w = word.load(Acquire);
    if self::generation(w) != generation || phase(w) != IDLE {
        return None;
    }
    let ended = with_phase(
        (w & !(REASON_MASK | FLAG_A | FLAG_B | FLAG_C))
            | (u64::from(reason) << REASON_SHIFT)
            | if keep { KEPT | ENDER_BUSY } else { 0 },
        ENDED,
    );
    word.compare_exchange(w, ended, SeqCst, Acquire)
        .ok()
        .map(|_| (ended, w))
}

/// In ENDED: the owner's key table still names the slot.
const KEPT: u64 = FLAG_B;
/// In ENDED with KEPT: the thread that ended the generation still works on the slot.
const ENDER_BUSY: u64 = FLAG_C;

/// Is `w` the word of a kept end whose slot the owner's key table has not given up yet?
pub(crate) fn is_kept(w: u64) -> bool {
    phase(w) == ENDED && w & KEPT != 0
}

/// The ender of a kept end is done with the slot (`ended`: the word its [`end_idle`]
/// stored): clears ENDER_BUSY. True when the key table gave the slot up meanwhile
/// ([`take_kept`]): the caller then gives the slot back.
pub(crate) fn finish_kept_end(word: &AtomicU64, ended: u64) -> bool {
    let mut w = ended;
    loop {
        debug_assert!(phase(w) == ENDED && w & ENDER_BUSY != 0);
        match word.compare_exchange(w, w & !ENDER_BUSY, AcqRel, Acquire) {
            Ok(_) => return w & KEPT == 0,
            Err(actual) => w = actual,
        }
    }
}

/// Takes a kept slot out of its owner's hold (the caller holds the owner's lock and takes
/// the slot out of the key table): clears KEPT. `Some(true)` when the slot may be given
/// back now, `Some(false)` when its ender still works on it (and gives it back), None when
/// the word is not a kept end.
pub(crate) fn take_kept(word: &AtomicU64) -> Option<bool> {
    let mut w = word.load(Acquire);
    loop {
        if !is_kept(w) {
            return None;
        }
        match word.compare_exchange(w, w & !KEPT, AcqRel, Acquire) {
            Ok(_) => return Some(w & ENDER_BUSY == 0),
            Err(actual) => w = actual,
        }
    }
}

/// IDLE (not parked in its owner's gate queue) → ENDING with `reason`, for a
/// re-registration that keeps the slot: the ENDING word, or None when the word is not
/// that (the caller registers elsewhere).
pub(crate) fn claim_idle(word: &AtomicU64, generation: u64, reason: u8) -> Option<u64> {
    let w = word.load(Acquire);
    if self::generation(w) != generation || phase(w) != IDLE || w & FLAG_A != 0 {
        return None;
    }
    let ending = with_phase(
        (w & !(REASON_MASK | FLAG_B | FLAG_C)) | (u64::from(reason) << REASON_SHIFT),
        ENDING,
    );
    word.compare_exchange(w, ending, AcqRel, Acquire)
        .ok()
        .map(|_| ending)
}

/// The ENDED word of an ENDING one with its own reason, never stored: what the end of a
/// generation superseded in place hands to those who asked for it.
pub(crate) fn ended_of(ending: u64) -> u64 {
    debug_assert_eq!(phase(ending), ENDING);
    (ending & !(FLAG_A | FLAG_B | FLAG_C | PHASE_MASK)) | ENDED
}

/// ENDING → ENDED: publishes the terminal result. Only the thread that holds ENDING calls
/// it; the sequentially consistent swap makes the end's effects visible to every reader
/// of the result, and orders it before the caller's look at the slot's waiter flags.
pub(crate) fn publish_end(word: &AtomicU64, ending: u64, reason: u8, payload_live: bool) -> u64 {
    debug_assert_eq!(phase(ending), ENDING);
    let ended = (ending & !(REASON_MASK | FLAG_A | FLAG_B | FLAG_C | PHASE_MASK))
        | (u64::from(reason) << REASON_SHIFT)
        | if payload_live { FLAG_A } else { 0 }
        | ENDED;
    word.swap(ended, SeqCst);
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slots_consecutive_generations_have_distinct_entry_tags() {
        let fresh_run = 1u64 << 20 << IN_PLACE_BITS;
        let mut seen = std::collections::HashSet::new();
        // 255 fresh generations a slot may get in a row, then a run in place.
        for k in 0..255 {
            assert!(seen.insert(tag(fresh(fresh_run + (k << IN_PLACE_BITS), false))));
        }
        let mut seen = std::collections::HashSet::new();
        let mut g = fresh_run;
        while let Some(next) = in_place_successor(g) {
            assert!(seen.insert(tag(fresh(g, false))));
            g = next;
        }
        assert_eq!(seen.len(), 255);
        assert!(superseded_in_place(fresh_run, g) && !superseded_in_place(g, fresh_run));
        assert!(
            !superseded_in_place(fresh_run - 1, fresh_run),
            "another run"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "16,000 tags: no unsafe code")]
    fn a_slot_reused_after_a_fixed_number_of_registrations_changes_its_tag() {
        // The slot's generations are `stride` runs apart every time (a periodic workload
        // and a FIFO of resting slots give a constant distance); the tags of most pairs
        // of consecutive ones must differ, or compaction could not tell stale entries.
        for stride in [1u64, 3, 4, 256, 1024, 4096, 65536, 1 << 24] {
            let mut run = 0x1234_5678u64 & ((1 << 32) - 1);
            let mut repeats = 0;
            for _ in 0..1000 {
                let a = tag(fresh(run << IN_PLACE_BITS, false));
                run = (run + stride) & ((1 << 32) - 1);
                repeats += usize::from(a == tag(fresh(run << IN_PLACE_BITS, false)));
            }
            assert!(repeats <= 10, "stride {stride}: {repeats} of 1000 repeated");
        }
    }

    #[test]
    fn a_generation_goes_through_its_phases() {
        let w = AtomicU64::new(fresh(5, false));
        let idle = w.load(Acquire);
        assert!(is_live(idle));
        let queued = queue(&w, idle, true).unwrap();
        assert!(holds_gate(queued));
        let tok = token(9, queued);
        assert_eq!(token_slot(tok), 9);
        assert_eq!(
            claim_completion(&w, tok),
            CompletionClaim::Invalid,
            "not received yet"
        );
        let handed = hand_over(&w, queued).unwrap();
        assert!(hand_over(&w, queued).is_none(), "handed over once");
        assert!(start(&w, handed));
        assert!(!start(&w, handed), "a record starts once");
        assert!(started(w.load(Acquire)));
        let CompletionClaim::Claimed { completing, .. } = claim_completion(&w, tok) else {
            panic!()
        };
        assert_eq!(claim_completion(&w, tok), CompletionClaim::Invalid);
        let idle2 = finish_completion(&w, completing, false).unwrap();
        assert_eq!(phase(idle2), IDLE);
        assert!(!holds_gate(idle2) && !started(idle2));
        let q2 = queue(&w, idle2, false).unwrap();
        assert_ne!(token(9, q2), tok, "every delivery has its own token");
    }

    #[test]
    fn ending_a_queued_record_takes_it_back() {
        let w = AtomicU64::new(fresh(7, false));
        let queued = queue(&w, w.load(Acquire), true).unwrap();
        let EndClaim::Claimed { ending, from } = claim_end(&w, 7, 0, false) else {
            panic!()
        };
        assert_eq!(phase(from), QUEUED);
        assert!(holds_gate(ending), "the ender releases the gate");
        assert!(
            hand_over(&w, queued).is_none(),
            "a taken-back record never reaches a host"
        );
        publish_end(&w, ending, 0, false);
        assert_eq!(
            claim_completion(&w, token(1, queued)),
            CompletionClaim::Invalid
        );
    }

    #[test]
    fn an_end_requested_while_handed_completes_with_the_record() {
        let w = AtomicU64::new(fresh(8, false));
        let queued = queue(&w, w.load(Acquire), false).unwrap();
        let handed = hand_over(&w, queued).unwrap();
        assert_eq!(claim_end(&w, 8, 2, false), EndClaim::Pending);
        assert!(!is_live(w.load(Acquire)));
        assert!(!start(&w, handed), "no start once an end is requested");
        assert_eq!(
            claim_end(&w, 8, 0, false),
            EndClaim::Pending,
            "first reason kept"
        );
        let CompletionClaim::Claimed { completing, .. } = claim_completion(&w, token(0, queued))
        else {
            panic!()
        };
        let (ending, r) = finish_completion(&w, completing, false).unwrap_err();
        assert_eq!((phase(ending), r), (ENDING, 2));
        assert_eq!(claim_end(&w, 8, 0, false), EndClaim::Ending);
        assert_eq!(claim_end(&w, 9, 0, false), EndClaim::Stale);
    }
}

#[cfg(all(test, spot_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::Ordering::Release;

    /// A re-registration in place racing a cancel and a delivery of the same idle
    /// generation: exactly one of the three wins its claim, and a loser that finds the
    /// slot moved on reads the one result the winner gave — `Superseded` when the
    /// re-registration won.
    #[test]
    fn rearm_in_place_cancel_and_delivery_have_one_winner() {
        loom::model(|| {
            let g = 1 << IN_PLACE_BITS;
            let w = Arc::new(AtomicU64::new(fresh(g, false)));
            let rearm = {
                let w = w.clone();
                thread::spawn(move || match claim_idle(&w, g, 1) {
                    Some(_) => {
                        w.swap(fresh(in_place_successor(g).unwrap(), false), SeqCst);
                        true
                    }
                    None => false,
                })
            };
            let deliver = {
                let w = w.clone();
                thread::spawn(move || {
                    let seen = w.load(Acquire);
                    generation(seen) == g && phase(seen) == IDLE && queue(&w, seen, false).is_some()
                })
            };
            let cancel = claim_end(&w, g, 0, false);
            let rearmed = rearm.join().unwrap();
            let delivered = deliver.join().unwrap();
            let cancelled = matches!(cancel, EndClaim::Claimed { from, .. } if phase(from) == IDLE);
            let took_back =
                matches!(cancel, EndClaim::Claimed { from, .. } if phase(from) == QUEUED);
            assert_eq!(
                u8::from(rearmed) + u8::from(cancelled) + u8::from(delivered && !took_back),
                1 - u8::from(took_back),
                "one claim of the idle generation wins"
            );
            if rearmed {
                let now = generation(w.load(Acquire));
                assert!(matches!(cancel, EndClaim::Stale | EndClaim::Ending));
                assert!(superseded_in_place(g, now), "the loser reads Superseded");
            }
        });
    }

    /// A host receiving a published record races a cancel: exactly one wins. Either the
    /// host holds it and the cancel waits for its completion (Pending), or the record is
    /// taken back and never reaches a host.
    #[test]
    fn hand_over_and_take_back_have_one_winner() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(3, false)));
            let queued = queue(&w, w.load(Acquire), false).unwrap();
            let host = {
                let w = w.clone();
                thread::spawn(move || hand_over(&w, queued).is_some())
            };
            let claim = claim_end(&w, 3, 0, false);
            let received = host.join().unwrap();
            match claim {
                EndClaim::Claimed { from, .. } => {
                    assert!(!received);
                    assert_eq!(phase(from), QUEUED);
                }
                EndClaim::Pending => assert!(received),
                other => panic!("{other:?}"),
            }
        });
    }

    /// The host's start check racing a cancel of a record it holds: once the cancel has
    /// returned, no start succeeds; a start that succeeded came first (and the cancel waits
    /// for that callback).
    #[test]
    fn no_start_after_a_cancel_returned() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(5, false)));
            let queued = queue(&w, w.load(Acquire), false).unwrap();
            let handed = hand_over(&w, queued).unwrap();
            let cancelled = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            let host = {
                let (w, c) = (w.clone(), cancelled.clone());
                thread::spawn(move || {
                    let after = c.load(Acquire);
                    let started = start(&w, handed);
                    assert!(!(after && started), "started after the cancel returned");
                })
            };
            assert_eq!(claim_end(&w, 5, 0, false), EndClaim::Pending);
            cancelled.store(true, Release);
            host.join().unwrap();
        });
    }

    /// A completion racing a cancel: the end is recorded and finished by the completer,
    /// exactly once.
    #[test]
    fn completion_and_cancel_finish_the_end_once() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(4, false)));
            let queued = queue(&w, w.load(Acquire), false).unwrap();
            let handed = hand_over(&w, queued).unwrap();
            assert!(start(&w, handed));
            let tok = token(0, queued);
            let completer = {
                let w = w.clone();
                thread::spawn(move || match claim_completion(&w, tok) {
                    CompletionClaim::Claimed { completing, .. } => {
                        finish_completion(&w, completing, false).is_err()
                    }
                    other => panic!("{other:?}"),
                })
            };
            let claim = claim_end(&w, 4, 0, false);
            let completer_ends = completer.join().unwrap();
            match claim {
                EndClaim::Pending => assert!(completer_ends),
                // The completion went first and left the timer idle: the cancel ends it.
                EndClaim::Claimed { from, .. } => {
                    assert!(!completer_ends);
                    assert_eq!(phase(from), IDLE);
                }
                other => panic!("{other:?}"),
            }
        });
    }

    /// Two threads complete the same token (a host bug): exactly one applies it.
    #[test]
    fn a_token_completes_once() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(6, false)));
            let queued = queue(&w, w.load(Acquire), false).unwrap();
            hand_over(&w, queued).unwrap();
            let tok = token(0, queued);
            let other = {
                let w = w.clone();
                thread::spawn(move || {
                    matches!(claim_completion(&w, tok), CompletionClaim::Claimed { .. })
                })
            };
            let mine = matches!(claim_completion(&w, tok), CompletionClaim::Claimed { .. });
            assert!(mine ^ other.join().unwrap());
        });
    }

    /// Concurrent cancels of one idle generation: exactly one claims the end.
    #[test]
    fn concurrent_cancels_claim_once() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(9, false)));
            let other = {
                let w = w.clone();
                thread::spawn(move || {
                    matches!(claim_end(&w, 9, 0, false), EndClaim::Claimed { .. })
                })
            };
            let mine = matches!(claim_end(&w, 9, 0, false), EndClaim::Claimed { .. });
            assert!(mine ^ other.join().unwrap());
        });
    }

    /// A one-step end of an idle generation racing its delivery and a second canceller:
    /// either the delivery queued a record first (the one-step end steps aside and the
    /// claim takes the record back), or the generation ended with no record queued; one
    /// end only.
    #[test]
    fn one_step_end_races_delivery_and_a_claim() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(9, false)));
            let delivery = {
                let w = w.clone();
                thread::spawn(move || {
                    let idle = w.load(Acquire);
                    phase(idle) == IDLE && queue(&w, idle, false).is_some()
                })
            };
            let claimer = {
                let w = w.clone();
                thread::spawn(move || {
                    matches!(claim_end(&w, 9, 0, false), EndClaim::Claimed { .. })
                })
            };
            let quick = end_idle(&w, 9, 0, false).is_some();
            let queued = delivery.join().unwrap();
            let claimed = claimer.join().unwrap();
            let last = w.load(Acquire);
            assert!(!(quick && claimed), "the generation ended twice");
            assert!(quick || claimed, "nobody ended it");
            assert!(
                !(quick && queued),
                "a record was queued for an ended generation"
            );
            if quick {
                assert_eq!(phase(last), ENDED);
            } else {
                assert_eq!(phase(last), ENDING);
            }
        });
    }

    /// A kept end (the canceller, which goes on reading the slot until it is done) races
    /// the owner's side taking the slot out of its key table (a registration of the same
    /// key, a release): exactly one of the two gives the slot back, and never while the
    /// ender still works on it.
    #[test]
    fn a_kept_end_and_its_owner_give_the_slot_back_once() {
        loom::model(|| {
            let w = Arc::new(AtomicU64::new(fresh(5, false)));
            let busy = Arc::new(AtomicU64::new(0));
            let given_back = Arc::new(AtomicU64::new(0));
            let ender = {
                let (w, busy, given_back) = (w.clone(), busy.clone(), given_back.clone());
                thread::spawn(move || {
                    let Some((ended, _)) = end_idle(&w, 5, 0, true) else {
                        return;
                    };
                    busy.store(1, Release);
                    // ... reads the slot for its counts ...
                    busy.store(0, Release);
                    if finish_kept_end(&w, ended) {
                        given_back.fetch_add(1, SeqCst);
                    }
                })
            };
            let owner = {
                let (w, busy, given_back) = (w.clone(), busy.clone(), given_back.clone());
                thread::spawn(move || {
                    if take_kept(&w) == Some(true) {
                        assert_eq!(busy.load(Acquire), 0, "given back while the ender works");
                        given_back.fetch_add(1, SeqCst);
                    }
                })
            };
            ender.join().unwrap();
            owner.join().unwrap();
            let last = w.load(Acquire);
            // The owner's side looked too early (the word was still IDLE): the key table
            // holds the kept end, which a later look gives back.
            let later = u64::from(take_kept(&w) == Some(true));
            assert_eq!(given_back.load(SeqCst) + later, 1, "word {last:#x}");
            assert!(!is_kept(w.load(Acquire)));
        });
    }
}
