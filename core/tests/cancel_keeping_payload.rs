//! `Runtime::cancel_timer_keeping_payload` from the outside: an idle generation ends with
//! its payload handed back to the caller (the payload release does not run), any other end
//! is the ordinary one; racing a delivering host and resets, every payload is released
//! exactly once — by the runtime, or by the caller that kept it.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spot_timer_core::*;

fn counting_runtime() -> (Runtime<u64>, common::Releases) {
    common::counting_runtime(ClockKind::Real)
}

#[test]
fn each_way_a_cancel_keeping_the_payload_can_go() {
    let (rt, released) = counting_runtime();
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let spec = || TimerSpec::after(Duration::from_secs(60));
    // Idle: ended here, the payload handed back.
    let idle = owner.register_id(1, spec(), 10, None).unwrap();
    assert_eq!(
        rt.cancel_timer_keeping_payload(idle).unwrap(),
        Cancelled::PayloadKept(Ok(EndReason::Cancelled))
    );
    assert_eq!(rt.timer_result(idle), Some(Ok(EndReason::Cancelled)));
    assert!(
        released.lock().unwrap().is_empty(),
        "the payload release did not run"
    );
    // Asked again: the one result, as an ordinary cancel reports it.
    assert_eq!(
        rt.cancel_timer_keeping_payload(idle).unwrap(),
        Cancelled::Released(Ok(EndReason::Cancelled))
    );
    assert!(released.lock().unwrap().is_empty());
    // A release hook is other work: the ordinary end, hook and payload release included.
    let hooked = owner
        .register_id(2, spec(), 20, Some(Box::new(|| Err("no".into()))))
        .unwrap();
    assert!(matches!(
        rt.cancel_timer_keeping_payload(hooked).unwrap(),
        Cancelled::Released(Err(Error::CleanupFailed(_)))
    ));
    assert_eq!(released.lock().unwrap().get(&20).copied(), Some(1));
    // Its record with the host: later, released then.
    let running = owner
        .register_id(3, TimerSpec::every(Duration::from_millis(1)), 30, None)
        .unwrap();
    let tick = common::first_tick_of(&rt, running);
    assert!(rt.begin(&tick));
    assert_eq!(
        rt.cancel_timer_keeping_payload(running).unwrap(),
        Cancelled::Later
    );
    rt.complete(&[tick.complete(Outcome::Ok)]).unwrap();
    assert_eq!(rt.timer_result(running), Some(Ok(EndReason::Cancelled)));
    assert_eq!(released.lock().unwrap().get(&30).copied(), Some(1));
    // Made-up ids are refused or report nothing, never a panic.
    let made_up = TimerId::from_parts(100_000, 1).unwrap();
    assert!(rt.cancel_timer_keeping_payload(made_up).is_err());
    // Closed: what the close recorded; the close released the payloads.
    let live = owner.register_id(4, spec(), 40, None).unwrap();
    rt.close();
    assert_eq!(
        rt.cancel_timer_keeping_payload(live).unwrap(),
        Cancelled::Released(Ok(EndReason::RuntimeClosed))
    );
    assert_eq!(released.lock().unwrap().get(&40).copied(), Some(1));
    common::assert_accounted(&rt);
}

/// A canceller that keeps payloads, a resetting thread and a delivering host over keys
/// whose timers fall due within 0–2 ms: every payload any generation carried is released
/// exactly once, by the runtime or by the canceller that kept it.
#[test]
fn kept_and_released_payloads_add_up_under_races() {
    const KEYS: u64 = 8;
    let rounds: u64 = std::env::var("KEEP_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let (rt, released) = counting_runtime();
    let rt = Arc::new(rt);
    let owner = rt.acquire_owner(1, OwnerOptions::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let host = common::delivering_host(rt.clone(), stop.clone());
    // The canceller's view of each key's current generation and its payload.
    let current: Arc<Mutex<Vec<(TimerId, u64)>>> = Arc::default();
    let kept: Arc<Mutex<Vec<u64>>> = Arc::default();
    let canceller = {
        let (rt, current, kept, stop) = (rt.clone(), current.clone(), kept.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(SeqCst) {
                n += 1;
                let pick = {
                    let c = current.lock().unwrap();
                    (!c.is_empty()).then(|| c[(n % c.len() as u64) as usize])
                };
                if let Some((id, payload)) = pick {
                    if let Ok(Cancelled::PayloadKept(_)) = rt.cancel_timer_keeping_payload(id) {
                        kept.lock().unwrap().push(payload);
                    }
                }
                std::thread::sleep(Duration::from_micros(n % 150));
            }
        })
    };
    let mut carried = Vec::new();
    let mut next = 1u64;
    let mut ids = Vec::new();
    for k in 0..KEYS {
        ids.push((
            owner
                .register_id(k, TimerSpec::after(Duration::from_millis(1)), next, None)
                .unwrap(),
            next,
        ));
        carried.push(next);
        next += 1;
    }
    *current.lock().unwrap() = ids.clone();
    let deadline = Instant::now() + Duration::from_secs(120);
    for round in 0..rounds {
        assert!(
            Instant::now() < deadline,
            "round {round}: no progress in 120 s"
        );
        let k = (round % KEYS) as usize;
        let spin_until = Instant::now() + Duration::from_nanos((round * 104_729) % 20_000);
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let delay = Duration::from_nanos((round * 7919) % 2_000_000);
        let (id, payload) = ids[k];
        ids[k] = match rt.reset_timer(id, delay, next) {
            Ok(Reset::InPlace(new)) => (new, payload),
            Ok(Reset::Registered(new)) => {
                carried.push(next);
                (new, next)
            }
            Err(Error::StaleHandle) => {
                carried.push(next);
                let spec = TimerSpec::every(Duration::from_micros(700));
                (owner.register_id(k as u64, spec, next, None).unwrap(), next)
            }
            Err(e) => panic!("round {round}: {e:?}"),
        };
        next += 1;
        current.lock().unwrap()[k] = ids[k];
    }
    stop.store(true, SeqCst);
    host.join().unwrap();
    canceller.join().unwrap();
    rt.close();
    let released = released.lock().unwrap();
    let kept = kept.lock().unwrap();
    let mut total: HashMap<u64, u32> = released.clone();
    for p in kept.iter() {
        *total.entry(*p).or_insert(0) += 1;
    }
    assert!(!kept.is_empty(), "no cancel kept a payload");
    for p in &carried {
        assert_eq!(
            total.get(p).copied(),
            Some(1),
            "payload {p}: released or kept exactly once"
        );
    }
    assert_eq!(
        total.len(),
        carried.len(),
        "nothing released that no generation carried"
    );
    common::assert_accounted(&rt);
}
