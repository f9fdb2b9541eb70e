#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| git_remote_fdl::fuzz::lake_pack(data));
