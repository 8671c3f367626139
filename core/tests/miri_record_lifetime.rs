//! Lifetime of a record's liveness word (issue 7, found while writing the Miri tests).
//!
//! `TickRecord::live_word()` is safe and returns `&AtomicU64`. A record holds its cell but
//! not the runtime: the words must outlive the runtime for as long as any record does. The
//! cell therefore shares the runtime's word table (`table::WordTable`); this test keeps a
//! record after the runtime, its owners and handles are dropped and reads the word. Under
//! Miri (part of `make test-reliability`) a use-after-free here is reported as UB.

use std::sync::atomic::Ordering;
use std::time::Duration;

use spot_timer_core::*;

#[test]
fn record_live_word_after_runtime_dropped() {
    let (rt, _clock) = Runtime::<u32>::manual().unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let timer = owner
        .register(1, TimerSpec::every(Duration::from_millis(1)), 7, None)
        .unwrap();
    rt.advance(Duration::from_millis(1)).unwrap();
    let mut batch = Vec::new();
    rt.exchange(&[], &mut batch, 8, Some(Duration::ZERO))
        .unwrap();
    let record = match batch.pop() {
        Some(Record::Tick(t)) => t,
        other => panic!("expected a tick record, got {other:?}"),
    };
    drop(timer);
    drop(owner);
    drop(rt); // closes, joins the scheduler thread, frees the shared state
              // Safe code; the word's memory was freed with the slot table.
    let (word, live) = record.live_word();
    let now = word.load(Ordering::Acquire);
    assert_ne!(now, live, "the generation ended with the runtime");
}
