//! Releasing owners (`Owner::release`): hosts whose owners come and go — actors, sessions —
//! must not leave every owner id they ever used in the runtime. A released owner's timers
//! end like a revocation's; once they have, the runtime forgets the owner.

mod common;

use common::*;
use spot_timer_core::*;

#[test]
fn released_owners_are_forgotten_once_their_timers_end() {
    let h = Host::new();
    let mut owners = Vec::new();
    let mut timers = Vec::new();
    for id in 0..1000 {
        let o = h.owner(id);
        timers.push(o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap());
        timers.push(o.register(2, TimerSpec::after(ms(5)), 0, None).unwrap());
        owners.push(o);
    }
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 1000);
    assert_eq!(h.rt.stats().live_timers, 2000);
    for o in &owners {
        o.release().unwrap();
    }
    h.rt.sync().unwrap();
    let s = h.rt.stats();
    assert_eq!(s.owners, 0, "{s:?}");
    assert_eq!(s.live_timers, 0);
    for t in &timers {
        assert_eq!(t.result(), Some(Ok(EndReason::Revoked)));
    }
    // Nothing of theirs runs any more.
    h.advance(ms(50));
    assert!(h.poll().is_empty());
    assert!(matches!(h.rt.owner(7), Err(Error::UnknownOwner(7))));
}

#[test]
fn a_released_authority_is_over_and_a_new_one_starts_above_its_epochs() {
    let h = Host::new();
    let old = h.owner(9);
    let old_again = h.owner(9); // epoch 2: takes over from epoch 1
    assert!(old.epoch() < old_again.epoch());
    old_again.release().unwrap();
    assert!(matches!(old_again.release(), Err(Error::Revoked)));
    assert!(matches!(
        old_again.register(1, TimerSpec::every(MS), 0, None),
        Err(Error::Revoked)
    ));
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 0);
    // The id's next incarnation: epochs above every epoch the old one had, so an
    // (id, epoch) kept from before (the C ABI's authority) never matches it.
    let new = h.owner(9);
    assert!(
        new.epoch() > old_again.epoch() + 1,
        "{} vs {}",
        new.epoch(),
        old_again.epoch()
    );
    let t = new.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    assert_eq!(h.run_ready(), vec![tick(1, 1, 0)]);
    assert!(t.is_live());
    assert_eq!(h.rt.stats().owners, 1);
    // Stale handles of the old incarnation stay harmless.
    assert!(matches!(old.revoke(), Err(Error::Revoked)));
    assert!(matches!(old.renew(None), Err(Error::Revoked)));
    assert!(t.is_live());
}

#[test]
fn a_running_callback_finishes_before_the_owner_is_forgotten() {
    let h = Host::new();
    let o = h.owner(3);
    let t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().expect("a record in the host's hands");
    assert!(h.rt.begin(&rec));
    o.release().unwrap();
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 1, "its timer is still ending");
    assert_eq!(t.result(), None);
    assert!(h.finish(&rec, Outcome::Ok).is_empty());
    assert_eq!(t.result(), Some(Ok(EndReason::Revoked)));
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 0);
    assert_eq!(t.stats().delivered, 1);
}

#[test]
fn acquiring_a_released_owner_again_before_it_is_forgotten_keeps_it() {
    let h = Host::new();
    let o = h.owner(4);
    let _t = o.register(1, TimerSpec::every(ms(10)), 0, None).unwrap();
    h.advance(ms(10));
    let rec = h.poll().pop().unwrap();
    o.release().unwrap();
    let again = h.owner(4); // while the released timer's callback is still out
    let t2 = again
        .register(2, TimerSpec::every(ms(10)), 0, None)
        .unwrap();
    assert!(h.finish(&rec, Outcome::Ok).is_empty());
    h.rt.sync().unwrap();
    assert_eq!(h.rt.stats().owners, 1, "taken over, not forgotten");
    h.advance(ms(10));
    let ticks = h.run_ready();
    assert_eq!(ticks, vec![tick(1, 1, 0)]);
    assert!(t2.is_live());
    assert!(h.rt.owner(4).is_ok());
}

#[test]
fn owner_churn_reuses_what_released_owners_held() {
    let h = Host::new();
    for round in 0..20u64 {
        let owners: Vec<_> = (0..500).map(|i| h.owner(round * 1000 + i)).collect();
        for o in &owners {
            o.register(1, TimerSpec::every(ms(2)), 0, None).unwrap();
        }
        h.advance(ms(2));
        let ran = h.run_ready().len();
        assert_eq!(ran, 500, "round {round}");
        for o in &owners {
            o.release().unwrap();
        }
        h.rt.sync().unwrap();
        let s = h.rt.stats();
        assert_eq!((s.owners, s.live_timers), (0, 0), "round {round}: {s:?}");
    }
    let s = h.rt.stats();
    assert_eq!(
        s.ticks_due,
        s.completed_ok
            + s.completed_failed
            + s.ticks_skipped
            + s.ticks_dropped_authority
            + s.ticks_discarded
    );
}
