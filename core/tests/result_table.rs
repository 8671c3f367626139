//! The shared result table (`tests/vectors/results.txt`), asserted through the Rust API.
//! The C, C++, Python and .NET suites read the same file.

mod common;

use std::time::Duration;

use common::*;
use spot_timer_core::*;

fn name_of_result(r: &EndResult) -> String {
    match r {
        Ok(reason) => match reason {
            EndReason::Cancelled => "CANCELLED",
            EndReason::Superseded => "SUPERSEDED",
            EndReason::Completed => "COMPLETED",
            EndReason::LeaseExpired => "LEASE_EXPIRED",
            EndReason::Revoked => "REVOKED",
            EndReason::RuntimeClosed => "RUNTIME_CLOSED",
        }
        .to_string(),
        Err(Error::CleanupFailed(_)) => "CLEANUP_FAILED".to_string(),
        Err(e) => name_of_error(e),
    }
}

fn name_of_error(e: &Error) -> String {
    match e {
        Error::InvalidArgument(_) => "E_INVALID_ARGUMENT",
        Error::UnknownOwner(_) => "E_UNKNOWN_OWNER",
        Error::LeaseExpired => "E_LEASE_EXPIRED",
        Error::Revoked => "E_REVOKED",
        Error::StaleHandle => "E_STALE_TIMER",
        Error::InvalidCompletion(_) => "E_INVALID_COMPLETION",
        Error::Timeout => "E_TIMEOUT",
        Error::WouldDeadlock => "E_WOULD_DEADLOCK",
        Error::CleanupFailed(_) => "E_CLEANUP_FAILED",
        Error::Closed => "E_CLOSED",
        Error::NotManualClock => "E_NOT_MANUAL_CLOCK",
        Error::CapacityExhausted(_) => "E_CAPACITY_EXHAUSTED",
        _ => "E_OTHER",
    }
    .to_string()
}

fn of_unit(r: Result<()>) -> String {
    match r {
        Ok(()) => "OK".to_string(),
        Err(e) => name_of_error(&e),
    }
}

fn of_registration(r: Result<TimerHandle<u32>>) -> String {
    match r {
        Ok(_) => "OK".to_string(),
        Err(e) => name_of_error(&e),
    }
}

const WAIT: Option<Duration> = Some(Duration::from_secs(5));

fn every_10ms() -> TimerSpec {
    TimerSpec::every(ms(10))
}

fn failing_hook() -> Option<ReleaseHook> {
    Some(Box::new(|| Err("boom".to_string())))
}

/// Runs one scenario of the table; the result's name.
fn run(scenario: &str) -> String {
    let h = Host::new();
    let lease = |l: u64| h.owner_with(1, OwnerOptions::lease(ms(l)));
    match scenario {
        "cancel_live" => {
            let t = h.owner(1).register(1, every_10ms(), 0, None).unwrap();
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_twice" => {
            let t = h.owner(1).register(1, every_10ms(), 0, None).unwrap();
            let _ = t.cancel(WAIT);
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_superseded" => {
            let o = h.owner(1);
            let first = o.register(1, every_10ms(), 0, None).unwrap();
            let _second = o.register(1, every_10ms(), 0, None).unwrap();
            name_of_result(&first.cancel(WAIT))
        }
        "cancel_completed_one_shot" => {
            let t = h
                .owner(1)
                .register(1, TimerSpec::after(ms(5)), 0, None)
                .unwrap();
            h.advance(ms(10));
            h.run_ready();
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_revoked" => {
            let o = h.owner(1);
            let t = o.register(1, every_10ms(), 0, None).unwrap();
            o.revoke().unwrap();
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_lease_expired" => {
            let o = lease(10);
            let t = o.register(1, TimerSpec::every(ms(100)), 0, None).unwrap();
            h.advance(ms(20));
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_after_close" => {
            let t = h.owner(1).register(1, every_10ms(), 0, None).unwrap();
            h.rt.close();
            name_of_result(&t.cancel(WAIT))
        }
        "cancel_cleanup_failed" | "cancel_cleanup_failed_twice" => {
            let t = h
                .owner(1)
                .register(1, every_10ms(), 0, failing_hook())
                .unwrap();
            let first = t.cancel(WAIT);
            if let Err(Error::CleanupFailed(msg)) = &first {
                assert!(msg.contains("boom"), "the hook's message: {msg}");
            }
            if scenario == "cancel_cleanup_failed" {
                name_of_result(&first)
            } else {
                name_of_result(&t.cancel(WAIT))
            }
        }
        "cancel_in_own_callback" | "cancel_in_own_callback_result" => {
            let t = h.owner(1).register(1, every_10ms(), 0, None).unwrap();
            h.advance(ms(10));
            let records = h.poll();
            assert_eq!(records.len(), 1, "one tick due");
            // The handler: started (the start check), then cancels its own timer.
            assert!(h.rt.begin(&records[0]));
            let inside = name_of_result(&t.cancel(WAIT));
            h.finish(&records[0], Outcome::Ok);
            if scenario == "cancel_in_own_callback" {
                inside
            } else {
                name_of_result(&t.cancel(WAIT))
            }
        }
        "register_revoked_owner" => {
            let o = h.owner(1);
            o.revoke().unwrap();
            of_registration(o.register(1, every_10ms(), 0, None))
        }
        "register_lease_expired" => {
            let o = lease(10);
            h.advance(ms(20));
            of_registration(o.register(1, every_10ms(), 0, None))
        }
        "register_after_close" => {
            let o = h.owner(1);
            h.rt.close();
            of_registration(o.register(1, every_10ms(), 0, None))
        }
        "register_zero_period" => {
            of_registration(h.owner(1).register(1, TimerSpec::every(ms(0)), 0, None))
        }
        "renew_after_expiry" => {
            let o = lease(10);
            h.advance(ms(20));
            of_unit(o.renew(Some(ms(10))))
        }
        "renew_revoked" => {
            let o = h.owner(1);
            o.revoke().unwrap();
            of_unit(o.renew(Some(ms(10))))
        }
        other => format!("scenario {other:?} is not implemented by the Rust suite"),
    }
}

/// The table's rows: (scenario, expected).
fn table() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/results.txt");
    let text = std::fs::read_to_string(path).expect("tests/vectors/results.txt");
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut f = l.split_whitespace();
            let scenario = f.next().unwrap().to_string();
            let expected = f.next().expect("an expected result").to_string();
            (scenario, expected)
        })
        .collect()
}

#[test]
fn every_scenario_of_the_result_table_gives_its_expected_result() {
    let rows = table();
    assert!(rows.len() >= 17, "the table has {} rows", rows.len());
    let wrong: Vec<String> = rows
        .iter()
        .filter_map(|(scenario, expected)| {
            let got = run(scenario);
            (got != *expected).then(|| format!("{scenario}: expected {expected}, got {got}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
