//! Placeholder translation on arbitrary bytes: never panics, keeps the length, changes only
//! sigil bytes, is idempotent, and round-trips `$N -> ?N -> $N` for portable text.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/fuzz_harness.rs"]
mod fuzz_harness;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::translation_case(data);
});
