//! Random sequences of C ABI calls (see `spot_timer_fuzz::abi_ops`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    spot_timer_fuzz::abi_ops::run(data);
});
