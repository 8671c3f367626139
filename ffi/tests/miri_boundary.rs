//! The C ABI's unsafe boundary without a running runtime, so it runs under Miri
//! (`make test-reliability`: `cargo +nightly miri test -p spot-timer-ffi --test
//! miri_boundary`) as well as natively: pointer checks, versioned struct reads with every
//! kind of bad `struct_size`, the thread-local last error and its truncation, status names,
//! and the handle registry's rejection of 0, made-up and freed handles.
//!
//! (A runtime cannot start under Miri: its scheduler thread calls `prctl`, which Miri does
//! not support; see RELIABILITY.md.)

use std::ffi::{c_char, CStr};
use std::ptr;

use ::spot_timer::*;

fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    unsafe { spot_last_error(buf.as_mut_ptr(), buf.len()) };
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn status_names_are_static_and_known() {
    for st in -3..25 {
        let p = spot_status_name(st);
        assert!(!p.is_null());
        let name = unsafe { CStr::from_ptr(p) }.to_str().unwrap();
        assert!(name.starts_with("SPOT_"), "{name}");
    }
    assert_eq!(spot_abi_version(), SPOT_ABI_VERSION);
}

#[test]
fn runtime_new_rejects_bad_configs_without_starting() {
    let mut rt = 77u64;
    assert_eq!(
        unsafe { spot_runtime_new(ptr::null(), &mut rt) },
        SPOT_E_NULL_ARGUMENT
    );
    let good = spot_runtime_config {
        struct_size: std::mem::size_of::<spot_runtime_config>() as u32,
        clock: SPOT_CLOCK_MANUAL,
        delivery: SPOT_DELIVERY_EXCHANGE,
        reserved: 0,
        callback: None,
        callback_env: ptr::null_mut(),
        callback_finalizer: None,
        resolution_ns: 0,
    };
    assert_eq!(
        unsafe { spot_runtime_new(&good, ptr::null_mut()) },
        SPOT_E_NULL_ARGUMENT
    );
    let cases = [
        (
            spot_runtime_config {
                struct_size: 0,
                ..good
            },
            SPOT_E_BAD_STRUCT_SIZE,
        ),
        (
            spot_runtime_config {
                struct_size: 8,
                ..good
            },
            SPOT_E_BAD_STRUCT_SIZE,
        ),
        (
            spot_runtime_config {
                struct_size: 1 << 20,
                ..good
            },
            SPOT_E_BAD_STRUCT_SIZE,
        ),
        (
            // Below the oldest version's size (ABI 1.0: 40 bytes).
            spot_runtime_config {
                struct_size: 32,
                ..good
            },
            SPOT_E_BAD_STRUCT_SIZE,
        ),
        (
            spot_runtime_config { clock: 9, ..good },
            SPOT_E_UNKNOWN_ENUM,
        ),
        (
            spot_runtime_config {
                delivery: 9,
                ..good
            },
            SPOT_E_UNKNOWN_ENUM,
        ),
        (
            spot_runtime_config {
                reserved: 1,
                ..good
            },
            SPOT_E_INVALID_ARGUMENT,
        ),
        (
            spot_runtime_config {
                delivery: SPOT_DELIVERY_CALLBACK,
                ..good
            },
            SPOT_E_NULL_ARGUMENT,
        ),
    ];
    for (cfg, want) in cases {
        assert_eq!(unsafe { spot_runtime_new(&cfg, &mut rt) }, want, "{cfg:?}");
        assert_eq!(rt, 77, "out_rt written on failure");
        assert!(!last_error().is_empty());
    }
    // A newer, larger struct whose unknown tail is non-zero.
    #[repr(C)]
    struct Bigger {
        cfg: spot_runtime_config,
        tail: [u64; 4],
    }
    let mut big = Bigger {
        cfg: spot_runtime_config {
            struct_size: std::mem::size_of::<Bigger>() as u32,
            clock: 9, // rejected either way: must not start a thread under Miri
            ..good
        },
        tail: [0, 0, 7, 0],
    };
    let st = unsafe { spot_runtime_new(ptr::addr_of!(big).cast::<spot_runtime_config>(), &mut rt) };
    assert!(
        st == SPOT_E_BAD_STRUCT_SIZE || st == SPOT_E_UNKNOWN_ENUM,
        "{st}"
    );
    big.tail = [0; 4];
    let st = unsafe { spot_runtime_new(ptr::addr_of!(big).cast::<spot_runtime_config>(), &mut rt) };
    assert_eq!(st, SPOT_E_UNKNOWN_ENUM);
}

