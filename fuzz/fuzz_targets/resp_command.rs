#![no_main]
// See tests/src/fuzz_targets.rs for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| ringstore_tests::fuzz_targets::resp_command(data));
