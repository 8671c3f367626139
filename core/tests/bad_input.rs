//! Every bad input gets a specific error, never a panic, and loses nothing already
//! admitted.

mod common;

use std::time::Duration;

use common::*;
use spot_timer_core::*;

#[test]
fn zero_period_is_rejected() {
    let h = Host::new();
    let o = h.owner(1);
    let err = o
        .register(1, TimerSpec::every(Duration::ZERO), 0, None)
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("period")),
        "{err}"
    );
}

#[test]
fn max_catch_up_out_of_range_is_rejected_only_for_catch_up_bounded() {
    let h = Host::new();
    let o = h.owner(1);
    for n in [0u64, i32::MAX as u64 + 1, u64::MAX] {
        let spec = TimerSpec::every(ms(10))
            .policy(OverrunPolicy::CatchUpBounded)
            .max_catch_up_ticks(n);
        let err = o.register(1, spec, 0, None).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("max_catch_up_ticks")),
            "{n}: {err}"
        );
    }
    let ok = TimerSpec::every(ms(10))
        .policy(OverrunPolicy::CatchUpBounded)
        .max_catch_up_ticks(i32::MAX as u64);
    o.register(1, ok, 0, None).unwrap();
    // Other policies ignore the value.
    o.register(2, TimerSpec::every(ms(10)).max_catch_up_ticks(0), 0, None)
        .unwrap();
}

#[test]
fn unknown_owner_is_reported() {
    let h = Host::new();
    assert_eq!(h.rt.owner(42).unwrap_err(), Error::UnknownOwner(42));
}

#[test]
fn expired_lease_rejects_registration_and_renewal() {
    let h = Host::new();
    let o = h.owner_with(1, OwnerOptions::lease(ms(10)));
    h.advance(ms(10));
    assert_eq!(
        o.register(1, TimerSpec::every(ms(1)), 0, None).unwrap_err(),
        Error::LeaseExpired
    );
    assert_eq!(o.renew(Some(ms(10))), Err(Error::LeaseExpired));
    assert_eq!(h.rt.owner(1).unwrap_err(), Error::LeaseExpired);
    assert!(matches!(
        h.rt.acquire_owner(2, OwnerOptions::lease(Duration::ZERO)),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn revoked_authority_is_reported() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    o.revoke().unwrap();
    assert_eq!(o.revoke(), Err(Error::Revoked));
    assert_eq!(
        o.register(2, TimerSpec::every(ms(1)), 0, None).unwrap_err(),
        Error::Revoked
    );
    assert_eq!(t.cancel(Some(ms(100))), Ok(EndReason::Revoked));
    h.advance(ms(50));
    assert!(h.poll().is_empty());
}

#[test]
fn stale_and_unknown_timer_handles_are_reported() {
    let h = Host::new();
    let o = h.owner(1);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    let id = t.id();
    assert_eq!(h.rt.timer(id).unwrap().id(), id);
    let never = TimerId::from_parts(12_345, 1).unwrap();
    assert_eq!(h.rt.timer(never).unwrap_err(), Error::StaleHandle);
    let wrong_generation = TimerId::from_parts(id.slot(), id.generation() + 1000).unwrap();
    assert_eq!(
        h.rt.timer(wrong_generation).unwrap_err(),
        Error::StaleHandle
    );
    assert_eq!(t.cancel(Some(ms(100))), Ok(EndReason::Cancelled));
    // An ended generation is still found by id, with its result, until its slot is reused.
    assert_eq!(
        h.rt.timer(id).unwrap().result(),
        Some(Ok(EndReason::Cancelled))
    );
    assert_eq!(t.cancel(Some(ms(100))), Ok(EndReason::Cancelled));
    let churn = || {
        for k in 0..5000 {
            o.register(100 + k, TimerSpec::every(ms(10)), 0, None)
                .unwrap()
                .cancel(None)
                .unwrap();
        }
    };
    // The registration's handle holds the slot: its result stays, by id too.
    churn();
    assert_eq!(t.cancel(Some(ms(100))), Ok(EndReason::Cancelled));
    assert_eq!(
        h.rt.timer(id).unwrap().result(),
        Some(Ok(EndReason::Cancelled))
    );
    // Once the handle is gone, slots rest before reuse; churn enough registrations and
    // this one is reused.
    drop(t);
    churn();
    assert_eq!(h.rt.timer(id).unwrap_err(), Error::StaleHandle);
    assert_eq!(h.rt.timer_result(id), Some(Err(Error::StaleHandle)));
    assert_eq!(
        h.rt.cancel_timer(id, Some(ms(100))),
        Err(Error::StaleHandle)
    );

    // A handle of another runtime never matches this one.
    let other = Host::new();
    let o2 = other.owner(1);
    let t2 = o2.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    assert_eq!(h.rt.timer(t2.id()).unwrap_err(), Error::StaleHandle);
}

#[test]
fn zero_capacity_poll_is_rejected_without_losing_records() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let mut out = Vec::new();
    let err =
        h.rt.exchange(&[], &mut out, 0, Some(Duration::ZERO))
            .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("capacity")));
    assert_eq!(h.poll().len(), 1, "the admitted tick is still there");
}

