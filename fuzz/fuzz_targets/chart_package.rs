#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chartreg_fuzz_targets::chart_package(data));
