//! The slot-memory helper seen from outside: a runtime whose table grows past its first
//! 16,384 slots has one `spot-timer-pretouch` thread, a smaller one has none, and closing
//! the runtime ends it. (One test in this binary: the helpers of other tests' runtimes
//! would be counted too.)

use std::time::Duration;

use spot_timer_core::{GateMode, OwnerOptions, Runtime, RuntimeConfig, TimerSpec};

/// Threads of this process with the helper's name (as the kernel keeps it: 15 bytes).
fn helpers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "spot-timer-pret")
        .count()
}

fn register(rt: &Runtime, owner_id: u64, timers: u64) {
    let owner = rt
        .acquire_owner(
            owner_id,
            OwnerOptions {
                lease: None,
                gate: GateMode::Concurrent,
            },
        )
        .unwrap();
    for key in 0..timers {
        owner
            .register_id(key, TimerSpec::after(Duration::from_secs(600)), (), None)
            .unwrap();
    }
}

#[test]
fn one_helper_past_the_first_chunk_none_before_and_none_after_close() {
    let rt: Runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    register(&rt, 1, 15_000);
    assert_eq!(helpers(), 0, "15,000 timers: no helper");
    register(&rt, 2, 85_000);
    assert_eq!(helpers(), 1, "100,000 timers: one helper");
    register(&rt, 3, 200_000);
    assert_eq!(helpers(), 1, "300,000 timers: still one");
    assert_eq!(rt.stats().live_timers, 300_000);
    rt.close();
    assert_eq!(helpers(), 0, "close ended it");
}
