//! Fuzz harnesses of spot-timer. Each takes arbitrary bytes, interprets them as a
//! sequence of operations and panics (a crash for libFuzzer) when the library breaks its
//! contract: a caught panic (`SPOT_E_PANIC`), an unknown status code, a record delivered
//! twice, two callbacks of one timer in flight, or tick info that breaks T4/T5.
//!
//! The same harnesses run on fixed inputs under Miri and `cargo test` from
//! `ffi/tests/fuzz_replay.rs` (it includes the modules below by path).

pub mod abi_ops;
pub mod bytes;
pub mod tick_info;