#[test]
fn a_bad_completion_token_is_rejected_on_its_own() {
    let h = Host::new();
    let o = h.owner(1);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    let mut out = Vec::new();
    let bogus = Completion::new(0xdead_beef, Outcome::Ok);
    let err =
        h.rt.exchange(
            &[bogus, rec.complete(Outcome::Ok)],
            &mut out,
            8,
            Some(Duration::ZERO),
        )
        .unwrap_err();
    assert_eq!(err, Error::InvalidCompletion(0xdead_beef));
    assert!(out.is_empty(), "a rejected call receives nothing");
    assert_eq!(h.rt.stats().invalid_completions, 1);
    assert_eq!(
        h.rt.stats().completed_ok,
        1,
        "the valid completion was applied"
    );
    // Applied exactly once: the same token again is rejected, and nothing else changes.
    assert_eq!(
        h.rt.complete(&[rec.complete(Outcome::Ok)]).unwrap_err(),
        Error::InvalidCompletion(rec.token())
    );
    // The same token twice in one call: the second is rejected.
    h.advance(ms(10));
    let next = h.poll().pop().unwrap();
    assert_eq!(
        h.rt.complete(&[next.complete(Outcome::Ok), next.complete(Outcome::Failed)])
            .unwrap_err(),
        Error::InvalidCompletion(next.token())
    );
    let s = h.rt.stats();
    assert_eq!(
        (s.completed_ok, s.completed_failed, s.invalid_completions),
        (2, 0, 3)
    );
    // A completed record can no longer be started.
    assert!(!h.rt.begin(&next));
}

#[test]
fn advance_needs_a_manual_clock_and_use_after_close_is_reported() {
    let rt: Runtime<()> = Runtime::new(RuntimeConfig::default()).unwrap();
    assert_eq!(rt.advance(ms(1)).unwrap_err(), Error::NotManualClock);
    let o = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let t = o.register(1, TimerSpec::every(ms(10)), (), None).unwrap();
    rt.close();
    assert_eq!(t.result(), Some(Ok(EndReason::RuntimeClosed)));
    assert_eq!(t.cancel(None), Ok(EndReason::RuntimeClosed));
    assert_eq!(
        o.register(2, TimerSpec::every(ms(10)), (), None)
            .unwrap_err(),
        Error::Closed
    );
    let mut out = Vec::new();
    assert_eq!(
        rt.exchange(&[], &mut out, 1, None).unwrap_err(),
        Error::Closed
    );
    assert_eq!(rt.stats().scheduler_threads, 0);
}

#[test]
fn one_shot_needs_a_delay_and_zero_lease_renewal_is_rejected() {
    let h = Host::new();
    let o = h.owner(1);
    let spec = TimerSpec {
        period: None,
        first_due: None,
        policy: OverrunPolicy::SkipLateTicks,
        max_catch_up_ticks: 1,
    };
    assert!(matches!(
        o.register(1, spec, 0, None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        o.renew(Some(Duration::ZERO)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(o.leave_gate(), Err(Error::InvalidArgument(_))));
}
