//! Records outlive their runtime safely. A record owns a clone of its timer's payload and
//! names its timer by slot and generation, so nothing it exposes to safe code points into
//! the runtime. (`TickRecord::start_check` hands out raw pointers for hosts that cannot
//! call in — valid until the runtime is dropped, as documented; safe Rust uses
//! `Runtime::begin`.) Under Miri (part of `make test-reliability`) a use-after-free here
//! is reported as UB.

use std::sync::Arc;
use std::time::Duration;

use spot_timer_core::*;

#[test]
fn record_outlives_its_runtime() {
    let (rt, _clock) = Runtime::<Arc<String>>::manual().unwrap();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let payload = Arc::new("user data".to_string());
    let timer = owner
        .register(
            1,
            TimerSpec::every(Duration::from_millis(1)),
            payload.clone(),
            None,
        )
        .unwrap();
    rt.advance(Duration::from_millis(1)).unwrap();
    let mut batch = Vec::new();
    rt.exchange(&[], &mut batch, 8, Some(Duration::ZERO))
        .unwrap();
    let record = match batch.pop() {
        Some(Record::Tick(t)) => t,
        other => panic!("expected a tick record, got {other:?}"),
    };
    rt.close();
    assert!(
        !rt.begin(&record),
        "no callback starts once the runtime closed"
    );
    assert_eq!(timer.result(), Some(Ok(EndReason::RuntimeClosed)));
    drop(timer);
    drop(owner);
    drop(rt); // joins the scheduler thread, frees the tables
    let copy = record.clone();
    drop(record);
    assert_eq!(copy.payload().as_str(), "user data");
    assert_eq!(copy.tick().delivery_index, 1);
    drop(copy);
    assert_eq!(
        Arc::strong_count(&payload),
        1,
        "every clone of the payload was dropped"
    );
}
