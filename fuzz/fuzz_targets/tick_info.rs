//! Tick-info invariants T3/T4/T5 on the manual clock (see `spot_timer_fuzz::tick_info`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    spot_timer_fuzz::tick_info::run(data);
});
