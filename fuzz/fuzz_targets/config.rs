//! Configuration inputs on arbitrary bytes: `from_url`, `from_env` and the serde `Config`
//! never panic, fail only with `Config` errors, and nothing they return (builder, pool, error,
//! `Debug`, source chain) shows the password or key passphrase planted in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/fuzz_harness.rs"]
mod fuzz_harness;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::config_case(data);
    let url = fuzz_harness::config_url(data).replace('\0', "");
    // SAFETY: libFuzzer runs the target on one thread, and nothing else in this process reads
    // the environment while it is changed.
    unsafe { std::env::set_var("DATABASE_URL", &url) };
    fuzz_harness::env_case();
});
