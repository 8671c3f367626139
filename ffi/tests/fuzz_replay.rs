//! Replays the fuzz harnesses of `fuzz/` on fixed and pseudo-random inputs, so
//! `cargo test` and Miri (`make test-reliability` runs `cargo +nightly miri test -p
//! spot-timer-ffi --test fuzz_replay`) exercise the same C ABI call sequences as the fuzzer:
//! handle registry, panic boundary, versioned struct reads, pointer checks, records and
//! their live words.
//!
//! `FUZZ_REPLAY_CASES` sets the number of pseudo-random inputs (default 64; 2 under Miri).
//! Under Miri only the fixed sequences run, and they stop at the first runtime creation
//! only if it fails: the core's scheduler thread calls `prctl`, which Miri does not
//! support, so the runtime-creating tests are ignored there (see RELIABILITY.md).

#[allow(dead_code)]
#[path = "../../fuzz/src/bytes.rs"]
mod bytes;

#[allow(dead_code)]
#[path = "../../fuzz/src/abi_ops.rs"]
mod abi_ops;

#[allow(dead_code)]
#[path = "../../fuzz/src/tick_info.rs"]
mod tick_info;

fn cases() -> u64 {
    std::env::var("FUZZ_REPLAY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 2 } else { 64 })
}

fn input(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn len() -> usize {
    if cfg!(miri) {
        160
    } else {
        4096
    }
}

#[test]
fn abi_ops_fixed_sequences() {
    // Create, acquire, register, advance, exchange, complete, cancel, free: a sequence
    // that reaches every op at least once.
    let mut seq = Vec::new();
    for op in 0u8..18 {
        seq.extend_from_slice(&[op, 2, 3, 2, 5, 2, 0, 0, 2, 2]);
    }
    abi_ops::run(&seq);
    abi_ops::run(&[]);
    abi_ops::run(&[0xff; 64]);
}

#[test]
fn abi_ops_pseudo_random() {
    for seed in 0..cases() {
        abi_ops::run(&input(seed, len()));
    }
}

#[test]
fn tick_info_pseudo_random() {
    for seed in 0..cases() {
        tick_info::run(&input(1000 + seed, len()));
    }
}