#[test]
fn every_export_rejects_made_up_handles() {
    let t = spot_timer {
        generation: 5,
        slot: 1,
        reserved: 0,
    };
    for rt in [0u64, 1, u64::MAX, 0xdead_beef_0000_0001] {
        let mut epoch = 0;
        let mut n = 0usize;
        let out = [spot_completion::default(); 1];
        let mut rec = std::mem::MaybeUninit::<spot_record>::zeroed();
        let mut reason = 0u32;
        let mut done = 0u32;
        let mut now = 0u64;
        let mut fd = 0i32;
        let mut stats = spot_stats {
            struct_size: std::mem::size_of::<spot_stats>() as u32,
            ..Default::default()
        };
        let mut ts = spot_timer_stats {
            struct_size: std::mem::size_of::<spot_timer_stats>() as u32,
            ..Default::default()
        };
        let spec = spot_timer_spec {
            struct_size: std::mem::size_of::<spot_timer_spec>() as u32,
            policy: 0,
            period_ns: 1_000_000,
            first_due_ns: SPOT_FIRST_DUE_DEFAULT,
            max_catch_up_ticks: 1,
            reserved: 0,
        };
        let mut timer = t;
        unsafe {
            assert_eq!(spot_runtime_free(rt), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_advance(rt, 1), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_now(rt, &mut now), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_stats(rt, &mut stats), SPOT_E_INVALID_HANDLE);
            assert_eq!(
                spot_owner_acquire(rt, 1, 0, 0, &mut epoch),
                SPOT_E_INVALID_HANDLE
            );
            assert_eq!(spot_owner_renew(rt, 1, 1, 0), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_owner_revoke(rt, 1, 1), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_owner_gate_enter(rt, 1, 0), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_owner_gate_leave(rt, 1), SPOT_E_INVALID_HANDLE);
            assert_eq!(
                spot_timer_register(rt, 1, 1, 1, &spec, ptr::null_mut(), None, &mut timer),
                SPOT_E_INVALID_HANDLE
            );
            assert_eq!(timer, t, "out_timer written on failure");
            assert_eq!(
                spot_timer_cancel(rt, t, 0, &mut reason),
                SPOT_E_INVALID_HANDLE
            );
            assert_eq!(
                spot_timer_cancel_async(rt, t, 1, &mut done, &mut reason),
                SPOT_E_INVALID_HANDLE
            );
            assert_eq!(spot_timer_stats(rt, t, &mut ts), SPOT_E_INVALID_HANDLE);
            assert_eq!(
                spot_exchange(rt, out.as_ptr(), 0, rec.as_mut_ptr(), 1, 0, &mut n),
                SPOT_E_INVALID_HANDLE
            );
            assert_eq!(spot_complete(rt, out.as_ptr(), 0), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_record_begin(rt, rec.as_ptr()), SPOT_E_INVALID_HANDLE);
            assert_eq!(spot_wakeup_fd(rt, &mut fd), SPOT_E_INVALID_HANDLE);
        }
        assert!(last_error().contains("handle") || !last_error().is_empty());
    }
}

#[test]
fn last_error_truncates_and_terminates() {
    let _ = spot_runtime_free(12345);
    let full = unsafe { spot_last_error(ptr::null_mut(), 0) };
    assert!(full > 4);
    for cap in 1..8usize {
        let mut buf = vec![0x55 as c_char; cap + 4];
        let n = unsafe { spot_last_error(buf.as_mut_ptr(), cap) };
        assert_eq!(n, full);
        assert_eq!(buf[cap - 1], 0, "NUL within capacity {cap}");
        assert!(
            buf[cap..].iter().all(|&b| b == 0x55),
            "wrote past capacity {cap}"
        );
    }
    // The message is per thread.
    std::thread::spawn(|| assert_eq!(unsafe { spot_last_error(ptr::null_mut(), 0) }, 0))
        .join()
        .unwrap();
}
