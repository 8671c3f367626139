//! The per-thread cache of runtime handles (`handles::get`): a runtime stays usable and
//! its handle checked while the cache is replaced, cleared by a free, used by several
//! threads, used again from host code that runs inside a call (a release hook calling
//! into the same and into another runtime), and torn down with its thread.
//!
//! Native only: every test starts runtimes, whose scheduler thread Miri cannot run.
#![cfg(not(miri))]

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use ::spot_timer::*;

fn new_runtime() -> u64 {
    let cfg = spot_runtime_config {
        struct_size: std::mem::size_of::<spot_runtime_config>() as u32,
        clock: SPOT_CLOCK_MANUAL,
        delivery: SPOT_DELIVERY_EXCHANGE,
        reserved: 0,
        callback: None,
        callback_env: ptr::null_mut(),
        callback_finalizer: None,
        resolution_ns: 0,
    };
    let mut rt = 0;
    assert_eq!(unsafe { spot_runtime_new(&cfg, &mut rt) }, SPOT_OK);
    rt
}

fn now(rt: u64) -> spot_status {
    let mut ns = 0;
    unsafe { spot_now(rt, &mut ns) }
}

fn owner(rt: u64, id: u64) -> u64 {
    let mut epoch = 0;
    assert_eq!(
        unsafe { spot_owner_acquire(rt, id, 0, SPOT_GATE_CONCURRENT, &mut epoch) },
        SPOT_OK
    );
    epoch
}

fn register(
    rt: u64,
    owner_id: u64,
    epoch: u64,
    key: u64,
    user_data: *mut c_void,
    release: spot_release_fn,
) -> spot_timer {
    let spec = spot_timer_spec {
        struct_size: std::mem::size_of::<spot_timer_spec>() as u32,
        policy: SPOT_POLICY_SKIP_LATE_TICKS,
        period_ns: 0,
        first_due_ns: 60_000_000_000,
        max_catch_up_ticks: 1,
        reserved: 0,
    };
    let mut t = spot_timer {
        generation: 0,
        slot: 0,
        reserved: 0,
    };
    let s =
        unsafe { spot_timer_register(rt, owner_id, epoch, key, &spec, user_data, release, &mut t) };
    assert_eq!(s, SPOT_OK);
    t
}

#[test]
fn alternating_runtimes_and_freed_handles() {
    let a = new_runtime();
    let b = new_runtime();
    for _ in 0..3 {
        assert_eq!(now(a), SPOT_OK);
        assert_eq!(now(a), SPOT_OK);
        assert_eq!(now(b), SPOT_OK);
    }
    // `b` is this thread's cached runtime: freeing it clears the cache.
    assert_eq!(spot_runtime_free(b), SPOT_OK);
    assert_eq!(now(b), SPOT_E_INVALID_HANDLE);
    assert_eq!(spot_runtime_free(b), SPOT_E_INVALID_HANDLE);
    assert_eq!(now(a), SPOT_OK);
    // A new runtime may take `b`'s entry: a different handle, and `b` stays invalid.
    let c = new_runtime();
    assert_ne!(c, b);
    assert_eq!(now(c), SPOT_OK);
    assert_eq!(now(b), SPOT_E_INVALID_HANDLE);
    assert_eq!(spot_runtime_free(a), SPOT_OK);
    assert_eq!(spot_runtime_free(c), SPOT_OK);
    assert_eq!(now(a), SPOT_E_INVALID_HANDLE);
    assert_eq!(now(c), SPOT_E_INVALID_HANDLE);
    assert_eq!(now(0), SPOT_E_INVALID_HANDLE);
    assert_eq!(now(u64::MAX), SPOT_E_INVALID_HANDLE);
}

#[test]
fn a_runtime_freed_while_other_threads_have_it_cached() {
    let rt = new_runtime();
    let freed = AtomicU64::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    assert_eq!(now(rt), SPOT_OK);
                    // Keep calling until the free is seen; every answer is OK, CLOSED (a
                    // free racing the call) or INVALID_HANDLE, never a crash.
                    loop {
                        let st = now(rt);
                        assert!(
                            [SPOT_OK, SPOT_E_CLOSED, SPOT_E_INVALID_HANDLE].contains(&st),
                            "{st}"
                        );
                        if freed.load(Ordering::Acquire) == 1 {
                            assert_eq!(now(rt), SPOT_E_INVALID_HANDLE);
                            break;
                        }
                    }
                    // The thread exits with the freed runtime still in its cache.
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(spot_runtime_free(rt), SPOT_OK);
        freed.store(1, Ordering::Release);
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Runtimes a release hook calls into: the runtime whose cancel runs the hook (cached,
/// in use by the outer call) and another one (not cached: the cache is in use).
static HOOK_RUNTIMES: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn hook_calling_in(_: *mut c_void, _: *mut c_char, _: usize) -> i32 {
    let same = HOOK_RUNTIMES[0].load(Ordering::Relaxed);
    let other = HOOK_RUNTIMES[1].load(Ordering::Relaxed);
    let ok = now(same) == SPOT_OK && now(other) == SPOT_OK && now(same) == SPOT_OK;
    let e = owner(other, 7);
    let t = register(other, 7, e, 1, ptr::null_mut(), None);
    let mut reason = 0;
    let cancelled = unsafe { spot_timer_cancel(other, t, 0, &mut reason) } == SPOT_OK
        && reason == SPOT_END_CANCELLED;
    HOOK_CALLS.fetch_add(1, Ordering::Relaxed);
    i32::from(!(ok && cancelled))
}

#[test]
fn a_release_hook_calls_into_the_runtime_in_use_and_another() {
    let a = new_runtime();
    let b = new_runtime();
    HOOK_RUNTIMES[0].store(a, Ordering::Relaxed);
    HOOK_RUNTIMES[1].store(b, Ordering::Relaxed);
    let e = owner(a, 1);
    for key in 0..3 {
        let t = register(a, 1, e, key, ptr::null_mut(), Some(hook_calling_in));
        let mut reason = 0;
        // The hook runs on this thread, inside this call, while `a` is borrowed from the
        // cache.
        assert_eq!(
            unsafe { spot_timer_cancel(a, t, 0, &mut reason) },
            SPOT_OK,
            "the hook's calls failed"
        );
        assert_eq!(reason, SPOT_END_CANCELLED);
    }
    assert_eq!(HOOK_CALLS.load(Ordering::Relaxed), 3);
    // Both runtimes still answer, through the cache and after replacing it.
    assert_eq!(now(a), SPOT_OK);
    assert_eq!(now(b), SPOT_OK);
    assert_eq!(now(a), SPOT_OK);
    assert_eq!(spot_runtime_free(a), SPOT_OK);
    assert_eq!(spot_runtime_free(b), SPOT_OK);
}
